//go:build linux

// Copyright 2026 The rdmago Authors.

package cm

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestLabWaitForListener: a Dial with Options.WaitForListener started
// before anything listens connects once a listener appears; without it the
// Dial fails with ErrNoListener.
func TestLabWaitForListener(t *testing.T) {
	e := requireLab(t)
	if e.TwoNodes {
		t.Skip("one process plays both sides")
	}
	ctx := labtest.Context(t, 60*time.Second)
	addr := netip.AddrPortFrom(e.addr, labPortBase+41).String()
	if c, err := Dial(ctx, addr, nil); !errors.Is(err, ErrNoListener) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Dial with no listener: %v, want ErrNoListener", err)
	}
	type res struct {
		c   *Conn
		err error
	}
	dialed := make(chan res, 1)
	go func() {
		c, err := Dial(ctx, addr, &Options{WaitForListener: true})
		dialed <- res{c, err}
	}()
	time.Sleep(300 * time.Millisecond)
	l, err := Listen(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := <-dialed
	if r.err != nil {
		t.Fatalf("Dial with WaitForListener: %v", r.err)
	}
	r.c.Close()
}
