// Copyright 2026 The rdmago Authors.

package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/tools/perf/ptwire"
	"github.com/rdmago/rdmago/uverbs"
)

// How rdmaperf --perftest meets a perftest program: perftest's TCP exchange
// by default, its rdma_cm exchange with -R (perftest's -R, --rdma_cm). With
// -R perftest opens one RC connection for the exchange (rdma_client_connect,
// rdma_server_connect: one receive of a struct pingpong_dest posted, each
// message a SEND) and then, after a barrier, one rdma_cm connection per QP
// on the same port (create_rdma_cm_connection); rdma_cm moves those QPs to
// RTS, so the keys only give the peer's buffers.
//
// A peer speaking the other exchange is recognised where it shows: a server
// with a TCP port but no rdma_cm listener (or the reverse) for a client, a
// client arriving on the other transport for a server, which listens on
// both.

// ptProbeWait bounds a probe of the other transport.
const ptProbeWait = 3 * time.Second

// ptConnect opens the exchange: the client dials, the server accepts one
// client. With -R it also returns the rdma_cm connection under the exchange
// and, on the server, the listener the QPs' connections arrive on.
func (s *session) ptConnect(ctx context.Context) (*ptwire.Conn, *cm.Listener, *cm.Conn, error) {
	if !s.server {
		pc, comm, err := s.ptDial(ctx)
		return pc, nil, comm, err
	}
	return s.ptAccept(ctx)
}

// ptMessenger is the rdma_cm exchange's Messenger: the control connection's
// transport, bounded by the run's context and each call's timeout.
type ptMessenger struct {
	ctx context.Context
	t   *cmTransport
}

func (m ptMessenger) within(d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(m.ctx, d)
	}
	return context.WithCancel(m.ctx)
}

func (m ptMessenger) WriteMsg(b []byte, d time.Duration) error {
	ctx, cancel := m.within(d)
	defer cancel()
	return m.t.writeMsgCtx(ctx, b)
}

// ReadMsg reads the peer's next message; a connection the peer ended
// first (a receive flushed by the disconnection, or the CM's end of the
// connection) is ptwire.ErrPeerClosed, as end of stream is on TCP.
func (m ptMessenger) ReadMsg(d time.Duration) ([]byte, error) {
	ctx, cancel := m.within(d)
	defer cancel()
	b, err := m.t.readMsg(ctx)
	var we *uverbs.WCError
	if err != nil && ctx.Err() == nil && (errors.As(err, &we) && we.WC.IsFlush() || m.t.conn.Err() != nil) {
		err = fmt.Errorf("%w (%v)", ptwire.ErrPeerClosed, err)
	}
	return b, err
}

func (m ptMessenger) Close() error { return m.t.Close() }

// ptTCPConn wraps a TCP connection; the run's context cuts its waits short.
func ptTCPConn(ctx context.Context, nc net.Conn, client bool) *ptwire.Conn {
	pc := ptwire.NewConn(nc, client, ptHelloWait)
	context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
	return pc
}

func ptCMConn(ctx context.Context, t *cmTransport, client bool) *ptwire.Conn {
	return ptwire.NewMsgConn(ptMessenger{ctx: ctx, t: t}, client, ptHelloWait)
}

// ptDial connects to the perftest server.
func (s *session) ptDial(ctx context.Context) (*ptwire.Conn, *cm.Conn, error) {
	addr := hostPort(s.cfg.Host, s.cfg.Port)
	if s.cfg.RDMACM {
		t := &cmTransport{}
		c, err := cm.Dial(ctx, addr, cmCtrlOptions(t))
		switch {
		case err == nil:
		case errors.Is(err, cm.ErrNoListener) && tcpAnswers(ctx, addr):
			// A TCP server there is perftest's without -R, unless this
			// side came while an rdmaperf server was opening its
			// listeners: then a second try finds rdma_cm's.
			if c, err = cm.Dial(ctx, addr, cmCtrlOptions(t)); err != nil {
				return nil, nil, fmt.Errorf("rdma_cm connect to %s: %v; but a TCP server answers on that port: %w: the peer runs perftest's TCP exchange (no -R): drop -R on this side or give the server -R", addr, err, errPeerKind)
			}
		default:
			return nil, nil, fmt.Errorf("rdma_cm connect to %s (is the perftest server running with -R?): %w", addr, err)
		}
		t.conn = c
		return ptCMConn(ctx, t, true), c, nil
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) && cmAnswers(ctx, addr) {
			return nil, nil, fmt.Errorf("connect to %s: %v; but an rdma_cm listener accepts on that port: %w: the peer runs perftest's rdma_cm exchange (-R): add -R on this side or drop it on the server", addr, err, errPeerKind)
		}
		return nil, nil, fmt.Errorf("couldn't connect to %s (is the perftest server running?): %w", addr, err)
	}
	return ptTCPConn(ctx, nc, true), nil, nil
}

// errPeerKind is a peer that speaks the other exchange (TCP or rdma_cm).
var errPeerKind = errors.New("the peer speaks the other exchange")

// tcpAnswers reports whether a TCP server accepts on addr.
func tcpAnswers(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: ptProbeWait}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// cmAnswers reports whether an rdma_cm listener accepts a connection on
// addr.
func cmAnswers(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, ptProbeWait)
	defer cancel()
	c, err := cm.Dial(ctx, addr, &cm.Options{SendDepth: 1, RecvDepth: 1, CloseTimeout: time.Second})
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// ptArrival is what one of the server's listeners got.
type ptArrival struct {
	nc  net.Conn
	req *cm.Request
	err error
	cm  bool // from the rdma_cm listener
}

// ptAccept waits for the client on the exchange's transport and, on the same
// port, on the other one: a perftest client there is named in the error. A
// client's probe of the other transport (ptDial) is not: a TCP connection
// that sends no version is dropped, and after an rdma_cm request on the TCP
// exchange (rejected) a TCP client still has ptProbeWait to come.
func (s *session) ptAccept(ctx context.Context) (_ *ptwire.Conn, _ *cm.Listener, _ *cm.Conn, err error) {
	port := s.cfg.Port
	// rdma_cm's listener first: a client probing TCP after rdma_cm found
	// no listener then finds none either.
	cl, cerr := cm.Listen(ctx, fmt.Sprintf("0.0.0.0:%d", port), &cm.Options{ReuseAddr: true})
	var lc net.ListenConfig
	tl, terr := lc.Listen(ctx, "tcp", fmt.Sprintf(":%d", port))
	keepCM := false
	defer func() {
		if tl != nil {
			tl.Close()
		}
		if cl != nil && !keepCM {
			cl.Close()
		}
	}()
	s.tracef("listening on port %d: rdma_cm %v, TCP %v", port, errOrOK(cerr), errOrOK(terr))
	switch {
	case s.cfg.RDMACM && cerr != nil:
		return nil, nil, nil, fmt.Errorf("rdma_cm listen on port %d: %w", port, cerr)
	case !s.cfg.RDMACM && terr != nil:
		return nil, nil, nil, fmt.Errorf("listen on TCP port %d: %w", port, terr)
	}
	if s.out != nil {
		fmt.Fprintf(s.out, "\n************************************\n* Waiting for client to connect... *\n************************************\n")
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan ptArrival)
	deliver := func(a ptArrival) bool {
		select {
		case ch <- a:
			return a.err == nil
		case <-actx.Done():
			if a.nc != nil {
				a.nc.Close()
			}
			if a.req != nil {
				a.req.Reject(nil)
			}
			return false
		}
	}
	if tl != nil {
		stop := context.AfterFunc(actx, func() { tl.Close() })
		defer stop()
		go func() {
			for {
				c, err := tl.Accept()
				if !deliver(ptArrival{nc: c, err: err}) {
					return
				}
			}
		}()
	}
	if cl != nil {
		go func() {
			for {
				r, err := cl.AcceptRequest(actx)
				// With -R the QPs' requests come on this listener
				// later: they are not this loop's.
				if !deliver(ptArrival{req: r, err: err, cm: true}) || s.cfg.RDMACM {
					return
				}
			}
		}()
	}
	var mismatch error
	var grace <-chan time.Time
	for {
		var a ptArrival
		select {
		case a = <-ch:
		case <-grace:
			return nil, nil, nil, mismatch
		case <-ctx.Done():
			return nil, nil, nil, ctx.Err()
		}
		s.tracef("arrival: TCP %v, rdma_cm request %v, error %v", a.nc != nil, a.req != nil, a.err)
		switch {
		case a.err != nil && ctx.Err() != nil:
			return nil, nil, nil, ctx.Err()
		case a.err != nil && a.cm == s.cfg.RDMACM:
			return nil, nil, nil, a.err
		case a.err != nil:
			// The other transport's listener failed: it only named peers.
		case s.cfg.RDMACM && a.req != nil:
			t := &cmTransport{}
			c, err := a.req.Accept(ctx, cmCtrlOptions(t))
			if err != nil {
				return nil, nil, nil, fmt.Errorf("rdma_cm accept: %w", err)
			}
			t.conn = c
			keepCM = true
			return ptCMConn(ctx, t, false), cl, c, nil
		case !s.cfg.RDMACM && a.nc != nil:
			return ptTCPConn(ctx, a.nc, false), nil, nil, nil
		case a.req != nil:
			from := "?"
			if ai, err := a.req.ID.Query(); err == nil {
				from = ai.Remote.String()
			}
			a.req.Reject(nil)
			mismatch = fmt.Errorf("a client asked for an rdma_cm connection on port %d from %s: %w: it runs perftest's rdma_cm exchange (-R): add -R on this side or drop it on the client", port, from, errPeerKind)
			if grace == nil { // a client that retries does not extend it
				grace = time.After(ptProbeWait)
			}
		default:
			a.nc.SetReadDeadline(time.Now().Add(ptProbeWait))
			b := make([]byte, 16)
			got, _ := io.ReadFull(a.nc, b)
			a.nc.Close()
			if _, err := ptwire.ParseVersion(b); got > 0 && err == nil {
				return nil, nil, nil, fmt.Errorf("a client connected over TCP to port %d from %v and sent %s, perftest's version message: %w: it runs perftest's TCP exchange (no -R): drop -R on this side or give the client -R", port, a.nc.RemoteAddr(), ptwire.Quote(b[:got]), errPeerKind)
			}
		}
	}
}

// ptDataConns opens the QPs' rdma_cm connections (rdma_cm_client_connection,
// rdma_cm_server_connection): the client dials the server's port once per
// QP, the server accepts them on the listener of the exchange. wait bounds
// each.
func (s *session) ptDataConns(ctx context.Context, ln *cm.Listener, wait time.Duration) error {
	for i := range s.eps {
		c, err := s.ptDataConn(ctx, ln, i, wait)
		if err != nil {
			return fmt.Errorf("rdma_cm connection of QP %d of %d: %w", i+1, len(s.eps), err)
		}
		if err := s.adoptConn(i, c); err != nil {
			c.Close()
			return err
		}
		s.tracef("rdma_cm connection %d up", i)
	}
	return nil
}

func (s *session) ptDataConn(ctx context.Context, ln *cm.Listener, i int, wait time.Duration) (*cm.Conn, error) {
	if wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	if s.server {
		req, err := ln.AcceptRequest(ctx)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("the peer opened no rdma_cm connection within %v: does it run %v with -R and the same -q?", wait, s.cfg.Test)
			}
			return nil, err
		}
		return req.Accept(ctx, s.dataOptions(i))
	}
	// perftest's server listens for these only after the barrier: a
	// request may come too early, and is retried as perftest's client
	// does (rdma_cm_client_connection), 100 ms apart.
	addr := hostPort(s.cfg.Host, s.cfg.Port)
	for try := 0; ; try++ {
		c, err := cm.Dial(ctx, addr, s.dataOptions(i))
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, cm.ErrNoListener) || try == 100 {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errOrOK shows an error or "ok", for traces.
func errOrOK(err error) any {
	if err == nil {
		return "ok"
	}
	return err
}

// servePerftest goes on as with --perftest on a server whose client turned
// out to be perftest (or rdmaperf --perftest): its first message on the
// control channel was perftest's version, which pp holds as far as the
// channel read it. perftest's exchange resumes on the same connection from
// those bytes: perftest's client writes first, so nothing was lost. A
// client cannot do the same (runClient): perftest's server has read
// rdmaperf's first message as the client's version by then.
//
// perftest sends no settings: this server runs its own -s, -n and -q, and
// flags that perftest cannot follow (checkPerftest) fail the run with the
// flag to change.
func (s *session) servePerftest(ctx context.Context, ln *listener, pp *perftestPeer, stderr io.Writer) (*Report, error) {
	var pc *ptwire.Conn
	var cl *cm.Listener
	var comm *cm.Conn
	switch t := s.ctrl.t.(type) {
	case *tcpTransport:
		// The control channel's reader stopped at the version: t.r holds
		// what came after the bytes it consumed.
		nc := &replayConn{Conn: t.c, r: io.MultiReader(bytes.NewReader(pp.read), t.r)}
		pc = ptTCPConn(ctx, nc, false)
	case *cmTransport:
		pc = ptwire.NewMsgConn(&replayMessenger{Messenger: ptMessenger{ctx: ctx, t: t}, first: pp.read}, false, ptHelloWait)
		// perftest's QPs' connections come to the control channel's
		// listener, which outlives them (ptKeep).
		cl, comm = ln.cm, t.conn
		ln.cm = nil
	default:
		return nil, pp
	}
	s.ctrl = nil // nothing of rdmaperf's protocol goes to perftest
	s.ptKeep(pc, cl)
	c := s.cfg
	if err := c.checkPerftest(); err != nil {
		return nil, fmt.Errorf("the client is perftest %s, which sends no settings: this server runs as with --perftest, where %w", pp.version, err)
	}
	s.adapted = true
	fmt.Fprintf(stderr, "rdmaperf: the peer is perftest %s (ib_%v): speaking its exchange, as with --perftest (perftest sends no settings: this side runs -s %d -n %d -q %d)\n", pp.version, c.Test, c.Sizes[0], c.Iters, c.QPs)
	s.tracef("the client is perftest %s: perftest's exchange", pp.version)
	return s.runPerftestOn(ctx, pc, cl, comm)
}

// replayConn is a connection whose first bytes were read already: r gives
// them, then the rest.
type replayConn struct {
	net.Conn
	r io.Reader
}

func (c *replayConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// replayMessenger gives first, then the messages of the Messenger.
type replayMessenger struct {
	ptwire.Messenger
	first []byte
}

func (m *replayMessenger) ReadMsg(d time.Duration) ([]byte, error) {
	if b := m.first; b != nil {
		m.first = nil
		return b, nil
	}
	return m.Messenger.ReadMsg(d)
}
