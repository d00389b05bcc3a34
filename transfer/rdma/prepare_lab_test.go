//go:build linux

package rdma

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/transfer"
)

// TestBufAt: buffer numbers map to their block and offset, whatever the
// blocks' sizes.
func TestBufAt(t *testing.T) {
	const m = transfer.MaxMessageSize
	bs := []msgBufs{{first: 0}, {first: 16}, {first: 20}}
	for _, c := range []struct{ i, block, off int }{
		{0, 0, 0}, {15, 0, 15 * m}, {16, 1, 0}, {19, 1, 3 * m}, {20, 2, 0}, {30, 2, 10 * m},
	} {
		b, off := bufAt(bs, c.i)
		if b != &bs[c.block] || off != c.off {
			t.Errorf("buffer %d: block %d offset %d, want block %d offset %d", c.i, slicesIndex(bs, b), off, c.block, c.off)
		}
	}
}

func slicesIndex(bs []msgBufs, b *msgBufs) int {
	for i := range bs {
		if &bs[i] == b {
			return i
		}
	}
	return -1
}

// TestLabPrepareWrites: a connection holds, until PrepareWrites, only what
// its handshake needs — transfer.ControlDepth receives and their buffers,
// and on the accepting end handshakeSendBufs send buffers — so a peer that
// never authenticates costs a receiver little; PrepareWrites then posts the
// receives a window's writes consume, and messages and writes land in the
// buffers it added as in the first ones.
func TestLabPrepareWrites(t *testing.T) {
	labtest.OneNode(t, "both ends in this process")
	const maxSlots, m = 8, transfer.MaxMessageSize
	s, r := labPair(t, 18661, Options{MaxSlots: maxSlots})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	check := func(when string, tr *Transport, recv, send int) {
		t.Helper()
		gr, gs := tr.bufBytes()
		if gr != recv*m || gs != send*m || tr.posted != recv || tr.nsend != send {
			t.Errorf("%s: %d receives posted with %d bytes of buffers, %d send buffers of %d bytes; want %d receives (%d bytes), %d send buffers (%d bytes)",
				when, tr.posted, gr, tr.nsend, gs, recv, recv*m, send, send*m)
		}
	}
	check("accepted, before PrepareWrites", r, transfer.ControlDepth, handshakeSendBufs)
	check("dialled", s, transfer.ControlDepth, sendBufs)

	if err := r.PrepareWrites(5); err != nil {
		t.Fatal(err)
	}
	check("after PrepareWrites(5)", r, transfer.ControlDepth+5, sendBufs)
	if err := r.PrepareWrites(2); err != nil {
		t.Fatal(err)
	}
	check("after PrepareWrites(2)", r, transfer.ControlDepth+5, sendBufs)
	if err := r.PrepareWrites(100); err != nil {
		t.Fatal(err)
	}
	check("after PrepareWrites(100)", r, transfer.ControlDepth+maxSlots, sendBufs)

	// Rounds of maxSlots writes and ControlDepth messages outstanding at
	// once (what the transport allows now), read back in order: over the
	// rounds every receive, the added ones included, carries a message.
	win, err := r.Register(maxSlots*4096, true)
	if err != nil {
		t.Fatal(err)
	}
	src, err := s.Register(4096, false)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		for i := range maxSlots {
			if err := s.WriteImm(ctx, src, 0, 100+i, win.Remote(), uint64(i)*4096, uint32(round<<8|i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range transfer.ControlDepth {
			if err := s.Send(ctx, fmt.Appendf(nil, "message %d of round %d", i, round)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range maxSlots {
			a, err := r.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !a.Write || a.Imm != uint32(round<<8|i) || a.Len != 100+i {
				t.Fatalf("round %d arrival %d: %+v, want write %#x of %d bytes", round, i, a, round<<8|i, 100+i)
			}
		}
		for i := range transfer.ControlDepth {
			a, err := r.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := fmt.Sprintf("message %d of round %d", i, round); a.Write || string(a.Msg) != want {
				t.Fatalf("round %d message %d: %+v %q, want %q", round, i, a, a.Msg, want)
			}
		}
	}
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
	if err := r.PrepareWrites(maxSlots); !errors.Is(err, transfer.ErrTransportClosed) {
		t.Errorf("PrepareWrites after Close: %v, want ErrTransportClosed", err)
	}
}

// TestLabDataPathAllocs: in steady state a write with immediate posted
// (WriteImm) and taken at the other end (Receive, which posts its receive
// again, among the ones PrepareWrites added) allocates nothing.
func TestLabDataPathAllocs(t *testing.T) {
	labtest.OneNode(t, "both ends in this process")
	const slots = 4
	s, r := labPair(t, 18662, Options{MaxSlots: slots})
	if err := r.PrepareWrites(slots); err != nil {
		t.Fatal(err)
	}
	win, err := r.Register(slots*4096, true)
	if err != nil {
		t.Fatal(err)
	}
	src, err := s.Register(4096, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Receive with a done context only polls: the loop spins on the
	// receive CQ rather than sleep on the completion channel.
	poll, stop := context.WithCancel(ctx)
	stop()
	var i int
	var failed error
	allocs := testing.AllocsPerRun(200, func() {
		if failed != nil {
			return
		}
		if err := s.WriteImm(ctx, src, 0, 100, win.Remote(), uint64(i%slots)*4096, uint32(i)); err != nil {
			failed = err
			return
		}
		for deadline := time.Now().Add(10 * time.Second); ; {
			a, err := r.Receive(poll)
			if err == nil {
				if !a.Write || a.Imm != uint32(i) || a.Len != 100 {
					failed = fmt.Errorf("arrival %d: %+v, want write %#x of 100 bytes", i, a, i)
				}
				break
			}
			if !errors.Is(err, context.Canceled) || time.Now().After(deadline) {
				failed = fmt.Errorf("write %d: %w", i, err)
				return
			}
		}
		i++
	})
	if failed != nil {
		t.Fatal(failed)
	}
	if allocs != 0 {
		t.Errorf("a write posted and received allocates %.1f times, want 0", allocs)
	}
}
