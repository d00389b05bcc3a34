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

// wirePair makes the wire between two lab nodes: a connected pair of Unix
// stream sockets, one end for each QEMU's socket netdev (-netdev
// socket,fd=3), which sends each Ethernet frame as a length and the bytes.
// A TCP connection on loopback (listen=/connect=) would do the same, but
// QEMU leaves Nagle's algorithm on for it: a frame sent while the previous
// one is unacknowledged waits for the peer kernel's delayed ACK, up to 40
// ms, and a request/response exchange over rxe (a packet and its ACK, then
// the next packet) hit that wait at almost every round trip. A Unix socket
// has no such delay. The caller closes both files once QEMU holds them.
func wirePair() (a, b *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "lab-wire-0"), os.NewFile(uintptr(fds[1]), "lab-wire-1"), nil
}
