// Copyright 2026 The rdmago Authors.

//go:build !linux

package labtest

import "syscall"

// chroot is nil off Linux, where there is no lab guest to chroot in.
func chroot(dir string) *syscall.SysProcAttr { return nil }
