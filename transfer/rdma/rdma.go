// Package rdma is the file protocol's RDMA transport: a transfer.Transport
// over an RC connection made with package cm, control messages by
// SEND/RECV and data by RDMA_WRITE_WITH_IMM, completions waited for on the
// connection's completion channel (the Go netpoller), no cgo.
//
// It needs a kernel with rdma_ucm and an RDMA device (Soft-RoCE included);
// see package cm and uverbs. Registering memory pins it against
// RLIMIT_MEMLOCK.
package rdma

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/uverbs"
)

// DefaultPort is where rdmacp listens unless told otherwise.
const DefaultPort = 18517

// DefaultMaxSlots is Options.MaxSlots' default.
const DefaultMaxSlots = 64

// Options configures Dial and Listen; nil or the zero value means every
// default.
type Options struct {
	// MaxSlots is the most data writes the connection can have outstanding
	// at its receiving end: the largest window, in slots, a receiver can
	// offer over it. The receive queue holds MaxSlots+transfer.ControlDepth
	// requests; the send queue as many plus room for control messages.
	// Only transfer.ControlDepth receives (and their buffers) are posted
	// when the connection is set up, the rest by Transport.PrepareWrites.
	// Default DefaultMaxSlots.
	MaxSlots int
	// Logf, when set, is told every connection step (cm.Options.Logf).
	Logf func(format string, args ...any)
	// OnRefuse, when set, is told each connection request a Listener
	// refuses, whatever Logf is: one from a peer speaking rsockets
	// (rcopy's client, a program under librspreload). peer is the
	// requester's address (invalid when the CM does not know it), msg
	// says what was refused, in one line. It is called from the
	// Listener's one request-reading goroutine: it must not block
	// (rate-limit per peer there: a peer can send requests at will).
	// Without it Logf is told.
	OnRefuse func(peer netip.AddrPort, msg string)
	// CloseTimeout bounds Close's wait for the peer to confirm the
	// disconnect (default: cm's, 3 s).
	CloseTimeout time.Duration
	// AckTimeout is the QP's local ACK timeout exponent (cm.Options.AckTimeout,
	// rdma_set_option RDMA_OPTION_ID_ACK_TIMEOUT: 4.096 µs × 2^AckTimeout).
	// 0 leaves the CM's default (on RoCE its packet lifetime + 1: 19, 2.1 s,
	// with Linux 6.1; 17, 0.54 s, with 6.12). A packet lost at the
	// end of a burst (nothing after it draws a NAK), a lost ACK, and with
	// rxe any further loss while a go-back-N retransmission is under way
	// (its completer ignores NAKs then) each cost one such timeout, so on a
	// lossy link a lower value (14: 67 ms) recovers much faster; too low for
	// the round trip makes
	// spurious retransmissions, and on hardware RetryCount (7) timeouts in a
	// row without an ACK end the connection (IB_WC_RETRY_EXC_ERR; rxe takes
	// a retry count of 7 as unlimited).
	AckTimeout uint8
	// AcceptTimeout bounds the setup of one accepted connection, from its
	// request to ESTABLISHED (default DefaultAcceptTimeout): a peer that
	// never completes the handshake (no RTU) is dropped then.
	AcceptTimeout time.Duration
	// MaxPendingAccepts is how many connections a Listener sets up at once
	// (default DefaultMaxPendingAccepts): a request beyond it evicts the
	// oldest setup still waiting for its peer (as a SYN queue drops its
	// oldest entry), so held half-open connects cannot lock out a sender
	// whose handshake completes. It also bounds the connections set up and
	// not yet taken by Accept, and twice it the setups alive (evicted ones
	// tear down); requests beyond those are rejected.
	MaxPendingAccepts int
	// WaitForListener makes Dial retry, until ctx ends, while nobody
	// listens at the address yet (cm.ErrNoListener) or its CM does not
	// answer, pausing 50 ms doubling to 1 s (jittered) between attempts.
	// Dialer's DialFunc retries so within DialSend's wait whatever it is.
	WaitForListener bool
}

// value is o's settings (nil: the zero Options).
func (o *Options) value() Options {
	if o == nil {
		return Options{}
	}
	return *o
}

// Listener defaults.
const (
	DefaultAcceptTimeout     = 10 * time.Second
	DefaultMaxPendingAccepts = 16
)

func (c Options) acceptTimeout() time.Duration {
	if c.AcceptTimeout > 0 {
		return c.AcceptTimeout
	}
	return DefaultAcceptTimeout
}

func (c Options) maxPending() int {
	if c.MaxPendingAccepts > 0 {
		return c.MaxPendingAccepts
	}
	return DefaultMaxPendingAccepts
}

func (c Options) maxSlots() int {
	if c.MaxSlots > 0 {
		return min(c.MaxSlots, transfer.MaxSlots)
	}
	return DefaultMaxSlots
}

// Work request ids: the kind in the top bits, a buffer index below.
const (
	wrCtl   = 1 << 32
	wrWrite = 2 << 32
)

// sendBufs is how many control messages can be in flight at once.
const sendBufs = 2 * transfer.ControlDepth

// handshakeSendBufs is how many an accepted connection has until
// PrepareWrites: what a receiver sends before its peer authenticated
// (HELLO, AUTH, an ERROR) needs no more.
const handshakeSendBufs = 4

// msgBufs is one registered block of control message buffers of
// transfer.MaxMessageSize bytes each, numbered from first: a Transport
// registers a block at setup and more in PrepareWrites.
type msgBufs struct {
	first int
	buf   []byte
	mr    *uverbs.MR
}

// bufAt finds buffer i among bs: its block and offset there.
func bufAt(bs []msgBufs, i int) (*msgBufs, int) {
	k := len(bs) - 1
	for k > 0 && i < bs[k].first {
		k--
	}
	return &bs[k], (i - bs[k].first) * transfer.MaxMessageSize
}

// addBufs registers a block of n more buffers numbered from first on c
// (Conn.RegMR: Conn.Close deregisters it).
func addBufs(c *cm.Conn, bs []msgBufs, first, n int, what string) ([]msgBufs, error) {
	buf := make([]byte, n*transfer.MaxMessageSize)
	mr, err := c.RegMR(buf, uverbs.AccessLocalWrite)
	if err != nil {
		return bs, fmt.Errorf("register %d %s buffers: %w", n, what, err)
	}
	return append(bs, msgBufs{first: first, buf: buf, mr: mr}), nil
}

// Transport is a transfer.Transport over one RC connection. Dial or
// Listener.Accept make one; the caller must Close it, which disconnects
// and destroys the connection's QP, CQs, memory regions and PD.
type Transport struct {
	cfg      Options
	conn     *cm.Conn
	qp       *uverbs.QP
	sendCQ   *uverbs.CQ
	recvCQ   *uverbs.CQ
	maxSlots int
	accepted bool // by a Listener: handshakeSendBufs until PrepareWrites

	// receive side: the QP holds nrecv receives, of which posted are
	// posted (transfer.ControlDepth from setup, the rest from
	// PrepareWrites), each with a buffer among recvBufs
	nrecv    int
	posted   int
	recvBufs []msgBufs
	repost   int // index of the receive to post again, -1 none
	rwc      [16]uverbs.WC
	rpend    []uverbs.WC

	// send side: nsend buffers among sendBufs, the free ones in free
	sendDepth   int
	outstanding int
	nsend       int
	sendBufs    []msgBufs
	free        []int
	swc         [16]uverbs.WC
	err         error // the first failed send completion (sticky)
	wr          [1]uverbs.SendWR
	sge         [1]uverbs.SGE

	mu      sync.Mutex
	regions map[*region]struct{}
	closed  bool

	once     sync.Once
	closeErr error
}

func newTransport(cfg Options, accepted bool) *Transport {
	t := &Transport{cfg: cfg, maxSlots: cfg.maxSlots(), accepted: accepted, repost: -1, regions: map[*region]struct{}{}}
	t.nrecv = t.maxSlots + transfer.ControlDepth
	t.sendDepth = t.maxSlots + sendBufs
	return t
}

func (t *Transport) options() *cm.Options {
	return &cm.Options{
		SendDepth:    t.sendDepth,
		RecvDepth:    t.nrecv,
		SeparateCQs:  true,
		CloseTimeout: t.cfg.CloseTimeout,
		Logf:         t.cfg.Logf,
		Setup:        t.setup,
		AckTimeout:   t.cfg.AckTimeout,
	}
}

// setup runs with the QP in INIT, before the connection is established:
// register the control buffers and post the receives control messages
// need (transfer.ControlDepth), so nothing the peer sends first meets an
// empty receive queue. The receives the peer's writes consume wait for
// PrepareWrites: a connection whose peer has not authenticated holds
// memory for its handshake only.
func (t *Transport) setup(c *cm.Conn) error {
	capa := c.QP().Cap()
	if capa.MaxRecvWR < t.nrecv || capa.MaxSendWR < t.sendDepth {
		return fmt.Errorf("queue pair has %d receive and %d send requests, need %d and %d: lower the queue depth", capa.MaxRecvWR, capa.MaxSendWR, t.nrecv, t.sendDepth)
	}
	t.free = make([]int, 0, sendBufs)
	nsend := sendBufs
	if t.accepted {
		nsend = handshakeSendBufs
	}
	if err := t.addSend(c, nsend); err != nil {
		return err
	}
	return t.addRecv(c, transfer.ControlDepth)
}

// addSend registers n more send buffers and frees them for Send.
func (t *Transport) addSend(c *cm.Conn, n int) error {
	bs, err := addBufs(c, t.sendBufs, t.nsend, n, "send")
	if err != nil {
		return err
	}
	t.sendBufs = bs
	for i := t.nsend; i < t.nsend+n; i++ {
		t.free = append(t.free, i)
	}
	t.nsend += n
	return nil
}

// addRecv registers and posts n more receives.
func (t *Transport) addRecv(c *cm.Conn, n int) error {
	bs, err := addBufs(c, t.recvBufs, t.posted, n, "receive")
	if err != nil {
		return err
	}
	t.recvBufs = bs
	for range n {
		if err := t.postRecv(c.QP(), t.posted); err != nil {
			return err
		}
		t.posted++
	}
	return nil
}

func (t *Transport) postRecv(qp *uverbs.QP, i int) error {
	b, off := bufAt(t.recvBufs, i)
	// The request stays on the stack (PostRecv keeps none of it): kept in
	// t, its SGE list would be one allocation per Receive.
	if err := qp.PostRecv(uverbs.RecvWR{ID: uint64(i), SGL: []uverbs.SGE{b.mr.SGE(off, transfer.MaxMessageSize)}}); err != nil {
		return fmt.Errorf("post receive: %w", err)
	}
	return nil
}

// bufBytes is how many bytes of receive and send buffers t has registered.
func (t *Transport) bufBytes() (recv, send int) {
	for _, b := range t.recvBufs {
		recv += len(b.buf)
	}
	for _, b := range t.sendBufs {
		send += len(b.buf)
	}
	return recv, send
}

// PrepareWrites implements transfer.WritePreparer: a receiver calls it once
// its peer authenticated, before it offers a window of n slots. It
// registers and posts the receives n writes consume (up to MaxSlots; the
// transport has only transfer.ControlDepth until then), and gives an
// accepted connection the rest of its send buffers. Calling it again with
// a larger n adds the difference; with a smaller one it does nothing. Like
// the other methods it must not run concurrently with them; Close frees
// what it registered.
func (t *Transport) PrepareWrites(n int) error {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return fmt.Errorf("prepare for writes: %w", transfer.ErrTransportClosed)
	}
	if t.nsend < sendBufs {
		if err := t.addSend(t.conn, sendBufs-t.nsend); err != nil {
			return fmt.Errorf("prepare for writes: %w", err)
		}
	}
	if more := transfer.ControlDepth + min(n, t.maxSlots) - t.posted; more > 0 {
		if err := t.addRecv(t.conn, more); err != nil {
			return fmt.Errorf("prepare for %d writes: %w", n, err)
		}
	}
	return nil
}

// start takes over an established connection.
func (t *Transport) start(c *cm.Conn) {
	t.conn, t.qp = c, c.QP()
	t.sendCQ, t.recvCQ = c.SendCQ(), c.RecvCQ()
}

// MaxSlots implements transfer.Transport.
func (t *Transport) MaxSlots() int { return t.maxSlots }

// Peer is the address of the other end.
func (t *Transport) Peer() string { return t.conn.RemoteAddr().String() }

// Send implements transfer.Transport: the message is copied into a
// registered buffer and posted as a signaled SEND (ibv_post_send with
// IBV_WR_SEND); it waits only when the send queue or the buffers are full.
func (t *Transport) Send(ctx context.Context, msg []byte) error {
	if len(msg) > transfer.MaxMessageSize {
		return fmt.Errorf("send: message of %d bytes exceeds %d", len(msg), transfer.MaxMessageSize)
	}
	if err := t.room(ctx, true); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	i := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	b, off := bufAt(t.sendBufs, i)
	copy(b.buf[off:], msg)
	t.sge[0] = b.mr.SGE(off, len(msg))
	t.wr[0] = uverbs.SendWR{ID: wrCtl | uint64(i), Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: t.sge[:]}
	return t.post("send")
}

// WriteImm implements transfer.Transport: one signaled
// RDMA_WRITE_WITH_IMM from src into the peer's memory (ibv_post_send with
// IBV_WR_RDMA_WRITE_WITH_IMM).
func (t *Transport) WriteImm(ctx context.Context, src transfer.Region, srcOff, n int, dst transfer.RemoteRegion, dstOff uint64, imm uint32) error {
	r, ok := src.(*region)
	if !ok || r.t != t || r.mr == nil {
		return fmt.Errorf("write: source region is not open on this transport")
	}
	if srcOff < 0 || n <= 0 || srcOff+n > r.mr.Len() {
		return fmt.Errorf("write: [%d,+%d) outside the %d-byte source region", srcOff, n, r.mr.Len())
	}
	if err := t.room(ctx, false); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	t.sge[0] = r.mr.SGE(srcOff, n)
	t.wr[0] = uverbs.SendWR{ID: wrWrite, Opcode: uverbs.WRRDMAWriteWithImm, Flags: uverbs.SendSignaled,
		SGL: t.sge[:], Imm: imm, RemoteAddr: dst.Addr + dstOff, RKey: dst.RKey}
	return t.post("write")
}

func (t *Transport) post(op string) error {
	if err := t.qp.PostSend(t.wr[:]...); err != nil {
		if t.wr[0].ID&wrCtl != 0 {
			t.free = append(t.free, int(t.wr[0].ID&0xffffffff))
		}
		return fmt.Errorf("%s: post: %w", op, t.peerErr(err))
	}
	t.outstanding++
	return nil
}

// room waits until the send queue (and, for a control message, a send
// buffer) is free, reaping send completions.
func (t *Transport) room(ctx context.Context, ctl bool) error {
	for {
		t.reap()
		if t.err != nil {
			return t.err
		}
		if t.outstanding < t.sendDepth && (!ctl || len(t.free) > 0) {
			return nil
		}
		if err := t.waitSend(ctx); err != nil {
			return err
		}
	}
}

// reap takes the send completions there are.
func (t *Transport) reap() int {
	total := 0
	for {
		n := t.sendCQ.Poll(t.swc[:])
		t.sent(t.swc[:n])
		total += n
		if n < len(t.swc) {
			return total
		}
	}
}

// sent accounts for send completions.
func (t *Transport) sent(wcs []uverbs.WC) {
	for i := range wcs {
		wc := &wcs[i]
		t.outstanding--
		if wc.WRID&wrCtl != 0 {
			t.free = append(t.free, int(wc.WRID&0xffffffff))
		}
		if wc.Status != uverbs.WCSuccess && (t.err == nil || errors.Is(t.err, transfer.ErrPeerGone) && !wc.IsFlush()) {
			t.err = t.wcErr(wc)
		}
	}
}

// waitSend sleeps until a send completion arrives (cm.Conn.Wait: poll, arm,
// poll, sleep on the completion channel) or the connection ends.
func (t *Transport) waitSend(ctx context.Context) error {
	n, _, err := t.conn.Wait(ctx, t.swc[:], t.sendCQ)
	if err != nil {
		return t.waitErr(ctx, err)
	}
	t.sent(t.swc[:n])
	return nil
}

// waitErr is the error of a wait that ended with no completion: ctx's, or,
// once the connection ended (what completed before was returned first, and
// the flushes that follow said the rest), ErrPeerGone.
func (t *Transport) waitErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if t.conn.Err() != nil {
		return t.peerErr(nil)
	}
	return fmt.Errorf("wait for completions: %w", err)
}

// peerErr is the error for a connection that ended (cause may be nil).
func (t *Transport) peerErr(cause error) error {
	why := "the connection ended"
	if t.conn != nil {
		if err := t.conn.Err(); err != nil {
			why = err.Error()
		}
	}
	if cause != nil {
		return fmt.Errorf("%w: %s (%v)", transfer.ErrPeerGone, why, cause)
	}
	return fmt.Errorf("%w: %s", transfer.ErrPeerGone, why)
}

// wcErr maps a failed completion to the transport's errors.
func (t *Transport) wcErr(wc *uverbs.WC) error {
	switch wc.Status {
	case uverbs.WCRemAccessErr, uverbs.WCRemInvReqErr, uverbs.WCRemOpErr:
		return fmt.Errorf("%w: %v", transfer.ErrRemoteAccess, wc.Err())
	case uverbs.WCRetryExcErr, uverbs.WCRNRRetryExcErr, uverbs.WCRespTimeoutErr:
		return fmt.Errorf("%w: the peer stopped answering (%v)", transfer.ErrPeerGone, wc.Err())
	case uverbs.WCWRFlushErr:
		return t.peerErr(nil)
	}
	return wc.Err()
}

// recvWCErr maps a failed receive completion to the transport's errors.
// A receive fails with IBV_WC_LOC_LEN_ERR (hardware) or
// IBV_WC_LOC_QP_OP_ERR (rxe, which reports it as its own malformed WQE)
// only when the peer's SEND does not fit the posted buffer of
// transfer.MaxMessageSize bytes: a transfer.ErrProtocol saying what the
// peer did, not a fault of our QP.
func (t *Transport) recvWCErr(wc *uverbs.WC) error {
	switch wc.Status {
	case uverbs.WCLocLenErr, uverbs.WCLocQPOpErr:
		return &transfer.Error{Code: transfer.CodeProtocol, Text: fmt.Sprintf(
			"the peer sent a message larger than the %d-byte receive (the device reports %v): a SEND longer than the protocol's largest message",
			transfer.MaxMessageSize, wc.Status)}
	}
	return t.wcErr(wc)
}

// Drain implements transfer.Transport: it polls (and sleeps on) the send CQ
// until every posted request has completed.
func (t *Transport) Drain(ctx context.Context) error {
	for {
		t.reap()
		if t.err != nil {
			return t.err
		}
		if t.outstanding == 0 {
			return nil
		}
		if err := t.waitSend(ctx); err != nil {
			return err
		}
	}
}

func (t *Transport) pollRecv() int {
	if len(t.rpend) > 0 {
		return len(t.rpend)
	}
	n := t.recvCQ.Poll(t.rwc[:])
	t.rpend = t.rwc[:n]
	return n
}

// Receive implements transfer.Transport: ibv_poll_cq on the receive CQ,
// and when it is empty cm.Conn.Wait (ibv_req_notify_cq and
// ibv_get_cq_event parked on the netpoller, honouring ctx and the
// connection's end). The receive that
// carried the previous arrival is posted again first (its buffer was Msg
// until now).
func (t *Transport) Receive(ctx context.Context) (transfer.Arrival, error) {
	if t.repost >= 0 {
		i := t.repost
		t.repost = -1
		if err := t.postRecv(t.qp, i); err != nil {
			return transfer.Arrival{}, t.peerErr(err)
		}
	}
	for {
		if t.pollRecv() > 0 {
			wc := t.rpend[0]
			t.rpend = t.rpend[1:]
			if wc.Status != uverbs.WCSuccess {
				return transfer.Arrival{}, fmt.Errorf("receive: %w", t.recvWCErr(&wc))
			}
			i := int(wc.WRID)
			t.repost = i
			switch wc.Opcode {
			case uverbs.WCRecvRDMAWithImm:
				return transfer.Arrival{Write: true, Imm: wc.Imm, Len: int(wc.ByteLen)}, nil
			case uverbs.WCRecv:
				b, off := bufAt(t.recvBufs, i)
				return transfer.Arrival{Msg: b.buf[off : off+int(wc.ByteLen)]}, nil
			}
			return transfer.Arrival{}, fmt.Errorf("receive: unexpected completion %v", wc.Opcode)
		}
		if err := ctx.Err(); err != nil {
			return transfer.Arrival{}, err
		}
		n, _, err := t.conn.Wait(ctx, t.rwc[:], t.recvCQ)
		if err != nil {
			return transfer.Arrival{}, t.waitErr(ctx, err)
		}
		t.rpend = t.rwc[:n]
	}
}

// Register implements transfer.Transport: size bytes of page-aligned memory
// (uverbs.AllocBuffer) registered on the connection's PD, with remote write
// access when asked. Close deregisters and unmaps it.
func (t *Transport) Register(size int, remoteWrite bool) (transfer.Region, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, transfer.ErrTransportClosed
	}
	buf, err := uverbs.AllocBuffer(size)
	if err != nil {
		return nil, fmt.Errorf("allocate %d bytes: %w", size, err)
	}
	access := uverbs.AccessLocalWrite
	if remoteWrite {
		access |= uverbs.AccessRemoteWrite
	}
	mr, err := t.conn.PD().RegMR(buf.Bytes(), access)
	if err != nil {
		buf.Close()
		return nil, fmt.Errorf("register %d bytes: %w", size, err)
	}
	r := &region{t: t, buf: buf, mr: mr, remote: remoteWrite}
	t.regions[r] = struct{}{}
	return r, nil
}

type region struct {
	t      *Transport
	buf    *uverbs.Buffer
	mr     *uverbs.MR
	remote bool
}

func (r *region) Bytes() []byte { return r.buf.Bytes() }

func (r *region) Remote() transfer.RemoteRegion {
	if !r.remote || r.mr == nil {
		return transfer.RemoteRegion{}
	}
	return transfer.RemoteRegion{Addr: r.mr.Addr(), RKey: r.mr.RKey(), Len: uint64(r.mr.Len())}
}

// Close is ibv_dereg_mr and munmap; it is idempotent.
func (r *region) Close() error {
	r.t.mu.Lock()
	defer r.t.mu.Unlock()
	return r.closeLocked()
}

func (r *region) closeLocked() error {
	if r.mr == nil {
		return nil
	}
	err := r.mr.Close()
	r.mr = nil
	if berr := r.buf.Close(); err == nil {
		err = berr
	}
	delete(r.t.regions, r)
	return err
}

// closeDrain bounds how long Close waits for posted sends to complete.
const closeDrain = 2 * time.Second

// Close implements transfer.Transport: it waits (briefly) for the messages
// and writes posted so far to complete — so a last BYE or ERROR is not
// flushed away by the disconnect — deregisters the regions still open, then
// closes the connection (disconnect, destroy QP, CQs, control buffers, PD).
// It is idempotent; like the other methods it must not run concurrently
// with them.
func (t *Transport) Close() error {
	t.once.Do(func() {
		if t.conn != nil && t.conn.Err() == nil && t.outstanding > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), closeDrain)
			t.Drain(ctx)
			cancel()
		}
		t.mu.Lock()
		t.closed = true
		var errs []error
		for r := range t.regions {
			if err := r.closeLocked(); err != nil {
				errs = append(errs, err)
			}
		}
		t.mu.Unlock()
		if t.conn != nil {
			if err := t.conn.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}
