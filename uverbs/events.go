// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// read reads one event record into buf, parking the goroutine on the Go
// netpoller until the kernel has one or ctx is done. It fails with ErrClosed
// once the file is closed (the raw conn itself reports the poller's own
// "use of closed file", which is not os.ErrClosed).
//
// end, when not nil, ends the read as ctx does (a connection's lifetime).
//
// quiet, when not nil, is asked once, by the first attempt to read, whether
// the read may park without reading first (see CompChannel.WaitQuiet).
func (e *eventFile) read(ctx, end context.Context, buf []byte, quiet func() bool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.quiet = quiet
	defer func() { e.quiet = nil }()
	if err := e.readLocked(ctx, end, buf); err != nil {
		if e.closed.Load() || errors.Is(err, os.ErrClosed) {
			return ErrClosed
		}
		return err
	}
	return nil
}

func (e *eventFile) readLocked(ctx, end context.Context, buf []byte) error {
	e.buf = buf
	defer func() { e.buf = nil }()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if end != nil && end.Err() != nil {
			return context.Cause(end)
		}
		if e.woken.Swap(false) {
			if err := e.f.SetReadDeadline(time.Time{}); err != nil {
				return err
			}
		}
		e.watch(0, ctx)
		e.watch(1, end)
		// A registration kept from an earlier read may have fired before
		// the deadline was cleared: its context is done, so look again.
		if ctx.Err() != nil || end != nil && end.Err() != nil {
			continue
		}
		err := e.rc.Read(e.tryRead)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue // ctx or end is done (checked above) or a stale deadline fired
			}
			return err
		}
		if e.rerr != nil {
			return e.rerr
		}
		if e.n != len(buf) {
			return fmt.Errorf("event record of %d bytes, want %d: %w", e.n, len(buf), syscall.EIO)
		}
		return nil
	}
}

// watch arranges for a parked read to wake once ctx is done (slot 0 is the
// read's ctx, slot 1 its end). The registration (context.AfterFunc) is
// kept for the next read that passes a context with the same Done
// channel, so that a caller waiting again and again with one cancellable
// context (a connection's deadline, its lifetime) pays for it, and
// allocates, once; a nil ctx or one that can never be done
// (context.Background) drops the slot's registration and registers
// nothing. Close drops both.
func (e *eventFile) watch(slot int, ctx context.Context) {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	w := &e.watches[slot]
	if done != nil && done == w.done {
		return
	}
	if w.stop != nil {
		w.stop()
	}
	*w = eventWatch{}
	if done != nil {
		*w = eventWatch{done: done, stop: context.AfterFunc(ctx, e.wake)}
	}
}

// CompChannel is a completion channel (struct ibv_comp_channel): a file
// descriptor that becomes readable when an armed CQ attached to it gets a
// completion. Wait parks the goroutine on Go's netpoller, not a thread. Any
// number of CQs may share a channel. The caller must Close it after its CQs.
// Once it (or its Context) is closed, Wait and CreateCQ with it fail with
// ErrClosed: its fd number may already be another file's.
type CompChannel struct {
	ctx *Context
	fd  int
	ev  *eventFile
	uh  uint64
	rmu sync.Mutex // one reader at a time
	buf abi.CompEventDesc

	handleLock // read-held by CreateCQ while it passes fd
}

// CreateCompChannel is ibv_create_comp_channel.
func (c *Context) CreateCompChannel() (*CompChannel, error) {
	resp := new(abi.CreateCompChannelResp)
	req := abi.CreateCompChannel{Response: abi.PtrU64(unsafe.Pointer(resp))}
	if err := c.write(abi.IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return nil, fmt.Errorf("create comp channel: %w", err)
	}
	fd := int(int32(resp.FD))
	ev, err := newEventFile(fd, "completion channel")
	if err != nil {
		return nil, fmt.Errorf("create comp channel: %w", err)
	}
	ch := &CompChannel{ctx: c, fd: fd, ev: ev}
	uh, err := c.track(kindChannel, ch)
	if err != nil {
		ev.Close()
		return nil, fmt.Errorf("create comp channel: %w", err)
	}
	ch.uh = uh
	return ch, nil
}

// Context is the Context the channel was created on.
func (ch *CompChannel) Context() *Context { return ch.ctx }

// Wait is ibv_get_cq_event: it blocks until one of the channel's armed CQs
// has a completion and returns that CQ (now disarmed: Arm it again, then Poll).
// It returns ctx.Err() when ctx is done first.
func (ch *CompChannel) Wait(ctx context.Context) (*CQ, error) {
	return ch.wait(ctx, nil, nil)
}

// WaitQuiet is Wait for a caller that can tell, without a system call,
// that the channel holds no unread event: it then parks at once, sparing
// the read(2) that would fail with EAGAIN (C's ibv_get_cq_event blocks in
// that read instead; a goroutine must not). quiet is called once, after
// the netpoller has forgotten any earlier readiness of the channel (from
// then on only a new event wakes the parked read), and must return true
// only if no event can be queued: an event left unread with quiet true is
// never seen, and the wait ends only with ctx. A caller that armed every CQ
// on the channel, then polled nothing from them (nor did anyone else), and
// finds every ring empty (CQ.Ready false) inside quiet knows it: the kernel
// puts a completion in the ring before it queues the event. With quiet nil,
// or false, WaitQuiet is Wait.
func (ch *CompChannel) WaitQuiet(ctx context.Context, quiet func() bool) (*CQ, error) {
	return ch.wait(ctx, nil, quiet)
}

// wait is Wait that also ends when end (if not nil) is done, and parks
// before reading when quiet says so.
func (ch *CompChannel) wait(ctx, end context.Context, quiet func() bool) (*CQ, error) {
	ch.rmu.Lock()
	defer ch.rmu.Unlock()
	if err := ch.ev.read(ctx, end, abi.Bytes(&ch.buf), quiet); err != nil {
		return nil, fmt.Errorf("wait for completion event: %w", err)
	}
	cq, ok := ch.ctx.lookup(ch.buf.CQHandle).(*CQ)
	if !ok {
		return nil, fmt.Errorf("completion event for unknown CQ handle %d: %w", ch.buf.CQHandle, syscall.ENOENT)
	}
	cq.mu.Lock()
	cq.compEvents++
	cq.mu.Unlock()
	return cq, nil
}

// Close closes the channel's descriptor. CQs created with it keep the kernel
// object alive until they are destroyed, so close them first. It is
// idempotent.
func (ch *CompChannel) Close() error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.closed {
		return nil
	}
	ch.closed = true
	ch.ctx.forget(kindChannel, ch, ch.uh)
	if err := ch.ev.Close(); err != nil {
		return fmt.Errorf("close comp channel: %w", err)
	}
	return nil
}

// AsyncEvent is struct ibv_async_event: an error or state change the kernel
// reports outside the data path (a QP entering the error state, a port going
// down, an SRQ limit, ...). Exactly one of QP, CQ, SRQ is set for events about
// those objects; Port for port events.
type AsyncEvent struct {
	Type    EventType
	QP      *QP
	CQ      *CQ
	SRQ     *SRQ
	Port    int
	Element uint64 // the raw element: the object's user handle or the port
}

func (e AsyncEvent) String() string {
	switch {
	case e.QP != nil:
		return fmt.Sprintf("%v on QP %#x", e.Type, e.QP.num)
	case e.CQ != nil:
		return fmt.Sprintf("%v on a CQ", e.Type)
	case e.SRQ != nil:
		return fmt.Sprintf("%v on an SRQ", e.Type)
	case e.Type.element() == "port":
		return fmt.Sprintf("%v on port %d", e.Type, e.Port)
	}
	return fmt.Sprintf("%v (element %d)", e.Type, e.Element)
}

// WaitAsyncEvent is ibv_get_async_event: it blocks until the kernel reports an
// asynchronous event for this Context, or ctx is done. Events need no
// acknowledgement.
func (c *Context) WaitAsyncEvent(ctx context.Context) (AsyncEvent, error) {
	if c.isClosed() {
		return AsyncEvent{}, fmt.Errorf("wait async event: %w", ErrClosed)
	}
	if c.async == nil {
		return AsyncEvent{}, fmt.Errorf("wait async event: the kernel gave no async event fd: %w", ErrNotSupported)
	}
	var d abi.AsyncEventDesc
	if err := c.async.read(ctx, nil, abi.Bytes(&d), nil); err != nil {
		return AsyncEvent{}, fmt.Errorf("wait async event: %w", err)
	}
	ev := AsyncEvent{Type: EventType(d.EventType), Element: d.Element}
	switch ev.Type.element() {
	case "port":
		ev.Port = int(d.Element)
	default:
		switch o := c.lookup(d.Element).(type) {
		case *QP:
			ev.QP = o
		case *CQ:
			ev.CQ = o
		case *SRQ:
			ev.SRQ = o
		}
	}
	return ev, nil
}
