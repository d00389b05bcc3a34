// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/rdmago/rdmago/uverbs"
)

// Listener is a listening rdma_cm id (rdma_bind_addr + rdma_listen), like a
// net.Listener: Accept returns a Conn per incoming connection. The caller
// must Close it; closing it rejects the requests not yet accepted.
type Listener struct {
	id      *ID
	o       Options
	release func()
	addr    netip.AddrPort

	mu     sync.Mutex
	closed bool
	loop   *acceptLoop // Accept's, started by the first Accept
}

// Listen binds an RDMA_PS_TCP id to addr ("host:port"; an empty host or
// 0.0.0.0 listens on every RDMA device, port 0 picks a free port, which
// Addr reports) and starts listening. opts are used for every accepted
// connection (Options.Backlog and ReuseAddr for the listener itself;
// AcceptTimeout, MaxPendingAccepts, BusyRejectData and CheckRequest for
// its Accept).
func Listen(ctx context.Context, addr string, opts *Options) (*Listener, error) {
	return listen(ctx, addr, opts, PortSpaceTCP)
}

// ListenUD listens for RDMA_PS_UDP service resolution (SIDR) requests;
// Accept gives UD endpoints.
func ListenUD(ctx context.Context, addr string, opts *Options) (*Listener, error) {
	return listen(ctx, addr, opts, PortSpaceUDP)
}

func listen(ctx context.Context, addr string, opts *Options, ps PortSpace) (*Listener, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("cm: listen on %s: %w", addr, err)
	}
	// Every accept would carry PrivateData: check it now rather than have
	// each accept fail and each peer see only a rejection.
	if err := checkPrivateData("accept", ps, len(o.PrivateData)); err != nil {
		return nil, fmt.Errorf("cm: listen on %s: Options.PrivateData: %w", addr, err)
	}
	if err := checkPrivateData("reject", ps, len(o.BusyRejectData)); err != nil {
		return nil, fmt.Errorf("cm: listen on %s: Options.BusyRejectData: %w", addr, err)
	}
	ap, err := resolveAddrPort(ctx, addr)
	if err != nil {
		return nil, err
	}
	ch, release, err := o.acquireChannel()
	if err != nil {
		return nil, fmt.Errorf("cm: listen on %v: %w", ap, err)
	}
	id, err := ch.CreateID(ps)
	if err != nil {
		release()
		return nil, fmt.Errorf("cm: listen on %v: %w", ap, err)
	}
	fail := func(err error) (*Listener, error) {
		id.Close()
		release()
		return nil, err
	}
	o.logf("rdma_cm: created id %d (%v)", id.Handle(), ps)
	if o.ReuseAddr {
		if err := id.SetReuseAddr(true); err != nil {
			return fail(fmt.Errorf("cm: listen on %v: %w", ap, err))
		}
	}
	if err := id.Bind(ap); err != nil {
		return fail(err) // names the address
	}
	if err := id.Listen(o.Backlog); err != nil {
		return fail(fmt.Errorf("cm: listen on %v: %w", ap, err))
	}
	l := &Listener{id: id, o: o, release: release, addr: ap}
	if info, err := id.Query(); err == nil && info.Local.IsValid() {
		l.addr = info.Local
	}
	o.logf("rdma_cm: listening on %v", l.addr)
	return l, nil
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() netip.AddrPort { return l.addr }

// ID is the listening rdma_cm id.
func (l *Listener) ID() *ID { return l.id }

// Request is an incoming connection request: its ID and what the peer sent.
// Accept or Reject it.
type Request struct {
	ID     *ID
	Param  ConnParam // RC: the offered depths (seen from this side) and the private data (56 bytes, zero-padded)
	UD     UDParam   // UD: the SIDR request's private data
	l      *Listener
	hold   func()
	mu     sync.Mutex
	answer bool
}

// AcceptRequest waits for the next connection request (CONNECT_REQUEST),
// for the caller to Accept or Reject: rdma_get_request. The caller then
// has to bound each setup and keep a requester from holding up the others
// itself (see Accept). It fails once Accept was called: Accept reads the
// requests from then on.
func (l *Listener) AcceptRequest(ctx context.Context) (*Request, error) {
	l.mu.Lock()
	looping := l.loop != nil
	l.mu.Unlock()
	if looping {
		return nil, fmt.Errorf("rdma_cm accept on %v: AcceptRequest on a Listener whose Accept reads the requests: use one of them (Options.CheckRequest sees each request Accept reads)", l.addr)
	}
	return l.nextRequest(ctx)
}

// nextRequest is AcceptRequest without the check.
func (l *Listener) nextRequest(ctx context.Context) (*Request, error) {
	ev, err := l.id.GetRequest(ctx)
	if err != nil {
		if errors.Is(err, ErrClosed) {
			return nil, fmt.Errorf("rdma_cm accept on %v: %w", l.addr, ErrClosed)
		}
		return nil, fmt.Errorf("rdma_cm accept on %v: %w", l.addr, err)
	}
	l.o.logf("rdma_cm: event %v: new id %d (initiator depth %d, responder resources %d offered, %d bytes private data)",
		ev.Type, ev.ID.Handle(), ev.Param.InitiatorDepth, ev.Param.ResponderResources, len(ev.Param.PrivateData))
	return &Request{ID: ev.ID, Param: ev.Param, UD: ev.UD, l: l, hold: holdChannel(l.id.ch)}, nil
}

// Close stops listening: it destroys the listening id (the kernel discards
// requests not yet read), rejects and destroys the requests read but not
// accepted, and drops the connections Accept set up and nobody took.
// Connections already returned stay open. It is idempotent.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	lp := l.loop
	l.mu.Unlock()
	if lp != nil {
		lp.stop()
	}
	err := l.id.Close() // rejects and destroys the requests it held
	l.release()
	return err
}

// Reject refuses the request with data (at most 148 bytes; the peer's
// Dial fails with an *EventError for REJECTED carrying it) and destroys
// its ID.
func (r *Request) Reject(data []byte) error {
	r.mu.Lock()
	if r.answer {
		r.mu.Unlock()
		return fmt.Errorf("rdma_cm reject: the request was already answered: %w", ErrClosed)
	}
	r.answer = true
	r.mu.Unlock()
	err := r.ID.Reject(data, 0)
	if err == nil {
		r.l.o.logf("rdma_cm: rejected id %d with %d bytes private data", r.ID.Handle(), len(data))
	}
	err = errors.Join(err, r.ID.Close())
	r.hold()
	return err
}

// Accept sets up the request's QP and accepts it (rdma_accept): open the
// device, create the PD, CQs and QP, INIT, run Options.Setup, then RTR and
// RTS with the negotiated depths, send the REP and (RC) wait for
// ESTABLISHED. opts nil means the listener's. If setting up fails, the
// request is rejected so the peer does not wait for a timeout. The caller
// must Close the Conn.
func (r *Request) Accept(ctx context.Context, opts *Options) (*Conn, error) {
	c, _, err := r.accept(ctx, opts)
	return c, err
}

// accept is Accept; requester is true when the failure came from the
// requester's side: the REP could not be sent or ESTABLISHED did not come
// (it rejected, vanished, was unreachable, or ctx ended meanwhile).
func (r *Request) accept(ctx context.Context, opts *Options) (_ *Conn, requester bool, err error) {
	r.mu.Lock()
	if r.answer {
		r.mu.Unlock()
		return nil, false, fmt.Errorf("rdma_cm accept: the request was already answered: %w", ErrClosed)
	}
	r.answer = true
	r.mu.Unlock()
	o := r.l.o
	if opts != nil {
		o = opts.withDefaults()
		if o.Logf == nil {
			o.Logf = r.l.o.Logf
		}
	}
	if err := o.validate(); err != nil {
		r.ID.Reject(nil, 0)
		r.ID.Close()
		r.hold()
		return nil, false, fmt.Errorf("rdma_cm accept on %v: %w", r.l.addr, err)
	}
	c := newConn(r.ID, o, r.hold, r.ID.ps)
	sentAccept := false
	defer func() {
		if err != nil {
			if !sentAccept {
				r.ID.Reject(nil, 0)
			}
			c.abort()
			err = fmt.Errorf("rdma_cm accept on %v: %w", r.l.addr, err)
		}
	}()
	if err := checkPrivateData("accept", r.ID.ps, len(o.PrivateData)); err != nil {
		return nil, false, err
	}
	if err := c.setOptions(); err != nil {
		return nil, false, err
	}
	if err := c.setupVerbs(); err != nil {
		return nil, false, err
	}
	data, err := c.privateData("accept")
	if err != nil {
		return nil, false, err
	}
	p := ConnParam{
		PrivateData: data, QPNum: c.qp.Num(), SRQ: o.SRQ != nil,
		RetryCount: retryValue(o.RetryCount), RNRRetryCount: retryValue(o.RNRRetryCount),
	}
	if c.ud {
		c.peer = ConnParam{PrivateData: r.UD.PrivateData}
		o.logf("rdma_cm: accept UD request (qp %#x, qkey from the CM, %d bytes private data)", p.QPNum, len(p.PrivateData))
		sentAccept = true
		if err := r.ID.Accept(p); err != nil {
			return nil, true, err
		}
		c.established()
		return c, false, nil
	}
	c.peer = r.Param
	// librdmacm's rdma_accept: what the peer offers, capped by the device,
	// unless the caller chose.
	c.initDepth = uint8(min(int(r.Param.InitiatorDepth), max(c.dev.attr.MaxQPInitRdAtom, 0), 255))
	if o.InitiatorDepth > 0 {
		c.initDepth = uint8(o.InitiatorDepth)
	}
	c.respRes = uint8(min(int(r.Param.ResponderResources), max(c.dev.attr.MaxQPRdAtom, 0), 255))
	if o.ResponderResources > 0 {
		c.respRes = uint8(o.ResponderResources)
	}
	p.InitiatorDepth, p.ResponderResources = c.initDepth, c.respRes
	if err := c.modify(uverbs.QPSInit, nil); err != nil {
		return nil, false, err
	}
	if err := c.modify(uverbs.QPSRTR, func(a *uverbs.QPAttr) { a.MaxDestRdAtomic = c.respRes }); err != nil {
		return nil, false, err
	}
	if err := c.modify(uverbs.QPSRTS, func(a *uverbs.QPAttr) { a.MaxRdAtomic = c.initDepth; o.sendRNRRetry(a) }); err != nil {
		return nil, false, err
	}
	o.logf("rdma_cm: accept (qp %#x, initiator depth %d, responder resources %d, %d bytes private data)",
		p.QPNum, p.InitiatorDepth, p.ResponderResources, len(p.PrivateData))
	sentAccept = true
	if err := r.ID.Accept(p); err != nil {
		return nil, true, err
	}
	if _, err := r.ID.await(ctx, "accept", c.remote.String(), EventEstablished); err != nil {
		return nil, true, err
	}
	o.logf("rdma_cm: event %v: connection from %v", EventEstablished, c.remote)
	c.established()
	return c, false, nil
}
