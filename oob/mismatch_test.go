// Copyright 2026 The rdmago Authors.

package oob

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// TestServerN exchanges ibv_srq_pingpong's 256 addresses each way.
func TestServerN(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := []uverbs.Dest{{QPN: 0x100, PSN: 1, GID: gidOf("10.0.0.1")}, {QPN: 0x101, PSN: 2, GID: gidOf("10.0.0.1")}}
	cli := []uverbs.Dest{{QPN: 0x200, PSN: 3, GID: gidOf("10.0.0.2")}, {QPN: 0x201, PSN: 4, GID: gidOf("10.0.0.2")}}
	errc := make(chan error, 1)
	var fromClient []uverbs.Dest
	go func() {
		var err error
		fromClient, err = ServerN(ctx, ln, srv, SRQDests, nil, nil)
		errc <- err
	}()
	got, err := ClientN(ctx, ln.Addr().String(), cli, SRQDests, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if len(got) != SRQDests || got[0] != srv[0] || got[1] != srv[1] || got[2] != (uverbs.Dest{}) {
		t.Errorf("client got %d addresses starting %+v", len(got), got[:3])
	}
	if len(fromClient) != SRQDests || fromClient[1] != cli[1] || fromClient[255] != (uverbs.Dest{}) {
		t.Errorf("server got %d addresses", len(fromClient))
	}
}

// TestMismatchedCount: a one-address peer facing a 256-address one (and
// the reverse) ends within Options.StepTimeout with an error naming the
// fix (and matching ErrAddressCount), on both sides, instead of hanging.
func TestMismatchedCount(t *testing.T) {
	opts := &Options{StepTimeout: 300 * time.Millisecond}
	local := []uverbs.Dest{{QPN: 0x100, PSN: 1, GID: gidOf("10.0.0.1")}}
	for _, tc := range []struct {
		name             string
		server, client   int
		serverWant, want string
	}{
		{"OneQPClient_SRQServer", SRQDests, 1, "exchange one address, n = 1", "closed"},
		{"SRQClient_OneQPServer", 1, SRQDests, "exchange SRQDests addresses, n = 256", "exchange one address, n = 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := ServerN(ctx, ln, local, tc.server, nil, opts)
				errc <- err
			}()
			_, cerr := ClientN(ctx, ln.Addr().String(), local, tc.client, opts)
			serr := <-errc
			t.Logf("server: %v\nclient: %v", serr, cerr)
			if serr == nil || !strings.Contains(serr.Error(), tc.serverWant) || !errors.Is(serr, ErrAddressCount) {
				t.Errorf("server error %v, want one saying %q and matching ErrAddressCount", serr, tc.serverWant)
			}
			if cerr == nil {
				t.Errorf("client succeeded against a mismatched server")
			}
			if ctx.Err() != nil {
				t.Errorf("the exchange ran into the test's deadline")
			}
		})
	}
}

// TestClientWaitsForSRQServer: a one-address client facing a server that
// reads more says to exchange SRQDests addresses.
func TestClientWaitsForSRQServer(t *testing.T) {
	opts := &Options{StepTimeout: 300 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // a server that only reads, as ibv_srq_pingpong waits for 256 addresses
		c, err := ln.Accept()
		if err == nil {
			time.Sleep(2 * time.Second)
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = ClientN(ctx, ln.Addr().String(), []uverbs.Dest{{QPN: 1}}, 1, opts)
	if err == nil || !strings.Contains(err.Error(), "exchange SRQDests addresses") || !errors.Is(err, ErrAddressCount) {
		t.Errorf("client error %v, want one saying to exchange SRQDests addresses, matching ErrAddressCount", err)
	}
}
