//go:build linux

// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// halfOpenConnect connects to dst from a raw ID on ch and stops after the
// listener's CONNECT_RESPONSE: no RTU is ever sent (no Establish), so the
// listener's side waits for ESTABLISHED. Closing the ID rejects the
// connection (the CM's REJ, reason 28). The caller must Close the ID.
func halfOpenConnect(ctx context.Context, ch *Channel, dst netip.AddrPort, qpn uint32) (*ID, error) {
	id, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*ID, error) {
		id.Close()
		return nil, fmt.Errorf("half-open connect: %w", err)
	}
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst, 2*time.Second); err != nil {
		return fail(err)
	}
	if err := id.ResolveRoute(ctx, 2*time.Second); err != nil {
		return fail(err)
	}
	// No QP behind the number: the listener never gets to send to it.
	if err := id.Connect(ConnParam{QPNum: qpn, RetryCount: 7, RNRRetryCount: 7, InitiatorDepth: 1, ResponderResources: 1}); err != nil {
		return fail(err)
	}
	ev, err := id.WaitEvent(ctx)
	if err != nil {
		return fail(err)
	}
	if ev.Type != EventConnectResponse {
		return fail(fmt.Errorf("got %v (status %d), want CONNECT_RESPONSE", ev.Type, ev.Status))
	}
	return id, nil
}

// TestLabHalfOpenRequester: a requester that gets the CONNECT_RESPONSE
// and never sends the RTU does not hold up Listener.Accept: an honest
// requester behind it is served within a second, and when the half-open
// one gives up (its reject), Accept does not return it: the listener goes
// on serving, and Stats counts the drop.
func TestLabHalfOpenRequester(t *testing.T) {
	e := requireLab(t)
	if e.TwoNodes {
		t.Skip("one process plays both sides")
	}
	ctx := labtest.Context(t, 90*time.Second)
	dst := netip.AddrPortFrom(e.addr, labPortBase+42)
	l, err := Listen(ctx, dst.String(), &Options{AcceptTimeout: time.Hour, Logf: testLogf(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type accepted struct {
		c   *Conn
		err error
	}
	acc := make(chan accepted, 8)
	go func() {
		for {
			c, err := l.Accept(ctx)
			acc <- accepted{c, err}
			if err != nil {
				return
			}
		}
	}()
	ch, err := OpenChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	half, err := halfOpenConnect(ctx, ch, dst, 0x7a0001)
	if err != nil {
		t.Fatal(err)
	}
	defer half.Close()

	// honest dials and waits for its connection to come out of Accept,
	// within a second.
	honest := func(what string) {
		t.Helper()
		start := time.Now()
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := Dial(dctx, dst.String(), nil)
		if err != nil {
			t.Fatalf("%s: Dial: %v (listener %+v)", what, err, l.Stats())
		}
		defer c.Close()
		select {
		case a := <-acc:
			if a.err != nil {
				t.Fatalf("%s: Accept: %v", what, a.err)
			}
			a.c.Close()
		case <-time.After(time.Second - time.Since(start)):
			t.Fatalf("%s: not accepted within 1s (listener %+v)", what, l.Stats())
		}
		took := time.Since(start)
		t.Logf("%s: served in %v", what, took)
		if took > time.Second {
			t.Fatalf("%s: served in %v, want < 1s", what, took)
		}
	}
	honest("honest requester behind a half-open one")
	if s := l.Stats(); s.Pending != 1 || s.Accepted != 1 {
		t.Errorf("stats with one half-open requester held: %+v, want 1 pending, 1 accepted", s)
	}

	half.Close() // the half-open requester gives up: REJ
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Dropped == 0 && time.Now().Before(deadline) {
		select {
		case a := <-acc:
			t.Fatalf("Accept returned after the half-open requester's reject: %v, %v", a.c, a.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if s := l.Stats(); s.Dropped != 1 || s.Pending != 0 || s.TimedOut != 0 {
		t.Fatalf("stats after the half-open requester's reject: %+v, want 1 dropped, none pending", s)
	}
	honest("honest requester after the half-open one's reject")
	t.Logf("listener %+v", l.Stats())
}
