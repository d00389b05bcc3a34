// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"context"
	"net"
)

// OOBClient and OOBServer are package oob's Client and Server for the lab
// tests that talk to ibv_rc_pingpong. Package oob imports uverbs, so these
// internal tests cannot import it; oob_test.go (package uverbs_test, in the
// same test binary) sets them before any test runs.
var (
	OOBClient func(ctx context.Context, addr string, local Dest) (Dest, error)
	OOBServer func(ctx context.Context, ln net.Listener, local Dest, connect func(remote Dest) error) (Dest, error)
)
