// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"context"
	"fmt"
	"time"

	"syscall"
)

// Wait is the one completion wait: it copies up to len(wcs) completions of
// cq into wcs and returns how many, as soon as there is at least one. It
// polls first, and returns at once, with no system call and no allocation,
// when completions are already in the ring. Only an empty CQ is armed
// (ibv_req_notify_cq) and polled again, since a completion that arrived
// before the arming raises no event, and then the goroutine sleeps on the
// CQ's completion channel (ibv_get_cq_event, parked on Go's netpoller, not
// a thread) until the CQ or another CQ of the channel fires, and polls
// again. The sleep allocates nothing of its own: a ctx or end that can
// be cancelled adds what context.AfterFunc allocates to wake it, once
// while the same ones (the same Done channels) are passed again. A CQ
// created without a channel is polled, yielding the processor between
// empty polls. Wait returns an error wrapping ctx.Err() once ctx is
// done and the CQ is empty, and ErrClosed once the CQ is closed.
//
// Wait needs Linux 5.10+ with rdma_rxe, as the rest of the package. One
// goroutine at a time may wait on a CQ; goroutines that wait at once on
// different CQs should not share a completion channel (one may take the
// other's event, as with ibv_get_cq_event). The event needs no
// acknowledgement. See cm.Conn.Wait for a wait that also ends when the
// connection does.
func (cq *CQ) Wait(ctx context.Context, wcs []WC) (int, error) {
	cqs := [1]*CQ{cq}
	n, _, err := WaitCQs(ctx, nil, wcs, cqs[:]...)
	return n, err
}

// WaitCQs is Wait over several CQs that share one completion channel (or
// none), such as a connection's send and receive CQs: it returns the
// completions of the first CQ, in the order given, that has any, and that
// CQ. end, when not nil, also ends the wait, as ctx does, but the error
// then wraps context.Cause(end): a connection's lifetime, cancelled with
// the reason it ended, ends every wait on its CQs (cm.Conn.Wait passes
// it). Completions already in the rings are returned first, even once ctx
// or end is done.
func WaitCQs(ctx, end context.Context, wcs []WC, cqs ...*CQ) (int, *CQ, error) {
	if len(wcs) == 0 || len(cqs) == 0 {
		return 0, nil, fmt.Errorf("wait for completions: need room for one completion and one CQ: %w", syscall.EINVAL)
	}
	ch := cqs[0].channel
	for _, cq := range cqs[1:] {
		if cq.channel != ch {
			return 0, nil, fmt.Errorf("wait for completions: the CQs have different completion channels (wait on each alone): %w", syscall.EINVAL)
		}
	}
	for spins := 0; ; spins++ {
		for _, cq := range cqs {
			if n := cq.Poll(wcs); n > 0 {
				return n, cq, nil
			}
		}
		if err := waitDone(ctx, end, cqs); err != nil {
			return 0, nil, err
		}
		if ch == nil {
			if spins >= 100 {
				time.Sleep(20 * time.Microsecond)
			}
			continue
		}
		for _, cq := range cqs {
			if err := cq.Arm(false); err != nil {
				return 0, nil, fmt.Errorf("wait for completions: %w", err)
			}
		}
		for _, cq := range cqs {
			if n := cq.Poll(wcs); n > 0 {
				return n, cq, nil
			}
		}
		if _, err := ch.wait(ctx, end, nil); err != nil {
			if ctx.Err() != nil || end != nil && end.Err() != nil {
				continue // poll once more, then say why
			}
			return 0, nil, err
		}
	}
}

// waitDone is why a wait on empty CQs must end, or nil.
func waitDone(ctx, end context.Context, cqs []*CQ) error {
	for _, cq := range cqs {
		if cq.gone() {
			return fmt.Errorf("wait for completions: %w", ErrClosed)
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("wait for completions: %w", err)
	}
	if end != nil && end.Err() != nil {
		return fmt.Errorf("wait for completions: %w", context.Cause(end))
	}
	return nil
}
