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
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/uverbs"
)

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

// isClosed reports whether Close has started (closing is closed or about
// to be): one atomic load on every Read and Write.
func (c *Conn) isClosed() bool { return c.closeStarted.Load() }

func (c *Conn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "rsocket", Source: c.laddr, Addr: c.raddr, Err: err}
}

var (
	_ net.Conn      = (*Conn)(nil)
	_ io.ReaderFrom = (*Conn)(nil)
)
