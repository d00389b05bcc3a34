// Copyright 2026 The rdmago Authors.

// A Conn's deadlines.

package rsocket

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// SetDeadline sets both deadlines; past ones make Read and Write fail with
// os.ErrDeadlineExceeded at once, the zero time removes them.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.isClosed() {
		return c.opErr("set read deadline", net.ErrClosed)
	}
	c.rdl.set(t)
	return nil
}

func (c *Conn) SetWriteDeadline(t time.Time) error {
	if c.isClosed() {
		return c.opErr("set write deadline", net.ErrClosed)
	}
	c.wdl.set(t)
	return nil
}

// deadline is a settable deadline: a context that ends when it passes (or
// when its parent ends), which a waiter in the completion channel hands
// to t.wait. Setting it ends the previous context, so a waiter wakes and
// picks up the new one.
type deadline struct {
	mu     sync.Mutex // serialises set
	parent context.Context
	cur    atomic.Pointer[deadlineCtx]
}

// deadlineCtx is one setting of a deadline: its context, and whether it has
// a time at all (the zero time makes a context that can end only with its
// parent, so expired need not ask it).
type deadlineCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
	timed  bool
}

func newDeadline(parent context.Context) *deadline {
	d := &deadline{parent: parent}
	ctx, cancel := context.WithCancel(parent)
	d.cur.Store(&deadlineCtx{ctx: ctx, cancel: cancel})
	return d
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cur.Load().cancel()
	n := &deadlineCtx{timed: !t.IsZero()}
	if n.timed {
		n.ctx, n.cancel = context.WithDeadline(d.parent, t)
	} else {
		n.ctx, n.cancel = context.WithCancel(d.parent)
	}
	d.cur.Store(n)
}

// stop ends the current context (its timer with it).
func (d *deadline) stop() { d.cur.Load().cancel() }

// wait is the context to wait with now: one atomic load, as Read and Write
// ask on every call.
func (d *deadline) wait() context.Context { return d.cur.Load().ctx }

// expired reports whether the deadline passed. Without a deadline it is
// false without asking the context (the parent, the connection's life,
// has none of its own and ends with Canceled).
func (d *deadline) expired() bool {
	cur := d.cur.Load()
	return cur.timed && cur.ctx.Err() == context.DeadlineExceeded
}
