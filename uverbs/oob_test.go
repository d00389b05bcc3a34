// Copyright 2026 The rdmago Authors.

package uverbs_test

import (
	"context"
	"net"

	"github.com/rdmago/rdmago/oob"
	"github.com/rdmago/rdmago/uverbs"
)

func init() {
	uverbs.OOBClient = func(ctx context.Context, addr string, local uverbs.Dest) (uverbs.Dest, error) {
		return oob.Client(ctx, addr, local, nil)
	}
	uverbs.OOBServer = func(ctx context.Context, ln net.Listener, local uverbs.Dest, connect func(remote uverbs.Dest) error) (uverbs.Dest, error) {
		return oob.Server(ctx, ln, local, connect, nil)
	}
}
