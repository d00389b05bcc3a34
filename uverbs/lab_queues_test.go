// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
)

func TestLabUD(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	o := epOpts{typ: QPTypeUD, access: AccessLocalWrite}
	a := newEndpoint(t, c, pd, e, o)
	b := newEndpoint(t, c, pd, e, o)
	for _, ep := range []*endpoint{a, b} {
		if err := ep.qp.Connect(Dest{}, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	ah, err := pd.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: b.gid.GID, SGIDIndex: uint8(a.gid.Index), HopLimit: 64}})
	if err != nil {
		t.Fatal(err)
	}
	// A UD receive buffer starts with room for the 40-byte GRH.
	if err := b.qp.PostRecv(RecvWR{ID: 5, SGL: []SGE{b.mr.SGE(0, 40+1024)}}); err != nil {
		t.Fatal(err)
	}
	fill(a.buf[:700], 17)
	if err := a.qp.PostSend(SendWR{ID: 6, Opcode: WRSendWithImm, Flags: SendSignaled, Imm: 99, SGL: []SGE{a.mr.SGE(0, 700)},
		AH: ah, RemoteQPN: b.qp.Num(), RemoteQKey: udQKey}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1)
	wc := b.wait(t, 1)[0]
	t.Logf("UD receive: %+v", wc)
	if wc.WRID != 5 || wc.ByteLen != 740 || wc.SrcQP != a.qp.Num() || wc.Flags&WCGRH == 0 || wc.Imm != 99 {
		t.Errorf("UD completion %+v", wc)
	}
	if !bytes.Equal(b.buf[40:740], a.buf[:700]) {
		t.Error("UD payload differs")
	}
	// The GRH carries the sender's GID as the source address.
	if !bytes.Equal(b.buf[8:24], a.gid.GID[:]) && !bytes.Equal(b.buf[20+12:20+16], a.gid.GID[12:]) {
		t.Logf("GRH bytes % x", b.buf[:40])
	}
	// A wrong qkey is dropped silently: no receive completes.
	if err := b.qp.PostRecv(RecvWR{ID: 7, SGL: []SGE{b.mr.SGE(0, 1064)}}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(SendWR{ID: 8, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 10)},
		AH: ah, RemoteQPN: b.qp.Num(), RemoteQKey: udQKey + 1}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1)
	time.Sleep(200 * time.Millisecond)
	if n := b.cq.Poll(make([]WC, 1)); n != 0 {
		t.Error("a datagram with the wrong qkey was received")
	}
	if err := ah.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ah.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestLabSRQ(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd.CreateSRQ(SRQOptions{MaxWR: 32, MaxSGE: 2})
	if err != nil {
		t.Fatal(err)
	}
	maxWR, maxSGE, limit, err := srq.Query()
	t.Logf("srq: num %#x max_wr %d max_sge %d limit %d", srq.Num(), maxWR, maxSGE, limit)
	if err != nil || maxWR < 32 || maxSGE < 2 || limit != 0 {
		t.Fatalf("query srq: %d %d %d %v", maxWR, maxSGE, limit, err)
	}
	// Two receivers share the SRQ; one sender per receiver.
	r1 := newEndpoint(t, c, pd, e, epOpts{srq: srq})
	r2 := newEndpoint(t, c, pd, e, epOpts{srq: srq})
	s1 := newEndpoint(t, c, pd, e, epOpts{})
	s2 := newEndpoint(t, c, pd, e, epOpts{})
	for _, p := range [][2]*endpoint{{s1, r1}, {s2, r2}} {
		if err := p[0].qp.Connect(p[1].dest(1), 2, p[0].connectOpts()); err != nil {
			t.Fatal(err)
		}
		if err := p[1].qp.Connect(p[0].dest(2), 1, p[1].connectOpts()); err != nil {
			t.Fatal(err)
		}
	}
	if err := r1.qp.PostRecv(RecvWR{}); err == nil {
		t.Error("PostRecv on a QP with an SRQ succeeded")
	}
	buf, err := AllocBuffer(8 * 256)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	mr, err := pd.RegMR(buf.Bytes(), AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		if err := srq.PostRecv(RecvWR{ID: uint64(100 + i), SGL: []SGE{mr.SGE(i*256, 128), mr.SGE(i*256+128, 128)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := srq.SetLimit(5); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		fill(s1.buf[:200], byte(i))
		fill(s2.buf[:200], byte(i+50))
		if err := s1.qp.PostSend(SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{s1.mr.SGE(0, 200)}}); err != nil {
			t.Fatal(err)
		}
		if err := s2.qp.PostSend(SendWR{ID: 2, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{s2.mr.SGE(0, 200)}}); err != nil {
			t.Fatal(err)
		}
		s1.wait(t, 1)
		s2.wait(t, 1)
		w1, w2 := r1.wait(t, 1)[0], r2.wait(t, 1)[0]
		for _, w := range []struct {
			wc  WC
			src []byte
		}{{w1, s1.buf[:200]}, {w2, s2.buf[:200]}} {
			off := int(w.wc.WRID-100) * 256
			if w.wc.ByteLen != 200 || !bytes.Equal(buf.Bytes()[off:off+200], w.src) {
				t.Errorf("round %d: completion %+v: data differs", i, w.wc)
			}
		}
		if w1.QPNum != r1.qp.Num() || w2.QPNum != r2.qp.Num() || w1.WRID == w2.WRID {
			t.Errorf("round %d: completions %+v %+v", i, w1, w2)
		}
	}
	// 4 of 8 receives left, below the limit of 5: the SRQ limit event fired.
	ev, err := c.WaitAsyncEvent(labtest.Context(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("async event: %v", ev)
	if ev.Type != EventSRQLimitReached || ev.SRQ != srq {
		t.Errorf("event %v, want IBV_EVENT_SRQ_LIMIT_REACHED on the SRQ", ev)
	}
	if err := srq.Close(); err == nil {
		t.Error("SRQ destroyed while QPs use it")
	}
}

func TestLabErrorCompletions(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)

	t.Run("wrong rkey", func(t *testing.T) {
		a, b := rcPair(t, c, e, epOpts{})
		err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 64)},
			RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey() + 1})
		if err != nil {
			t.Fatal(err)
		}
		wc := a.waitAny(t, 1)[0]
		t.Logf("%v", wc.Err())
		if wc.Status != WCRemAccessErr {
			t.Errorf("status %v, want IBV_WC_REM_ACCESS_ERR", wc.Status)
		}
		// The QP is now in error: later requests are flushed.
		if err := a.qp.PostSend(SendWR{ID: 2, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 8)}}); err != nil {
			t.Fatal(err)
		}
		if wc := a.waitAny(t, 1)[0]; !wc.IsFlush() || wc.WRID != 2 {
			t.Errorf("after the error: %+v, want a flush of request 2", wc)
		}
		if attr, err := a.qp.Query(); err != nil || attr.State != QPSErr {
			t.Errorf("query after the error: %v, %v", attr.State, err)
		}
	})

	t.Run("RNR with rnr_retry 0", func(t *testing.T) {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		a := newEndpoint(t, c, pd, e, epOpts{})
		b := newEndpoint(t, c, pd, e, epOpts{})
		oa := a.connectOpts()
		oa.RNRRetry = NoRetry
		if err := a.qp.Connect(b.dest(5), 6, oa); err != nil {
			t.Fatal(err)
		}
		if err := b.qp.Connect(a.dest(6), 5, b.connectOpts()); err != nil {
			t.Fatal(err)
		}
		if err := a.qp.PostSend(SendWR{ID: 3, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 8)}}); err != nil {
			t.Fatal(err)
		}
		wc := a.waitAny(t, 1)[0]
		t.Logf("%v", wc.Err())
		if wc.Status != WCRNRRetryExcErr {
			t.Errorf("status %v, want IBV_WC_RNR_RETRY_EXC_ERR", wc.Status)
		}
	})

	t.Run("flush on ERR", func(t *testing.T) {
		a, b := rcPair(t, c, e, epOpts{})
		for i := 0; i < 3; i++ {
			if err := b.qp.PostRecv(RecvWR{ID: uint64(10 + i), SGL: []SGE{b.mr.SGE(0, 64)}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.qp.ModifyToErr(); err != nil {
			t.Fatal(err)
		}
		wcs := b.waitAny(t, 3)
		for i, wc := range wcs {
			// Only wr_id, status, qp_num and vendor_err are defined in an
			// error completion (6.1 leaves opcode 0 for flushed receives).
			if !wc.IsFlush() || wc.WRID != uint64(10+i) || wc.QPNum != b.qp.Num() {
				t.Errorf("flushed receive %d: %+v", i, wc)
			}
		}
		// Sends posted to a QP in ERR complete as flushes, signaled or not.
		if err := b.qp.PostSend(SendWR{ID: 20, Opcode: WRSend, SGL: []SGE{b.mr.SGE(0, 8)}},
			SendWR{ID: 21, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{b.mr.SGE(0, 8)}}); err != nil {
			t.Fatal(err)
		}
		wcs = b.waitAny(t, 2)
		if !wcs[0].IsFlush() || !wcs[1].IsFlush() || wcs[0].WRID != 20 || wcs[1].WRID != 21 {
			t.Errorf("flushed sends: %+v", wcs)
		}
		_ = a
	})

	// Whatever async events the errors raised, they decode to known QPs.
	for {
		ev, err := c.WaitAsyncEvent(labtest.Context(t, 300*time.Millisecond))
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("async event: %v", ev)
		if ev.QP == nil && ev.Type.element() == "qp" {
			t.Errorf("event %v names no known QP", ev)
		}
	}
}

func TestLabCompChannel(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	ch, err := c.CreateCompChannel()
	if err != nil {
		t.Fatal(err)
	}
	a, b := rcPair(t, c, e, epOpts{channel: ch})
	send := func(id uint64) {
		t.Helper()
		if err := b.qp.PostRecv(RecvWR{ID: id, SGL: []SGE{b.mr.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
		if err := a.qp.PostSend(SendWR{ID: id, Opcode: WRSend, SGL: []SGE{a.mr.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
	}
	// Not armed: the completion arrives but no event.
	send(1)
	b.wait(t, 1)
	if cq, err := ch.Wait(labtest.Context(t, 300*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait without arming: %v, %v", cq, err)
	}
	// Armed: a goroutine blocked in Wait wakes up with b's CQ.
	if err := b.cq.Arm(false); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		cq, err := ch.Wait(labtest.Context(t, 20*time.Second))
		if err == nil && cq != b.cq {
			err = errors.New("event for the wrong CQ")
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	send(2)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1)[0]; wc.WRID != 2 {
		t.Errorf("completion after the event: %+v", wc)
	}
	// One-shot: no second event without re-arming.
	send(3)
	b.wait(t, 1)
	if _, err := ch.Wait(labtest.Context(t, 200*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second event without re-arming: %v", err)
	}
	// A blocked Wait is cancellable.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	if _, err := ch.Wait(ctx); !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("cancelled wait: %v after %v", err, time.Since(start))
	}
}

func TestLabQueryResize(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	a, b := rcPair(t, c, e, epOpts{})
	attr, err := a.qp.Query()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("qp %#x: %v mtu %v dest %#x sq_psn %d rq_psn %d cap %+v", a.qp.Num(), attr.State, attr.PathMTU, attr.DestQPN, attr.SQPSN, attr.RQPSN, attr.Cap)
	if attr.State != QPSRTS || attr.DestQPN != b.qp.Num() || attr.SQPSN != 100 || attr.RQPSN != 200 ||
		attr.PathMTU != MTU1024 || attr.RetryCnt != 7 || attr.Cap.MaxSendWR < 64 || !attr.AH.IsGlobal || attr.AH.GRH.DGID != b.gid.GID {
		t.Errorf("query: %+v", attr)
	}
	// Completions survive a CQ resize.
	for i := 0; i < 5; i++ {
		if err := a.qp.PostSend(SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 16)},
			RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	old := a.cq.CQE()
	if err := a.cq.Resize(1000); err != nil {
		t.Fatal(err)
	}
	t.Logf("cq resized from %d to %d entries", old, a.cq.CQE())
	if a.cq.CQE() < 1000 {
		t.Errorf("resized CQ has %d entries", a.cq.CQE())
	}
	wcs := a.wait(t, 5)
	for i, wc := range wcs {
		if wc.WRID != uint64(i) {
			t.Errorf("completion %d after resize: %+v", i, wc)
		}
	}
}

func TestLabNewOpcodes(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	if c.capsEx&abi.IB_UVERBS_DEVICE_ATOMIC_WRITE == 0 {
		a, b := rcPair(t, c, e, epOpts{})
		err := a.qp.PostSend(SendWR{Opcode: WRAtomicWrite, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()})
		if !errors.Is(err, ErrNotSupported) {
			t.Errorf("ATOMIC_WRITE on a kernel without it: %v", err)
		}
		pd, _ := c.AllocPD()
		if _, err := pd.RegMR(make([]byte, 64), AccessLocalWrite|AccessFlushGlobal); !errors.Is(err, ErrNotSupported) {
			t.Errorf("MR with FLUSH access on a kernel without it: %v", err)
		}
		t.Skipf("kernel lacks ATOMIC_WRITE/FLUSH (caps %#x); checked ErrNotSupported", c.capsEx)
	}
	a, b := rcPair(t, c, e, epOpts{access: AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic | AccessFlushGlobal})
	if err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRAtomicWrite, Flags: SendSignaled, RemoteAddr: b.mr.Addr() + 128, RKey: b.mr.RKey(),
		CompareAdd: 0x0102030405060708}); err != nil {
		t.Fatal(err)
	}
	wc := a.waitAny(t, 1)[0]
	if wc.Err() != nil || wc.Opcode != WCAtomicWrite {
		t.Errorf("atomic write completion: %+v %v", wc, wc.Err())
	}
	if got := binary.NativeEndian.Uint64(b.buf[128:]); got != 0x0102030405060708 {
		t.Errorf("atomic write landed %#x", got)
	}
	if err := a.qp.PostSend(SendWR{ID: 2, Opcode: WRFlush, Flags: SendSignaled, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey(),
		FlushLength: 4096, FlushType: abi.IB_FLUSH_GLOBAL, FlushLevel: abi.IB_FLUSH_RANGE}); err != nil {
		t.Fatal(err)
	}
	wc = a.waitAny(t, 1)[0]
	if wc.Err() != nil || wc.Opcode != WCFlush {
		t.Errorf("flush completion: %+v %v", wc, wc.Err())
	}
}

func TestLabDrain(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	a, b := rcPair(t, c, e, epOpts{})
	for i := 0; i < 5; i++ {
		if err := b.qp.PostRecv(RecvWR{ID: uint64(100 + i), SGL: []SGE{b.mr.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
	}
	// One receive is used; four are outstanding when b is drained.
	if err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1)
	wcs, err := b.qp.Drain(labtest.Context(t, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	flushes := 0
	for _, wc := range wcs {
		if wc.IsFlush() {
			flushes++
		} else if wc.Err() != nil || wc.WRID != 100 {
			t.Errorf("unexpected completion %+v", wc)
		}
	}
	if len(wcs) != 5 || flushes != 4 {
		t.Errorf("drain returned %d completions, %d flushes; want 5 and 4: %+v", len(wcs), flushes, wcs)
	}
}

// TestLabSendsInFlight: SendsInFlight counts the sends the device has not
// completed, unsignalled ones too, and falls to 0 once they complete (the
// kernel frees the slots before it posts the signalled one's completion)
// or are flushed; a closed QP reports 0.
func TestLabSendsInFlight(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	write := func(from, to *endpoint, id uint64, f SendFlags) SendWR {
		return SendWR{ID: id, Opcode: WRRDMAWrite, Flags: f, SGL: []SGE{from.mr.SGE(0, 4096)}, RemoteAddr: to.mr.Addr(), RKey: to.mr.RKey()}
	}

	a, b := rcPair(t, c, e, epOpts{})
	if n := a.qp.SendsInFlight(); n != 0 {
		t.Fatalf("a new QP has %d sends in flight", n)
	}
	if err := a.qp.PostSend(write(a, b, 1, 0), write(a, b, 2, 0), write(a, b, 3, 0), write(a, b, 4, SendSignaled)); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1); wc[0].WRID != 4 {
		t.Fatalf("completion %+v, want only the signalled send's (4)", wc[0])
	}
	if n := a.qp.SendsInFlight(); n != 0 {
		t.Errorf("%d sends in flight after the last one completed, want 0", n)
	}

	// The peer's QP fails: nothing acknowledges a's writes, which stay in
	// flight until a's QP fails too and flushes them, with a completion
	// each.
	a, b = rcPair(t, c, e, epOpts{})
	if err := b.qp.ModifyToErr(); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(write(a, b, 1, 0), write(a, b, 2, 0), write(a, b, 3, 0)); err != nil {
		t.Fatal(err)
	}
	if n := a.qp.SendsInFlight(); n != 3 {
		t.Errorf("%d sends in flight right after posting 3 to a failed peer, want 3", n)
	}
	if err := a.qp.ModifyToErr(); err != nil {
		t.Fatal(err)
	}
	wcs := a.waitAny(t, 3)
	for _, wc := range wcs {
		if wc.Err() == nil {
			t.Errorf("completion %+v succeeded: the peer's QP is in the error state", wc)
		}
	}
	if n := a.qp.SendsInFlight(); n != 0 {
		t.Errorf("%d sends in flight after all three failed, want 0", n)
	}
	if err := a.qp.Close(); err != nil {
		t.Fatal(err)
	}
	if n := a.qp.SendsInFlight(); n != 0 {
		t.Errorf("a closed QP reports %d sends in flight", n)
	}
}
