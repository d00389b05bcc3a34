// Copyright 2026 The rdmago Authors.

//go:build !linux

package uverbs

import (
	"errors"
	"testing"
)

// Off Linux the package builds, and using it fails with ErrNotSupported.
func TestNotSupportedOffLinux(t *testing.T) {
	if _, err := Open(""); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Open: %v, want ErrNotSupported", err)
	}
	if devs, err := Devices(); !errors.Is(err, ErrNotSupported) || len(devs) != 0 {
		t.Errorf("Devices: %v %v, want ErrNotSupported", devs, err)
	}
}
