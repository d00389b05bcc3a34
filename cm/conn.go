// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rdmago/rdmago/internal/retry"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/uverbs"
)

// Conn is an rdma_cm connection with its verbs objects: an RC connection
// from Dial or Accept, or a UD endpoint from DialUD or an RDMA_PS_UDP
// listener. It owns its PD, CQs, completion channel and QP unless Options
// named the caller's; QP, SendCQ, RecvCQ and PD expose them for the data
// path. Done is closed when the peer disconnects or the device goes away.
//
// The caller must Close it: Close disconnects gracefully, waits (bounded)
// for the CM to confirm, drains flushed completions and destroys the QP,
// CQs, channel, memory regions registered with RegMR, PD and rdma_cm id, in
// that order.
type Conn struct {
	id      *ID
	o       Options
	release func() // the channel hold
	dev     *device
	ud      bool

	pd      *uverbs.PD
	sendCQ  *uverbs.CQ
	recvCQ  *uverbs.CQ
	compCh  *uverbs.CompChannel
	qp      *uverbs.QP
	ownPD   bool
	ownCQs  bool
	ownChan bool

	local, remote netip.AddrPort
	port          uint8
	peer          ConnParam // the peer's connect or accept parameters
	initDepth     uint8
	respRes       uint8

	// UD: the peer's QP as the CM resolved it (active side).
	remoteQPN  uint32
	remoteQKey uint32
	ah         *uverbs.AH

	mrMu       sync.Mutex
	mrs        []*uverbs.MR
	stateMu    sync.Mutex
	done       chan struct{}
	doneErr    error
	life       context.Context         // cancelled with doneErr when done closes
	endLife    context.CancelCauseFunc // called with doneErr
	estab      bool
	closeOnce  sync.Once
	closeErr   error
	closedFlag bool
}

// Dial is rdma_connect's whole dance for an RC connection to addr
// ("host:port"): create an RDMA_PS_TCP id, resolve the address and the
// route, open the device, create the PD, CQs and QP, move the QP to INIT,
// run Options.Setup, send the request, and on CONNECT_RESPONSE move the QP
// to RTR and RTS and send the RTU. Failures are *EventError values naming
// the event: ErrNoListener/ErrRejected, ErrUnreachable, ErrAddrResolution,
// ErrRouteResolution; Options.WaitForListener retries ErrNoListener until
// ctx ends. It needs Linux 5.10+ (uverbs' minimum for rxe) with rdma_ucm
// (tested on 6.1 and 6.12). The caller must Close the Conn.
func Dial(ctx context.Context, addr string, opts *Options) (*Conn, error) {
	dst, err := resolveAddrPort(ctx, addr)
	if err != nil {
		return nil, err
	}
	return DialAddr(ctx, dst, opts)
}

// DialAddr is Dial to an address already parsed.
func DialAddr(ctx context.Context, dst netip.AddrPort, opts *Options) (*Conn, error) {
	return dialWaiting(ctx, dst, opts, PortSpaceTCP)
}

// dialWaiting is dial, repeated while nothing listens when
// Options.WaitForListener asks for it.
func dialWaiting(ctx context.Context, dst netip.AddrPort, opts *Options, ps PortSpace) (*Conn, error) {
	if opts == nil || !opts.WaitForListener {
		return dial(ctx, dst, opts, ps)
	}
	return retryNoListener(ctx, func() (*Conn, error) { return dial(ctx, dst, opts, ps) })
}

// Back-off bounds of Options.WaitForListener.
const (
	listenerRetryMin = 10 * time.Millisecond
	listenerRetryMax = time.Second
)

// retryNoListener calls try until it returns anything but ErrNoListener or
// ctx ends, waiting between tries from listenerRetryMin, doubling up to
// listenerRetryMax.
func retryNoListener(ctx context.Context, try func() (*Conn, error)) (*Conn, error) {
	var c *Conn
	err, ctxErr := retry.Backoff(ctx, listenerRetryMin, listenerRetryMax,
		func(err error) bool { return errors.Is(err, ErrNoListener) },
		func() (err error) { c, err = try(); return err })
	if ctxErr != nil {
		return nil, errors.Join(err, ctxErr)
	}
	return c, err
}

// DialUD resolves the RDMA_PS_UDP service at addr (rdma_connect on a UDP
// id: an IB CM SIDR exchange): on success the Conn's UD QP is in RTS and
// RemoteQPN, RemoteQKey and AH say where to send datagrams. The caller must
// Close it.
func DialUD(ctx context.Context, addr string, opts *Options) (*Conn, error) {
	dst, err := resolveAddrPort(ctx, addr)
	if err != nil {
		return nil, err
	}
	return dialWaiting(ctx, dst, opts, PortSpaceUDP)
}

func dial(ctx context.Context, dst netip.AddrPort, opts *Options, ps PortSpace) (_ *Conn, err error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if !dst.IsValid() || dst.Addr().IsUnspecified() || dst.Port() == 0 {
		return nil, fmt.Errorf("cm: dial %v: need a destination address and a non-zero port", dst)
	}
	if err := checkPrivateData("connect", ps, len(o.PrivateData)); err != nil {
		return nil, err
	}
	ch, release, err := o.acquireChannel()
	if err != nil {
		return nil, err
	}
	id, err := ch.CreateID(ps)
	if err != nil {
		release()
		return nil, err
	}
	c := newConn(id, o, release, ps)
	defer func() {
		if err != nil {
			c.abort()
		}
	}()
	o.logf("rdma_cm: created id %d (%v)", id.Handle(), ps)
	if err := c.setOptions(); err != nil {
		return nil, err
	}
	what := dst.String()
	o.logf("rdma_cm: resolving address %v (timeout %v)", dst, timeoutOrDefault(o.ResolveTimeout))
	if err := id.ResolveAddr(ctx, o.Source, dst, o.ResolveTimeout); err != nil {
		return nil, err
	}
	o.logf("rdma_cm: event %v", EventAddrResolved)
	if err := id.ResolveRoute(ctx, o.ResolveTimeout); err != nil {
		return nil, withAddr(err, what)
	}
	o.logf("rdma_cm: event %v", EventRouteResolved)
	if err := c.setupVerbs(); err != nil {
		return nil, err
	}
	data, err := c.privateData("connect")
	if err != nil {
		return nil, err
	}
	p := ConnParam{
		PrivateData: data, QPNum: c.qp.Num(), SRQ: o.SRQ != nil,
		RetryCount: retryValue(o.RetryCount), RNRRetryCount: retryValue(o.RNRRetryCount),
	}
	if !c.ud {
		c.initDepth = c.depth(o.InitiatorDepth, c.dev.attr.MaxQPInitRdAtom)
		c.respRes = c.depth(o.ResponderResources, c.dev.attr.MaxQPRdAtom)
		p.InitiatorDepth, p.ResponderResources = c.initDepth, c.respRes
	}
	o.logf("rdma_cm: connect to %v (qp %#x, initiator depth %d, responder resources %d, retry %d, rnr retry %d, %d bytes private data)",
		dst, p.QPNum, p.InitiatorDepth, p.ResponderResources, p.RetryCount, p.RNRRetryCount, len(p.PrivateData))
	if err := id.Connect(p); err != nil {
		return nil, err
	}
	if c.ud {
		ev, err := id.await(ctx, "resolve UD service", what, EventEstablished)
		if err != nil {
			return nil, err
		}
		o.logf("rdma_cm: event %v: remote qpn %#x qkey %#x", ev.Type, ev.UD.QPNum, ev.UD.QKey)
		c.remoteQPN, c.remoteQKey = ev.UD.QPNum, ev.UD.QKey
		c.peer = ConnParam{PrivateData: ev.UD.PrivateData, QPNum: ev.UD.QPNum, QKey: ev.UD.QKey}
		ahAttr := ev.UD.AHAttr
		if c.ah, err = c.pd.CreateAH(ahAttr); err != nil {
			return nil, fmt.Errorf("cm: dial %s: %w", what, err)
		}
		o.logf("verbs: created AH to %v (sgid index %d, hop limit %d)", ahAttr.GRH.DGID, ahAttr.GRH.SGIDIndex, ahAttr.GRH.HopLimit)
		c.established()
		return c, nil
	}
	ev, err := id.await(ctx, "connect", what, EventConnectResponse)
	if err != nil {
		return nil, err
	}
	c.peer = ev.Param
	o.logf("rdma_cm: event %v (peer qp %#x, initiator depth %d, responder resources %d granted, %d bytes private data)",
		ev.Type, ev.Param.QPNum, ev.Param.InitiatorDepth, ev.Param.ResponderResources, len(ev.Param.PrivateData))
	// As librdmacm's ucma_process_conn_resp: INIT again (the first INIT had
	// no remote access rights), then RTR and RTS, then the RTU.
	for _, st := range []uverbs.QPState{uverbs.QPSInit, uverbs.QPSRTR} {
		if err := c.modify(st, nil); err != nil {
			return nil, c.rejectAfter(err)
		}
	}
	if err := c.modify(uverbs.QPSRTS, o.sendRNRRetry); err != nil {
		return nil, c.rejectAfter(err)
	}
	if err := id.Establish(); err != nil {
		return nil, c.rejectAfter(err)
	}
	o.logf("rdma_cm: sent RTU; connection to %v established", dst)
	c.established()
	return c, nil
}

// rejectAfter moves the QP to the error state after a failure past
// CONNECT_RESPONSE, as librdmacm does (the kernel rejects the connection
// when the id is destroyed).
func (c *Conn) rejectAfter(err error) error {
	if c.qp != nil {
		c.qp.ModifyToErr()
	}
	return err
}

func timeoutOrDefault(d time.Duration) time.Duration {
	if d <= 0 {
		return 2 * time.Second
	}
	return d
}

func withAddr(err error, addr string) error {
	var ee *EventError
	if errors.As(err, &ee) && ee.Addr == "" {
		ee.Addr = addr
	}
	return err
}

func newConn(id *ID, o Options, release func(), ps PortSpace) *Conn {
	c := &Conn{id: id, o: o, release: release, ud: ps.ud(), done: make(chan struct{})}
	c.life, c.endLife = context.WithCancelCause(context.Background())
	return c
}

// end records why the connection ended, closes Done and cancels the waits
// (stateMu held, doneErr nil before).
func (c *Conn) end(err error) {
	c.doneErr = err
	close(c.done)
	c.endLife(err)
}

func (c *Conn) setOptions() error {
	if c.o.TOS != 0 {
		if err := c.id.SetTOS(c.o.TOS); err != nil {
			return err
		}
		c.o.logf("rdma_cm: set RDMA_OPTION_ID_TOS %#x", c.o.TOS)
	}
	if c.o.AckTimeout != 0 {
		if err := c.id.SetAckTimeout(c.o.AckTimeout); err != nil {
			return err
		}
		c.o.logf("rdma_cm: set RDMA_OPTION_ID_ACK_TIMEOUT %d", c.o.AckTimeout)
	}
	return nil
}

// depth is the RDMA READ/atomic depth to offer: want if set, else the
// device's maximum (librdmacm's RDMA_MAX_INIT_DEPTH/RDMA_MAX_RESP_RES).
func (c *Conn) depth(want, devMax int) uint8 {
	if want > 0 {
		return uint8(want)
	}
	return uint8(min(max(devMax, 0), 255))
}

// setupVerbs opens the device the ID resolved to and creates (or adopts)
// the PD, completion channel, CQs and QP, and moves the QP to INIT.
func (c *Conn) setupVerbs() error {
	o := &c.o
	info, err := c.id.Query()
	if err != nil {
		return err
	}
	c.local, c.remote, c.port = info.Local, info.Remote, uint8(info.Port)
	var dev *device
	if o.PD != nil {
		dev, err = callerDevice(info, o.PD.Context())
	} else {
		dev, err = acquireDevice(info)
	}
	if err != nil {
		return err
	}
	c.dev = dev
	o.logf("verbs: device %s (index %d, node GUID %s) port %d; local %v, remote %v", dev.name, info.DevIndex, sysfs.GUID(info.NodeGUID), info.Port, c.local, c.remote)
	ctx := dev.ctx
	if o.PD != nil {
		c.pd = o.PD
	} else {
		if c.pd, err = ctx.AllocPD(); err != nil {
			return err
		}
		c.ownPD = true
		o.logf("verbs: allocated PD")
	}
	if o.SendCQ != nil {
		c.sendCQ, c.recvCQ, c.compCh = o.SendCQ, o.RecvCQ, o.CompChannel
	} else {
		if o.CompChannel != nil {
			c.compCh = o.CompChannel
		} else if !o.NoCompChannel {
			if c.compCh, err = ctx.CreateCompChannel(); err != nil {
				return err
			}
			c.ownChan = true
			o.logf("verbs: created completion channel")
		}
		cqOpts := &uverbs.CQOptions{Channel: c.compCh}
		c.ownCQs = true
		if o.SeparateCQs {
			ssize, rsize := o.SendDepth, o.RecvDepth
			if o.CQSize > 0 {
				ssize, rsize = o.CQSize, o.CQSize
			}
			if c.sendCQ, err = ctx.CreateCQ(ssize, cqOpts); err != nil {
				return err
			}
			if c.recvCQ, err = ctx.CreateCQ(rsize, cqOpts); err != nil {
				return err
			}
			o.logf("verbs: created send CQ (%d entries) and receive CQ (%d entries)", c.sendCQ.CQE(), c.recvCQ.CQE())
		} else {
			size := o.CQSize
			if size <= 0 {
				size = o.SendDepth + o.RecvDepth
			}
			if c.sendCQ, err = ctx.CreateCQ(size, cqOpts); err != nil {
				return err
			}
			c.recvCQ = c.sendCQ
			o.logf("verbs: created CQ (%d entries) for sends and receives", c.sendCQ.CQE())
		}
	}
	typ := uverbs.QPTypeRC
	if c.ud {
		typ = uverbs.QPTypeUD
	}
	qp, err := c.pd.CreateQP(uverbs.QPInitAttr{
		Type: typ, SendCQ: c.sendCQ, RecvCQ: c.recvCQ, SRQ: o.SRQ, SigAll: o.SigAll,
		Cap: uverbs.QPCap{MaxSendWR: o.SendDepth, MaxRecvWR: o.RecvDepth, MaxSendSGE: o.MaxSendSGE,
			MaxRecvSGE: o.MaxRecvSGE, MaxInlineData: o.MaxInline},
	})
	if err != nil {
		return err
	}
	c.qp = qp
	cp := qp.Cap()
	o.logf("verbs: created %v QP %#x (send %d×%d SGE, receive %d×%d SGE, inline %d)", typ, qp.Num(),
		cp.MaxSendWR, cp.MaxSendSGE, cp.MaxRecvWR, cp.MaxRecvSGE, cp.MaxInlineData)
	if err := c.modify(uverbs.QPSInit, nil); err != nil {
		return err
	}
	if c.ud {
		// librdmacm's ucma_init_ud_qp: a UD QP goes straight to RTS.
		if err := c.modifyTo(&uverbs.QPAttr{State: uverbs.QPSRTR}, uverbs.QPAttrState); err != nil {
			return err
		}
		if err := c.modifyTo(&uverbs.QPAttr{State: uverbs.QPSRTS, SQPSN: 0}, uverbs.QPAttrState|uverbs.QPAttrSQPSN); err != nil {
			return err
		}
	}
	if o.Setup != nil {
		if err := o.Setup(c); err != nil {
			return fmt.Errorf("cm: setup: %w", err)
		}
	}
	return nil
}

// privateData is what goes with the connect or accept (op): the result
// of Options.PrivateDataFunc, which runs now that the QP exists, or
// Options.PrivateData.
func (c *Conn) privateData(op string) ([]byte, error) {
	if c.o.PrivateDataFunc == nil {
		return c.o.PrivateData, nil
	}
	data, err := c.o.PrivateDataFunc(c)
	if err != nil {
		return nil, fmt.Errorf("cm: private data for the %s: %w", op, err)
	}
	if err := checkPrivateData(op, c.id.ps, len(data)); err != nil {
		return nil, fmt.Errorf("cm: Options.PrivateDataFunc: %w", err)
	}
	return data, nil
}

// modify moves the QP to state with the attributes the CM computes
// (rdma_init_qp_attr + ibv_modify_qp); adjust may change them first.
func (c *Conn) modify(state uverbs.QPState, adjust func(*uverbs.QPAttr)) error {
	attr, mask, err := c.id.InitQPAttr(state)
	if err != nil {
		return err
	}
	if adjust != nil {
		adjust(&attr)
	}
	return c.modifyTo(&attr, mask)
}

func (c *Conn) modifyTo(attr *uverbs.QPAttr, mask uverbs.QPAttrMask) error {
	if err := c.qp.Modify(attr, mask); err != nil {
		return err
	}
	switch attr.State {
	case uverbs.QPSInit:
		c.o.logf("verbs: QP %#x -> %v (%s; port %d, access %v, qkey %#x)", c.qp.Num(), attr.State, maskString(mask), attr.Port, attr.AccessFlags, attr.QKey)
	case uverbs.QPSRTR:
		c.o.logf("verbs: QP %#x -> %v (%s; dest qp %#x, rq psn %#x, mtu %v, max dest rd atomic %d, dgid %v)", c.qp.Num(), attr.State, maskString(mask),
			attr.DestQPN, attr.RQPSN, attr.PathMTU, attr.MaxDestRdAtomic, attr.AH.GRH.DGID)
	case uverbs.QPSRTS:
		c.o.logf("verbs: QP %#x -> %v (%s; sq psn %#x, timeout %d, retry %d, rnr retry %d, max rd atomic %d)", c.qp.Num(), attr.State, maskString(mask),
			attr.SQPSN, attr.Timeout, attr.RetryCnt, attr.RNRRetry, attr.MaxRdAtomic)
	default:
		c.o.logf("verbs: QP %#x -> %v (%s)", c.qp.Num(), attr.State, maskString(mask))
	}
	return nil
}

// established marks the connection up and starts reacting to its events.
func (c *Conn) established() {
	c.stateMu.Lock()
	c.estab = true
	c.stateMu.Unlock()
	// Events that came before the hook was installed: setHook reads them
	// under the same lock as push reads the hook, so each is seen by
	// exactly one of the two.
	disc, rem := c.id.setHook(c.onEvent)
	if disc {
		c.onEvent(Event{Type: EventDisconnected})
	}
	if rem {
		c.onEvent(Event{Type: EventDeviceRemoval})
	}
}

// onEvent runs on the channel goroutine for the events of an established
// connection: a DISCONNECTED or DEVICE_REMOVAL ends it, moves the QP to
// the error state (so outstanding work flushes and a waiting reader wakes),
// answers a peer's disconnect request, and closes Done.
func (c *Conn) onEvent(ev Event) {
	switch ev.Type {
	case EventDisconnected, EventDeviceRemoval:
	default:
		c.o.logf("rdma_cm: event %v", ev)
		return
	}
	c.stateMu.Lock()
	first := c.doneErr == nil
	if first {
		c.end(eventError("connection", c.remote.String(), ev))
	} else if ev.Type == EventDeviceRemoval && errors.Is(c.doneErr, ErrDisconnected) {
		// The removal may make the peer (on the same device) disconnect
		// first; the removal is what the caller must act on.
		c.doneErr = eventError("connection", c.remote.String(), ev)
	}
	closing := c.closedFlag
	c.stateMu.Unlock()
	if ev.Type == EventDeviceRemoval && c.dev != nil {
		c.dev.markDead()
	}
	if !first {
		return
	}
	if !closing {
		c.o.logf("rdma_cm: event %v: the connection ended", ev)
	}
	if c.qp != nil {
		// Racing Close is fine: once the QP is closed this is ErrClosed
		// and reaches no kernel object.
		c.qp.ModifyToErr()
	}
	if ev.Type == EventDisconnected && !closing && !c.ud {
		// Answer the peer's DREQ with a DREP now, as a TCP stack ACKs a
		// FIN: the peer's Close then completes without waiting for this
		// side's Close (the IB CM sends the DREP only on rdma_disconnect
		// or destroy).
		c.id.Disconnect()
	}
}

// Done is closed when the connection ends by the peer's disconnect or the
// device's removal (Err says which), or by Close.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Wait is uverbs.WaitCQs on the connection's CQs (cqs; none means SendCQ
// and RecvCQ) that also ends when the connection does: it returns the
// completions of the first of them that has any, at once and with no
// system call when they are already in the ring, and otherwise arms the
// CQs and sleeps on the completion channel (polls, with NoCompChannel).
// Once the peer disconnects, the device goes away or the connection is
// closed, it still returns what the rings hold (the flushes of posted work
// come as IBV_WC_WR_FLUSH_ERR completions), and on empty CQs it fails with
// an error wrapping Err: errors.Is(err, ErrDisconnected),
// ErrDeviceRemoved or ErrClosed. A wait on an empty CQ thus ends when the
// connection does, not at ctx's deadline, whether or not anything was
// posted. One goroutine at a time may wait on the connection's channel.
//
// The peer's disconnect can overtake a completion: the connection moves
// the QP to the error state on DISCONNECTED, and a device that completes
// work asynchronously (rxe on Linux 6.12 completes sends from a work
// queue) then flushes a send whose acknowledgement had arrived. So a send
// that fails with IBV_WC_WR_FLUSH_ERR, or whose wait ends with
// ErrDisconnected, after the peer disconnected may have been delivered:
// in an exchange where the peer answers each message, its answer (already
// in the receive CQ if it came) is the proof; after the last message the
// disconnect is the peer's own end.
//
// A CQ shared by several connections (Options.SendCQ and RecvCQ, or an
// SRQ's CQ) holds the completions of all of them: Wait on one Conn returns
// whichever completions come first, from any QP (WC.QPNum says whose:
// compare it with Conn.QP().Num()), and ends only when that one Conn ends.
// Drive such a CQ from one goroutine with uverbs.WaitCQs (or CQ.Wait) and
// a context of its own, dispatch each completion by WC.QPNum, and notice a
// peer leaving from its Conn's Done channel (Err says why): its QP then
// enters the error state and its posted work, including the receives it
// took from an SRQ, completes as IBV_WC_WR_FLUSH_ERR with its QPNum.
func (c *Conn) Wait(ctx context.Context, wcs []uverbs.WC, cqs ...*uverbs.CQ) (int, *uverbs.CQ, error) {
	if len(cqs) == 0 {
		both := [2]*uverbs.CQ{c.sendCQ, c.recvCQ}
		cqs = both[:1]
		if c.recvCQ != c.sendCQ {
			cqs = both[:]
		}
	}
	return uverbs.WaitCQs(ctx, c.life, wcs, cqs...)
}

// Err returns why Done was closed: an *EventError for DISCONNECTED
// (ErrDisconnected) or DEVICE_REMOVAL (ErrDeviceRemoved; it replaces a
// DISCONNECTED that came first), ErrClosed after Close, or nil while the
// connection is up.
func (c *Conn) Err() error {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.doneErr
}

// ID is the connection's rdma_cm id.
func (c *Conn) ID() *ID { return c.id }

// QP is the connection's queue pair, in RTS.
func (c *Conn) QP() *uverbs.QP { return c.qp }

// PD is the protection domain the QP belongs to; register memory on it.
func (c *Conn) PD() *uverbs.PD { return c.pd }

// SendCQ is the CQ of the QP's sends.
func (c *Conn) SendCQ() *uverbs.CQ { return c.sendCQ }

// RecvCQ is the CQ of the QP's receives (the same as SendCQ unless
// Options.SeparateCQs).
func (c *Conn) RecvCQ() *uverbs.CQ { return c.recvCQ }

// CompChannel is the completion channel of the CQs (nil with
// NoCompChannel).
func (c *Conn) CompChannel() *uverbs.CompChannel { return c.compCh }

// Context is the device the connection runs on.
func (c *Conn) Context() *uverbs.Context { return c.dev.ctx }

// Port is the device port (from 1).
func (c *Conn) Port() int { return int(c.port) }

// LocalAddr and RemoteAddr are the connection's IP addresses and ports.
func (c *Conn) LocalAddr() netip.AddrPort { return c.local }

// RemoteAddr is the peer's address and port.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.remote }

// Peer is what the peer sent: for Dial the accept (REP), for Accept the
// request (REQ). Its PrivateData is zero-padded to the CM message's size.
func (c *Conn) Peer() ConnParam { return c.peer }

// InitiatorDepth and ResponderResources are the RDMA READ/atomic depths the
// connection was set up with.
func (c *Conn) InitiatorDepth() uint8 { return c.initDepth }

// ResponderResources is how many of the peer's RDMA READ/atomic requests
// this side serves at once.
func (c *Conn) ResponderResources() uint8 { return c.respRes }

// RemoteQPN, RemoteQKey and AH address the peer of a UD endpoint from
// DialUD. An accepted UD endpoint learns the peer from its first receive
// (WC.SrcQP) and creates its AH with NewAH.
func (c *Conn) RemoteQPN() uint32 { return c.remoteQPN }

// RemoteQKey is the peer UD QP's queue key.
func (c *Conn) RemoteQKey() uint32 { return c.remoteQKey }

// AH is the address handle of a DialUD peer (nil otherwise).
func (c *Conn) AH() *uverbs.AH { return c.ah }

// RegMR registers buf on the connection's PD and remembers the MR, which
// Close deregisters before freeing the PD.
func (c *Conn) RegMR(buf []byte, access uverbs.AccessFlags) (*uverbs.MR, error) {
	mr, err := c.pd.RegMR(buf, access)
	if err != nil {
		return nil, err
	}
	c.mrMu.Lock()
	c.mrs = append(c.mrs, mr)
	c.mrMu.Unlock()
	c.o.logf("verbs: registered MR of %d bytes at %#x (lkey %#x, rkey %#x, %v)", len(buf), mr.Addr(), mr.LKey(), mr.RKey(), access)
	return mr, nil
}

// UserData is Options.UserData of the options the connection was made
// with (rdma_cm_id's context in librdmacm).
func (c *Conn) UserData() any { return c.o.UserData }

// Logf reports a step through Options.Logf.
func (c *Conn) Logf(format string, args ...any) { c.o.logf(format, args...) }

// Close ends the connection: for an RC connection still up it moves the QP
// to the error state, sends a DREQ (rdma_disconnect) and waits up to
// Options.CloseTimeout for DISCONNECTED (and TIMEWAIT_EXIT with
// WaitTimewait); then it drains the flushed completions of the CQs it owns
// and destroys the QP, AH, CQs, completion channel, the MRs of RegMR, the
// PD and the rdma_cm id. It is idempotent.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Conn) close() error {
	c.stateMu.Lock()
	c.closedFlag = true
	estab := c.estab
	ended := c.doneErr != nil
	if !ended {
		c.end(ErrClosed)
	}
	c.stateMu.Unlock()
	var errs []error
	deadline := time.Now().Add(c.o.CloseTimeout)
	if estab && !c.ud {
		if c.qp != nil {
			if err := c.qp.ModifyToErr(); err != nil && !ended {
				errs = append(errs, err)
			}
		}
		removed := false
		select {
		case <-c.id.Removed():
			removed = true
		default:
		}
		if !removed {
			c.o.logf("rdma_cm: disconnect")
			if err := c.id.Disconnect(); err != nil && !ended {
				errs = append(errs, err)
			}
			if !waitUntil(c.id.Disconnected(), deadline) {
				errs = append(errs, fmt.Errorf("rdma_cm disconnect %v: no DISCONNECTED within %v: %w", c.remote, c.o.CloseTimeout, ErrCloseTimeout))
			} else if !ended {
				c.o.logf("rdma_cm: event %v", EventDisconnected)
			}
			if c.o.WaitTimewait {
				if c.waitTimewait(deadline) {
					c.o.logf("rdma_cm: event %v", EventTimewaitExit)
				} else {
					errs = append(errs, fmt.Errorf("rdma_cm close %v: no TIMEWAIT_EXIT within %v", c.remote, c.o.CloseTimeout))
				}
			}
		}
	}
	if err := c.teardown(deadline); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// waitTimewait waits for TIMEWAIT_EXIT among the ID's queued events.
func (c *Conn) waitTimewait(deadline time.Time) bool {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for {
		ev, err := c.id.WaitEvent(ctx)
		if err != nil {
			return false
		}
		if ev.Type == EventTimewaitExit {
			return true
		}
	}
}

func waitUntil(ch <-chan struct{}, deadline time.Time) bool {
	d := time.Until(deadline)
	if d <= 0 {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// abort tears down a connection that never got established.
func (c *Conn) abort() {
	c.stateMu.Lock()
	c.closedFlag = true
	if c.doneErr == nil {
		c.end(ErrClosed)
	}
	c.stateMu.Unlock()
	c.closeOnce.Do(func() { c.closeErr = c.teardown(time.Now().Add(c.o.CloseTimeout)) })
}

// teardown drains and destroys the verbs objects in dependency order, then
// the id, then drops the device and channel references.
func (c *Conn) teardown(deadline time.Time) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.qp != nil {
		if !c.ownCQs {
			c.qp.ModifyToErr()
		} else {
			// Nobody else polls the CQs this connection owns: move the QP
			// to the error state and collect the flushes of whatever work
			// is still in the rings.
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			wcs, err := c.qp.Drain(ctx)
			cancel()
			if len(wcs) > 0 {
				c.o.logf("verbs: drained %d completions (flushed work)", len(wcs))
			}
			if err != nil {
				c.o.logf("verbs: %v", err)
			}
		}
		add(c.qp.Close())
		c.o.logf("verbs: destroyed QP %#x", c.qp.Num())
	}
	if c.ah != nil {
		add(c.ah.Close())
	}
	if c.ownCQs {
		if c.sendCQ != nil {
			add(c.sendCQ.Close())
		}
		if c.recvCQ != nil && c.recvCQ != c.sendCQ {
			add(c.recvCQ.Close())
		}
	}
	if c.ownChan && c.compCh != nil {
		add(c.compCh.Close())
	}
	c.mrMu.Lock()
	for _, mr := range c.mrs {
		add(mr.Close())
	}
	c.mrs = nil
	c.mrMu.Unlock()
	if c.ownPD && c.pd != nil {
		if err := c.pd.Close(); err != nil {
			add(fmt.Errorf("%w (memory regions registered on Conn.PD without Conn.RegMR must be closed before Conn.Close)", err))
		}
	}
	if c.ownCQs || c.ownPD {
		c.o.logf("verbs: destroyed CQs, completion channel and PD")
	}
	add(c.id.Close())
	c.o.logf("rdma_cm: destroyed id %d", c.id.Handle())
	if c.dev != nil {
		add(c.dev.release())
	}
	c.release()
	return errors.Join(errs...)
}

// NewAH creates an address handle to the peer of the connection's ID (for
// UD replies): the route's destination GID and the local GID the CM chose.
// The Conn does not own it; Close it first.
func (c *Conn) NewAH() (*uverbs.AH, error) {
	a, err := c.id.initQPAttr(uverbs.QPSRTR)
	if err != nil {
		return nil, err
	}
	attr := ahAttrFromABI(&a.AHAttr)
	if attr.GRH.DGID.IsZero() {
		// UD ids return no address vector: build it from the addresses.
		g, err := c.dev.ctx.GIDForIP(int(c.port), c.local.Addr())
		if err != nil {
			return nil, err
		}
		attr = uverbs.AHAttr{IsGlobal: true, Port: c.port, GRH: uverbs.GlobalRoute{
			DGID: uverbs.GIDFromAddr(c.remote.Addr()), SGIDIndex: uint8(g.Index), HopLimit: 64,
		}}
	}
	ah, err := c.pd.CreateAH(attr)
	if err != nil {
		return nil, err
	}
	c.o.logf("verbs: created AH to %v (sgid index %d)", attr.GRH.DGID, attr.GRH.SGIDIndex)
	return ah, nil
}
