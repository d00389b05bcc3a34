// Copyright 2026 The rdmago Authors.

//go:build !linux

package devinfo

import (
	"fmt"
	"runtime"

	"github.com/rdmago/rdmago/internal/sys"
)

// Live fails off Linux with an error matching uverbs.ErrNotSupported: what rdmainfo
// reads (sysfs, RDMA netlink, uverbs) is Linux's.
func Live() (*System, error) {
	return nil, fmt.Errorf("rdmainfo reads Linux's sysfs, RDMA netlink and uverbs, and this is %s: %w", runtime.GOOS, sys.ErrNotSupported)
}
