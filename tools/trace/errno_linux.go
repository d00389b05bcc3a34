// Copyright 2026 The rdmago Authors.

package trace

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// linuxErrnoName is the C name of Linux errno e ("EINVAL"), "" if unknown.
func linuxErrnoName(e syscall.Errno) string { return unix.ErrnoName(e) }
