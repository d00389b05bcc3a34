// Copyright 2026 The rdmago Authors.

package oob

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

func gidOf(s string) uverbs.GID { return uverbs.GIDFromAddr(netip.MustParseAddr(s)) }

func TestFormat(t *testing.T) {
	d := uverbs.Dest{LID: 0, QPN: 0x11, PSN: 0xabcdef, GID: gidOf("192.168.7.2")}
	msg := Marshal(d)
	want := "0000:000011:abcdef:00000000000000000000ffffc0a80702\x00"
	if string(msg) != want || len(msg) != 52 {
		t.Fatalf("wire form %q, want %q", msg, want)
	}
	back, err := Parse(msg)
	if err != nil || back != d {
		t.Fatalf("round trip: %+v %v", back, err)
	}
	for _, bad := range []string{"", "0000:000011:abcdef", "zzzz:000011:abcdef:00000000000000000000ffffc0a80702", "0000:1000000:0:00000000000000000000ffffc0a80702"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	server := uverbs.Dest{QPN: 0x100, PSN: 1, GID: gidOf("10.0.0.1")}
	client := uverbs.Dest{QPN: 0x200, PSN: 2, GID: gidOf("10.0.0.2")}
	type res struct {
		d         uverbs.Dest
		connected uverbs.Dest
		err       error
	}
	done := make(chan res, 1)
	go func() {
		var r res
		r.d, r.err = Server(ctx, ln, server, func(remote uverbs.Dest) error { r.connected = remote; return nil }, nil)
		done <- r
	}()
	got, err := Client(ctx, ln.Addr().String(), client, nil)
	if err != nil || got != server {
		t.Fatalf("client got %+v, %v", got, err)
	}
	r := <-done
	if r.err != nil || r.d != client || r.connected != client {
		t.Fatalf("server got %+v (connected with %+v), %v", r.d, r.connected, r.err)
	}
	// A cancelled server returns promptly.
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln2.Close()
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := Server(cctx, ln2, server, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled server: %v", err)
	}
}

// TestStepTimeoutChecked: a negative Options.StepTimeout is refused with
// an error naming the field, before anything is dialled or accepted.
func TestStepTimeoutChecked(t *testing.T) {
	bad := &Options{StepTimeout: -time.Second}
	if _, err := Client(context.Background(), "127.0.0.1:1", uverbs.Dest{}, bad); err == nil || !strings.Contains(err.Error(), "Options.StepTimeout") {
		t.Errorf("Client with StepTimeout -1s: %v", err)
	}
	if _, err := ServerN(context.Background(), nil, nil, 1, nil, bad); err == nil || !strings.Contains(err.Error(), "Options.StepTimeout") {
		t.Errorf("ServerN with StepTimeout -1s: %v", err)
	}
}
