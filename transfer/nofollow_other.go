// Copyright 2026 The rdmago Authors.

//go:build !windows

package transfer

import "syscall"

// oNoFollow makes opening a partial file fail when it is a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW
