// Copyright 2026 The rdmago Authors.

package labtest

import "syscall"

// chroot makes a command run chrooted into dir.
func chroot(dir string) *syscall.SysProcAttr { return &syscall.SysProcAttr{Chroot: dir} }
