// Copyright 2026 The rdmago Authors.

//go:build !linux

package capture

import (
	"context"
	"fmt"
	"runtime"

	"github.com/rdmago/rdmago/internal/sys"
)

// Handle is an open capture; off Linux none can be opened.
type Handle struct{}

var errNotLinux = fmt.Errorf("capture: packet sockets (AF_PACKET) need Linux, and this is %s: %w", runtime.GOOS, sys.ErrNotSupported)

// Open fails off Linux with an error matching uverbs.ErrNotSupported.
func Open(name string, snapLen int) (*Handle, error) { return nil, errNotLinux }

// ReadPacket fails: off Linux there is no open Handle.
func (h *Handle) ReadPacket(ctx context.Context) (Packet, error) { return Packet{}, errNotLinux }

// Stats fails: off Linux there is no open Handle.
func (h *Handle) Stats() (received, dropped uint32, err error) { return 0, 0, errNotLinux }

// Close does nothing.
func (h *Handle) Close() error { return nil }
