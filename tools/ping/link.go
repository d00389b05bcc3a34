// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// Link is a connected QP and what the protocols need around it, however it
// was connected (rdma_cm or an out-of-band TCP exchange).
type Link struct {
	QP     *uverbs.QP
	PD     *uverbs.PD
	SendCQ *uverbs.CQ
	RecvCQ *uverbs.CQ
	// Wait waits for completions of the link's CQs (cm.Conn.Wait, which
	// also ends when the connection does); nil uses uverbs.WaitCQs.
	Wait func(ctx context.Context, wcs []uverbs.WC, cqs ...*uverbs.CQ) (int, *uverbs.CQ, error)
	// Done is closed when the connection ends (the peer disconnected);
	// Err says why. Nil for links without a CM.
	Done <-chan struct{}
	Err  func() error
	// RegMR registers memory and keeps it for the link's Close.
	RegMR func(buf []byte, access uverbs.AccessFlags) (*uverbs.MR, error)
	// Logf narrates steps (-v); Debugf prints rping's debug lines (-d).
	Logf, Debugf func(format string, args ...any)
	// PeerTimeout, when set, bounds each wait for a completion: a link
	// without a CM learns of no disconnect, so a peer that stopped (or
	// speaks another protocol) would otherwise be waited for forever.
	PeerTimeout time.Duration

	pending []uverbs.WC
	stash   []uverbs.WC // receive completions that arrived while Await wanted another
	buf     [8]uverbs.WC
}

func (l *Link) logf(f string, a ...any) {
	if l.Logf != nil {
		l.Logf(f, a...)
	}
}

func (l *Link) debugf(f string, a ...any) {
	if l.Debugf != nil {
		l.Debugf(f, a...)
	}
}

// ErrDisconnected is returned by Next when the peer ended the connection
// while a completion was awaited.
var ErrDisconnected = errors.New("peer disconnected")

// Next returns the next work completion of the link's CQs. It waits with
// Wait, or uverbs.WaitCQs on the link's CQs when Wait is nil (arm, poll
// again, sleep on the completion channel; without one, poll). A failed
// completion is returned with its error; a flushed one after the peer
// disconnected, or an empty wait that the disconnect ended, gives
// ErrDisconnected.
func (l *Link) Next(ctx context.Context) (uverbs.WC, error) {
	for {
		if len(l.pending) > 0 {
			wc := l.pending[0]
			l.pending = l.pending[1:]
			if wc.Status != uverbs.WCSuccess {
				if wc.IsFlush() && l.ended() {
					return wc, fmt.Errorf("%w: %v", ErrDisconnected, l.Err())
				}
				return wc, wc.Err()
			}
			return wc, nil
		}
		n, err := l.wait(ctx)
		if err != nil {
			if ctx.Err() == nil && l.ended() {
				return uverbs.WC{}, fmt.Errorf("%w: %v", ErrDisconnected, l.Err())
			}
			return uverbs.WC{}, err
		}
		l.pending = append(l.pending[:0], l.buf[:n]...)
		if l.Logf != nil {
			for _, wc := range l.pending {
				l.Logf("%s", WCText(wc))
			}
		}
	}
}

// ErrPeerSilent is returned when no completion came within PeerTimeout.
var ErrPeerSilent = errors.New("no completion from the peer")

func (l *Link) wait(ctx context.Context) (int, error) {
	if l.PeerTimeout > 0 {
		wctx, cancel := context.WithTimeout(ctx, l.PeerTimeout)
		defer cancel()
		n, err := l.wait1(wctx)
		if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w for %v", ErrPeerSilent, l.PeerTimeout)
		}
		return n, err
	}
	return l.wait1(ctx)
}

func (l *Link) wait1(ctx context.Context) (int, error) {
	if l.Wait != nil {
		n, _, err := l.Wait(ctx, l.buf[:])
		return n, err
	}
	cqs := [2]*uverbs.CQ{l.SendCQ, l.RecvCQ}
	all := cqs[:]
	if l.RecvCQ == l.SendCQ {
		all = cqs[:1]
	}
	n, _, err := uverbs.WaitCQs(ctx, nil, l.buf[:], all...)
	return n, err
}

func (l *Link) ended() bool {
	if l.Done == nil {
		return false
	}
	select {
	case <-l.Done:
		return true
	default:
		return false
	}
}

// Await returns the next successful completion of opcode op. Receive
// completions of another opcode are kept for a later Await; completions of
// other sends (messages already sent, whose completion nobody waits for)
// are handed to skip when it is set, and dropped.
func (l *Link) Await(ctx context.Context, op uverbs.WCOpcode, skip func(uverbs.WC)) (uverbs.WC, error) {
	for i, wc := range l.stash {
		if wc.Opcode == op {
			l.stash = append(l.stash[:i], l.stash[i+1:]...)
			return wc, nil
		}
	}
	for {
		wc, err := l.Next(ctx)
		if err != nil {
			return wc, err
		}
		if wc.Opcode == op {
			return wc, nil
		}
		if wc.Opcode.IsRecv() {
			l.stash = append(l.stash, wc)
			continue
		}
		if skip != nil {
			skip(wc)
		}
	}
}

// AwaitSent is Await for the completion of a message this side sent (a
// SEND or an RDMA WRITE) in an exchange where the peer answers each
// message or, after the last, disconnects. The peer's disconnect during
// the wait, whether the wait then ends empty or with the message flushed,
// does not fail it: the peer either had the message (and answered it, or
// it was the last) or the next wait, for its answer, fails. For the
// disconnect can overtake the acknowledgement's completion: Linux 6.12's
// rxe completes sends from a work queue, and cm moves the QP to the error
// state on the disconnect, flushing a send the peer did receive (C
// programs that never look at the disconnect get the send's success).
// Every other failure is returned as Await's.
func (l *Link) AwaitSent(ctx context.Context, op uverbs.WCOpcode) (uverbs.WC, error) {
	wc, err := l.Await(ctx, op, nil)
	if errors.Is(err, ErrDisconnected) {
		l.logf("rdma_cm: the peer disconnected before the completion of this side's %v: its answer (or the exchange's end) says whether it arrived", op)
		return wc, nil
	}
	return wc, err
}

// Buf is registered memory.
type Buf struct {
	B  []byte
	MR *uverbs.MR
}

// NewBuf allocates and registers n bytes.
func (l *Link) NewBuf(n int, access uverbs.AccessFlags) (Buf, error) {
	b := make([]byte, n)
	mr, err := l.RegMR(b, access)
	if err != nil {
		return Buf{}, err
	}
	return Buf{B: b, MR: mr}, nil
}

// SGE covers the first n bytes of the buffer.
func (b Buf) SGE(n int) []uverbs.SGE { return []uverbs.SGE{b.MR.SGE(0, n)} }

// Info advertises the first n bytes of the buffer.
func (b Buf) Info(n int) Info { return Info{Buf: b.MR.Addr(), RKey: b.MR.RKey(), Size: uint32(n)} }

// PostSend posts wr on the link's QP, narrating it first (-v): what a
// learner sees ring the doorbell.
func (l *Link) PostSend(wr uverbs.SendWR) error {
	if l.Logf != nil {
		l.Logf("%s", SendText(wr))
	}
	return l.QP.PostSend(wr)
}

// PostRecv posts wr on the link's QP, narrating it first (-v).
func (l *Link) PostRecv(wr uverbs.RecvWR) error {
	if l.Logf != nil {
		l.Logf("verbs: post a receive of %d B (wr_id %d): where the peer's next SEND will land", sglLen(wr.SGL), wr.ID)
	}
	return l.QP.PostRecv(wr)
}

func sglLen(sgl []uverbs.SGE) int {
	n := 0
	for _, s := range sgl {
		n += int(s.Length)
	}
	return n
}

// SendText narrates a send work request as it is posted: "verbs: post
// IBV_WR_RDMA_WRITE 64 B → va 0x7f00… rkey 0x857 (signaled, wr_id 3)".
func SendText(wr uverbs.SendWR) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "verbs: post %v %d B", wr.Opcode, sglLen(wr.SGL))
	switch wr.Opcode {
	case uverbs.WRRDMAWrite, uverbs.WRRDMAWriteWithImm, uverbs.WRRDMARead, uverbs.WRAtomicCmpAndSwp, uverbs.WRAtomicFetchAndAdd:
		fmt.Fprintf(&sb, " → va %#x rkey %#x", wr.RemoteAddr, wr.RKey)
	}
	sig := "unsignaled: no completion"
	if wr.Flags&uverbs.SendSignaled != 0 {
		sig = "signaled"
	}
	fmt.Fprintf(&sb, " (%s, wr_id %d)", sig, wr.ID)
	return sb.String()
}

// WCText narrates a completion as it is polled: "verbs: completion
// IBV_WC_RDMA_READ 64 B on QPN 0x12 (wr_id 3): IBV_WC_SUCCESS".
func WCText(wc uverbs.WC) string {
	return fmt.Sprintf("verbs: completion %v %d B on QPN %#x (wr_id %d): %v", wc.Opcode, wc.ByteLen, wc.QPNum, wc.WRID, wc.Status)
}
