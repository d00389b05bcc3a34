// Copyright 2026 The rdmago Authors.

package perf

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/uverbs"
)

// The control channel carries rdmaperf's own out-of-band messages: the
// client's settings, each side's QPs and buffers, and the start and end of
// every size. It is a TCP connection by default and an RC connection of its
// own with -R, as perftest's rdma_cm mode uses one. Messages are JSON.

// protoVersion changes when the messages do; both sides must agree.
const protoVersion = 1

// Message kinds.
const (
	kindHello   = "hello"    // client -> server: settings
	kindHelloOK = "hello-ok" // server -> client: settings accepted
	kindQPs     = "qps"      // both ways: QPs and buffers
	kindStart   = "start"    // client -> server: run Size
	kindReady   = "ready"    // server -> client: set up for Size
	kindDone    = "done"     // client -> server: finished, Counts sent
	kindAck     = "ack"      // server -> client: finished too (Result for tests it measures)
	kindBye     = "bye"      // client -> server: no more sizes
	kindError   = "error"    // either way: Err says why; the run stops
)

type message struct {
	Kind   string      `json:"kind"`
	Hello  *hello      `json:"hello,omitempty"`
	QPs    []qpInfo    `json:"qps,omitempty"`
	Size   int         `json:"size,omitempty"`
	Counts []uint64    `json:"counts,omitempty"`
	Result *SizeResult `json:"result,omitempty"`
	Err    string      `json:"err,omitempty"`
}

// hello is the part of the client's Config the server adopts.
type hello struct {
	Version  int    `json:"version"`
	Test     string `json:"test"`
	Sizes    []int  `json:"sizes"`
	Iters    int    `json:"iters"`
	Duration int64  `json:"duration_ns,omitempty"`
	Margin   int64  `json:"margin_ns,omitempty"`
	QPs      int    `json:"qps"`
	TxDepth  int    `json:"tx_depth"`
	RxDepth  int    `json:"rx_depth"`
	CQMod    int    `json:"cq_mod"`
	PostList int    `json:"post_list"`
	Inline   int    `json:"inline"`
	Atomic   int    `json:"atomic,omitempty"`
	MTU      int    `json:"mtu,omitempty"`
	NoPeak   bool   `json:"no_peak,omitempty"`
	Gbits    bool   `json:"gbits,omitempty"`
}

// qpInfo is what the peer needs to know about one QP: its address (for the
// TCP exchange; rdma_cm carries it itself) and its buffer.
type qpInfo struct {
	LID      uint16 `json:"lid"`
	QPN      uint32 `json:"qpn"`
	PSN      uint32 `json:"psn"`
	GID      string `json:"gid"`
	RKey     uint32 `json:"rkey"`
	Addr     uint64 `json:"addr"`
	Len      int    `json:"len"`
	OutReads int    `json:"out_reads"`
}

// transport moves whole messages.
type transport interface {
	writeMsg(b []byte) error
	// readMsg blocks for the next message; ctx ends the wait where the
	// transport can (the TCP one is read by a goroutine of its own).
	readMsg(ctx context.Context) ([]byte, error)
	Close() error
}

// peeker is a transport that can tell, without blocking, allocating or a
// system call, whether a message is waiting. Such a transport is read only
// on demand, by the goroutine that drives the run; the others get a reader
// goroutine.
type peeker interface {
	peek() bool
}

// ctrl is a control channel. Spinning loops ask waiting() whether the peer
// sent something: for TCP a reader goroutine decodes incoming messages into
// inbox and counts them in pending; the rdma_cm transport peeks at its
// receive CQ.
type ctrl struct {
	t       transport
	peek    peeker // nil: reader goroutine
	inbox   chan inMsg
	pending atomic.Int32
	wmu     sync.Mutex
	once    sync.Once
	closeEr error
}

type inMsg struct {
	m   *message
	err error
}

func newCtrl(t transport) *ctrl {
	c := &ctrl{t: t}
	if p, ok := t.(peeker); ok {
		c.peek = p
		return c
	}
	c.inbox = make(chan inMsg, 16)
	go c.read()
	return c
}

func decode(b []byte, err error) (*message, error) {
	if err != nil {
		return nil, err
	}
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		if v, _, _ := bytes.Cut(b, []byte{0}); len(v) > 0 && looksPerftest(v) {
			return nil, &perftestPeer{version: string(v), read: b}
		}
		return nil, fmt.Errorf("control message: %w", err)
	}
	return &m, nil
}

func (c *ctrl) read() {
	for {
		m, err := decode(c.t.readMsg(bgCtx))
		c.pending.Add(1)
		if err != nil {
			c.inbox <- inMsg{err: err}
			close(c.inbox)
			return
		}
		c.inbox <- inMsg{m: m}
	}
}

// waiting reports whether a message from the peer is waiting to be read.
func (c *ctrl) waiting() bool {
	if c.peek != nil {
		return c.peek.peek()
	}
	return c.pending.Load() != 0
}

// send writes m.
func (c *ctrl) send(m *message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.t.writeMsg(b); err != nil {
		return fmt.Errorf("control channel: send %s: %w", m.Kind, err)
	}
	return nil
}

// sendError tells the peer why this side stops (best effort).
func (c *ctrl) sendError(err error) { c.send(&message{Kind: kindError, Err: err.Error()}) }

// errPeer is a failure the peer reported.
var errPeer = errors.New("peer failed")

// recv returns the next message; an error message from the peer becomes an
// error wrapping errPeer.
func (c *ctrl) recv(ctx context.Context) (*message, error) {
	var m *message
	var err error
	if c.peek != nil {
		m, err = decode(c.t.readMsg(ctx))
	} else {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case in, ok := <-c.inbox:
			if !ok {
				return nil, fmt.Errorf("control channel: %w", io.ErrUnexpectedEOF)
			}
			c.pending.Add(-1)
			m, err = in.m, in.err
		}
	}
	if err != nil {
		return nil, err
	}
	if m.Kind == kindError {
		return nil, fmt.Errorf("%w: %s", errPeer, m.Err)
	}
	return m, nil
}

// expect returns the next message, which must be of kind.
func (c *ctrl) expect(ctx context.Context, kind string) (*message, error) {
	m, err := c.recv(ctx)
	if err != nil {
		return nil, err
	}
	if m.Kind != kind {
		return nil, fmt.Errorf("control channel: got %q, want %q", m.Kind, kind)
	}
	return m, nil
}

// Close closes the transport, which ends the reader.
func (c *ctrl) Close() error {
	c.once.Do(func() { c.closeEr = c.t.Close() })
	return c.closeEr
}

// maxMsg bounds a control message.
const maxMsg = 1 << 20

// tcpTransport frames messages on a TCP connection: a big-endian uint32
// length, then the bytes.
type tcpTransport struct {
	c net.Conn
	r *bufio.Reader
}

func newTCPTransport(c net.Conn) *tcpTransport {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return &tcpTransport{c: c, r: bufio.NewReader(c)}
}

func (t *tcpTransport) writeMsg(b []byte) error {
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err := t.c.Write(buf)
	return err
}

func (t *tcpTransport) readMsg(context.Context) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(t.r, h[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("control channel: the peer closed the connection: %w", io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > maxMsg {
		if looksPerftest(h[:]) {
			// The rest of the 16-byte version is usually here already.
			rest, _ := t.r.Peek(min(12, t.r.Buffered()))
			v, _, _ := bytes.Cut(append(h[:], rest...), []byte{0})
			return nil, &perftestPeer{version: string(v), read: append([]byte(nil), h[:]...)}
		}
		return nil, fmt.Errorf("control channel: message of %d bytes (max %d), starting %q: is the peer rdmaperf?", n, maxMsg, h[:])
	}
	b := make([]byte, n)
	_, err := io.ReadFull(t.r, b)
	return b, err
}

func (t *tcpTransport) Close() error { return t.c.Close() }

// perftestPeer is a control channel whose peer opened with perftest's
// version message (exchange_versions): perftest's client or server, or
// rdmaperf --perftest. A server goes on in perftest's exchange on the same
// connection (runServer); a client cannot, and says so (runClient).
type perftestPeer struct {
	version string // the version as far as it arrived ("6.06")
	// read is what the transport consumed of the peer's message: the
	// start of it on TCP (the rest is in the transport's reader), the
	// whole message with -R.
	read []byte
}

func (e *perftestPeer) Error() string {
	return fmt.Sprintf("control channel: the peer sent %q, perftest's version message: it is perftest (ib_write_bw, ...) or rdmaperf --perftest; add --perftest on this side", e.version)
}

// looksPerftest reports the start of perftest's version message ("6.06",
// "5.70", "25.04..."): digits with a dot.
func looksPerftest(b []byte) bool {
	dot := false
	for i, c := range b {
		switch {
		case c == '.' && i > 0:
			dot = true
		case c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return dot
}

// cmTransport carries messages as SENDs on an RC connection of their own
// (perftest's rdma_cm mode does the same): a few receive slots are posted
// before the connection is up, one send slot is reused after each send
// completes. It has no goroutine: the goroutine driving the run reads and
// writes, polling the CQs and sleeping on the completion channel only
// inside readMsg and writeMsg (whose wait allocates), while peek looks at
// the receive CQ between spins without a system call.
type cmTransport struct {
	conn  *cm.Conn
	buf   []byte
	mr    *uverbs.MR
	stash []uverbs.WC // receive completions polled but not read yet
	wcs   []uverbs.WC
	recv  uverbs.RecvWR
	sge   []uverbs.SGE
}

const (
	cmSlot  = 64 << 10
	cmRecvs = 8
)

// cmCtrlOptions are the options of the control connection; Setup registers
// the slots and posts the receives before the connection is up.
func cmCtrlOptions(t *cmTransport) *cm.Options {
	return &cm.Options{
		SendDepth: 2, RecvDepth: cmRecvs, SeparateCQs: true, ReuseAddr: true,
		Setup: func(c *cm.Conn) error {
			t.conn = c
			t.buf = make([]byte, (cmRecvs+1)*cmSlot)
			mr, err := c.RegMR(t.buf, uverbs.AccessLocalWrite)
			if err != nil {
				return err
			}
			t.mr = mr
			t.sge = make([]uverbs.SGE, 1)
			t.wcs = make([]uverbs.WC, 1)
			t.stash = make([]uverbs.WC, 0, cmRecvs)
			for i := 0; i < cmRecvs; i++ {
				if err := t.postRecv(i); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func (t *cmTransport) postRecv(slot int) error {
	t.sge[0] = t.mr.SGE(slot*cmSlot, cmSlot)
	t.recv = uverbs.RecvWR{ID: uint64(slot), SGL: t.sge}
	return t.conn.QP().PostRecv(t.recv)
}

// peek polls the receive CQ once, keeping what it finds for readMsg.
func (t *cmTransport) peek() bool {
	if len(t.stash) > 0 {
		return true
	}
	if t.conn.RecvCQ().Poll(t.wcs) == 1 {
		t.stash = append(t.stash, t.wcs[0])
		return true
	}
	return false
}

// await waits for a completion of cq (cm.Conn.Wait: poll, arm, poll,
// sleep on the completion channel); it fails when the connection ends.
func (t *cmTransport) await(ctx context.Context, cq *uverbs.CQ) (uverbs.WC, error) {
	if _, _, err := t.conn.Wait(ctx, t.wcs, cq); err != nil {
		if ctx.Err() == nil && t.conn.Err() != nil {
			return uverbs.WC{}, t.connErr()
		}
		return uverbs.WC{}, err
	}
	return t.wcs[0], nil
}

func (t *cmTransport) writeMsg(b []byte) error { return t.writeMsgCtx(bgCtx, b) }

// writeMsgCtx sends b and waits for the send's completion, at most until
// ctx ends.
func (t *cmTransport) writeMsgCtx(ctx context.Context, b []byte) error {
	if len(b) > cmSlot {
		return fmt.Errorf("control message of %d bytes exceeds %d", len(b), cmSlot)
	}
	off := cmRecvs * cmSlot
	copy(t.buf[off:], b)
	wr := uverbs.SendWR{ID: cmRecvs, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{t.mr.SGE(off, len(b))}}
	if err := t.conn.QP().PostSend(wr); err != nil {
		return err
	}
	wc, err := t.await(ctx, t.conn.SendCQ())
	if err != nil {
		return err
	}
	return wc.Err()
}

func (t *cmTransport) readMsg(ctx context.Context) ([]byte, error) {
	var wc uverbs.WC
	if len(t.stash) > 0 {
		wc = t.stash[0]
		t.stash = append(t.stash[:0], t.stash[1:]...)
	} else {
		var err error
		if wc, err = t.await(ctx, t.conn.RecvCQ()); err != nil {
			return nil, err
		}
	}
	if err := wc.Err(); err != nil {
		return nil, err
	}
	slot := int(wc.WRID)
	b := append([]byte(nil), t.buf[slot*cmSlot:slot*cmSlot+int(wc.ByteLen)]...)
	if err := t.postRecv(slot); err != nil {
		return nil, err
	}
	return b, nil
}

func (t *cmTransport) connErr() error {
	if err := t.conn.Err(); err != nil {
		return fmt.Errorf("control connection: %w", err)
	}
	return fmt.Errorf("control connection: %w", io.ErrUnexpectedEOF)
}

func (t *cmTransport) Close() error {
	if t.conn == nil {
		return nil
	}
	return t.conn.Close()
}
