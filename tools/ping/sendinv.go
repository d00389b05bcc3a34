// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// serveSendInv is the server of the send-inv demo (see Demo).
func (d *Demo) serveSendInv(ctx context.Context) error {
	c, l := d.cfg, d.l
	mw, err := l.PD.AllocMW(uverbs.MWType2)
	if err != nil {
		return fmt.Errorf("send-inv needs memory windows (Soft-RoCE on Linux 5.12+): %w", err)
	}
	defer mw.Close()
	l.logf("verbs: allocated a type 2 memory window (rkey %#x)", mw.RKey())
	for i := 0; i < c.Count; i++ {
		clear(d.in.B)
		rkey := uverbs.IncRKey(mw.RKey())
		wr := uverbs.SendWR{ID: 8, Opcode: uverbs.WRBindMW, Bind: &uverbs.MWBindWR{MW: mw, RKey: rkey,
			Info: uverbs.MWBindInfo{MR: d.in.MR, Addr: d.in.MR.Addr(), Length: uint64(c.Size), Access: uverbs.AccessRemoteWrite}}}
		if _, err := d.postCtx(ctx, wr, uverbs.WCBindMW); err != nil {
			return fmt.Errorf("iteration %d: bind the window: %w", i, err)
		}
		l.logf("verbs: bound the window over %d bytes at %#x: rkey %#x, REMOTE_WRITE", c.Size, d.in.MR.Addr(), rkey)
		if err := d.sendCtrl(ctx, Info{Buf: d.in.MR.Addr(), RKey: rkey, Size: uint32(c.Size)}.Marshal(nil)); err != nil {
			return err
		}
		wc, err := d.recv(ctx, uverbs.WCRecv)
		if err != nil {
			return err
		}
		got, ok := wc.InvalidatedRKey()
		if !ok || got != rkey {
			return fmt.Errorf("iteration %d: the client's message invalidated %#x (%v), want the window's rkey %#x: is the peer rdmaping --mode send-inv?", i, got, ok, rkey)
		}
		if wc.ByteLen != 4 || binary.BigEndian.Uint32(d.ctrlIn.B) != uint32(i) {
			return fmt.Errorf("iteration %d: got control message %x", i, d.ctrlIn.B[:min(int(wc.ByteLen), InfoSize)])
		}
		l.logf("verbs: SEND_WITH_INV from the client invalidated rkey %#x (IBV_WC_WITH_INV)", got)
		if err := expect(d.in.B[:c.Size], i, "written data"); err != nil {
			return err
		}
		l.debugf("iteration %d: %d bytes written through window rkey %#x, then the window invalidated", i, c.Size, rkey)
	}
	// The last message lets the client write under the last, invalidated
	// rkey, which this QP must still be here to refuse. In RC that refusal
	// moves our QP to the error state too (rxe does), and the flush it
	// brings can overtake the acknowledgement of this very message.
	copy(d.ctrlOut.B, seq(c.Count))
	if err := l.PostSend(uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: d.ctrlOut.SGE(4)}); err != nil {
		return err
	}
	return awaitStaleWrite(ctx, l, sendInvQuiet)
}

// sendInvQuiet is how long the send-inv server waits, after its last
// message completed, for the end the client's stale-rkey write brings.
const sendInvQuiet = 3 * time.Second

// awaitStaleWrite is the send-inv server's end, once it has checked every
// iteration and posted its last message: that message's completion, then
// the end the client's write under the invalidated rkey brings (a flush of
// what is still posted, the peer's disconnect, or quiet seconds passing).
// The flush may also come before the message's own completion, which it
// then flushes: that is the same expected end, not a failure. Any other
// failed or unexpected completion is an error.
func awaitStaleWrite(ctx context.Context, l *Link, quiet time.Duration) error {
	wc, err := l.Await(ctx, uverbs.WCSend, nil)
	if err == nil {
		wctx, cancel := context.WithTimeout(ctx, quiet)
		defer cancel()
		if wc, err = l.Next(wctx); err == nil {
			return fmt.Errorf("unexpected %v completion after the last iteration", wc.Opcode)
		}
		if errors.Is(err, ErrPeerSilent) || ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
	}
	switch {
	case wc.IsFlush():
		l.logf("verbs: the client's write under an invalidated rkey moved our QP to the error state (work request %#x flushed)", wc.WRID)
	case errors.Is(err, ErrDisconnected):
	default:
		return err
	}
	return nil
}

// clientSendInv is the client of the send-inv demo.
func (d *Demo) clientSendInv(ctx context.Context) error {
	c, l := d.cfg, d.l
	var last Info
	for i := 0; i < c.Count; i++ {
		info, err := d.recvInfo(ctx)
		if err != nil {
			return err
		}
		if int(info.Size) < c.Size {
			return fmt.Errorf("the server's window has %d bytes, fewer than -S %d", info.Size, c.Size)
		}
		pattern(d.out.B[:c.Size], i)
		wr := uverbs.SendWR{ID: 4, Opcode: uverbs.WRRDMAWrite, SGL: d.out.SGE(c.Size), RemoteAddr: info.Buf, RKey: info.RKey}
		if _, err := d.postCtx(ctx, wr, uverbs.WCRDMAWrite); err != nil {
			return fmt.Errorf("iteration %d: write through the window: %w", i, err)
		}
		l.logf("verbs: RDMA WRITE of %d bytes through window rkey %#x", c.Size, info.RKey)
		copy(d.ctrlOut.B, seq(i))
		inv := uverbs.SendWR{ID: 2, Opcode: uverbs.WRSendWithInv, SGL: d.ctrlOut.SGE(4), InvalidateRKey: info.RKey}
		if _, err := d.postCtx(ctx, inv, uverbs.WCSend); err != nil {
			return fmt.Errorf("iteration %d: send with invalidate: %w", i, err)
		}
		l.logf("verbs: SEND_WITH_INV invalidated rkey %#x at the server", info.RKey)
		last = info
	}
	if err := d.recvSeq(ctx, c.Count); err != nil {
		return err
	}
	// The last rkey is invalidated: a write under it must be refused.
	wr := uverbs.SendWR{ID: 9, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: d.out.SGE(8), RemoteAddr: last.Buf, RKey: last.RKey}
	if err := l.PostSend(wr); err != nil {
		return err
	}
	_, err := l.Await(ctx, uverbs.WCRDMAWrite, nil)
	var wce *uverbs.WCError
	if !errors.As(err, &wce) || wce.WC.Status != uverbs.WCRemAccessErr {
		return fmt.Errorf("a write under the invalidated rkey %#x: %v, want IBV_WC_REM_ACCESS_ERR", last.RKey, err)
	}
	l.logf("verbs: RDMA WRITE under the invalidated rkey %#x refused: %v", last.RKey, wce.WC.Status)
	fmt.Fprintf(c.Out, "send-inv: a write under invalidated rkey %#x was refused (%v)\n", last.RKey, wce.WC.Status)
	return nil
}
