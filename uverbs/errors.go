// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmago/rdmago/internal/sys"
)

// Sentinel errors; test with errors.Is. Errors from the kernel wrap the errno
// (syscall.Errno) with the operation, e.g. "create cq: cannot allocate memory".
//
// ErrNoDevice, ErrNotSupported and ErrClosed are the same values as cm's, so
// errors.Is(err, uverbs.ErrClosed) also matches an error from cm.
var (
	// ErrNoDevice means no RDMA device is present or none matched.
	ErrNoDevice = sys.ErrNoDevice
	// ErrNotSupported means the device, its driver, the running kernel or
	// the operating system lacks a feature (a provider other than rxe, FLUSH
	// before Linux 6.2, RDMA anywhere but Linux, ...).
	ErrNotSupported = sys.ErrNotSupported
	// ErrClosed means the object (or its Context) was closed.
	ErrClosed = sys.ErrClosed
	// ErrQueueFull means a send or receive queue has no free slot: poll
	// completions (or post fewer requests) and retry.
	ErrQueueFull = errors.New("work queue full")
	// ErrNoGID means no GID table entry matched.
	ErrNoGID = errors.New("no matching GID")
)

// PostError says which work request of a list failed. Requests before Index
// were posted (and, for sends, the doorbell was rung for them).
type PostError struct {
	Op    string // "post send", "post recv", "post srq recv"
	Index int
	Err   error
}

func (e *PostError) Error() string {
	return fmt.Sprintf("%s: work request %d: %v", e.Op, e.Index, e.Err)
}
func (e *PostError) Unwrap() error { return e.Err }

// noDeviceHint says how to get an RDMA device; errors that wrap ErrNoDevice
// because nothing is there add it.
const noDeviceHint = "load Soft-RoCE and create one on a network interface, e.g. `modprobe rdma_rxe` then `rdma link add rxe0 type rxe netdev eth0`"

// memlockHint explains ENOMEM from MR registration: it almost always means
// the pinned pages would exceed RLIMIT_MEMLOCK.
func memlockHint(err error, length int) error {
	if !errors.Is(err, syscall.ENOMEM) {
		return err
	}
	limit := "unknown"
	if cur, unlimited, err := sys.MemlockLimit(); err == nil {
		if unlimited {
			limit = "unlimited"
		} else {
			limit = fmt.Sprintf("%d bytes", cur)
		}
	}
	return fmt.Errorf("%w (registering %d bytes pins them and counts against RLIMIT_MEMLOCK, currently %s: raise it with `ulimit -l`, setrlimit(RLIMIT_MEMLOCK) or CAP_IPC_LOCK)", err, length, limit)
}
