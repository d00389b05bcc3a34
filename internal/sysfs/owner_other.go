// Copyright 2026 The rdmago Authors.

//go:build !linux

package sysfs

import "io/fs"

// owner is 0, 0 off Linux, where there are no RDMA device nodes to describe.
func owner(fs.FileInfo) (uid, gid uint32) { return 0, 0 }
