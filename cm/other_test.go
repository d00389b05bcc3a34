// Copyright 2026 The rdmago Authors.

//go:build !linux

package cm

import (
	"errors"
	"testing"
)

// Off Linux the package builds, and using it fails with ErrNotSupported.
func TestNotSupportedOffLinux(t *testing.T) {
	if ch, err := OpenChannel(); !errors.Is(err, ErrNotSupported) {
		if ch != nil {
			ch.Close()
		}
		t.Errorf("OpenChannel: %v, want ErrNotSupported", err)
	}
}
