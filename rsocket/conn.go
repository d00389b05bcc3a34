// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/uverbs"
)

// transport is what the protocol needs of an RC queue pair: post, poll,
// arm the CQ and wait for its event, and the CM's word that the connection
// ended. The real one is verbsTransport (uverbs + cm); host tests use an
// in-memory pair.
type transport interface {
	// post posts the send work requests and rings the doorbell once.
	post(wrs []uverbs.SendWR) error
	// postRecv posts n receives without buffers (immediate data only).
	postRecv(n int) error
	// poll copies completions into wcs and returns how many.
	poll(wcs []uverbs.WC) int
	// arm requests one event for the next completion.
	arm() error
	// wait blocks until an armed completion event arrives or ctx is done.
	// It is called by one goroutine only (the connection's poller).
	wait(ctx context.Context) error
	// done is closed when the CM reports the connection gone.
	done() <-chan struct{}
	// abort moves the QP to the error state and disconnects (a protocol
	// violation by the peer); close tears everything down.
	abort()
	close() error
}

// memory is the registered memory of one rsocket: the send ring with the
// control-message area after it, the receive ring the peer writes into,
// and the target SGL the peer writes its receive buffers into.
type memory struct {
	sbuf  []byte // sbufSize + qpCtrlSize*maxCtrlMsg bytes
	sAddr uint64
	sLKey uint32
	rbuf  []byte
	rAddr uint64
	rKey  uint32
	tsgl  []byte // sglSize*sgeLen bytes
	tAddr uint64
	tKey  uint32
}

// config is an rsocket's sizes after defaults and clamping.
type config struct {
	sqSize, rqSize int
	inline         int
	sbufSize       int
	rbufSize       int
	keepalive      time.Duration
	closeTimeout   time.Duration
}

// ownConnData is what this side sends in its connection private data
// (rs_format_conn_data): credits for its whole receive queue, its target
// SGL of two entries and the first half of its receive ring.
func ownConnData(m *memory, cfg *config) connData {
	d := connData{
		Version:   rsVersion,
		Flags:     connFlagIOMap,
		Credits:   uint16(cfg.rqSize),
		IOMapSize: 0, // no iomap: a C peer's riomap fails with ENOMEM
		TargetSGL: rsSGE{Addr: m.tAddr, Key: m.tKey, Length: sglSize},
		DataBuf:   rsSGE{Addr: m.rAddr, Key: m.rKey, Length: uint32(cfg.rbufSize >> 1)},
	}
	if hostIsNet {
		d.Flags |= connFlagNet
	}
	return d
}

// Work request IDs: receives have the top bit set; sends carry their
// message (as librdmacm's rs_send_wr_id), so a completion says what it freed.
const recvWRID = 1 << 63

// errReset is the error after the peer vanished without closing the stream
// (its process died, or the CM disconnected it).
var errReset = fmt.Errorf("the peer disconnected without closing the stream: %w", syscall.ECONNRESET)

// errPeerClosed is what Write returns after the peer closed the connection.
var errPeerClosed = fmt.Errorf("the peer closed the connection: %w", syscall.EPIPE)

// errWriteShut is what Write returns after CloseWrite.
var errWriteShut = fmt.Errorf("write after CloseWrite: %w", syscall.EPIPE)

// Conn is one rsocket stream connection: a net.Conn whose bytes travel by
// RDMA WRITE WITH IMMEDIATE into the peer's receive ring, wire-compatible
// with librdmacm's rsockets. One Read and one Write may run at once (more
// are serialised); Close unblocks both. Waiting parks the goroutine on the
// completion channel through Go's netpoller; no thread is held and nothing
// spins unless Options.PollTime asks for it.
//
// The caller must Close it: Close sends rsockets' DISCONNECT, waits (at
// most Options.CloseTimeout) for the sends to complete, then disconnects
// and destroys the QP, CQ, memory regions, PD and rdma_cm id.
type Conn struct {
	t            transport
	mem          *memory
	cfg          config
	pollTime     time.Duration
	laddr, raddr net.Addr

	rmu, wmu, cmu sync.Mutex // serialise Read, Write and the control operations
	rdl, wdl      deadline
	closing       chan struct{}
	closeOnce     sync.Once
	closeErr      error
	stopPoller    context.CancelFunc
	pollerDone    chan struct{}
	rdWake        chan struct{}
	wrWake        chan struct{}
	ctlWake       chan struct{}
	keepalive     *time.Timer

	mu        sync.Mutex // everything below, and every use of t
	closed    bool       // Close was called
	torn      bool       // t is closed
	armed     bool
	events    uint64 // completions handled
	cmGone    bool
	err       error // why the connection failed
	connected bool  // rs_connected
	readable  bool  // rs_readable
	writable  bool  // rs_writable
	readShut  bool  // CloseRead: incoming data is dropped
	peerDisc  bool  // the peer's DISCONNECT arrived
	peerOrder binary.ByteOrder

	// Sending (the peer's receive ring).
	sseqNo, sseqComp uint16 // data messages sent; the peer's credit limit
	sqeAvail         int
	sbufAvail        int
	sbufHead         int // next free byte of the send ring
	tgt              [sglSize]rsSGE
	tgtIdx           int
	ctrlSeq, ctrlMax uint32 // control messages posted; the limit
	remoteSGL        rsSGE  // the peer's target SGL: address, rkey, entries
	remoteSGE        uint32 // the entry our next buffer update goes to

	// Receiving (our ring).
	rseqNo, rseqComp uint16 // data messages consumed; when to send credits next
	rcvSeq           uint16 // data messages received
	grant            uint16 // the credit limit last granted
	rcvWindow        int    // bytes the peer may still write
	rmsg             []uint32
	rmsgHead         int
	rmsgTail         int
	rbufOffset       int // next byte to read
	rbufFree         int // start of the next half to publish
	rbufAvail        int // bytes consumed and not yet published again

	wcs [16]uverbs.WC
	swr [1]uverbs.SendWR
	sge [2]uverbs.SGE
	ctl [sgeLen]byte
}

// newConn starts the protocol over an established transport: mem and cfg
// are this side's, peer is the peer's connection data (checked).
func newConn(t transport, mem *memory, cfg config, peer connData, pollTime time.Duration, laddr, raddr net.Addr) *Conn {
	c := &Conn{
		t: t, mem: mem, cfg: cfg, pollTime: pollTime, laddr: laddr, raddr: raddr,
		closing:    make(chan struct{}),
		pollerDone: make(chan struct{}),
		rdWake:     make(chan struct{}, 1),
		wrWake:     make(chan struct{}, 1),
		ctlWake:    make(chan struct{}, 1),
		rdl:        makeDeadline(),
		wdl:        makeDeadline(),
		connected:  true, readable: true, writable: true,
		peerOrder: sgeOrder(peer.Flags),
		rmsg:      make([]uint32, cfg.rqSize+1),
	}
	// rs_init_bufs
	half := cfg.rbufSize >> 1
	c.rbufFree, c.rbufAvail = half, half
	c.sbufAvail = cfg.sbufSize
	c.ctrlMax = qpCtrlSize
	c.sqeAvail = cfg.sqSize - qpCtrlSize
	c.rseqComp = uint16(cfg.rqSize >> 1)
	c.grant = uint16(cfg.rqSize)
	c.rcvWindow = half
	// rs_save_conn_data
	c.remoteSGL = peer.TargetSGL
	c.remoteSGE = 1 % peer.TargetSGL.Length
	c.tgt[0] = clampSGE(peer.DataBuf)
	c.sseqComp = peer.Credits

	ctx, cancel := context.WithCancel(context.Background())
	c.stopPoller = cancel
	go c.pollLoop(ctx)
	if cfg.keepalive > 0 {
		c.mu.Lock() // sendKeepalive uses c.keepalive
		c.keepalive = time.AfterFunc(cfg.keepalive, c.sendKeepalive)
		c.mu.Unlock()
	}
	return c
}

func clampSGE(s rsSGE) rsSGE {
	s.Length = min(s.Length, maxMsgData)
	return s
}

// pollLoop is the connection's one waiting goroutine: it sleeps in the
// completion channel (parked on the netpoller), and on each event processes
// the completions and wakes whoever waits. It is not cm.Conn.Wait
// (uverbs.WaitCQs) on purpose: that wait polls outside c.mu and arms the
// CQ whenever it is empty, while here every poll happens under c.mu, in
// order with Read's and Write's own polls (two pollers would hand receive
// completions to the protocol out of order), and the CQ is armed only
// while a Read, Write or Close has to sleep (a busy stream costs no events).
// The CM's end of the connection reaches waiters through done instead.
func (c *Conn) pollLoop(ctx context.Context) {
	defer close(c.pollerDone)
	for {
		err := c.t.wait(ctx)
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		if err != nil {
			c.failLocked(fmt.Errorf("wait for completions: %w", err))
			c.mu.Unlock()
			c.wakeAll()
			return
		}
		c.armed = false
		c.progressLocked()
		c.keepArmedLocked()
		c.mu.Unlock()
		c.wakeAll()
	}
}

// keepArmedLocked keeps the CQ armed while nobody may call in but the
// protocol must go on: after CloseRead, the peer's data is dropped as it
// arrives so the peer is not stalled.
func (c *Conn) keepArmedLocked() {
	for c.readShut && c.connected && !c.armed && !c.torn {
		if err := c.t.arm(); err != nil {
			c.failLocked(fmt.Errorf("arm completion queue: %w", err))
			return
		}
		c.armed = true
		c.progressLocked()
	}
}

func (c *Conn) wakeAll() {
	for _, ch := range [...]chan struct{}{c.rdWake, c.wrWake, c.ctlWake} {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// failLocked ends the connection with err (the first error wins).
func (c *Conn) failLocked(err error) {
	if c.err == nil && !c.closed {
		c.err = err
	}
	c.connected, c.readable, c.writable = false, false, false
}

// violationLocked reports a peer that broke the protocol and closes the
// connection towards it.
func (c *Conn) violationLocked(err error) {
	wasUp := c.err == nil
	c.failLocked(err)
	if wasUp && !c.torn {
		c.t.abort()
	}
}

// progressLocked polls the CQ and handles every completion, reposts the
// receives they consumed and grants credits when due
// (rs_process_cq/rs_poll_cq/rs_update_credits).
func (c *Conn) progressLocked() {
	if c.torn {
		return
	}
	rcnt := 0
	for {
		n := c.t.poll(c.wcs[:])
		c.events += uint64(n)
		for i := range n {
			if c.wcs[i].WRID&recvWRID != 0 {
				if c.recvLocked(&c.wcs[i]) {
					rcnt++
				}
			} else {
				c.sendDoneLocked(&c.wcs[i])
			}
		}
		if n < len(c.wcs) {
			break
		}
	}
	if rcnt > 0 && c.connected {
		if err := c.t.postRecv(rcnt); err != nil {
			c.failLocked(fmt.Errorf("post receive: %w", err))
		}
	}
	c.updateCreditsLocked()
}

// recvLocked handles one receive completion: a message from the peer. It
// returns whether the receive was consumed (to be posted again).
func (c *Conn) recvLocked(wc *uverbs.WC) bool {
	if wc.Status != uverbs.WCSuccess {
		switch {
		case !wc.IsFlush():
			c.failLocked(fmt.Errorf("receive: %w", wc.Err()))
		case c.connected && !c.closed:
			// The QP went to the error state under us: the CM
			// disconnected (the peer died) before any DISCONNECT.
			c.failLocked(errReset)
		}
		return false
	}
	if wc.Flags&uverbs.WCWithImm == 0 {
		c.violationLocked(protoErr("a message without immediate data (opcode %v, %d bytes): rsockets over RoCE/IB send only RDMA WRITE WITH IMMEDIATE", wc.Opcode, wc.ByteLen))
		return true
	}
	msg := wc.Imm
	switch op := msgOp(msg); op {
	case opData:
		n := msgData(msg)
		if int16(c.rcvSeq-c.grant) >= 0 {
			c.violationLocked(protoErr("data message %d beyond the %d credits granted", c.rcvSeq, c.grant))
			return true
		}
		if int(n) > c.rcvWindow {
			c.violationLocked(protoErr("data message of %d bytes, but only %d bytes of receive buffer were published", n, c.rcvWindow))
			return true
		}
		c.rcvSeq++
		c.rcvWindow -= int(n)
		c.rmsg[c.rmsgTail] = n
		if c.rmsgTail++; c.rmsgTail == len(c.rmsg) {
			c.rmsgTail = 0
		}
		if c.readShut {
			c.discardLocked()
		}
	case opSGL:
		limit := uint16(msgData(msg))
		if int16(limit-c.sseqNo) < 0 {
			c.violationLocked(protoErr("credit limit %d is behind the %d data messages already sent", limit, c.sseqNo))
			return true
		}
		c.sseqComp = limit
		// Entries we used up may have been rewritten by this message's
		// RDMA WRITE, which landed before its completion.
		for i := range c.tgt {
			if c.tgt[i].Length == 0 {
				c.tgt[i] = clampSGE(loadSGE(c.mem.tsgl[i*sgeLen:]))
			}
		}
	case opIOMapSG:
		// We publish no iomap (size 0), so a peer cannot have written
		// one; librdmacm ignores the message too.
	case opCtrl:
		switch msgData(msg) {
		case ctrlDisconnect:
			c.peerDisc = true
			c.connected, c.readable, c.writable = false, false, false
		case ctrlShutdown:
			if c.writable {
				c.readable = false
			} else {
				c.peerDisc = true
				c.connected, c.readable = false, false
			}
		case ctrlKeepalive:
		default:
			c.violationLocked(protoErr("unknown control message %d", msgData(msg)))
		}
	default:
		c.violationLocked(protoErr("message of %s (immediate data %#08x)", opName(op), msg))
	}
	return true
}

// sendDoneLocked handles a send completion: it returns the send queue
// slot, send-ring bytes or control slot the request held.
func (c *Conn) sendDoneLocked(wc *uverbs.WC) {
	msg := uint32(wc.WRID)
	switch msgOp(msg) {
	case opSGL, opCtrl:
		c.ctrlMax++
	default:
		c.sqeAvail++
		c.sbufAvail += int(msgData(msg))
	}
	if wc.Status != uverbs.WCSuccess && c.connected && !c.closed {
		switch wc.Status {
		case uverbs.WCWRFlushErr:
			c.failLocked(errReset)
		case uverbs.WCRemAccessErr:
			c.violationLocked(protoErr("the peer refused our RDMA WRITE into the buffer it published (%v): its SGL points outside its memory region", wc.Status))
		case uverbs.WCRetryExcErr:
			c.failLocked(fmt.Errorf("the peer stopped answering (%v): %w", wc.Status, syscall.ETIMEDOUT))
		default:
			c.failLocked(fmt.Errorf("send: %w", wc.Err()))
		}
	}
}

func (c *Conn) ctrlAvail() bool { return c.ctrlSeq != c.ctrlMax }

// updateCreditsLocked is rs_update_credits: grant more credits (and the
// next half of the receive ring) once half of either was used.
func (c *Conn) updateCreditsLocked() {
	half := c.cfg.rbufSize >> 1
	if (c.rbufAvail >= half || int16(c.rseqNo-c.rseqComp) >= 0) && c.ctrlAvail() && c.connected {
		c.sendCreditsLocked()
	}
}

// sendCreditsLocked is rs_send_credits.
func (c *Conn) sendCreditsLocked() {
	c.ctrlSeq++
	c.rseqComp = c.rseqNo + uint16(c.cfg.rqSize>>1)
	limit := c.rseqNo + uint16(c.cfg.rqSize)
	imm := msgSet(opSGL, uint32(limit))
	half := c.cfg.rbufSize >> 1
	wr := &c.swr[0]
	*wr = uverbs.SendWR{ID: uint64(imm), Opcode: uverbs.WRRDMAWriteWithImm, Imm: imm}
	if c.rbufAvail >= half {
		putSGE(c.ctl[:], rsSGE{Addr: c.rAddr(c.rbufFree), Key: c.mem.rKey, Length: uint32(half)}, c.peerOrder)
		if c.cfg.inline >= sgeLen {
			wr.Flags, wr.Inline = uverbs.SendInline, c.ctl[:]
		} else {
			off := c.cfg.sbufSize + maxCtrlMsg*int(c.ctrlSeq&(qpCtrlSize-1))
			copy(c.mem.sbuf[off:off+sgeLen], c.ctl[:])
			c.sge[0] = uverbs.SGE{Addr: c.mem.sAddr + uint64(off), Length: sgeLen, LKey: c.mem.sLKey}
			wr.SGL = c.sge[:1]
		}
		wr.RemoteAddr = c.remoteSGL.Addr + uint64(c.remoteSGE)*sgeLen
		wr.RKey = c.remoteSGL.Key
		c.rbufAvail -= half
		c.rcvWindow += half
		if c.rbufFree += half; c.rbufFree >= c.cfg.rbufSize {
			c.rbufFree = 0
		}
		if c.remoteSGE++; c.remoteSGE == c.remoteSGL.Length {
			c.remoteSGE = 0
		}
	}
	c.grant = limit
	c.postLocked()
}

func (c *Conn) rAddr(off int) uint64 { return c.mem.rAddr + uint64(off) }

func (c *Conn) postLocked() {
	if err := c.t.post(c.swr[:]); err != nil {
		c.failLocked(fmt.Errorf("post send: %w", err))
	}
}

// sendCtrlLocked posts a control message (the caller checked ctrlAvail).
func (c *Conn) sendCtrlLocked(code uint32) {
	c.ctrlSeq++
	imm := msgSet(opCtrl, code)
	c.swr[0] = uverbs.SendWR{ID: uint64(imm), Opcode: uverbs.WRRDMAWriteWithImm, Imm: imm}
	c.postLocked()
}

// sendKeepalive posts librdmacm's keepalive, a zero-byte RDMA WRITE that
// needs no receive at the peer: if the peer is gone, its retries fail and
// the connection reports it.
func (c *Conn) sendKeepalive() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.torn {
		return
	}
	if c.connected && c.ctrlAvail() {
		c.ctrlSeq++
		c.swr[0] = uverbs.SendWR{ID: uint64(msgSet(opCtrl, ctrlKeepalive)), Opcode: uverbs.WRRDMAWrite}
		c.postLocked()
	}
	c.keepalive.Reset(c.cfg.keepalive)
}

func (c *Conn) canSendLocked() bool {
	return c.sqeAvail > 0 && c.sbufAvail >= sndLowat && c.sseqNo != c.sseqComp && c.tgt[c.tgtIdx].Length != 0
}

func (c *Conn) allSendsDoneLocked() bool {
	return int(c.ctrlMax-c.ctrlSeq)+c.sqeAvail == c.cfg.sqSize || !c.connected
}

// What ended a wait.
const (
	wokeEvent = iota
	wokeDeadline
	wokeStop
)

// blockLocked waits for the connection to change: it arms the CQ first if
// nobody has (and then only polls, for completions that came before), else
// releases mu and sleeps until the poller wakes it, dl passes, stop closes
// or the CM reports the connection gone. Callers recheck their condition.
func (c *Conn) blockLocked(wake chan struct{}, dl, stop <-chan struct{}) int {
	if c.torn {
		return wokeStop
	}
	if c.pollTime > 0 {
		if c.spinLocked() {
			return wokeEvent
		}
	}
	if !c.armed {
		if err := c.t.arm(); err != nil {
			c.failLocked(fmt.Errorf("arm completion queue: %w", err))
			return wokeEvent
		}
		c.armed = true
		c.progressLocked()
		return wokeEvent
	}
	var gone <-chan struct{}
	if !c.cmGone {
		gone = c.t.done()
	}
	c.mu.Unlock()
	r := wokeEvent
	select {
	case <-wake:
	case <-dl:
		r = wokeDeadline
	case <-stop:
		r = wokeStop
	case <-gone:
		c.mu.Lock()
		c.cmGone = true
		c.progressLocked()
		if c.connected && !c.closed {
			c.failLocked(errReset)
		}
		return r
	}
	c.mu.Lock()
	c.progressLocked()
	return r
}

// spinLocked polls for up to pollTime (librdmacm's polling_time) before a
// wait sleeps; it reports whether a completion arrived.
func (c *Conn) spinLocked() bool {
	start, before := time.Now(), c.events
	for time.Since(start) < c.pollTime {
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
		if c.torn {
			return false
		}
		c.progressLocked()
		if c.events != before || !c.connected {
			return true
		}
	}
	return false
}

// Read reads data the peer wrote into the receive ring, waiting for some if
// there is none. It returns io.EOF after the peer's CloseWrite or Close
// (once the data before it is read) or after CloseRead.
func (c *Conn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		switch {
		case c.isClosed():
			return 0, c.opErr("read", net.ErrClosed)
		case isClosed(c.rdl.wait()):
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		case c.rmsgHead != c.rmsgTail:
			if len(b) == 0 {
				return 0, nil
			}
			n := c.consumeLocked(b)
			c.updateCreditsLocked()
			if n == 0 {
				continue // only empty messages were queued
			}
			return n, nil
		case c.err != nil:
			return 0, c.opErr("read", c.err)
		case !c.readable:
			return 0, io.EOF
		case len(b) == 0:
			return 0, nil
		}
		c.progressLocked()
		if c.rmsgHead != c.rmsgTail || !c.readable {
			continue
		}
		c.blockLocked(c.rdWake, c.rdl.wait(), c.closing)
	}
}

// consumeLocked copies queued data into b (the loop of rrecv).
func (c *Conn) consumeLocked(b []byte) int {
	n := 0
	for n < len(b) && c.rmsgHead != c.rmsgTail {
		size := int(c.rmsg[c.rmsgHead])
		if left := len(b) - n; left < size {
			c.rmsg[c.rmsgHead] -= uint32(left)
			size = left
		} else {
			c.rseqNo++
			if c.rmsgHead++; c.rmsgHead == len(c.rmsg) {
				c.rmsgHead = 0
			}
		}
		for size > 0 {
			k := min(size, c.cfg.rbufSize-c.rbufOffset)
			copy(b[n:n+k], c.mem.rbuf[c.rbufOffset:c.rbufOffset+k])
			n += k
			size -= k
			c.rbufAvail += k
			if c.rbufOffset += k; c.rbufOffset == c.cfg.rbufSize {
				c.rbufOffset = 0
			}
		}
	}
	return n
}

// discardLocked drops every queued message (after CloseRead).
func (c *Conn) discardLocked() {
	for c.rmsgHead != c.rmsgTail {
		size := int(c.rmsg[c.rmsgHead])
		c.rseqNo++
		if c.rmsgHead++; c.rmsgHead == len(c.rmsg) {
			c.rmsgHead = 0
		}
		c.rbufAvail += size
		c.rbufOffset = (c.rbufOffset + size) % c.cfg.rbufSize
	}
}

// Write copies b into the send ring (or, up to the inline size, straight
// into the work request) and RDMA-writes it into the buffers the peer
// published, as credits and buffer space allow; it waits for both.
// Transfers start at 2 KiB and double up to 64 KiB within one call, as
// librdmacm's rsend does.
func (c *Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	n, olen := 0, olapStart
	for {
		switch {
		case c.isClosed():
			return n, c.opErr("write", net.ErrClosed)
		case isClosed(c.wdl.wait()):
			return n, c.opErr("write", os.ErrDeadlineExceeded)
		case c.err != nil:
			return n, c.opErr("write", c.err)
		case !c.writable && c.peerDisc:
			return n, c.opErr("write", errPeerClosed)
		case !c.writable:
			return n, c.opErr("write", errWriteShut)
		case n == len(b):
			return n, nil
		}
		if !c.canSendLocked() {
			c.progressLocked()
			if !c.canSendLocked() && c.writable {
				c.blockLocked(c.wrWake, c.wdl.wait(), c.closing)
			}
			continue
		}
		left := len(b) - n
		xfer := left
		if olen < left {
			xfer = olen
			if olen < maxTransfer {
				olen <<= 1
			}
		}
		xfer = min(xfer, c.sbufAvail, int(c.tgt[c.tgtIdx].Length))
		c.writeDataLocked(b[n : n+xfer])
		n += xfer
	}
}

// writeDataLocked posts one data message (rs_write_data).
func (c *Conn) writeDataLocked(p []byte) {
	size := len(p)
	wr := &c.swr[0]
	imm := msgSet(opData, uint32(size))
	*wr = uverbs.SendWR{ID: uint64(imm), Opcode: uverbs.WRRDMAWriteWithImm, Imm: imm}
	if size <= c.cfg.inline {
		wr.Flags, wr.Inline = uverbs.SendInline, p
	} else {
		end := c.cfg.sbufSize - c.sbufHead // rs_sbuf_left
		if size <= end {
			copy(c.mem.sbuf[c.sbufHead:], p)
			c.sge[0] = uverbs.SGE{Addr: c.mem.sAddr + uint64(c.sbufHead), Length: uint32(size), LKey: c.mem.sLKey}
			wr.SGL = c.sge[:1]
			if c.sbufHead += size; c.sbufHead == c.cfg.sbufSize {
				c.sbufHead = 0
			}
		} else {
			copy(c.mem.sbuf[c.sbufHead:c.cfg.sbufSize], p[:end])
			copy(c.mem.sbuf, p[end:])
			c.sge[0] = uverbs.SGE{Addr: c.mem.sAddr + uint64(c.sbufHead), Length: uint32(end), LKey: c.mem.sLKey}
			c.sge[1] = uverbs.SGE{Addr: c.mem.sAddr, Length: uint32(size - end), LKey: c.mem.sLKey}
			wr.SGL = c.sge[:2]
			c.sbufHead = size - end
		}
	}
	c.sseqNo++
	c.sqeAvail--
	c.sbufAvail -= size
	t := &c.tgt[c.tgtIdx]
	wr.RemoteAddr, wr.RKey = t.Addr, t.Key
	t.Addr += uint64(size)
	t.Length -= uint32(size)
	if t.Length == 0 {
		// Mark the entry used up in memory too, so only the peer's next
		// update (announced by a credit message) refills it.
		clearSGE(c.mem.tsgl[c.tgtIdx*sgeLen:])
		if c.tgtIdx++; c.tgtIdx == sglSize {
			c.tgtIdx = 0
		}
	}
	c.postLocked()
	wr.Inline = nil // do not keep the caller's buffer
}

// CloseWrite is shutdown(SHUT_WR): it sends rsockets' SHUTDOWN (or
// DISCONNECT if reading was closed too) after the data already written;
// the peer's Read then returns io.EOF. Later Writes fail.
func (c *Conn) CloseWrite() error { return c.shutdown("close write", true, false) }

// CloseRead is shutdown(SHUT_RD): later Reads return io.EOF and data the
// peer still sends is dropped. rsockets tell the peer nothing unless writing
// was closed too (then DISCONNECT).
func (c *Conn) CloseRead() error { return c.shutdown("close read", false, true) }

func (c *Conn) shutdown(op string, wr, rd bool) error {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opErr(op, net.ErrClosed)
	}
	if !c.connected {
		if rd {
			c.readShut, c.readable = true, false
			c.discardLocked()
		}
		if wr {
			c.writable = false
		}
		return nil
	}
	var code uint32
	switch {
	case wr:
		c.writable = false
		code = ctrlShutdown
		if !c.readable {
			code = ctrlDisconnect
		}
	default:
		c.readShut, c.readable = true, false
		c.discardLocked()
		c.updateCreditsLocked()
		c.keepArmedLocked()
		if c.writable {
			return nil
		}
		code = ctrlDisconnect
	}
	if !c.ctrlAvailWait(c.wdl.wait(), c.closing) {
		return c.errOr(op)
	}
	c.sendCtrlLocked(code)
	if code == ctrlDisconnect {
		c.connected = false
	}
	return nil
}

// ctrlAvailWait waits for a free control slot; false if the connection
// ended or dl/stop fired first.
func (c *Conn) ctrlAvailWait(dl, stop <-chan struct{}) bool {
	for !c.ctrlAvail() {
		if !c.connected {
			return false
		}
		if r := c.blockLocked(c.ctlWake, dl, stop); r != wokeEvent {
			return false
		}
	}
	return c.connected
}

func (c *Conn) errOr(op string) error {
	switch {
	case c.closed:
		return c.opErr(op, net.ErrClosed)
	case c.err != nil:
		return c.opErr(op, c.err)
	case !c.connected:
		return c.opErr(op, errPeerClosed)
	}
	return c.opErr(op, os.ErrDeadlineExceeded)
}

// Close is rclose: it unblocks Read and Write (they return net.ErrClosed),
// sends rsockets' DISCONNECT, waits up to Options.CloseTimeout for the
// sends to complete, then disconnects (rdma_disconnect) and destroys the
// QP, CQ, completion channel, memory regions, PD and rdma_cm id. It is
// idempotent.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Conn) close() error {
	close(c.closing)
	if c.keepalive != nil {
		c.keepalive.Stop()
	}
	c.cmu.Lock()
	c.mu.Lock()
	c.closed = true
	delivered := false // the peer acknowledged every byte and our DISCONNECT
	if c.connected && c.err == nil {
		c.readable, c.writable = false, false
		dl := makeDeadline()
		dl.set(time.Now().Add(c.cfg.closeTimeout))
		if c.ctrlAvailWait(dl.wait(), nil) {
			c.sendCtrlLocked(ctrlDisconnect)
			for !c.allSendsDoneLocked() && !c.torn && c.err == nil {
				if c.blockLocked(c.ctlWake, dl.wait(), nil) != wokeEvent {
					break
				}
			}
			delivered = c.err == nil && int(c.ctrlMax-c.ctrlSeq)+c.sqeAvail == c.cfg.sqSize
		}
		dl.set(time.Time{})
	}
	c.connected = false
	c.mu.Unlock()
	c.stopPoller()
	<-c.pollerDone
	c.mu.Lock()
	c.torn = true
	c.mu.Unlock()
	c.cmu.Unlock()
	c.wakeAll()
	if err := c.t.close(); err != nil && !(delivered && onlyCloseTimeout(err)) {
		return c.opErr("close", err)
	}
	return nil
}

// onlyCloseTimeout reports whether every error joined in err is
// cm.ErrCloseTimeout: the rdma_cm handshake after the data, whose loss
// costs nothing once the peer acknowledged all of it (librdmacm's rclose
// does not wait for DISCONNECTED at all).
func onlyCloseTimeout(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyCloseTimeout(e) {
				return false
			}
		}
		return len(j.Unwrap()) > 0
	}
	return errors.Is(err, cm.ErrCloseTimeout)
}

// LocalAddr and RemoteAddr are the connection's IP addresses and ports
// (*net.TCPAddr).
func (c *Conn) LocalAddr() net.Addr  { return c.laddr }
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets both deadlines; past ones make Read and Write fail with
// os.ErrDeadlineExceeded at once, the zero time removes them.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *Conn) SetReadDeadline(t time.Time) error {
	if c.isClosed() {
		return c.opErr("set read deadline", net.ErrClosed)
	}
	c.rdl.set(t)
	return nil
}

func (c *Conn) SetWriteDeadline(t time.Time) error {
	if c.isClosed() {
		return c.opErr("set write deadline", net.ErrClosed)
	}
	c.wdl.set(t)
	return nil
}

func (c *Conn) isClosed() bool {
	select {
	case <-c.closing:
		return true
	default:
		return false
	}
}

func (c *Conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "rsocket", Source: c.laddr, Addr: c.raddr, Err: err}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// deadline is a settable deadline whose wait channel closes when it passes
// (net.Pipe's design).
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{}
}

func makeDeadline() deadline { return deadline{cancel: make(chan struct{})} }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: wait for it to close cancel
	}
	d.timer = nil
	closed := isClosed(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		cancel := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(cancel) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

var _ net.Conn = (*Conn)(nil)
