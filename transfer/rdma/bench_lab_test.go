package rdma

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/transfer"
)

// Lab benchmarks (one node). rdmalab test has no -bench; run them with
//
//	go test -c -o rdma.test ./transfer/rdma
//	go run ./cmd/rdmalab run -- ./rdma.test -test.run '^$' -test.bench Lab
//
// and compare with ib_write_bw in the same boot: absolute figures under
// emulation mean nothing.

func labPair(b testing.TB, port int, cfg Options) (s, r *Transport) {
	env := labtest.Require(b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := addr(env.Addr, port)
	ln, err := Listen(ctx, a, &cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	got := make(chan transfer.Transport, 1)
	go func() {
		t, err := ln.Accept(ctx)
		if err != nil {
			b.Error(err)
		}
		got <- t
	}()
	s, _, err = dialRetry(ctx, a, cfg, 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	rt := <-got
	if rt == nil {
		b.FailNow()
	}
	b.Cleanup(func() { s.Close(); rt.Close() })
	return s, rt.(*Transport)
}

// BenchmarkLabWriteImm is the transport alone: 1 MiB RDMA_WRITE_WITH_IMM
// into a 16-slot window, one credit message back per 4 chunks (what the
// protocol does, without files or hashing).
func BenchmarkLabWriteImm(b *testing.B) {
	const slots, slotSize = 16, 1 << 20
	s, r := labPair(b, 18630, Options{MaxSlots: slots})
	ctx := context.Background()
	if err := r.PrepareWrites(slots); err != nil {
		b.Fatal(err)
	}
	win, err := r.Register(slots*slotSize, true)
	if err != nil {
		b.Fatal(err)
	}
	src, err := s.Register(slots*slotSize, false)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	n := b.N
	go func() {
		for i := 1; i <= n; i++ {
			a, err := r.Receive(ctx)
			if err != nil || !a.Write {
				done <- err
				return
			}
			if i%4 == 0 {
				if err := r.Send(ctx, []byte{1}); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	b.SetBytes(slotSize)
	b.ResetTimer()
	credited := 0
	for i := 0; i < n; i++ {
		for i-credited >= slots {
			if _, err := s.Receive(ctx); err != nil {
				b.Fatal(err)
			}
			credited += 4
		}
		off := (i % slots) * slotSize
		if err := s.WriteImm(ctx, src, off, slotSize, win.Remote(), uint64(off), uint32(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	s.Drain(ctx)
}

// BenchmarkLabTransfer is the whole protocol: a 16 MiB file read, hashed,
// written, hashed, synced and renamed, over one connection per iteration.
func BenchmarkLabTransfer(b *testing.B) {
	env := labtest.Require(b)
	ctx := context.Background()
	src := b.TempDir()
	const size = 16 << 20
	os.WriteFile(filepath.Join(src, "f"), labContent("bench", size), 0o600)
	items, _, _ := transfer.Plan(filepath.Join(src, "f"))
	a := addr(env.Addr, 18631)
	ln, err := Listen(ctx, a, &Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	b.SetBytes(size)
	for b.Loop() {
		dst := b.TempDir()
		rc := make(chan error, 1)
		go func() {
			_, err := serveOne(ctx, ln, &transfer.Receiver{Dir: dst})
			rc <- err
		}()
		tr, _, err := dialRetry(ctx, a, Options{}, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
		tr.Close()
		if err != nil || !rep.OK(1) {
			b.Fatal(err)
		}
		if err := <-rc; err != nil {
			b.Fatal(err)
		}
	}
}
