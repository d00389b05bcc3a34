// Copyright 2026 The rdmago Authors.

// The rsockets protocol of a Conn: its memory and sizes, the messages
// (data, credits, control) it sends and handles as their completions
// arrive, the send and receive rings and their credits.

package rsocket

import (
	"context"
	"fmt"
	"syscall"
	"time"

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

func clampSGE(s rsSGE) rsSGE {
	s.Length = min(s.Length, maxMsgData)
	return s
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
		case wc.Status == uverbs.WCLocLenErr || wc.Status == uverbs.WCLocQPOpErr:
			// Our receives have no buffer (rs_post_recv: RDMA WRITE WITH
			// IMMEDIATE consumes one, its data goes to the ring): only a
			// peer's SEND carrying data overflows one. rxe reports that
			// as its own malformed WQE, hardware as a local length error;
			// either way it is the peer's doing.
			c.violationLocked(protoErr("the peer sent a message larger than the 0-byte receive rsockets post (the device reports %v): a SEND carrying data, where rsockets send only RDMA WRITE WITH IMMEDIATE", wc.Status))
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
