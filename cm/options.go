// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// Options configure Dial, Listen and Accept. The zero value (or nil) gives
// an RC connection with 16-deep send and receive queues, one SGE each, one
// CQ for both with a completion channel, librdmacm's default RDMA
// READ/atomic depths (the device's maximum, negotiated down by the peer),
// retry and RNR retry counts of 7, and 2 s address and route resolution
// timeouts.
type Options struct {
	// Channel is the event channel to create IDs on; nil uses the
	// package's shared channel (one descriptor and one goroutine for the
	// whole process, opened on first use and closed when its last ID is).
	Channel *Channel

	// WaitForListener makes Dial and DialUD try again while nothing
	// listens on the destination port (ErrNoListener), with a back-off
	// from 10 ms to 1 s, until they connect, fail otherwise, or their
	// context ends (then they return the last ErrNoListener error joined
	// with the context's error). Without it the first ErrNoListener is
	// returned.
	WaitForListener bool

	// Source is the local address a Dial resolves from (rdma_resolve_addr's
	// src_addr); zero lets the routing table choose.
	Source netip.AddrPort
	// ResolveTimeout bounds address resolution and, separately, route
	// resolution (the kernel's timeout_ms); 0 means 2 s.
	ResolveTimeout time.Duration

	// Queue sizes of the QP the connection creates.
	SendDepth  int // max_send_wr, default 16
	RecvDepth  int // max_recv_wr, default 16
	MaxSendSGE int // default 1
	MaxRecvSGE int // default 1
	MaxInline  int // max_inline_data, default 0
	// CQSize is the size of each CQ the connection creates; 0 means
	// SendDepth+RecvDepth with one CQ, or the queue's depth with two.
	CQSize int
	// SeparateCQs gives sends and receives a CQ each instead of one.
	SeparateCQs bool
	// NoCompChannel creates the CQs without a completion channel (poll
	// only).
	NoCompChannel bool
	// SigAll makes every send signal a completion (sq_sig_all).
	SigAll bool

	// Caller-owned verbs objects to use instead of creating them. They
	// must come from one Context on the device the connection resolves to
	// (Dial fails otherwise) and outlive the connection; Close does not
	// destroy them. Each of them needs PD, which names that Context. With
	// SendCQ or RecvCQ set, set both (CompChannel then only tells
	// Conn.CompChannel which channel they use). CompChannel without
	// SendCQ and RecvCQ attaches the CQs the connection creates to the
	// caller's channel. SRQ feeds the QP's receives.
	PD          *uverbs.PD
	SendCQ      *uverbs.CQ
	RecvCQ      *uverbs.CQ
	CompChannel *uverbs.CompChannel
	SRQ         *uverbs.SRQ

	// InitiatorDepth is how many RDMA READ/atomic requests this side may
	// have outstanding, ResponderResources how many of the peer's it
	// serves. 0 means the device's maximum for Dial and the peer's offer
	// (capped by the device) for Accept.
	InitiatorDepth     int
	ResponderResources int
	// RetryCount and RNRRetryCount (0-7) go with the connect (RetryCount
	// only with Dial) or the accept; 0 means 7, as librdmacm's examples
	// ask. Use NoRetry for an explicit zero. The IB CM sets each side's QP
	// from the other side's message, so they bound the peer's retries:
	// RetryCount how often the peer resends when this side's device does
	// not answer, RNRRetryCount how often the peer's SEND or
	// RDMA_WRITE_WITH_IMM is retried while this side has no receive
	// posted (receiver not ready, RNR). An RNR retry count of 7 means
	// forever: a SEND to a program that never posts a receive then waits,
	// without completing or failing, until the connection ends.
	RetryCount    int
	RNRRetryCount int
	// SendRNRRetry, when not 0, replaces the RNR retry count this side's
	// QP got from the peer (its RNRRetryCount, 7 by default with rdmago
	// and librdmacm peers): 1-6 retries, NoRetry for none, 7 forever. With
	// a finite count, a SEND or RDMA_WRITE_WITH_IMM that still finds no
	// receive posted completes with IBV_WC_RNR_RETRY_EXC_ERR
	// (uverbs.WCRNRRetryExcErr) and the QP enters the error state. Each
	// retry waits the peer's RNR timer (rdma_cm's default: 12, 0.64 ms).
	SendRNRRetry int
	// PrivateData goes with the connect (at most 56 bytes for RC, 180 for
	// UD) or the accept (196 for RC, 136 for UD). Dial and Listen check
	// its size.
	PrivateData []byte
	// PrivateDataFunc, when set, runs after Setup, once the connection's
	// PD, CQs and QP exist, and returns the private data to send instead
	// of PrivateData: the place to advertise memory registered in Setup
	// (its address and rkey) with the connect or the accept. Its result is
	// checked against the same limits; an error fails the Dial or Accept
	// (the request is then rejected).
	PrivateDataFunc func(*Conn) ([]byte, error)

	// TOS is the IP type of service of the connection's packets
	// (RDMA_OPTION_ID_TOS); 0 leaves the default.
	TOS uint8
	// AckTimeout is the QP's local ACK timeout exponent
	// (RDMA_OPTION_ID_ACK_TIMEOUT, 4.096 µs × 2^AckTimeout); 0 leaves the
	// CM's default.
	AckTimeout uint8
	// ReuseAddr sets RDMA_OPTION_ID_REUSEADDR on a Listen's ID.
	ReuseAddr bool
	// Backlog bounds a listener's requests not yet accepted; 0 means the
	// kernel's maximum. Requests beyond it are rejected at once (see
	// ID.Listen).
	Backlog int
	// AcceptTimeout bounds the setup of one connection Listener.Accept
	// accepts, from its request to ESTABLISHED; 0 means
	// DefaultAcceptTimeout. A requester that does not complete the
	// connection in time (a half-open connect: the CONNECT_RESPONSE
	// answered by no RTU) is dropped.
	AcceptTimeout time.Duration
	// MaxPendingAccepts is how many connections a Listener's Accept sets
	// up at once; 0 means DefaultMaxPendingAccepts. A request beyond it
	// evicts the oldest setup still waiting for its requester (as a SYN
	// queue drops its oldest entry). It also bounds the connections set
	// up and not yet taken by Accept, and twice it the setups alive
	// (evicted ones tear down); requests beyond those are rejected at
	// once, with BusyRejectData.
	MaxPendingAccepts int
	// BusyRejectData is the private data (at most 148 bytes) of the
	// reject a Listener's Accept answers a request with while
	// MaxPendingAccepts connections wait for Accept; nil sends none.
	BusyRejectData []byte
	// CheckRequest, when set on Listen's options, sees each connection
	// request Listener.Accept reads, before its setup, in the one
	// goroutine that reads them (it must not block): it returns the
	// options to accept the request with (nil: the listener's), or an
	// error to refuse it: the request is then rejected (without private
	// data, unless CheckRequest rejected it itself with Request.Reject),
	// counted in ListenerStats.Refused and logged (Logf). It must not
	// Accept the request.
	CheckRequest func(*Request) (*Options, error)
	// UserData is the caller's own, returned by Conn.UserData
	// (rdma_cm_id's context in librdmacm): with CheckRequest, the state
	// the options it returns (their Setup) built for that connection.
	UserData any

	// Setup runs once the QP exists and is in INIT, before the connect or
	// accept is sent: register memory and post receives here so nothing
	// the peer sends right after ESTABLISHED meets an empty receive queue.
	Setup func(*Conn) error

	// CloseTimeout bounds how long Close waits for the peer to confirm the
	// disconnect and for flushed completions; 0 means 3 s.
	CloseTimeout time.Duration
	// WaitTimewait makes Close also wait (within CloseTimeout) for
	// TIMEWAIT_EXIT, after which the CM has forgotten the connection.
	WaitTimewait bool

	// Logf, when set, is told every CM and verbs step (device, PD, CQ, QP,
	// each state transition, each event), one line per call.
	Logf func(format string, args ...any)
}

// NoRetry is the RetryCount or RNRRetryCount that asks for zero retries.
const NoRetry = -1

const (
	defaultDepth        = 16
	defaultRetry        = 7
	defaultCloseTimeout = 3 * time.Second
)

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.SendDepth <= 0 {
		c.SendDepth = defaultDepth
	}
	if c.RecvDepth <= 0 {
		c.RecvDepth = defaultDepth
	}
	if c.MaxSendSGE <= 0 {
		c.MaxSendSGE = 1
	}
	if c.MaxRecvSGE <= 0 {
		c.MaxRecvSGE = 1
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = defaultCloseTimeout
	}
	return c
}

func (o *Options) validate() error {
	for _, v := range []struct {
		name string
		n    int
	}{{"RetryCount", o.RetryCount}, {"RNRRetryCount", o.RNRRetryCount}, {"SendRNRRetry", o.SendRNRRetry}} {
		if v.n < NoRetry || v.n > 7 {
			return fmt.Errorf("cm: %s %d: want 0-7 (NoRetry for none)", v.name, v.n)
		}
	}
	for _, v := range []struct {
		name string
		n    int
	}{{"InitiatorDepth", o.InitiatorDepth}, {"ResponderResources", o.ResponderResources}} {
		if v.n < 0 || v.n > 255 {
			return fmt.Errorf("cm: %s %d: want 0-255", v.name, v.n)
		}
	}
	if (o.SendCQ == nil) != (o.RecvCQ == nil) {
		return fmt.Errorf("cm: set both SendCQ and RecvCQ, or neither")
	}
	if (o.SendCQ != nil || o.CompChannel != nil || o.SRQ != nil) && o.PD == nil {
		return fmt.Errorf("cm: Options.SendCQ, RecvCQ, CompChannel and SRQ need Options.PD (the connection must use their Context)")
	}
	if o.PD != nil {
		ctx := o.PD.Context()
		for _, v := range []struct {
			name string
			ctx  *uverbs.Context
		}{{"SendCQ", cqContext(o.SendCQ)}, {"RecvCQ", cqContext(o.RecvCQ)}, {"CompChannel", channelContext(o.CompChannel)}} {
			if v.ctx != nil && v.ctx != ctx {
				return fmt.Errorf("cm: Options.%s belongs to another Context than Options.PD: create them on one", v.name)
			}
		}
	}
	if o.AcceptTimeout < 0 {
		return fmt.Errorf("cm: AcceptTimeout %v is negative", o.AcceptTimeout)
	}
	if o.MaxPendingAccepts < 0 {
		return fmt.Errorf("cm: MaxPendingAccepts %d is negative", o.MaxPendingAccepts)
	}
	if o.MaxInline < 0 {
		return fmt.Errorf("cm: MaxInline %d is negative", o.MaxInline)
	}
	return nil
}

func cqContext(cq *uverbs.CQ) *uverbs.Context {
	if cq == nil {
		return nil
	}
	return cq.Context()
}

func channelContext(ch *uverbs.CompChannel) *uverbs.Context {
	if ch == nil {
		return nil
	}
	return ch.Context()
}

// sendRNRRetry adjusts the RTS attributes for SendRNRRetry.
func (o *Options) sendRNRRetry(a *uverbs.QPAttr) {
	if o.SendRNRRetry != 0 {
		a.RNRRetry = retryValue(o.SendRNRRetry)
	}
}

func retryValue(n int) uint8 {
	switch {
	case n == NoRetry:
		return 0
	case n == 0:
		return defaultRetry
	}
	return uint8(n)
}

func (o *Options) logf(format string, args ...any) {
	if o.Logf != nil {
		o.Logf(format, args...)
	}
}

// The package's shared channel, reference counted by the Conns, Listeners
// and Requests that use it.
var (
	defaultMu sync.Mutex
	defaultCh *Channel
)

// acquireChannel returns the channel to use and the function that releases
// it.
func (o *Options) acquireChannel() (*Channel, func(), error) {
	if o.Channel != nil {
		return o.Channel, func() {}, nil
	}
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultCh == nil {
		ch, err := OpenChannel()
		if err != nil {
			return nil, nil, err
		}
		defaultCh = ch
	}
	ch := defaultCh
	ch.shared++
	var once sync.Once
	return ch, func() { once.Do(func() { releaseShared(ch) }) }, nil
}

func releaseShared(ch *Channel) {
	defaultMu.Lock()
	ch.shared--
	last := ch.shared == 0
	if last && defaultCh == ch {
		defaultCh = nil
	}
	defaultMu.Unlock()
	if last {
		ch.Close()
	}
}

// holdChannel takes one more reference on ch if it is the shared one.
func holdChannel(ch *Channel) func() {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if ch.shared == 0 {
		return func() {}
	}
	ch.shared++
	var once sync.Once
	return func() { once.Do(func() { releaseShared(ch) }) }
}

// resolveAddrPort parses "host:port" (host an IP address or a name), as
// rping's -a and -p do with getaddrinfo. An empty host is the unspecified
// IPv4 address.
func resolveAddrPort(ctx context.Context, addr string) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("cm: address %q: %w (want host:port)", addr, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		pn, lerr := net.DefaultResolver.LookupPort(ctx, "tcp", port)
		if lerr != nil {
			return netip.AddrPort{}, fmt.Errorf("cm: address %q: bad port %q", addr, port)
		}
		p = uint64(pn)
	}
	if host == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(p)), nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a.Unmap(), uint16(p)), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return netip.AddrPort{}, fmt.Errorf("cm: resolve host %q: %v", host, err)
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(p)), nil
}
