// Copyright 2026 The rdmago Authors.

// How a Conn waits: the watch and drain goroutines, and the waits in the
// completion channel (one waiter, the others asleep on a wake).

package rsocket

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// watch is the connection's one background goroutine: it waits for the
// CM to report the connection gone (the peer's process died, or the
// device went away), ends the waits on the completion channel and fails
// the connection. Completions are not its business: whoever has to wait
// (Read, Write, Close, the drain after CloseRead) waits for them itself.
func (c *Conn) watch() {
	defer close(c.watchDone)
	select {
	case <-c.t.done():
	case <-c.closing:
		return
	}
	c.mu.Lock()
	c.cmGone = true
	c.progressLocked()
	if c.connected && !c.closed {
		c.failLocked(errReset)
	}
	c.mu.Unlock()
	c.endGone()
	c.wakeAll(nil)
}

// drain keeps the protocol going after CloseRead while nobody else may
// call in: the peer's data is dropped as it arrives (recvLocked), so the
// peer is not stalled. It ends with the connection or at Close.
func (c *Conn) drain() {
	defer close(c.drainDone)
	dl := newDeadline(c.live)
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.readShut && c.connected && !c.closed && !c.torn {
		c.progressLocked()
		if c.blockLocked(c.drainWake, dl, c.closing) == wokeStop {
			return
		}
	}
}

// wakeAll wakes every goroutine that may wait in blockLocked but own.
func (c *Conn) wakeAll(own chan struct{}) {
	for _, ch := range [...]chan struct{}{c.rdWake, c.wrWake, c.ctlWake, c.drainWake} {
		if ch == own {
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// What ended a wait.
const (
	wokeEvent = iota
	wokeDeadline
	wokeStop
)

// blockLocked waits for the connection to change. It arms the CQ first
// if it is not (and then only polls, for completions that came before:
// callers recheck their condition and call again). Then the first waiter
// sleeps in the completion channel itself (t.wait, parked on the
// netpoller: rs_get_comp's ibv_get_cq_event) until the event, dl or stop,
// and on waking handles the completions and wakes the others; anyone
// else waiting meanwhile sleeps on wake until that waiter is done. Either
// way mu is released while asleep; callers recheck their condition.
// dl is the waiter's deadline (Read's and Write's end when the CM ends the
// connection, too); stop, if not nil, ends the wait as well. It is not
// cm.Conn.Wait (uverbs.WaitCQs) on purpose: that polls outside c.mu and
// arms the CQ whenever it is empty, while here every poll happens under
// c.mu, in order with every other (two pollers would hand receive
// completions to the protocol out of order), and the CQ is armed only
// while a call has to sleep (a busy stream costs no events).
func (c *Conn) blockLocked(wake chan struct{}, dl *deadline, stop <-chan struct{}) int {
	if c.torn {
		return wokeStop
	}
	if c.pollTime > 0 {
		if c.spinLocked() {
			return wokeEvent
		}
	}
	if !c.armed && !c.cmGone {
		if err := c.t.arm(); err != nil {
			c.failLocked(fmt.Errorf("arm completion queue: %w", err))
			return wokeEvent
		}
		c.armed = true
		c.armEvents = c.events
		c.progressLocked()
		return wokeEvent
	}
	if c.waiting || c.cmGone || c.closed && c.unsigN > 0 {
		return c.sleepLocked(wake, dl, stop)
	}
	ctx := dl.wait()
	var quiet func() bool
	if c.events == c.armEvents {
		// Nothing polled since the CQ was armed: no event can be queued
		// unless a completion has come since (quietWait looks).
		quiet, c.quietAt = c.quiet, c.polls.Load()
	}
	c.waiting = true
	c.mu.Unlock()
	err := c.t.wait(ctx, quiet)
	c.mu.Lock()
	c.waiting = false
	r := wokeEvent
	switch {
	case err == nil:
		c.armed = false
		c.wakes++
		c.progressLocked()
	case ctx.Err() == nil:
		// Not the context: the channel itself failed.
		if !c.torn && !c.closed {
			c.failLocked(fmt.Errorf("wait for completions: %w", err))
		}
	default:
		r = c.endedBy(ctx, stop)
	}
	// Whoever else waits rechecks, and one of them takes over the wait
	// if the CQ is still armed. Nobody else waits in the common case (one
	// reader or one writer): no wake then, its channel sends cost more
	// than the rest of the call.
	if c.sleepers > 0 {
		c.wakeAll(wake)
	}
	return r
}

// quietWait is the waiter's quiet (see transport.wait), called without mu
// once the channel's old readiness is forgotten. The waiter checked, under
// mu, that no completion was taken since the CQ was armed (so every event
// the arm can raise is for a completion still in the CQ or yet to come); the
// channel then holds no event if the CQ is empty now and nobody has polled
// since the waiter let go of mu. The kernel puts a completion in the CQ
// before it queues the event; a poller counts itself (polls) before it
// polls. So the CQ is looked at first: a completion taken from it before
// that look was counted before the count is read here.
func (c *Conn) quietWait() bool {
	return !c.t.ready() && c.polls.Load() == c.quietAt
}

// sleepLocked is blockLocked for a goroutine that does not wait in the
// channel: another does (and wakes it), or the CM ended the connection,
// after which the QP's flushed work is polled every millisecond until
// Close, or Close waits for unsignalled sends, which raise no event (it
// looks at the send queue every millisecond).
func (c *Conn) sleepLocked(wake chan struct{}, dl *deadline, stop <-chan struct{}) int {
	var tick <-chan time.Time
	if c.cmGone || c.closed && c.unsigN > 0 {
		tick = time.After(time.Millisecond)
	}
	ctx := dl.wait()
	c.sleepers++
	c.mu.Unlock()
	r := wokeEvent
	select {
	case <-wake:
	case <-tick:
	case <-ctx.Done():
		r = c.endedBy(ctx, stop)
	case <-stop:
		r = wokeStop
	}
	c.mu.Lock()
	c.sleepers--
	c.progressLocked()
	return r
}

// endedBy says why a wait with the deadline context ctx ended early: the
// deadline passed, stop closed, or (wokeEvent: recheck) the deadline was
// changed or the CM ended the connection.
func (c *Conn) endedBy(ctx context.Context, stop <-chan struct{}) int {
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return wokeDeadline
	case isClosed(stop):
		return wokeStop
	}
	return wokeEvent
}

// spinLocked polls for up to pollTime (librdmacm's polling_time) before a
// wait sleeps; it reports whether a completion arrived.
func (c *Conn) spinLocked() bool {
	start, before := time.Now(), c.events
	for time.Since(start) < c.pollTime {
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
		if c.torn {
			return false
		}
		c.progressLocked()
		if c.events != before || !c.connected {
			return true
		}
	}
	return false
}

// waitSendLocked waits for credits, a peer buffer and send ring space.
func (c *Conn) waitSendLocked() {
	c.progressLocked()
	if !c.canSendLocked() && c.writable {
		c.blockLocked(c.wrWake, c.wdl, c.closing)
	}
}

// ctrlAvailWait waits for a free control slot; false if the connection
// ended or dl/stop fired first.
func (c *Conn) ctrlAvailWait(dl *deadline, stop <-chan struct{}) bool {
	for !c.ctrlAvail() {
		if !c.connected {
			return false
		}
		if r := c.blockLocked(c.ctlWake, dl, stop); r != wokeEvent {
			return false
		}
	}
	return c.connected
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
