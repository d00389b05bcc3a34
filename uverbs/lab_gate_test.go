// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/rdmanl"
)

// resCounts is `rdma resource show` for the lab's device: how many QPs and
// CQs the kernel holds on it.
func resCounts(t *testing.T, dev string) (qps, cqs uint64) {
	t.Helper()
	nl, err := rdmanl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	sums, err := nl.ResSummary()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.DevName == dev {
			return s.Count("qp"), s.Count("cq")
		}
	}
	t.Fatalf("rdma resource show: no device %s", dev)
	return 0, 0
}

// TestLabCloseRacesDataPath is TestCloseRacesDataPath on real rxe rings:
// round after round, a UD QP in RTS (its doorbell writes reach the kernel)
// and its CQ are closed, and every so often the whole Context, while
// goroutines post sends and receives and poll. Nothing may fault, every
// post ends with ErrClosed, no doorbell rings once Close has returned, and
// the kernel keeps no object of a round behind.
func TestLabCloseRacesDataPath(t *testing.T) {
	e := requireLab(t)
	labtest.OneNode(t, "its QPs talk to a QP in this process; it runs to its 90 s cap")
	const rounds = 2000
	deadline := time.Now().Add(90 * time.Second)
	c := openLab(t, e)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	peer := newEndpoint(t, c, pd, e, epOpts{typ: QPTypeUD, size: 4096})
	if err := peer.qp.Connect(Dest{}, 0, nil); err != nil {
		t.Fatal(err)
	}
	buf, err := AllocBuffer(4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })

	qps0, cqs0 := resCounts(t, e.Dev)
	done, raced := 0, 0
	for round := 0; round < rounds && time.Now().Before(deadline) && !t.Failed(); round++ {
		whole := round%100 == 99 // close the Context, not the objects
		ctx, cpd := c, pd
		if whole {
			if ctx, err = Open(e.Dev); err != nil {
				t.Fatal(err)
			}
			if cpd, err = ctx.AllocPD(); err != nil {
				t.Fatal(err)
			}
		}
		mr, err := cpd.RegMR(buf.Bytes(), AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		gid, err := ctx.GIDForIP(1, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		ah, err := cpd.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: gid.GID, SGIDIndex: uint8(gid.Index), HopLimit: 1}})
		if err != nil {
			t.Fatal(err)
		}
		cq, err := ctx.CreateCQ(64, nil)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := cpd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := qp.ModifyToInit(1, 0, udQKey); err != nil {
			t.Fatal(err)
		}
		if err := qp.Connect(Dest{}, uint32(round), nil); err != nil {
			t.Fatal(err)
		}
		sge := []SGE{{Addr: mr.Addr(), Length: 64, LKey: mr.LKey()}}
		var r closeRacers
		loop := func(name string, f func() error) { r.run(t, fmt.Sprintf("round %d: %s", round, name), f) }
		loop("post send", func() error {
			return qp.PostSend(SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: sge, AH: ah, RemoteQPN: peer.qp.Num(), RemoteQKey: udQKey})
		})
		loop("post recv", func() error { return qp.PostRecv(RecvWR{ID: 2, SGL: sge}) })
		wcs := make([]WC, 8)
		loop("poll", func() error {
			cq.Poll(wcs)
			if cq.gone() {
				return ErrClosed
			}
			return nil
		})
		if r.started(6) {
			raced++
		}
		var rung uint64
		if whole {
			if err := ctx.Close(); err != nil {
				t.Fatalf("round %d: close context: %v", round, err)
			}
			rung = qp.Doorbells()
		} else {
			if err := qp.Close(); err != nil {
				t.Fatalf("round %d: close qp: %v", round, err)
			}
			rung = qp.Doorbells()
			for _, o := range []object{ah, cq, mr} {
				if err := o.Close(); err != nil {
					t.Fatalf("round %d: close %T: %v", round, o, err)
				}
			}
		}
		r.wg.Wait()
		if n := qp.Doorbells(); n != rung {
			t.Fatalf("round %d: %d doorbells rung after Close returned", round, n-rung)
		}
		if err := qp.PostSend(SendWR{ID: 1, Opcode: WRSend, SGL: sge, AH: ah, RemoteQPN: 1, RemoteQKey: udQKey}); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: PostSend after Close: %v", round, err)
		}
		done++
	}
	if done < 200 || raced < done/2 {
		t.Fatalf("%d rounds, %d with the data path running at Close: the race was not exercised enough", done, raced)
	}
	if qps, cqs := resCounts(t, e.Dev); qps != qps0 || cqs != cqs0 {
		t.Errorf("the kernel holds %d QPs and %d CQs after the rounds, %d and %d before", qps, cqs, qps0, cqs0)
	}
	t.Logf("%d rounds, %d with the data path running at Close", done, raced)
}
