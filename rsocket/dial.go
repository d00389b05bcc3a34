// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/retry"
)

// librdmacm's defaults (rsocket.c; /etc/rdma/rsocket/*_default override
// them there).
const (
	DefaultSendBuffer = 1 << 17 // wmem_default
	DefaultRecvBuffer = 1 << 17 // mem_default
	DefaultSendQueue  = 384     // sqsize_default
	DefaultRecvQueue  = 384     // rqsize_default
	DefaultInline     = 64      // inline_default
)

// NoInline is the Options.Inline that sends every payload from the send
// ring (RDMA_INLINE 0).
const NoInline = -1

// Options are what a C program sets on an rsocket with rsetsockopt, with
// librdmacm's defaults for the zero value.
type Options struct {
	// SendBuffer is the size of the send ring in bytes (SO_SNDBUF sets
	// twice its argument, as Linux does); 0 means 128 KiB. At least 4 KiB.
	SendBuffer int
	// RecvBuffer is the size of the receive ring the peer writes into;
	// half of it is published to the peer at a time. 0 means 128 KiB. At
	// least 4 KiB; odd sizes are rounded up.
	RecvBuffer int
	// SendQueue and RecvQueue are the QP's depths (RDMA_SQSIZE,
	// RDMA_RQSIZE); 0 means 384. They are clamped to 16-65534. RecvQueue
	// is also the number of data messages the peer may have in flight.
	SendQueue, RecvQueue int
	// Inline is the largest payload copied into the work request itself
	// (RDMA_INLINE); 0 means 64 bytes, NoInline none. The device may
	// grant less.
	Inline int
	// KeepAlive is the interval of librdmacm's keepalive (SO_KEEPALIVE
	// with TCP_KEEPIDLE): a zero-byte RDMA WRITE that fails, and fails the
	// connection, once the peer stops answering. 0 disables it, as
	// librdmacm's default does.
	KeepAlive time.Duration
	// AckTimeout is the QP's local ACK timeout exponent
	// (RDMA_OPTION_ID_ACK_TIMEOUT, 4.096 µs × 2^AckTimeout): how soon a
	// vanished peer is noticed. 0 leaves the CM's default.
	AckTimeout uint8
	// PollTime, when positive, makes a Read or Write that has to wait
	// poll the completion queue for that long before it sleeps
	// (librdmacm's polling_time, 10 µs there). 0 never spins.
	PollTime time.Duration
	// CloseTimeout bounds how long Close waits for the DISCONNECT and the
	// data before it to be acknowledged, and for the CM; 0 means 3 s.
	CloseTimeout time.Duration
	// Logf, when set, is told each CM and verbs step and every refused
	// connection request.
	Logf func(format string, args ...any)

	localAddr netip.AddrPort
}

func (o *Options) config() (config, error) {
	cfg := config{
		sqSize:       orDefault(o.SendQueue, DefaultSendQueue),
		rqSize:       orDefault(o.RecvQueue, DefaultRecvQueue),
		inline:       orDefault(o.Inline, DefaultInline),
		sbufSize:     orDefault(o.SendBuffer, DefaultSendBuffer),
		rbufSize:     orDefault(o.RecvBuffer, DefaultRecvBuffer),
		keepalive:    max(o.KeepAlive, 0),
		closeTimeout: orDefault(o.CloseTimeout, 3*time.Second),
	}
	if o.Inline == NoInline {
		cfg.inline = 0
	}
	// rs_set_qp_size
	cfg.sqSize = min(max(cfg.sqSize, qpMinSize), qpMaxSize)
	cfg.rqSize = min(max(cfg.rqSize, qpMinSize), qpMaxSize)
	switch {
	case cfg.inline < 0 || cfg.inline > qpMaxSize:
		return cfg, fmt.Errorf("rsocket: Options.Inline %d: want 0-%d or NoInline", o.Inline, qpMaxSize)
	case cfg.sbufSize < 2*sndLowat || cfg.sbufSize > maxMsgData:
		return cfg, fmt.Errorf("rsocket: Options.SendBuffer %d: want %d to %d bytes", o.SendBuffer, 2*sndLowat, maxMsgData)
	case cfg.rbufSize < 2*sndLowat || cfg.rbufSize > maxMsgData:
		return cfg, fmt.Errorf("rsocket: Options.RecvBuffer %d: want %d to %d bytes", o.RecvBuffer, 2*sndLowat, maxMsgData)
	}
	cfg.rbufSize += cfg.rbufSize & 1
	return cfg, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

func checkNetwork(network string) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
		return nil
	}
	return fmt.Errorf("network %q: rsockets are streams over RDMA connections: use \"tcp\", \"tcp4\" or \"tcp6\": %w", network, net.UnknownNetworkError(network))
}

// Dialer dials rsockets with Options, as net.Dialer dials TCP: Dial and
// DialContext return a net.Conn, DialRSocket the *Conn. The zero Dialer
// dials with librdmacm's defaults.
type Dialer struct {
	Options
	// LocalAddr is the source address to resolve from (rdma_resolve_addr's
	// src_addr); the zero value lets the routing table choose.
	LocalAddr netip.AddrPort
	// Timeout bounds the whole dial (address and route resolution, the
	// connection exchange, and the waiting WaitForListener asks for); 0
	// means none beyond ctx.
	Timeout time.Duration
	// WaitForListener makes a dial that finds nothing listening on the
	// port (an error matching cm.ErrNoListener: rdma_connect's
	// RDMA_CM_EVENT_REJECTED with IB_CM_REJ_INVALID_SERVICE_ID, rconnect's
	// ECONNREFUSED) try again, pausing from 10 ms doubling up to 500 ms,
	// until it connects, fails otherwise, or its context (or Timeout)
	// ends. false fails at the first refusal, as rconnect does.
	WaitForListener bool
}

// Dial connects to the rsocket listening at address ("host:port") with the
// zero Dialer and returns the *Conn, as net.DialTCP returns a
// *net.TCPConn; ctx bounds the dial (rdma_cm's address, route and
// connection exchanges block). network must be "tcp", "tcp4" or "tcp6".
// It needs Linux with rdma_ucm and an RDMA device routing to address
// (tested with Soft-RoCE on 6.1 and 6.12). The caller must Close the Conn.
func Dial(ctx context.Context, network, address string) (*Conn, error) {
	var d Dialer
	return d.DialRSocket(ctx, network, address)
}

// Dial is net.Dialer.Dial: DialRSocket with context.Background(),
// returning a net.Conn. The caller must Close it.
func (d *Dialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

// DialContext is net.Dialer.DialContext: DialRSocket returning a
// net.Conn, for http.Transport.DialContext and the like. The caller must
// Close it.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := d.DialRSocket(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DialRSocket is rconnect: resolve address and route, create the QP and
// the rsocket's buffers, send the connection request with this side's
// rs_conn_data, check the peer's in the reply (again while nothing
// listens, with WaitForListener). Failures are *net.OpError values
// wrapping cm's errors (cm.ErrNoListener, ...) or ErrProtocol. It needs
// Linux with rdma_ucm and an RDMA device routing to address. The caller
// must Close the Conn.
func (d *Dialer) DialRSocket(ctx context.Context, network, address string) (*Conn, error) {
	opErr := func(err error) error {
		return &net.OpError{Op: "dial", Net: "rsocket", Err: err, Addr: addrString(address)}
	}
	if err := checkNetwork(network); err != nil {
		return nil, opErr(err)
	}
	cfg, err := d.config()
	if err != nil {
		return nil, opErr(err)
	}
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	o := d.Options
	o.localAddr = d.LocalAddr
	dial := func() (*Conn, error) { return dialOnce(ctx, cfg, &o, d.PollTime, address) }
	var c *Conn
	if d.WaitForListener {
		c, err = retryNoListener(ctx, dial)
	} else {
		c, err = dial()
	}
	if err != nil {
		return nil, opErr(noListenerHint(err))
	}
	return c, nil
}

// dialOnce is one rconnect.
func dialOnce(ctx context.Context, cfg config, o *Options, pollTime time.Duration, address string) (*Conn, error) {
	s := &setup{cfg: cfg}
	cc, err := cm.Dial(ctx, address, s.cmOptions(o))
	if err != nil {
		s.free()
		return nil, err
	}
	peer, err := parseConnData(cc.Peer().PrivateData)
	if err != nil {
		s.v.close()
		s.free()
		return nil, err
	}
	return newConn(s.v, s.mem, s.cfg, peer, pollTime, tcpAddr(cc.LocalAddr()), tcpAddr(cc.RemoteAddr())), nil
}

// The pauses between the dials of WaitForListener.
const (
	waitListenerFirst = 10 * time.Millisecond
	waitListenerMax   = 500 * time.Millisecond
)

// retryNoListener calls dial again while it fails with cm.ErrNoListener,
// pausing from waitListenerFirst doubling up to waitListenerMax, until
// ctx ends; then the error is the last refusal joined with ctx's error.
func retryNoListener[T any](ctx context.Context, dial func() (T, error)) (T, error) {
	var v T
	err, ctxErr := retry.Backoff(ctx, waitListenerFirst, waitListenerMax,
		func(err error) bool { return errors.Is(err, cm.ErrNoListener) },
		func() (err error) { v, err = dial(); return err })
	if ctxErr != nil {
		return v, fmt.Errorf("%w (waited for a listener until: %w)", err, ctxErr)
	}
	return v, err
}

// noListenerHint adds to a refusal by a port nobody listens on the usual
// reason when the server is a C program under librspreload.
func noListenerHint(err error) error {
	if !errors.Is(err, cm.ErrNoListener) {
		return err
	}
	return &hintError{err: err, hint: "if the server is a C program under LD_PRELOAD=librspreload.so: it stays on TCP when it opens its socket with SOCK_CLOEXEC or SOCK_NONBLOCK, or accepts with accept4"}
}

// hintError is err followed by a hint for the person reading it.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() + " (" + e.hint + ")" }
func (e *hintError) Unwrap() error { return e.err }

type addrString string

func (a addrString) Network() string { return "rsocket" }
func (a addrString) String() string  { return string(a) }

func tcpAddr(a netip.AddrPort) *net.TCPAddr { return net.TCPAddrFromAddrPort(a) }
