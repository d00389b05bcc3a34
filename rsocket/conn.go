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
	"sync/atomic"
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
	// One goroutine at a time calls it (the connection's waiter). quiet,
	// when not nil, is uverbs.CompChannel.WaitQuiet's: asked once, it says
	// whether no event can be queued, so that wait parks without reading.
	wait(ctx context.Context, quiet func() bool) error
	// ready reports whether the CQ holds a completion, without taking it.
	ready() bool
	// sendsInFlight is the number of sends posted and not completed,
	// signalled or not (uverbs.QP.SendsInFlight).
	sendsInFlight() int
	// done is closed when the CM reports the connection gone.
	done() <-chan struct{}
	// abort moves the QP to the error state and disconnects (a protocol
	// violation by the peer); close tears everything down but the
	// memory, which free then unmaps (once no ReadFrom or WriteTo has
	// it in hand: see Conn.lendRingLocked).
	abort()
	close() error
	free() error
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
// message (as librdmacm's rs_send_wr_id) in the low 32 bits, so a
// completion says what it freed. A signalled send also carries what the
// unsignalled sends just before it hold (their count and bytes, which its
// completion frees too: a send queue completes in order), and an
// unsignalled one says so (wrUnsig: it has a completion only if it fails).
const (
	recvWRID       = 1 << 63
	wrUnsig        = 1 << 59
	wrCarryBytes   = 32 // bits 32-52: bytes of the unsignalled sends carried
	wrCarryCount   = 53 // bits 53-58: how many
	carryBytesMask = 1<<21 - 1
	carryCountMask = 1<<6 - 1
)

// maxUnsignaled bounds a run of unsignalled sends (a signalled one follows
// at the latest then); it fits wrCarryCount, and 16 sends of at most
// qpMaxSize inline bytes fit wrCarryBytes.
const maxUnsignaled = 16

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
// are serialised); Close unblocks both. A Read or Write that must wait
// parks its own goroutine on the completion channel through Go's netpoller
// (as rs_get_comp sleeps in ibv_get_cq_event); no thread is held and
// nothing spins unless Options.PollTime asks for it.
//
// The caller must Close it: Close sends rsockets' DISCONNECT, waits (at
// most Options.CloseTimeout) for the sends to complete, then disconnects
// and destroys the QP, CQ, memory regions, PD and rdma_cm id.
type Conn struct {
	// What the connection runs on (set by newConn, never changed): the
	// queue pair and its events, the registered rings, the sizes.
	t            transport
	mem          *memory
	cfg          config
	pollTime     time.Duration
	laddr, raddr net.Addr

	// The API (conn.go, conn_deadline.go): who may call in at once, the
	// deadlines, Close's progress.
	rmu, wmu, cmu sync.Mutex // serialise Read, Write and the control operations
	rdl, wdl      *deadline
	closing       chan struct{}
	closeStarted  atomic.Bool // set just before closing is closed (isClosed loads it)
	closeOnce     sync.Once
	closeErr      error
	keepalive     *time.Timer

	// Waiting (conn_wait.go). The contexts a waiter's channel wait ends
	// with: gone when the CM reports the connection gone (or at the end of
	// Close), live (its child) also when Close starts; the deadlines are
	// live's children. Then the goroutines' ends and each waiter's wake.
	gone      context.Context
	endGone   context.CancelFunc
	live      context.Context
	endLive   context.CancelFunc
	watchDone chan struct{} // the watch goroutine returned
	drainDone chan struct{} // the drain goroutine (after CloseRead) returned, if started
	rdWake    chan struct{}
	wrWake    chan struct{}
	ctlWake   chan struct{}
	drainWake chan struct{}

	mu     sync.Mutex // everything below, and every use of t
	closed bool       // Close was called
	torn   bool       // t is closed

	// The completion queue's waiter (conn_wait.go).
	armed     bool          // the CQ is armed: its next completion raises an event
	armEvents uint64        // events when the CQ was last armed
	quietAt   uint64        // polls when the waiter last let go of mu to wait quietly
	quiet     func() bool   // c.quietWait, made once rather than a method value per wait (which may allocate)
	waiting   bool          // a goroutine waits for that event in t.wait
	sleepers  int           // goroutines in sleepLocked (they wait for a wake)
	events    uint64        // completions handled
	polls     atomic.Uint64 // CQ polls started (progressLocked): quiet's witness
	wakes     uint64        // completion events a wait in t.wait woke for

	// The connection's state (conn_proto.go: rs_connected and the like).
	cmGone    bool
	err       error // why the connection failed
	connected bool  // rs_connected
	readable  bool  // rs_readable
	writable  bool  // rs_writable
	readShut  bool  // CloseRead: incoming data is dropped
	peerDisc  bool  // the peer's DISCONNECT arrived
	peerOrder binary.ByteOrder

	// Sending (conn_proto.go): the peer's receive ring.
	sseqNo, sseqComp uint16 // data messages sent; the peer's credit limit
	sqeAvail         int
	sbufAvail        int
	sbufHead         int // next free byte of the send ring
	tgt              [sglSize]rsSGE
	tgtIdx           int
	ctrlSeq, ctrlMax uint32 // control messages posted; the limit
	// Unsignalled sends (see postLocked): those since the last signalled
	// one, which the next signalled one carries, and those an error
	// completion returned already (flushed), which it must not free again.
	unsigN, unsigBytes int
	earlyN, earlyBytes int
	maxUnsig           int    // the longest run: maxUnsignaled or less on a short send queue
	remoteSGL          rsSGE  // the peer's target SGL: address, rkey, entries
	remoteSGE          uint32 // the entry our next buffer update goes to

	// Receiving (conn_proto.go): our ring.
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

	// The rings lent out: ReadFrom's r reads into the send ring and
	// WriteTo's w is handed the receive ring without mu held, so Close
	// leaves unmapping them (t.free) to the last of those to return.
	ringLent  int
	ringFreed bool // t.free was called, or is left to the last borrower
	recvLent  bool // WriteTo's w has the first queued message's data

	// Scratch space of progressLocked's polls and postLocked's work
	// request, kept here so that neither allocates.
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
		closing:   make(chan struct{}),
		watchDone: make(chan struct{}),
		rdWake:    make(chan struct{}, 1),
		wrWake:    make(chan struct{}, 1),
		ctlWake:   make(chan struct{}, 1),
		drainWake: make(chan struct{}, 1),
		connected: true, readable: true, writable: true,
		peerOrder: sgeOrder(peer.Flags),
		rmsg:      make([]uint32, cfg.rqSize+1),
	}
	c.quiet = c.quietWait
	c.gone, c.endGone = context.WithCancel(context.Background())
	c.live, c.endLive = context.WithCancel(c.gone)
	c.rdl, c.wdl = newDeadline(c.live), newDeadline(c.live)
	// rs_init_bufs
	half := cfg.rbufSize >> 1
	c.rbufFree, c.rbufAvail = half, half
	c.sbufAvail = cfg.sbufSize
	c.ctrlMax = qpCtrlSize
	c.sqeAvail = cfg.sqSize - qpCtrlSize
	c.maxUnsig = min(maxUnsignaled, c.sqeAvail/2)
	c.rseqComp = uint16(cfg.rqSize >> 1)
	c.grant = uint16(cfg.rqSize)
	c.rcvWindow = half
	// rs_save_conn_data
	c.remoteSGL = peer.TargetSGL
	c.remoteSGE = 1 % peer.TargetSGL.Length
	c.tgt[0] = clampSGE(peer.DataBuf)
	c.sseqComp = peer.Credits

	go c.watch()
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

// watch is the connection's one background goroutine: it waits for the
// CM to report the connection gone (the peer's process died, or the
// device went away), ends the waits on the completion channel and fails
// the connection. Completions are not its business: whoever has to wait
// (Read, Write, Close, the drain after CloseRead) waits for them itself.
func (c *Conn) watch() {
	defer close(c.watchDone)
	select {
	case <-c.t.done():
	case <-c.closing:
		return
	}
	c.mu.Lock()
	c.cmGone = true
	c.progressLocked()
	if c.connected && !c.closed {
		c.failLocked(errReset)
	}
	c.mu.Unlock()
	c.endGone()
	c.wakeAll(nil)
}

// drain keeps the protocol going after CloseRead while nobody else may
// call in: the peer's data is dropped as it arrives (recvLocked), so the
// peer is not stalled. It ends with the connection or at Close.
func (c *Conn) drain() {
	defer close(c.drainDone)
	dl := newDeadline(c.live)
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.readShut && c.connected && !c.closed && !c.torn {
		c.progressLocked()
		if c.blockLocked(c.drainWake, dl, c.closing) == wokeStop {
			return
		}
	}
}

// wakeAll wakes every goroutine that may wait in blockLocked but own.
func (c *Conn) wakeAll(own chan struct{}) {
	for _, ch := range [...]chan struct{}{c.rdWake, c.wrWake, c.ctlWake, c.drainWake} {
		if ch == own {
			continue
		}
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
	c.polls.Add(1) // before the poll: see quietWait
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
// slot, send-ring bytes or control slot the request held, and those of the
// unsignalled sends it carries (postLocked).
func (c *Conn) sendDoneLocked(wc *uverbs.WC) {
	msg := uint32(wc.WRID)
	switch msgOp(msg) {
	case opSGL, opCtrl:
		c.ctrlMax++
	default:
		c.sqeAvail++
		c.sbufAvail += int(msgData(msg))
	}
	if wc.WRID&wrUnsig != 0 {
		// Only a failed unsignalled send completes (flushed, most
		// likely): its signalled successor, if any, carries it too.
		c.earlyN++
		c.earlyBytes += int(msgData(msg))
	} else if n := int(wc.WRID>>wrCarryCount) & carryCountMask; n > 0 {
		c.sqeAvail += n - c.earlyN
		c.sbufAvail += int(wc.WRID>>wrCarryBytes)&carryBytesMask - c.earlyBytes
		c.earlyN, c.earlyBytes = 0, 0
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

// postLocked posts c.swr[0], whose ID is its message, after the caller
// took what it holds (a send slot and send-ring bytes, or a control slot).
//
// Most sends are signalled, as librdmacm signals all of them (sq_sig_all).
// A data message sent inline is not, while no one could wait for what its
// completion would free: the run of such sends is short (maxUnsig), and
// the send that leaves no send slot, or less send ring than a Write waits
// for (sndLowat), is signalled; so a Write that must wait for its own sends
// always has a signalled one coming, whose completion frees the run before
// it. Control messages, and data from the send ring (its bytes are reused
// only after the completion), are always signalled. In a request-reply
// exchange this spares the wake-up that each reply's completion (the
// peer's acknowledgement) would otherwise cost while the end waits for
// the next request. Close, which waits for every send, asks the send
// queue itself (sendsIdleLocked).
func (c *Conn) postLocked() {
	wr := &c.swr[0]
	msg := uint32(wr.ID)
	size := int(msgData(msg))
	if msgOp(msg) == opData && wr.Flags&uverbs.SendInline != 0 && c.unsigN+1 < c.maxUnsig &&
		c.sqeAvail > 0 && c.sbufAvail >= sndLowat {
		wr.ID |= wrUnsig
		c.unsigN++
		c.unsigBytes += size
	} else {
		wr.Flags |= uverbs.SendSignaled
		wr.ID |= uint64(c.unsigN)<<wrCarryCount | uint64(c.unsigBytes)<<wrCarryBytes
		c.unsigN, c.unsigBytes = 0, 0
	}
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
	// Nobody may be waiting: collect the completions (the last
	// keepalives' among them) so an idle connection keeps its control
	// slots.
	c.progressLocked()
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

// sendsIdleLocked reports whether every send we posted completed (the
// test of rs_conn_all_sends_done, without its "or no longer connected":
// see close).
//
// Unsignalled sends at the end (unsigN) have no completion to wait for:
// the send queue itself says when the device completed them (a signalled
// send among them may not have been polled yet, but it completed).
func (c *Conn) sendsIdleLocked() bool {
	return int(c.ctrlMax-c.ctrlSeq)+c.sqeAvail == c.cfg.sqSize ||
		c.unsigN > 0 && c.t.sendsInFlight() == 0
}

// What ended a wait.
const (
	wokeEvent = iota
	wokeDeadline
	wokeStop
)

// blockLocked waits for the connection to change. It arms the CQ first
// if it is not (and then only polls, for completions that came before:
// callers recheck their condition and call again). Then the first waiter
// sleeps in the completion channel itself (t.wait, parked on the
// netpoller: rs_get_comp's ibv_get_cq_event) until the event, dl or stop,
// and on waking handles the completions and wakes the others; anyone
// else waiting meanwhile sleeps on wake until that waiter is done. Either
// way mu is released while asleep; callers recheck their condition.
// dl is the waiter's deadline (Read's and Write's end when the CM ends the
// connection, too); stop, if not nil, ends the wait as well. It is not
// cm.Conn.Wait (uverbs.WaitCQs) on purpose: that polls outside c.mu and
// arms the CQ whenever it is empty, while here every poll happens under
// c.mu, in order with every other (two pollers would hand receive
// completions to the protocol out of order), and the CQ is armed only
// while a call has to sleep (a busy stream costs no events).
func (c *Conn) blockLocked(wake chan struct{}, dl *deadline, stop <-chan struct{}) int {
	if c.torn {
		return wokeStop
	}
	if c.pollTime > 0 {
		if c.spinLocked() {
			return wokeEvent
		}
	}
	if !c.armed && !c.cmGone {
		if err := c.t.arm(); err != nil {
			c.failLocked(fmt.Errorf("arm completion queue: %w", err))
			return wokeEvent
		}
		c.armed = true
		c.armEvents = c.events
		c.progressLocked()
		return wokeEvent
	}
	if c.waiting || c.cmGone || c.closed && c.unsigN > 0 {
		return c.sleepLocked(wake, dl, stop)
	}
	ctx := dl.wait()
	var quiet func() bool
	if c.events == c.armEvents {
		// Nothing polled since the CQ was armed: no event can be queued
		// unless a completion has come since (quietWait looks).
		quiet, c.quietAt = c.quiet, c.polls.Load()
	}
	c.waiting = true
	c.mu.Unlock()
	err := c.t.wait(ctx, quiet)
	c.mu.Lock()
	c.waiting = false
	r := wokeEvent
	switch {
	case err == nil:
		c.armed = false
		c.wakes++
		c.progressLocked()
	case ctx.Err() == nil:
		// Not the context: the channel itself failed.
		if !c.torn && !c.closed {
			c.failLocked(fmt.Errorf("wait for completions: %w", err))
		}
	default:
		r = c.endedBy(ctx, stop)
	}
	// Whoever else waits rechecks, and one of them takes over the wait
	// if the CQ is still armed. Nobody else waits in the common case (one
	// reader or one writer): no wake then, its channel sends cost more
	// than the rest of the call.
	if c.sleepers > 0 {
		c.wakeAll(wake)
	}
	return r
}

// quietWait is the waiter's quiet (see transport.wait), called without mu
// once the channel's old readiness is forgotten. The waiter checked, under
// mu, that no completion was taken since the CQ was armed (so every event
// the arm can raise is for a completion still in the CQ or yet to come); the
// channel then holds no event if the CQ is empty now and nobody has polled
// since the waiter let go of mu. The kernel puts a completion in the CQ
// before it queues the event; a poller counts itself (polls) before it
// polls. So the CQ is looked at first: a completion taken from it before
// that look was counted before the count is read here.
func (c *Conn) quietWait() bool {
	return !c.t.ready() && c.polls.Load() == c.quietAt
}

// sleepLocked is blockLocked for a goroutine that does not wait in the
// channel: another does (and wakes it), or the CM ended the connection,
// after which the QP's flushed work is polled every millisecond until
// Close, or Close waits for unsignalled sends, which raise no event (it
// looks at the send queue every millisecond).
func (c *Conn) sleepLocked(wake chan struct{}, dl *deadline, stop <-chan struct{}) int {
	var tick <-chan time.Time
	if c.cmGone || c.closed && c.unsigN > 0 {
		tick = time.After(time.Millisecond)
	}
	ctx := dl.wait()
	c.sleepers++
	c.mu.Unlock()
	r := wokeEvent
	select {
	case <-wake:
	case <-tick:
	case <-ctx.Done():
		r = c.endedBy(ctx, stop)
	case <-stop:
		r = wokeStop
	}
	c.mu.Lock()
	c.sleepers--
	c.progressLocked()
	return r
}

// endedBy says why a wait with the deadline context ctx ended early: the
// deadline passed, stop closed, or (wokeEvent: recheck) the deadline was
// changed or the CM ended the connection.
func (c *Conn) endedBy(ctx context.Context, stop <-chan struct{}) int {
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return wokeDeadline
	case isClosed(stop):
		return wokeStop
	}
	return wokeEvent
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
		case c.rdl.expired():
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
		c.blockLocked(c.rdWake, c.rdl, c.closing)
	}
}

// consumeLocked copies queued data into b (the loop of rrecv).
func (c *Conn) consumeLocked(b []byte) int {
	n := 0
	for n < len(b) && c.rmsgHead != c.rmsgTail {
		k := copy(b[n:], c.headDataLocked())
		c.advanceLocked(k)
		n += k
	}
	return n
}

// headDataLocked is the unread part of the first queued message that lies
// before the receive ring's end (the rest, if it wraps, starts at 0).
func (c *Conn) headDataLocked() []byte {
	k := min(int(c.rmsg[c.rmsgHead]), c.cfg.rbufSize-c.rbufOffset)
	return c.mem.rbuf[c.rbufOffset : c.rbufOffset+k]
}

// advanceLocked marks n bytes of the first queued message read; a message
// read to its end (an empty one at once) leaves the queue.
func (c *Conn) advanceLocked(n int) {
	if c.rmsg[c.rmsgHead] -= uint32(n); c.rmsg[c.rmsgHead] == 0 {
		c.rseqNo++
		if c.rmsgHead++; c.rmsgHead == len(c.rmsg) {
			c.rmsgHead = 0
		}
	}
	c.rbufAvail += n
	if c.rbufOffset += n; c.rbufOffset == c.cfg.rbufSize {
		c.rbufOffset = 0
	}
}

// discardLocked drops every queued message (after CloseRead), unless
// WriteTo's writer has the first in hand: WriteTo drops them when it gets
// it back (the space must not go back to the peer while w reads it).
func (c *Conn) discardLocked() {
	if c.recvLent {
		return
	}
	for c.rmsgHead != c.rmsgTail {
		c.advanceLocked(len(c.headDataLocked()))
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
		if err := c.writeErrLocked("write"); err != nil {
			return n, err
		}
		if n == len(b) {
			return n, nil
		}
		if !c.canSendLocked() {
			c.waitSendLocked()
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
		c.writeDataLocked(b[n:n+xfer], false)
		n += xfer
		if n == len(b) && c.err == nil {
			return n, nil // all posted: what could stop a next part is moot
		}
	}
}

// writeErrLocked is why Write (or ReadFrom: op) cannot send, if it cannot.
func (c *Conn) writeErrLocked(op string) error {
	if err := c.localWriteErrLocked(op); err != nil {
		return err
	}
	switch {
	case c.err != nil:
		return c.opErr(op, c.err)
	case !c.writable && c.peerDisc:
		return c.opErr(op, errPeerClosed)
	}
	return nil
}

// waitSendLocked waits for credits, a peer buffer and send ring space.
func (c *Conn) waitSendLocked() {
	c.progressLocked()
	if !c.canSendLocked() && c.writable {
		c.blockLocked(c.wrWake, c.wdl, c.closing)
	}
}

// ReadFrom is io.ReaderFrom (io.Copy uses it): it reads from r straight
// into the send ring, which is registered memory, and sends what each of
// r's Reads returned (in as many messages as the peer's buffers take),
// saving the copy Write makes. A Read asks for what the free ring space
// allows (from 2 KiB, doubling up to 64 KiB, as Write's transfers do); as
// with TCP, r is read before waiting for the peer, so a peer that took
// everything and closed does not fail a ReadFrom whose r has only io.EOF
// left. It returns at r's io.EOF (with a nil error) or at the first error
// of r or the connection; bytes r returned that the connection could no
// longer send are lost, as with a Write that fails. The write deadline
// bounds the waits for the peer, not r's Reads, which run without the
// connection's lock.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	olen := olapStart
	for {
		if err := c.localWriteErrLocked("readfrom"); err != nil {
			return total, err
		}
		if c.sbufAvail < sndLowat {
			if err := c.writeErrLocked("readfrom"); err != nil {
				return total, err
			}
			c.waitSendLocked() // for our own sends' completions
			continue
		}
		// Only this call moves sbufHead (Write waits for wmu) and only
		// a send completion changes sbufAvail (it grows): the space
		// stays this call's while r reads into it unlocked.
		xfer := min(olen, c.sbufAvail, c.cfg.sbufSize-c.sbufHead)
		if olen < maxTransfer {
			olen <<= 1
		}
		buf := c.mem.sbuf[c.sbufHead : c.sbufHead+xfer]
		c.lendRingLocked()
		c.mu.Unlock()
		n, rerr := r.Read(buf)
		c.mu.Lock()
		c.returnRingLocked()
		for sent := 0; sent < n; {
			if err := c.writeErrLocked("readfrom"); err != nil {
				return total, err
			}
			if !c.canSendLocked() {
				c.waitSendLocked()
				continue
			}
			m := min(n-sent, int(c.tgt[c.tgtIdx].Length))
			c.writeDataLocked(buf[sent:sent+m], true)
			sent += m
			total += int64(m)
		}
		switch {
		case rerr == io.EOF:
			return total, nil
		case rerr != nil:
			return total, rerr
		}
	}
}

// WriteTo is io.WriterTo (io.Copy from a Conn uses it): it hands w the data
// straight from the receive ring, the registered memory the peer
// RDMA-wrote it into, saving the copy into io.Copy's buffer that Read
// makes, and gives the space back to the peer once w has taken it. Each of
// w's Writes gets one message's bytes up to the ring's end (at most
// 64 KiB: the peer's transfer size); w must not keep the slice, as
// io.Writer's contract says. It returns with a nil error once the peer
// shut its side and every byte before that was written (io.EOF for Read),
// or after CloseRead; otherwise at the first error of w or of the
// connection. The read deadline bounds the waits for the peer, not w's
// Writes, which run without the connection's lock (a Close meanwhile
// leaves the ring mapped until w returns).
func (c *Conn) WriteTo(w io.Writer) (int64, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var total int64
	for {
		switch {
		case c.isClosed():
			return total, c.opErr("writeto", net.ErrClosed)
		case c.rdl.expired():
			return total, c.opErr("writeto", os.ErrDeadlineExceeded)
		case c.rmsgHead != c.rmsgTail:
			p := c.headDataLocked()
			if len(p) == 0 {
				c.advanceLocked(0) // an empty message
				continue
			}
			c.lendRingLocked()
			c.recvLent = true
			c.mu.Unlock()
			n, werr := w.Write(p)
			c.mu.Lock()
			c.recvLent = false
			c.returnRingLocked()
			if n < 0 || n > len(p) {
				n, werr = 0, fmt.Errorf("writer returned %d for a write of %d bytes", n, len(p))
			}
			total += int64(n)
			if c.isClosed() {
				// Close tore the connection down meanwhile.
				return total, c.opErr("writeto", net.ErrClosed)
			}
			c.advanceLocked(n)
			if c.readShut {
				c.discardLocked() // CloseRead came meanwhile
			}
			c.updateCreditsLocked()
			switch {
			case werr != nil:
				return total, werr
			case n < len(p):
				return total, io.ErrShortWrite
			}
			continue
		case c.err != nil:
			return total, c.opErr("writeto", c.err)
		case !c.readable:
			return total, nil
		}
		c.progressLocked()
		if c.rmsgHead != c.rmsgTail || !c.readable {
			continue
		}
		c.blockLocked(c.rdWake, c.rdl, c.closing)
	}
}

// localWriteErrLocked is writeErrLocked for what this side did: Close, the
// deadline, CloseWrite (not the peer's close or a failure).
func (c *Conn) localWriteErrLocked(op string) error {
	switch {
	case c.isClosed():
		return c.opErr(op, net.ErrClosed)
	case c.wdl.expired():
		return c.opErr(op, os.ErrDeadlineExceeded)
	case !c.writable && !c.peerDisc && c.err == nil:
		return c.opErr(op, errWriteShut)
	}
	return nil
}

// writeDataLocked posts one data message (rs_write_data). inRing says p
// is already in the send ring at sbufHead (ReadFrom read it there); then
// sbufHead moves past it even when it goes inline, so that ReadFrom's next
// part is at sbufHead again.
func (c *Conn) writeDataLocked(p []byte, inRing bool) {
	size := len(p)
	wr := &c.swr[0]
	imm := msgSet(opData, uint32(size))
	*wr = uverbs.SendWR{ID: uint64(imm), Opcode: uverbs.WRRDMAWriteWithImm, Imm: imm}
	if size <= c.cfg.inline {
		wr.Flags, wr.Inline = uverbs.SendInline, p
		if inRing {
			if c.sbufHead += size; c.sbufHead == c.cfg.sbufSize {
				c.sbufHead = 0
			}
		}
	} else {
		end := c.cfg.sbufSize - c.sbufHead // rs_sbuf_left
		if size <= end {
			if !inRing {
				copy(c.mem.sbuf[c.sbufHead:], p)
			}
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
		if c.drainDone == nil {
			c.drainDone = make(chan struct{})
			go c.drain()
		}
		if c.writable {
			return nil
		}
		code = ctrlDisconnect
	}
	if !c.ctrlAvailWait(c.wdl, c.closing) {
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
func (c *Conn) ctrlAvailWait(dl *deadline, stop <-chan struct{}) bool {
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
	c.closeStarted.Store(true)
	close(c.closing)
	c.endLive() // a Read or Write waiting in the channel returns
	if c.keepalive != nil {
		c.keepalive.Stop()
	}
	c.cmu.Lock()
	c.mu.Lock()
	c.closed = true
	delivered := false // the peer acknowledged every byte and our DISCONNECT or SHUTDOWN
	if c.err == nil {
		// Not a child of c.gone: after the CM's end, Close still
		// collects the flushed sends (sleepLocked polls for them).
		dl := newDeadline(context.Background())
		dl.set(time.Now().Add(c.cfg.closeTimeout))
		if c.connected {
			c.readable, c.writable = false, false
			if c.ctrlAvailWait(dl, nil) {
				c.sendCtrlLocked(ctrlDisconnect)
			}
		}
		// Wait for what we sent even when the peer ended the stream
		// first (its SHUTDOWN after our CloseWrite, or its DISCONNECT):
		// disconnecting with our last data or our SHUTDOWN still
		// unacknowledged flushes them, and the peer reads a reset instead
		// of the end of the stream. (rsockets' rshutdown waits for its
		// sends, but stops waiting once the peer's SHUTDOWN arrives.)
		for !c.sendsIdleLocked() && !c.torn && c.err == nil {
			if c.blockLocked(c.ctlWake, dl, nil) != wokeEvent {
				break
			}
		}
		delivered = c.err == nil && c.sendsIdleLocked()
		dl.stop()
	}
	c.connected = false
	drained := c.drainDone
	c.mu.Unlock()
	if drained != nil {
		<-drained
	}
	<-c.watchDone
	c.mu.Lock()
	c.torn = true
	c.mu.Unlock()
	c.endGone()
	c.cmu.Unlock()
	c.wakeAll(nil)
	err := c.t.close()
	if err != nil && delivered && onlyCloseTimeout(err) {
		err = nil
	}
	c.mu.Lock()
	free := c.ringLent == 0
	c.ringFreed = true
	c.mu.Unlock()
	if free {
		err = errors.Join(err, c.t.free())
	}
	if err != nil {
		return c.opErr("close", err)
	}
	return nil
}

// lendRingLocked marks a ring as in use outside mu (by ReadFrom's reader
// or WriteTo's writer, which may still be in it when Close returns: a
// reader blocked on a network socket, say). Close then leaves the unmap to
// returnRingLocked, so such a caller never touches unmapped memory, or
// memory mapped again for something else.
func (c *Conn) lendRingLocked() { c.ringLent++ }

// returnRingLocked ends a lendRingLocked; the last to return after Close
// unmaps the rings. Its error (munmap of a mapping this Conn made) cannot
// reach Close's caller any more and is dropped.
func (c *Conn) returnRingLocked() {
	if c.ringLent--; c.ringLent == 0 && c.ringFreed {
		c.t.free()
	}
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

// isClosed reports whether Close has started (closing is closed or about
// to be): one atomic load on every Read and Write.
func (c *Conn) isClosed() bool { return c.closeStarted.Load() }

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

// deadline is a settable deadline: a context that ends when it passes (or
// when its parent ends), which a waiter in the completion channel hands
// to t.wait. Setting it ends the previous context, so a waiter wakes and
// picks up the new one.
type deadline struct {
	mu     sync.Mutex // serialises set
	parent context.Context
	cur    atomic.Pointer[deadlineCtx]
}

// deadlineCtx is one setting of a deadline: its context, and whether it has
// a time at all (the zero time makes a context that can end only with its
// parent, so expired need not ask it).
type deadlineCtx struct {
	ctx    context.Context
	cancel context.CancelFunc
	timed  bool
}

func newDeadline(parent context.Context) *deadline {
	d := &deadline{parent: parent}
	ctx, cancel := context.WithCancel(parent)
	d.cur.Store(&deadlineCtx{ctx: ctx, cancel: cancel})
	return d
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cur.Load().cancel()
	n := &deadlineCtx{timed: !t.IsZero()}
	if n.timed {
		n.ctx, n.cancel = context.WithDeadline(d.parent, t)
	} else {
		n.ctx, n.cancel = context.WithCancel(d.parent)
	}
	d.cur.Store(n)
}

// stop ends the current context (its timer with it).
func (d *deadline) stop() { d.cur.Load().cancel() }

// wait is the context to wait with now: one atomic load, as Read and Write
// ask on every call.
func (d *deadline) wait() context.Context { return d.cur.Load().ctx }

// expired reports whether the deadline passed. Without a deadline it is
// false without asking the context (the parent, the connection's life,
// has none of its own and ends with Canceled).
func (d *deadline) expired() bool {
	cur := d.cur.Load()
	return cur.timed && cur.ctx.Err() == context.DeadlineExceeded
}

var (
	_ net.Conn      = (*Conn)(nil)
	_ io.ReaderFrom = (*Conn)(nil)
)
