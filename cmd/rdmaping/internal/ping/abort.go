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
// ibv_srq_pingpong's QPs) it posts on each QP an RDMA WRITE of one byte to
// remote address 0 under R_Key 0, which the peer must refuse (the examples
// register no memory for remote access): its QP answers with a remote
// access error NAK and goes to the error state (IB's class C responder
// error; rxe_resp.c do_class_ac_error), which flushes the receives the
// program waits on, so it exits with "Failed status WR flushed error". UC
// drops such a write silently and UD has no RDMA WRITE, so there Abort does
// nothing. It waits at most d for the peer's answers and returns how many
// of the QPs' peers refused the write (were told); our QPs end in the
// error state.
func (p *Pingpong) Abort(d time.Duration) int {
	if p.cfg.Type != uverbs.QPTypeRC {
		return 0
	}
	posted := 0
	for i, q := range p.qps {
		wr := uverbs.SendWR{ID: abortWRID | uint64(i), Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{p.send.MR.SGE(i*p.cfg.Size, 1)}}
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
			if wc.Status == uverbs.WCRemAccessErr {
				told++
			}
		}
	}
	return told
}
