// Copyright 2026 The rdmago Authors.

package sysfs

import (
	"io/fs"
	"syscall"
)

// owner is the user and group that own the file fi describes.
func owner(fi fs.FileInfo) (uid, gid uint32) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Uid, st.Gid
	}
	return 0, 0
}
