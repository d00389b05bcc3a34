// Copyright 2026 The rdmago Authors.

package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// DevNode stats the system path p (such as "/dev/infiniband/uverbs0") under
// the root. It fails with ErrNoDevNode when p does not exist.
func (f FS) DevNode(p string) (DevNode, error) {
	fi, err := os.Stat(f.Path(p))
	if errors.Is(err, fs.ErrNotExist) {
		return DevNode{}, fmt.Errorf("%s: %w", p, ErrNoDevNode)
	}
	if err != nil {
		return DevNode{}, fmt.Errorf("stat %s: %w", p, err)
	}
	d := DevNode{Path: p, Mode: fi.Mode()}
	d.UID, d.GID = owner(fi)
	return d, nil
}
