// Copyright 2026 The rdmago Authors.

package lab

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// hostErr says why this host cannot run the lab: nil on Linux.
func hostErr() error { return nil }

// qemuProcAttr puts QEMU in its own process group and kills it when the lab
// dies (PR_SET_PDEATHSIG).
func qemuProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// lockFile takes an exclusive flock on path; Close releases it.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
