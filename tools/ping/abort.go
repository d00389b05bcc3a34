// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// abortWRID marks Abort's writes.
const abortWRID = 1 << 33

// Abort tells the peer that the run is over, for when Run failed: the
// ibv_*_pingpong examples wait for their next message with no timeout, so
// a C peer would otherwise wait for ever. On RC (ibv_rc_pingpong, and
// ibv_srq_pingpong's QPs) it sends on each QP a message one byte longer
// than the peer's receive buffers (-s): the peer's receive completes with
// an error (a length error is IB's class C responder error; rxe_resp.c
// do_class_ac_error completes the receive it took, from the QP or the SRQ,
// with the error and moves the QP to the error state), so the program
// exits with "Failed status ...", and our send completes with the NAK's
// remote error (IBV_WC_REM_INV_REQ_ERR or IBV_WC_REM_OP_ERR), which proves
// it arrived. (Making the QP fail
// with an RDMA WRITE it must refuse would not end ibv_srq_pingpong: a QP's
// error flushes its own receives, not those of the SRQ.) UC and UD drop an
// oversized message silently, so there Abort does nothing. It waits at
// most d for the answers and returns how many of the QPs' peers were told;
// our QPs end in the error state.
func (p *Pingpong) Abort(d time.Duration) int {
	if p.cfg.Type != uverbs.QPTypeRC {
		return 0
	}
	posted := 0
	for i, q := range p.qps {
		// NewPingpong's send buffer has the one byte more.
		wr := uverbs.SendWR{ID: abortWRID | uint64(i), Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{p.send.MR.SGE(i*p.cfg.Size, p.cfg.Size+1)}}
		if q.QP.PostSend(wr) == nil { // a QP already in the error state refuses the post
			posted++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	told, done := 0, 0
	for done < posted {
		n, _, err := uverbs.WaitCQs(ctx, nil, p.wcs[:], p.cq)
		if err != nil {
			break
		}
		for _, wc := range p.wcs[:n] {
			if wc.WRID&abortWRID == 0 {
				continue // flushed receives and sends of the run
			}
			done++
			p.logf("verbs: abort message on QP %#x: %v", wc.QPNum, wc.Status)
			switch wc.Status { // the peer's NAK: it took the message and failed
			case uverbs.WCRemInvReqErr, uverbs.WCRemOpErr, uverbs.WCRemAccessErr:
				told++
			}
		}
	}
	return told
}
