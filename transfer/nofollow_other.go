// Copyright 2026 The rdmago Authors.

//go:build !windows

package transfer

import (
	"errors"
	"syscall"
)

// oNoFollow makes opening a partial file fail when it is a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// isLoop reports whether err is O_NOFOLLOW refusing a symbolic link (ELOOP).
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
