// Copyright 2026 The rdmago Authors.

package perf

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/uverbs"
)

// endpoint is one QP with its buffer: the first half is what this side sends
// from (and where READ and atomic results land), the second half what the
// peer writes into or receives into.
type endpoint struct {
	qp     *uverbs.QP
	buf    *uverbs.Buffer
	mr     *uverbs.MR
	half   int
	psn    uint32
	remote qpInfo
	conn   *cm.Conn // with -R

	posted int // receives outstanding
}

// sendArea and recvArea are the two halves of the buffer.
func (e *endpoint) sendArea() []byte { return e.mr.Bytes()[:e.half] }
func (e *endpoint) recvArea() []byte { return e.mr.Bytes()[e.half : 2*e.half] }

func (e *endpoint) info() qpInfo {
	return qpInfo{QPN: e.qp.Num(), PSN: e.psn, RKey: e.mr.RKey(), Addr: e.mr.Addr() + uint64(e.half), Len: e.half}
}

// session is one side of a run: its verbs objects, its QPs and the control
// channel to the peer.
type session struct {
	cfg     *Config
	server  bool
	out     io.Writer // the table (nil with --json)
	clock   Clock
	clockCh <-chan Clock

	ctrl *ctrl
	uctx *uverbs.Context // TCP mode: opened here
	pd   *uverbs.PD
	scq  *uverbs.CQ
	rcq  *uverbs.CQ
	eps  []*endpoint

	devName  string
	port     uverbs.PortAttr
	mtu      uverbs.MTU
	gid      uverbs.GIDEntry
	outReads int

	trace      io.Writer // RDMAPERF_TRACE: timed setup steps
	t0         time.Time
	abort      atomic.Bool // the context ended
	yieldAt    int64       // ticks of the next scheduler turn (yield)
	yieldTicks int64
	allocBase  allocSnap // RDMAPERF_ALLOCTRACE: the profile before the size
	prof       *os.File  // --cpuprofile, until it starts
	profiling  bool
	snapCost   snapshot
	setup      time.Duration // connecting the QPs
	// closeLast are closed after everything else: perftest's rdma_cm
	// exchange and its listener, which outlive the QPs' connections.
	closeLast []io.Closer
	// adapted: a server without --perftest found its client is perftest
	// and speaks its exchange (runServer).
	adapted bool
}

// tracef notes a setup step with the time since the start.
func (s *session) tracef(format string, args ...any) {
	if s.trace != nil {
		fmt.Fprintf(s.trace, "rdmaperf %8.3fs: %s\n", time.Since(s.t0).Seconds(), fmt.Sprintf(format, args...))
	}
}

// access is what the peer may do to the buffers: every test's operation.
const access = uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteAtomic

// bufHalf is the size of each half of a QP's buffer: perftest's BUFF_SIZE,
// at least a page.
func bufHalf(maxSize int) int {
	const page = 4096
	return (max(maxSize, page) + page - 1) / page * page
}

// close releases everything, children first: MRs, then the QPs (rdma_cm
// connections in reverse, since the first owns the PD and CQs the others
// share), the buffers, the device, the control channel.
func (s *session) close() error {
	var errs []error
	for _, e := range s.eps {
		if e.mr != nil {
			errs = append(errs, e.mr.Close())
		}
	}
	for i := len(s.eps) - 1; i >= 0; i-- {
		e := s.eps[i]
		if e.conn != nil {
			errs = append(errs, e.conn.Close())
		} else if e.qp != nil {
			errs = append(errs, e.qp.Close())
		}
	}
	for _, e := range s.eps {
		if e.buf != nil {
			errs = append(errs, e.buf.Close())
		}
	}
	s.eps = nil
	if s.uctx != nil {
		errs = append(errs, s.uctx.Close()) // CQs, PD
		s.uctx = nil
	}
	if s.ctrl != nil {
		errs = append(errs, s.ctrl.Close())
	}
	for _, c := range s.closeLast {
		errs = append(errs, c.Close())
	}
	s.closeLast = nil
	return errors.Join(errs...)
}

// openDevice opens the device for the TCP exchange and picks the port, MTU
// and GID.
func (s *session) openDevice() error {
	c, err := uverbs.Open(s.cfg.Device)
	if err != nil {
		return err
	}
	s.tracef("opened %s", c.Device().Name)
	s.uctx = c
	s.devName = c.Device().Name
	if err := s.queryPort(c); err != nil {
		return err
	}
	tbl, err := c.GIDTable(s.cfg.IBPort)
	if err != nil {
		return fmt.Errorf("%s port %d: %w", s.devName, s.cfg.IBPort, err)
	}
	g, err := pickGID(tbl, s.cfg.GIDIndex)
	if err != nil {
		return fmt.Errorf("%s port %d: %w", s.devName, s.cfg.IBPort, err)
	}
	s.gid = g
	s.tracef("port and GID %d", g.Index)
	pd, err := c.AllocPD()
	if err != nil {
		return err
	}
	s.pd = pd
	q := len(s.eps)
	if s.scq, err = c.CreateCQ(s.cfg.TxDepth*q+1, nil); err != nil {
		return err
	}
	if s.rcq, err = c.CreateCQ(s.cfg.RxDepth*q+1, nil); err != nil {
		return err
	}
	s.tracef("PD and CQs")
	return nil
}

func (s *session) queryPort(c *uverbs.Context) error {
	p, err := c.QueryPort(s.cfg.IBPort)
	if err != nil {
		return fmt.Errorf("%s: %w", s.devName, err)
	}
	if p.State != uverbs.PortActive {
		return fmt.Errorf("%s port %d is %v, not ACTIVE: is its netdev up?", s.devName, s.cfg.IBPort, p.State)
	}
	s.port = p
	s.mtu = p.ActiveMTU
	if s.cfg.MTU != 0 {
		s.mtu = uverbs.MTUFromBytes(s.cfg.MTU)
		if s.mtu > p.MaxMTU {
			return fmt.Errorf("-m %d: port %d allows at most %d", s.cfg.MTU, s.cfg.IBPort, p.MaxMTU.Bytes())
		}
	}
	a, err := c.QueryDevice()
	if err != nil {
		return err
	}
	s.outReads = min(a.MaxQPRdAtom, 255)
	return nil
}

// pickGID returns entry idx, or with idx -1 the port's RoCE v2 GID of an
// IPv4 address (what rdma_cm uses), else the first RoCE v2 one, else the
// first entry.
func pickGID(tbl []uverbs.GIDEntry, idx int) (uverbs.GIDEntry, error) {
	if len(tbl) == 0 {
		return uverbs.GIDEntry{}, errors.New("empty GID table")
	}
	if idx >= 0 {
		for _, g := range tbl {
			if g.Index == idx {
				return g, nil
			}
		}
		return uverbs.GIDEntry{}, fmt.Errorf("-x %d: no such GID entry (see `rdmainfo` or ibv_devinfo -v)", idx)
	}
	var v2 []uverbs.GIDEntry
	for _, g := range tbl {
		if g.Type == uverbs.GIDTypeRoCEv2 {
			if g.GID.Addr().Is4() {
				return g, nil
			}
			v2 = append(v2, g)
		}
	}
	if len(v2) > 0 {
		return v2[0], nil
	}
	return tbl[0], nil
}

// newEndpoints allocates the QPs' buffers (TCP mode also creates the QPs).
func (s *session) newEndpoints(n int) {
	s.eps = make([]*endpoint, n)
	for i := range s.eps {
		s.eps[i] = &endpoint{half: bufHalf(s.cfg.MaxMsg()), psn: rand.Uint32() & 0xffffff}
	}
}

// register maps and registers each endpoint's buffer on pd.
func (s *session) register(pd *uverbs.PD) error {
	for _, e := range s.eps {
		b, err := uverbs.AllocBuffer(2 * e.half)
		if err != nil {
			return err
		}
		e.buf = b
		if e.mr, err = pd.RegMR(b.Bytes(), access); err != nil {
			return err
		}
	}
	s.tracef("%d buffers of %d bytes registered", len(s.eps), 2*s.eps[0].half)
	return nil
}

// createQPs is the TCP mode's ctx_init: RC QPs moved to INIT.
func (s *session) createQPs() error {
	if err := s.register(s.pd); err != nil {
		return err
	}
	for _, e := range s.eps {
		qp, err := s.pd.CreateQP(uverbs.QPInitAttr{
			Type: uverbs.QPTypeRC, SendCQ: s.scq, RecvCQ: s.rcq,
			Cap: uverbs.QPCap{MaxSendWR: s.cfg.TxDepth, MaxRecvWR: s.cfg.RxDepth, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: s.cfg.Inline},
		})
		if err != nil {
			return err
		}
		e.qp = qp
		if err := qp.ModifyToInit(s.cfg.IBPort, uverbs.AccessRemoteWrite|uverbs.AccessRemoteRead|uverbs.AccessRemoteAtomic, 0); err != nil {
			return err
		}
	}
	s.tracef("%d QPs in INIT", len(s.eps))
	return nil
}

func (s *session) localInfos() []qpInfo {
	infos := make([]qpInfo, len(s.eps))
	for i, e := range s.eps {
		infos[i] = e.info()
		infos[i].LID = s.port.LID
		infos[i].GID = hex.EncodeToString(s.gid.GID[:])
		infos[i].OutReads = s.outReads
	}
	return infos
}

// connectQPs is perftest's ctx_connect: RTR and RTS towards the peer's QPs.
func (s *session) connectQPs(remote []qpInfo) error {
	if len(remote) != len(s.eps) {
		return fmt.Errorf("the peer has %d QPs, this side %d", len(remote), len(s.eps))
	}
	for i, e := range s.eps {
		r := remote[i]
		var gid uverbs.GID
		b, err := hex.DecodeString(r.GID)
		if err != nil || len(b) != len(gid) {
			return fmt.Errorf("peer QP %d: bad GID %q", i, r.GID)
		}
		copy(gid[:], b)
		e.remote = r
		timeout := s.cfg.Timeout
		if timeout == 0 {
			timeout = uverbs.TimeoutInfinite // -u 0: the IBA's 0
		}
		o := uverbs.ConnectOptions{
			Port: s.cfg.IBPort, SGIDIndex: s.gid.Index, HopLimit: 0xff, MTU: s.mtu,
			MinRNRTimer: 12, Timeout: timeout, RetryCnt: 7, RNRRetry: 7,
			MaxDestRdAtomic: int(uint8(max(1, s.outReads))), MaxRdAtomic: max(1, min(r.OutReads, 255)),
		}
		if err := e.qp.Connect(uverbs.Dest{LID: r.LID, QPN: r.QPN, PSN: r.PSN, GID: gid}, e.psn, &o); err != nil {
			return fmt.Errorf("connect QP %d: %w", i, err)
		}
	}
	s.tracef("%d QPs in RTS", len(s.eps))
	return nil
}

// dataOptions are the rdma_cm options of data connection i: perftest's
// depths, CQs shared by all the QPs (created with the first), polled only.
func (s *session) dataOptions(i int) *cm.Options {
	q := len(s.eps)
	o := &cm.Options{
		SendDepth: s.cfg.TxDepth, RecvDepth: s.cfg.RxDepth, MaxInline: s.cfg.Inline,
		SeparateCQs: true, NoCompChannel: true, CQSize: max(s.cfg.TxDepth, s.cfg.RxDepth)*q + 1,
		ReuseAddr: true,
	}
	if i > 0 {
		o.PD, o.SendCQ, o.RecvCQ = s.pd, s.scq, s.rcq
	}
	return o
}

// adoptConn takes data connection i's verbs objects.
func (s *session) adoptConn(i int, c *cm.Conn) error {
	e := s.eps[i]
	e.conn, e.qp = c, c.QP()
	if i == 0 {
		s.pd, s.scq, s.rcq = c.PD(), c.SendCQ(), c.RecvCQ()
		s.devName = c.Context().Device().Name
		if err := s.queryPort(c.Context()); err != nil {
			return err
		}
		s.outReads = int(c.InitiatorDepth())
	}
	return nil
}

// hostPort joins a host and port.
func hostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

// dialCtrl opens the control channel to the server.
func (s *session) dialCtrl(ctx context.Context) error {
	addr := hostPort(s.cfg.Host, s.cfg.Port)
	if s.cfg.RDMACM {
		t := &cmTransport{}
		c, err := cm.Dial(ctx, addr, cmCtrlOptions(t))
		if err != nil {
			return fmt.Errorf("rdma_cm connect to %s: %w", addr, err)
		}
		t.conn = c
		s.ctrl = newCtrl(t)
		return nil
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("couldn't connect to %s (is the server running?): %w", addr, err)
	}
	s.ctrl = newCtrl(newTCPTransport(c))
	return nil
}

// listener waits for the client's control connection (and, with -R, its
// data connections).
type listener struct {
	tcp net.Listener
	cm  *cm.Listener
}

func (l *listener) Close() error {
	if l.tcp != nil {
		return l.tcp.Close()
	}
	if l.cm != nil {
		return l.cm.Close()
	}
	return nil
}

// listen opens the server's listener and says so, as perftest's server does.
func (s *session) listen(ctx context.Context) (*listener, error) {
	ln, err := s.openListener(ctx)
	if err == nil && s.out != nil {
		fmt.Fprintf(s.out, "\n************************************\n* Waiting for client to connect... *\n************************************\n")
	}
	return ln, err
}

func (s *session) openListener(ctx context.Context) (*listener, error) {
	if s.cfg.RDMACM {
		ln, err := cm.Listen(ctx, fmt.Sprintf("0.0.0.0:%d", s.cfg.Port), &cm.Options{ReuseAddr: true})
		if err != nil {
			return nil, fmt.Errorf("rdma_cm listen on port %d: %w", s.cfg.Port, err)
		}
		return &listener{cm: ln}, nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", fmt.Sprintf(":%d", s.cfg.Port))
	if err != nil {
		return nil, fmt.Errorf("listen on TCP port %d: %w", s.cfg.Port, err)
	}
	return &listener{tcp: ln}, nil
}

// acceptCtrl waits for the client's control connection.
func (s *session) acceptCtrl(ctx context.Context, ln *listener) error {
	if ln.cm != nil {
		req, err := ln.cm.AcceptRequest(ctx)
		if err != nil {
			return err
		}
		t := &cmTransport{}
		c, err := req.Accept(ctx, cmCtrlOptions(t))
		if err != nil {
			return err
		}
		t.conn = c
		s.ctrl = newCtrl(t)
		return nil
	}
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.tcp.Accept()
		ch <- res{c, err}
	}()
	select {
	case <-ctx.Done():
		ln.tcp.Close()
		return ctx.Err()
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		s.ctrl = newCtrl(newTCPTransport(r.c))
		return nil
	}
}

// helloFrom builds the client's settings message.
func helloFrom(c *Config) *hello {
	return &hello{
		Version: protoVersion, Test: c.Test.String(), Sizes: c.Sizes, Iters: c.Iters,
		Duration: int64(c.Duration), Margin: int64(c.Margin), QPs: c.QPs,
		TxDepth: c.TxDepth, RxDepth: c.RxDepth, CQMod: c.CQMod, PostList: c.PostList, Inline: c.Inline,
		Atomic: int(c.Atomic), MTU: c.MTU, NoPeak: c.NoPeak, Gbits: c.Gbits,
	}
}

// adopt applies the client's settings on the server.
func (c *Config) adopt(h *hello) error {
	if h.Version != protoVersion {
		return fmt.Errorf("the client speaks rdmaperf protocol %d, this server %d: use the same rdmaperf on both sides", h.Version, protoVersion)
	}
	if h.Test != c.Test.String() {
		return fmt.Errorf("the client runs %s, this server %s: start both with the same test", h.Test, c.Test)
	}
	if len(h.Sizes) == 0 || h.QPs < 1 || h.QPs > maxQPs || h.PostList < 1 ||
		c.Test != ConnTime && (h.TxDepth < 1 || h.RxDepth < 1 || h.CQMod < 1) {
		return fmt.Errorf("the client's settings are inconsistent: %+v", *h)
	}
	for _, s := range h.Sizes {
		if s < 0 || s > 1<<30 {
			return fmt.Errorf("the client asks for size %d", s)
		}
	}
	c.Sizes, c.Iters, c.Duration, c.Margin = h.Sizes, h.Iters, time.Duration(h.Duration), time.Duration(h.Margin)
	c.QPs, c.TxDepth, c.RxDepth, c.CQMod, c.PostList, c.Inline = h.QPs, h.TxDepth, h.RxDepth, h.CQMod, h.PostList, h.Inline
	c.Atomic, c.NoPeak, c.Gbits = AtomicType(h.Atomic), h.NoPeak, h.Gbits
	if h.MTU != 0 {
		c.MTU = h.MTU
	}
	return nil
}

// connect sets up the QPs on both sides: the TCP exchange or rdma_cm.
func (s *session) connect(ctx context.Context, ln *listener) error {
	t0 := time.Now()
	defer func() { s.setup = time.Since(t0) }()
	s.newEndpoints(s.cfg.QPs)
	if !s.cfg.RDMACM {
		if err := s.openDevice(); err != nil {
			return err
		}
		if err := s.createQPs(); err != nil {
			return err
		}
		if s.server {
			m, err := s.ctrl.expect(ctx, kindQPs)
			if err != nil {
				return err
			}
			if err := s.connectQPs(m.QPs); err != nil {
				return err
			}
			return s.ctrl.send(&message{Kind: kindQPs, QPs: s.localInfos()})
		}
		if err := s.ctrl.send(&message{Kind: kindQPs, QPs: s.localInfos()}); err != nil {
			return err
		}
		m, err := s.ctrl.expect(ctx, kindQPs)
		if err != nil {
			return err
		}
		return s.connectQPs(m.QPs)
	}
	// rdma_cm: one connection per QP after the control connection.
	for i := range s.eps {
		var c *cm.Conn
		var err error
		if s.server {
			var req *cm.Request
			if req, err = ln.cm.AcceptRequest(ctx); err == nil {
				c, err = req.Accept(ctx, s.dataOptions(i))
			}
		} else {
			c, err = cm.Dial(ctx, hostPort(s.cfg.Host, s.cfg.Port), s.dataOptions(i))
		}
		if err != nil {
			return fmt.Errorf("rdma_cm connection %d: %w", i, err)
		}
		if err := s.adoptConn(i, c); err != nil {
			c.Close()
			return err
		}
		s.tracef("rdma_cm connection %d up", i)
	}
	if err := s.register(s.pd); err != nil {
		return err
	}
	if err := s.ctrl.send(&message{Kind: kindQPs, QPs: s.localInfos()}); err != nil {
		return err
	}
	m, err := s.ctrl.expect(ctx, kindQPs)
	if err != nil {
		return err
	}
	if len(m.QPs) != len(s.eps) {
		return fmt.Errorf("the peer has %d QPs, this side %d", len(m.QPs), len(s.eps))
	}
	for i, e := range s.eps {
		e.remote = m.QPs[i]
	}
	return nil
}

// printInfo prints perftest's banner and the QP addresses.
func (s *session) printInfo() {
	w := s.out
	if w == nil {
		return
	}
	c := s.cfg
	fmt.Fprint(w, resultLine)
	fmt.Fprintf(w, "                    %s (rdmago)\n", c.Test.title())
	fmt.Fprintf(w, " Device         : %s\t\tNumber of qps   : %d\n", s.devName, c.QPs)
	fmt.Fprintf(w, " Connection type : RC\t\tTransport type : IB\n")
	if c.Test.IsBW() || c.Test.IsLat() {
		fmt.Fprintf(w, " TX depth        : %d\t\tCQ Moderation   : %d\n", c.TxDepth, c.CQMod)
		if c.Test == SendBW || c.Test == SendLat {
			fmt.Fprintf(w, " RX depth        : %d\n", c.RxDepth)
		}
		fmt.Fprintf(w, " Post List       : %d\t\tMax inline data : %d[B]\n", c.PostList, c.Inline)
		fmt.Fprintf(w, " Mtu             : %d[B]\n", s.mtu.Bytes())
	}
	if c.Test.IsAtomic() {
		fmt.Fprintf(w, " Atomic type     : %v\n", c.Atomic)
	}
	if c.RDMACM {
		fmt.Fprintf(w, " rdma_cm QPs\t : ON\t\tData ex. method : rdma_cm\n")
	} else {
		fmt.Fprintf(w, " rdma_cm QPs\t : OFF\t\tData ex. method : Ethernet\n")
		fmt.Fprintf(w, " GID index       : %d (%v %v)\n", s.gid.Index, s.gid.Type, s.gid.GID.Addr())
	}
	fmt.Fprintf(w, " Clock           : %.3f MHz (%s)\n", s.clock.MHz, s.clock.Source)
	fmt.Fprint(w, resultLine)
	for i, e := range s.eps {
		if i >= 4 && len(s.eps) > 5 {
			fmt.Fprintf(w, " ... %d more QPs\n", len(s.eps)-i)
			break
		}
		fmt.Fprintf(w, " local address: LID %#04x QPN %#06x PSN %#06x RKey %#08x VAddr %#016x\n", s.port.LID, e.qp.Num(), e.psn, e.mr.RKey(), e.info().Addr)
		r := e.remote
		if !c.RDMACM {
			fmt.Fprintf(w, " remote address: LID %#04x QPN %#06x PSN %#06x RKey %#08x VAddr %#016x\n", r.LID, r.QPN, r.PSN, r.RKey, r.Addr)
		} else {
			fmt.Fprintf(w, " remote address: RKey %#08x VAddr %#016x (%v)\n", r.RKey, r.Addr, e.conn.RemoteAddr())
		}
	}
}

// gidAddr formats a hex GID as an address, for messages.
func gidAddr(h string) string {
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != 16 {
		return h
	}
	return netip.AddrFrom16([16]byte(b)).Unmap().String()
}
