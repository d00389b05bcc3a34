// Copyright 2026 The rdmago Authors.

package sys

import "errors"

// The library's sentinel errors, defined once here and re-exported by
// uverbs and cm (uverbs.ErrClosed and cm.ErrClosed are this ErrClosed), so
// errors.Is matches them whichever package failed. They say what went wrong,
// never what to do about it: the error that wraps one carries the
// remediation that fits where it was returned.
var (
	// ErrClosed means the object was closed.
	ErrClosed = errors.New("use of closed RDMA object")
	// ErrNoDevice means there is no RDMA device, or none matched.
	ErrNoDevice = errors.New("no RDMA device")
	// ErrNotSupported means the system, the kernel or the device lacks what
	// was asked for.
	ErrNotSupported = errors.New("not supported")
)
