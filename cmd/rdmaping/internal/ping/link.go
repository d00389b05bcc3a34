// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// Link is a connected QP and what the protocols need around it, however it
// was connected (rdma_cm or an out-of-band TCP exchange).
type Link struct {
	QP      *uverbs.QP
	PD      *uverbs.PD
	SendCQ  *uverbs.CQ
	RecvCQ  *uverbs.CQ
	Channel *uverbs.CompChannel // nil: poll
	// Done is closed when the connection ends (the peer disconnected);
	// Err says why. Nil for links without a CM.
	Done <-chan struct{}
	Err  func() error
	// RegMR registers memory and keeps it for the link's Close.
	RegMR func(buf []byte, access uverbs.AccessFlags) (*uverbs.MR, error)
	// Logf narrates steps (-v); Debugf prints rping's debug lines (-d).
	Logf, Debugf func(format string, args ...any)

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

// Next returns the next work completion of the link's CQs. It waits on the
// completion channel (arm, poll again, sleep on the netpoller) or, without
// one, polls. A failed completion is returned with its error; a flushed
// one after the peer disconnected gives ErrDisconnected.
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
		if l.poll() > 0 {
			continue
		}
		if err := ctx.Err(); err != nil {
			return uverbs.WC{}, err
		}
		if l.Channel == nil {
			select {
			case <-l.Done:
				if l.poll() == 0 {
					return uverbs.WC{}, fmt.Errorf("%w: %v", ErrDisconnected, l.Err())
				}
			case <-time.After(50 * time.Microsecond):
			}
			continue
		}
		if err := l.arm(); err != nil {
			return uverbs.WC{}, err
		}
		if l.poll() > 0 {
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		if l.Done != nil {
			stop := make(chan struct{})
			go func() {
				select {
				case <-l.Done:
					cancel()
				case <-stop:
				}
			}()
			_, err := l.Channel.Wait(wctx)
			close(stop)
			cancel()
			if err != nil {
				if l.ended() && ctx.Err() == nil {
					if l.poll() > 0 {
						continue
					}
					return uverbs.WC{}, fmt.Errorf("%w: %v", ErrDisconnected, l.Err())
				}
				return uverbs.WC{}, err
			}
			continue
		}
		_, err := l.Channel.Wait(wctx)
		cancel()
		if err != nil {
			return uverbs.WC{}, err
		}
	}
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

func (l *Link) poll() int {
	n := l.SendCQ.Poll(l.buf[:])
	l.pending = append(l.pending, l.buf[:n]...)
	if l.RecvCQ != l.SendCQ {
		m := l.RecvCQ.Poll(l.buf[:])
		l.pending = append(l.pending, l.buf[:m]...)
		n += m
	}
	return n
}

func (l *Link) arm() error {
	if err := l.SendCQ.Arm(false); err != nil {
		return err
	}
	if l.RecvCQ != l.SendCQ {
		return l.RecvCQ.Arm(false)
	}
	return nil
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
