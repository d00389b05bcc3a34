// Copyright 2026 The rdmago Authors.

package rsocket

import "fmt"

// Stats is a snapshot of a connection's flow control: what a stalled Write
// or Read waits for. librdmacm keeps the same numbers in struct rsocket
// (sseq_no, sseq_comp, target_sgl, rseq_no, ...) but shows them to nobody.
type Stats struct {
	// Sending. A Write waits while MessagesSent == CreditLimit (no
	// credits), PeerBuffer == 0 (the peer has not published its next
	// half-ring), or SendRingFree or SendSlotsFree is too small (our own
	// RDMA WRITEs are not completed yet; an unsignalled one counts until
	// the signalled one after it completes).
	MessagesSent  uint16 // data messages sent (sseq_no; counts modulo 2^16)
	CreditLimit   uint16 // the peer's limit for MessagesSent (sseq_comp)
	PeerBuffer    int    // bytes left in the buffer the peer published last (target SGL entry in use)
	SendRingFree  int    // bytes of the send ring not in flight (sbuf_bytes_avail)
	SendSlotsFree int    // send queue entries free for data (sqe_avail)
	CtrlInFlight  int    // control messages (credits, shutdown) not completed yet

	// Receiving.
	MessagesReceived uint16 // data messages received (counts modulo 2^16)
	MessagesRead     uint16 // data messages read (rseq_no)
	CreditsGranted   uint16 // the limit we granted the peer for MessagesReceived
	ReceiveWindow    int    // bytes the peer may still write into our ring
	Queued           int    // bytes received and not read yet

	Completions uint64 // work completions handled
	Wakeups     uint64 // completion events a blocked call slept in the completion channel for
	Armed       bool   // the completion queue is armed (someone sleeps)
	Err         error  // why the connection ended, if it did
}

// Stats reports the connection's flow-control state; it may be called at any
// time, also after Close. It first handles the completions that arrived, as
// Read and Write do (so a peer's messages count even while nobody reads).
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.progressLocked()
	queued := 0
	for i := c.rmsgHead; i != c.rmsgTail; i = (i + 1) % len(c.rmsg) {
		queued += int(c.rmsg[i])
	}
	return Stats{
		MessagesSent:     c.sseqNo,
		CreditLimit:      c.sseqComp,
		PeerBuffer:       int(c.tgt[c.tgtIdx].Length),
		SendRingFree:     c.sbufAvail,
		SendSlotsFree:    c.sqeAvail,
		CtrlInFlight:     int(c.ctrlSeq - (c.ctrlMax - qpCtrlSize)),
		MessagesReceived: c.rcvSeq,
		MessagesRead:     c.rseqNo,
		CreditsGranted:   c.grant,
		ReceiveWindow:    c.rcvWindow,
		Queued:           queued,
		Completions:      c.events,
		Wakeups:          c.wakes,
		Armed:            c.armed,
		Err:              c.err,
	}
}

// String is one line for a log.
func (s Stats) String() string {
	str := fmt.Sprintf("sent %d messages (credit limit %d), peer buffer %d bytes, send ring free %d bytes, send slots free %d, control messages in flight %d; received %d messages, read %d, granted up to %d, window %d bytes, %d bytes queued; %d completions, %d wake-ups, armed %v",
		s.MessagesSent, s.CreditLimit, s.PeerBuffer, s.SendRingFree, s.SendSlotsFree, s.CtrlInFlight,
		s.MessagesReceived, s.MessagesRead, s.CreditsGranted, s.ReceiveWindow, s.Queued, s.Completions, s.Wakeups, s.Armed)
	if s.Err != nil {
		str += "; ended: " + s.Err.Error()
	}
	return str
}
