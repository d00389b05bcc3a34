// Copyright 2026 The rdmago Authors.

package perf

import (
	"bufio"
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
	readMsg() ([]byte, error)
	Close() error
}

// ctrl is a control channel: a reader goroutine decodes incoming messages
// into inbox, and pending tells spinning loops that one arrived without a
// system call or a channel operation.
type ctrl struct {
	t       transport
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
	c := &ctrl{t: t, inbox: make(chan inMsg, 16)}
	go c.read()
	return c
}

func (c *ctrl) read() {
	for {
		b, err := c.t.readMsg()
		var m message
		if err == nil {
			if err = json.Unmarshal(b, &m); err != nil {
				err = fmt.Errorf("control message: %w", err)
			}
		}
		c.pending.Add(1)
		if err != nil {
			c.inbox <- inMsg{err: err}
			close(c.inbox)
			return
		}
		c.inbox <- inMsg{m: &m}
	}
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
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case in, ok := <-c.inbox:
		if !ok {
			return nil, fmt.Errorf("control channel: %w", io.ErrUnexpectedEOF)
		}
		c.pending.Add(-1)
		if in.err != nil {
			return nil, in.err
		}
		if in.m.Kind == kindError {
			return nil, fmt.Errorf("%w: %s", errPeer, in.m.Err)
		}
		return in.m, nil
	}
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

func (t *tcpTransport) readMsg() ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(t.r, h[:]); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("control channel: the peer closed the connection: %w", io.ErrUnexpectedEOF)
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > maxMsg {
		return nil, fmt.Errorf("control channel: message of %d bytes (max %d): is the peer rdmaperf?", n, maxMsg)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(t.r, b)
	return b, err
}

func (t *tcpTransport) Close() error { return t.c.Close() }

// cmTransport carries messages as SENDs on an RC connection of their own
// (perftest's rdma_cm mode does the same): a few receive slots are posted
// before the connection is up, one send slot is reused after each send
// completes. A goroutine waits on the completion channel and hands out the
// completions of both CQs.
type cmTransport struct {
	conn   *cm.Conn
	buf    []byte
	mr     *uverbs.MR
	sendCh chan uverbs.WC
	recvCh chan uverbs.WC
	cancel context.CancelFunc
	done   chan struct{}
}

const (
	cmSlot   = 64 << 10
	cmRecvs  = 8
	cmSendID = 1 << 32 // wr_id of the send slot; receives use their slot index
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
	return t.conn.QP().PostRecv(uverbs.RecvWR{ID: uint64(slot), SGL: []uverbs.SGE{t.mr.SGE(slot*cmSlot, cmSlot)}})
}

// start launches the completion pump once the connection is up.
func (t *cmTransport) start() {
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.sendCh = make(chan uverbs.WC, 2)
	t.recvCh = make(chan uverbs.WC, cmRecvs)
	t.done = make(chan struct{})
	go func() {
		select {
		case <-t.conn.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	go t.pump(ctx)
}

func (t *cmTransport) pump(ctx context.Context) {
	defer close(t.done)
	defer close(t.recvCh)
	defer close(t.sendCh)
	ch := t.conn.CompChannel()
	cqs := []*uverbs.CQ{t.conn.SendCQ(), t.conn.RecvCQ()}
	wcs := make([]uverbs.WC, 8)
	armed := []bool{false, false}
	for {
		// Arm what a wake-up disarmed, then poll until both CQs are empty:
		// a completion that came before the arm raised no event. After
		// delivering, go straight back to waiting (no re-arm: the CQs are
		// still armed), so the pump is parked, making no system call,
		// by the time a measured loop starts.
		for i, cq := range cqs {
			if !armed[i] {
				if err := cq.Arm(false); err != nil {
					return
				}
				armed[i] = true
			}
		}
		for got := true; got; {
			got = false
			for _, cq := range cqs {
				for n := cq.Poll(wcs); n > 0; n = cq.Poll(wcs) {
					got = true
					for _, wc := range wcs[:n] {
						if wc.WRID < cmSendID {
							t.recvCh <- wc
						} else {
							t.sendCh <- wc
						}
					}
				}
			}
		}
		cq, err := ch.Wait(ctx)
		if err != nil {
			return
		}
		for i := range cqs {
			if cqs[i] == cq {
				armed[i] = false
			}
		}
	}
}

func (t *cmTransport) writeMsg(b []byte) error {
	if len(b) > cmSlot {
		return fmt.Errorf("control message of %d bytes exceeds %d", len(b), cmSlot)
	}
	off := cmRecvs * cmSlot
	copy(t.buf[off:], b)
	wr := uverbs.SendWR{ID: cmSendID, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{t.mr.SGE(off, len(b))}}
	if err := t.conn.QP().PostSend(wr); err != nil {
		return err
	}
	wc, ok := <-t.sendCh
	if !ok {
		return t.connErr()
	}
	return wc.Err()
}

func (t *cmTransport) readMsg() ([]byte, error) {
	wc, ok := <-t.recvCh
	if !ok {
		return nil, t.connErr()
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
	if t.cancel != nil {
		t.cancel()
		<-t.done
	}
	if t.conn == nil {
		return nil
	}
	return t.conn.Close()
}
