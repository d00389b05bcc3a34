// Copyright 2026 The rdmago Authors.

//go:build !linux

package trace

import "syscall"

// linuxErrnoName would be the C name of Linux errno e; off Linux the table
// (x/sys/unix's) is not at hand, so every errno prints as "errnoN".
func linuxErrnoName(e syscall.Errno) string { return "" }
