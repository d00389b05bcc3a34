// Copyright 2026 The rdmago Authors.

package oob

import (
	"context"
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
		fromClient, err = ServerN(ctx, ln, srv, SRQDests, nil)
		errc <- err
	}()
	got, err := ClientN(ctx, ln.Addr().String(), cli, SRQDests)
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
// the reverse) ends within StepTimeout with an error naming the fix, on
// both sides, instead of hanging.
func TestMismatchedCount(t *testing.T) {
	old := StepTimeout
	StepTimeout = 300 * time.Millisecond
	defer func() { StepTimeout = old }()
	local := []uverbs.Dest{{QPN: 0x100, PSN: 1, GID: gidOf("10.0.0.1")}}
	for _, tc := range []struct {
		name             string
		server, client   int
		serverWant, want string
	}{
		{"OneQPClient_SRQServer", SRQDests, 1, "drop --srq", "closed"},
		{"SRQClient_OneQPServer", 1, SRQDests, "give --srq", "drop --srq"},
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
				_, err := ServerN(ctx, ln, local, tc.server, nil)
				errc <- err
			}()
			_, cerr := ClientN(ctx, ln.Addr().String(), local, tc.client)
			serr := <-errc
			t.Logf("server: %v\nclient: %v", serr, cerr)
			if serr == nil || !strings.Contains(serr.Error(), tc.serverWant) {
				t.Errorf("server error %v, want one saying %q", serr, tc.serverWant)
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
// reads more says to give --srq.
func TestClientWaitsForSRQServer(t *testing.T) {
	old := StepTimeout
	StepTimeout = 300 * time.Millisecond
	defer func() { StepTimeout = old }()
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
	_, err = ClientN(ctx, ln.Addr().String(), []uverbs.Dest{{QPN: 1}}, 1)
	if err == nil || !strings.Contains(err.Error(), "give --srq") {
		t.Errorf("client error %v, want one saying to give --srq", err)
	}
}
