// Copyright 2026 The rdmago Authors.

//go:build linux

package cm

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestLabListenBacklogBounded: many connection requests against a listener
// with a small backlog that accepts nothing. The requests beyond the
// backlog are rejected at once (REJECTED carrying BacklogFullData) and
// their kernel cm_ids destroyed, so the kernel holds the listener and the
// backlog, not one cm_id per request (before, 2,500 requests became 5,000
// cm_ids against a backlog of 1,024); closing the listener rejects the
// rest.
func TestLabListenBacklogBounded(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 240*time.Second)
	const backlog, n = 4, 32
	port, _ := strconv.Atoi(labPort(24))
	overflowed := make(chan struct{}) // one node: the client saw every overflow reject
	serve := func() error {
		ch, err := OpenChannel()
		if err != nil {
			return err
		}
		defer ch.Close()
		base := resources(t)["cm_id"]
		l, err := Listen(ctx, netip.AddrPortFrom(e.addr, uint16(port)).String(), &Options{Channel: ch, Backlog: backlog, ReuseAddr: true})
		if err != nil {
			return err
		}
		defer l.Close()
		for ch.Stats().Overflows < n-backlog {
			select {
			case <-ctx.Done():
				return fmt.Errorf("%d of %d requests rejected for the backlog (stats %+v)", ch.Stats().Overflows, n-backlog, ch.Stats())
			case <-time.After(20 * time.Millisecond):
			}
		}
		if !e.TwoNodes {
			select {
			case <-overflowed:
			case <-ctx.Done():
				return fmt.Errorf("the client did not see the overflow rejects: %w", ctx.Err())
			}
		}
		if q := l.ID().pending(); q != backlog {
			return fmt.Errorf("the listener queues %d requests, want its backlog of %d", q, backlog)
		}
		clientIDs := uint64(0)
		if !e.TwoNodes {
			clientIDs = n // the client's ids live in the same kernel
		}
		if got, want := resources(t)["cm_id"], base+1+backlog+clientIDs; got > want {
			return fmt.Errorf("the kernel holds %d cm_ids, want at most %d (listener, backlog of %d, %d client ids)", got, want, backlog, clientIDs)
		}
		t.Logf("server: %d requests rejected for the backlog; %d queued; cm_ids bounded", ch.Stats().Overflows, backlog)
		return l.Close() // rejects the queued requests
	}
	client := func() error {
		ch, err := OpenChannel()
		if err != nil {
			return err
		}
		defer ch.Close()
		dst := netip.AddrPortFrom(e.peer, uint16(port))
		connect := func(i int) (*ID, error) {
			id, err := ch.CreateID(PortSpaceTCP)
			if err != nil {
				return nil, err
			}
			if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst, 0); err != nil {
				id.Close()
				return nil, err
			}
			if err := id.ResolveRoute(ctx, 0); err != nil {
				id.Close()
				return nil, err
			}
			if err := id.Connect(ConnParam{QPNum: 0x100 + uint32(i), ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}); err != nil {
				id.Close()
				return nil, err
			}
			return id, nil
		}
		// The first request waits for the listener (the other node may
		// still be starting): nobody listening is rejected at once.
		var ids []*ID
		defer func() {
			for _, id := range ids {
				id.Close()
			}
		}()
		for {
			id, err := connect(0)
			if err != nil {
				return err
			}
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			ev, err := id.WaitEvent(wctx)
			cancel()
			if err != nil { // no answer: the request waits in the backlog
				ids = append(ids, id)
				break
			}
			id.Close()
			if ev.Type != EventRejected || RejectReason(ev.Status) != RejInvalidServiceID {
				return fmt.Errorf("first request: %v (status %d)", ev.Type, ev.Status)
			}
			time.Sleep(100 * time.Millisecond)
		}
		for i := 1; i < n; i++ {
			id, err := connect(i)
			if err != nil {
				return fmt.Errorf("request %d: %w", i, err)
			}
			ids = append(ids, id)
		}
		type answer struct {
			ev  Event
			err error
		}
		answers := make(chan answer, n)
		for _, id := range ids {
			go func() {
				ev, err := id.WaitEvent(ctx)
				answers <- answer{ev, err}
			}()
		}
		full, closing := 0, 0
		for i := 0; i < n; i++ {
			a := <-answers
			if a.err != nil {
				return fmt.Errorf("%d of %d requests answered (%d for the backlog): %w", i, n, full, a.err)
			}
			if a.ev.Type != EventRejected {
				return fmt.Errorf("request answered with %v, want REJECTED", a.ev.Type)
			}
			if bytes.HasPrefix(a.ev.Param.PrivateData, []byte(BacklogFullData)) {
				full++
				if full == n-backlog && !e.TwoNodes {
					close(overflowed)
				}
			} else {
				closing++
			}
		}
		if full != n-backlog || closing != backlog {
			return fmt.Errorf("%d requests rejected for the backlog and %d at the listener's close, want %d and %d", full, closing, n-backlog, backlog)
		}
		t.Logf("client: %d rejected at once (backlog full), %d at the listener's close", full, closing)
		return nil
	}
	e.RunRoles(t, serve, client)
}
