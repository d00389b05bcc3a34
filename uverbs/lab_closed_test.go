// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// sameHandle fails the test when the kernel did not give the new object the
// closed one's handle: the checks after it would then prove nothing. uverbs
// allocates handles lowest-free per file (xa_alloc), so it does.
func sameHandle(t *testing.T, what string, closed, reused uint32) {
	t.Helper()
	if closed != reused {
		t.Fatalf("%s: the new object got handle %d, not the closed one's %d: handle reuse is what this test is about", what, reused, closed)
	}
	t.Logf("%s: handle %d reused", what, reused)
}

// wantClosed runs each call and checks it fails with ErrClosed.
func wantClosed(t *testing.T, calls []closedCall) {
	t.Helper()
	for _, cl := range calls {
		if err := cl.call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed object: %v, want ErrClosed", cl.name, err)
		}
	}
}

// qpCalls are the QP methods that reach the kernel or the rings, with
// arguments that would visibly change any QP they reached: access flags,
// the path to peer, and the state.
func qpCalls(t *testing.T, qp *QP, peer Dest, sgid uint8, sge SGE) []closedCall {
	opts := ConnectOptions{SGIDIndex: int(sgid)}
	return []closedCall{
		{"QP.Query", func() error { _, err := qp.Query(); return err }},
		{"QP.ModifyToInit", func() error { return qp.ModifyToInit(1, AccessLocalWrite|AccessRemoteWrite|AccessRemoteAtomic, 0) }},
		{"QP.Modify", func() error {
			return qp.Modify(&QPAttr{AccessFlags: AccessLocalWrite | AccessRemoteRead | AccessRemoteWrite}, QPAttrAccessFlags)
		}},
		{"QP.Connect", func() error { return qp.Connect(peer, 7, &opts) }},
		{"QP.ModifyToErr", qp.ModifyToErr},
		{"QP.ModifyToReset", qp.ModifyToReset},
		{"QP.Drain", func() error { _, err := qp.Drain(labtest.Context(t, 5*time.Second)); return err }},
		{"QP.PostSend", func() error { return qp.PostSend(SendWR{Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{sge}}) }},
		{"QP.PostRecv", func() error { return qp.PostRecv(RecvWR{SGL: []SGE{sge}}) }},
	}
}

// TestLabClosedHandleReuse closes an object of each kind, lets the kernel give
// its handle to a new object, calls every method of the closed one and checks
// that each fails with ErrClosed and that the new object did not change.
func TestLabClosedHandleReuse(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	gid, err := c.GIDForIP(1, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	rcCap := QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}

	t.Run("QP", func(t *testing.T) {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(64, nil)
		if err != nil {
			t.Fatal(err)
		}
		mr, err := pd.RegMR(make([]byte, 4096), AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		mk := func() *QP {
			t.Helper()
			qp, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap})
			if err != nil {
				t.Fatal(err)
			}
			return qp
		}
		qp1 := mk()
		if err := qp1.ModifyToInit(1, AccessLocalWrite, 0); err != nil {
			t.Fatal(err)
		}
		qp2 := mk()
		if err := qp2.ModifyToInit(1, AccessLocalWrite, 0); err != nil {
			t.Fatal(err)
		}
		closed := qp1.handle
		if err := qp1.Close(); err != nil {
			t.Fatal(err)
		}
		qp3 := mk()
		sameHandle(t, "QP", closed, qp3.handle)
		if err := qp3.ModifyToInit(1, AccessLocalWrite|AccessRemoteRead, 0); err != nil {
			t.Fatal(err)
		}
		before, err := qp3.Query()
		if err != nil {
			t.Fatal(err)
		}
		wantClosed(t, qpCalls(t, qp1, Dest{QPN: qp2.Num(), PSN: 5, GID: gid.GID}, uint8(gid.Index), mr.SGE(0, 64)))
		if qp1.Doorbells() != 0 {
			t.Errorf("closed QP rang %d doorbells", qp1.Doorbells())
		}
		after, err := qp3.Query()
		if err != nil {
			t.Fatal(err)
		}
		if after != before || after.State != QPSInit || after.AccessFlags != AccessLocalWrite|AccessRemoteRead {
			t.Errorf("the QP that reused the handle changed:\nbefore %+v\nafter  %+v", before, after)
		}
		if err := qp1.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})

	t.Run("CQ", func(t *testing.T) {
		ch, err := c.CreateCompChannel()
		if err != nil {
			t.Fatal(err)
		}
		cqA, err := c.CreateCQ(64, nil)
		if err != nil {
			t.Fatal(err)
		}
		cq1, err := c.CreateCQ(64, nil)
		if err != nil {
			t.Fatal(err)
		}
		closed := cq1.handle
		if err := cq1.Close(); err != nil {
			t.Fatal(err)
		}
		cqB, err := c.CreateCQ(64, &CQOptions{Channel: ch})
		if err != nil {
			t.Fatal(err)
		}
		sameHandle(t, "CQ", closed, cqB.handle)
		size := cqB.CQE()
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		a := newEndpoint(t, c, pd, e, epOpts{cq: cqA})
		b := newEndpoint(t, c, pd, e, epOpts{cq: cqB})
		if err := a.qp.Connect(b.dest(2), 1, a.connectOpts()); err != nil {
			t.Fatal(err)
		}
		if err := b.qp.Connect(a.dest(1), 2, b.connectOpts()); err != nil {
			t.Fatal(err)
		}
		wantClosed(t, []closedCall{
			{"CQ.Arm", func() error { return cq1.Arm(false) }},
			{"CQ.Resize", func() error { return cq1.Resize(1000) }},
			{"CQ.PollN", func() error { _, err := cq1.PollN(labtest.Context(t, 5*time.Second), make([]WC, 1), 1); return err }},
			{"CreateQP on the closed CQ", func() error {
				_, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq1, RecvCQ: cq1, Cap: rcCap})
				return err
			}},
		})
		send := func(id uint64) {
			t.Helper()
			if err := b.qp.PostRecv(RecvWR{ID: id, SGL: []SGE{b.mr.SGE(0, 64)}}); err != nil {
				t.Fatal(err)
			}
			if err := a.qp.PostSend(SendWR{ID: id, Opcode: WRSend, SGL: []SGE{a.mr.SGE(0, 64)}}); err != nil {
				t.Fatal(err)
			}
			b.wait(t, 1)
		}
		// Had cq1.Arm reached the kernel, it would have armed cqB.
		send(1)
		if cq, err := ch.Wait(labtest.Context(t, 300*time.Millisecond)); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("completion event on the CQ that reused the handle: %v, %v", cq, err)
		}
		if cqB.CQE() != size {
			t.Errorf("the CQ that reused the handle has %d entries, had %d", cqB.CQE(), size)
		}
		// The control: armed for real, the same traffic raises the event.
		if err := cqB.Arm(false); err != nil {
			t.Fatal(err)
		}
		send(2)
		if cq, err := ch.Wait(labtest.Context(t, 20*time.Second)); err != nil || cq != cqB {
			t.Errorf("armed CQ: event %v, %v", cq, err)
		}
		if n := cq1.Poll(make([]WC, 4)); n != 0 {
			t.Errorf("closed CQ polled %d completions", n)
		}
	})

	t.Run("PD", func(t *testing.T) {
		cq, err := c.CreateCQ(16, nil)
		if err != nil {
			t.Fatal(err)
		}
		pd1, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.AllocPD(); err != nil {
			t.Fatal(err)
		}
		closed := pd1.handle
		if err := pd1.Close(); err != nil {
			t.Fatal(err)
		}
		pd3, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		sameHandle(t, "PD", closed, pd3.handle)
		wantClosed(t, []closedCall{
			{"PD.RegMR", func() error { _, err := pd1.RegMR(make([]byte, 4096), AccessLocalWrite); return err }},
			{"PD.CreateQP", func() error {
				_, err := pd1.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, Cap: rcCap})
				return err
			}},
			{"PD.CreateSRQ", func() error { _, err := pd1.CreateSRQ(SRQOptions{MaxWR: 4, MaxSGE: 1}); return err }},
			{"PD.CreateAH", func() error {
				_, err := pd1.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: gid.GID, SGIDIndex: uint8(gid.Index), HopLimit: 1}})
				return err
			}},
		})
		// Anything created on pd3 through the stale handle would make this EBUSY.
		if err := pd3.Close(); err != nil {
			t.Errorf("the PD that reused the handle: %v", err)
		}
		if err := pd1.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})

	t.Run("SRQ", func(t *testing.T) {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(16, nil)
		if err != nil {
			t.Fatal(err)
		}
		mr, err := pd.RegMR(make([]byte, 4096), AccessLocalWrite)
		if err != nil {
			t.Fatal(err)
		}
		srq1, err := pd.CreateSRQ(SRQOptions{MaxWR: 16, MaxSGE: 1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pd.CreateSRQ(SRQOptions{MaxWR: 16, MaxSGE: 1}); err != nil {
			t.Fatal(err)
		}
		closed := srq1.handle
		if err := srq1.Close(); err != nil {
			t.Fatal(err)
		}
		srq3, err := pd.CreateSRQ(SRQOptions{MaxWR: 32, MaxSGE: 2})
		if err != nil {
			t.Fatal(err)
		}
		sameHandle(t, "SRQ", closed, srq3.handle)
		w0, s0, l0, err := srq3.Query()
		if err != nil {
			t.Fatal(err)
		}
		wantClosed(t, []closedCall{
			{"SRQ.Query", func() error { _, _, _, err := srq1.Query(); return err }},
			{"SRQ.SetLimit", func() error { return srq1.SetLimit(4) }},
			{"SRQ.Resize", func() error { return srq1.Resize(256) }},
			{"SRQ.PostRecv", func() error { return srq1.PostRecv(RecvWR{SGL: []SGE{mr.SGE(0, 64)}}) }},
			{"CreateQP on the closed SRQ", func() error {
				_, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, SRQ: srq1, Cap: rcCap})
				return err
			}},
		})
		w1, s1, l1, err := srq3.Query()
		if err != nil {
			t.Fatal(err)
		}
		if w1 != w0 || s1 != s0 || l1 != l0 || l1 != 0 {
			t.Errorf("the SRQ that reused the handle changed: max_wr %d→%d, max_sge %d→%d, limit %d→%d", w0, w1, s0, s1, l0, l1)
		}
	})

	t.Run("AH", func(t *testing.T) {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		ud := newEndpoint(t, c, pd, e, epOpts{typ: QPTypeUD, size: 4096})
		if err := ud.qp.Connect(Dest{}, 0, nil); err != nil {
			t.Fatal(err)
		}
		attr := AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: gid.GID, SGIDIndex: uint8(gid.Index), HopLimit: 1}}
		ah1, err := pd.CreateAH(attr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pd.CreateAH(attr); err != nil {
			t.Fatal(err)
		}
		closed := ah1.handle
		if err := ah1.Close(); err != nil {
			t.Fatal(err)
		}
		ah3, err := pd.CreateAH(attr)
		if err != nil {
			t.Fatal(err)
		}
		sameHandle(t, "AH", closed, ah3.handle)
		wr := SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{ud.mr.SGE(0, 16)}, AH: ah1, RemoteQPN: ud.qp.Num(), RemoteQKey: udQKey}
		wantClosed(t, []closedCall{{"PostSend to the closed AH", func() error { return ud.qp.PostSend(wr) }}})
		if ud.qp.Doorbells() != 0 {
			t.Errorf("a send to a closed AH rang the doorbell")
		}
		// The control: the live AH works.
		wr.AH = ah3
		if err := ud.qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
		if wc := ud.wait(t, 1)[0]; wc.WRID != 1 {
			t.Errorf("completion %+v", wc)
		}
		if err := ah1.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})

	t.Run("CompChannel", func(t *testing.T) {
		ch1, err := c.CreateCompChannel()
		if err != nil {
			t.Fatal(err)
		}
		fd := ch1.fd
		if err := ch1.Close(); err != nil {
			t.Fatal(err)
		}
		ch3, err := c.CreateCompChannel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("channel fd %d closed, the new channel has fd %d", fd, ch3.fd)
		wantClosed(t, []closedCall{
			{"CreateCQ with the closed channel", func() error { _, err := c.CreateCQ(8, &CQOptions{Channel: ch1}); return err }},
			{"CompChannel.Wait", func() error { _, err := ch1.Wait(labtest.Context(t, 5*time.Second)); return err }},
		})
		if err := ch3.Close(); err != nil { // EBUSY-free: no CQ got attached to it
			t.Error(err)
		}
	})
}

// TestLabContextCloseHandleReuse closes a Context with one object of each
// kind open, opens another (which gets the same fd number and the same
// handles), and checks that the first one's objects all fail with ErrClosed
// without touching the second one's.
func TestLabContextCloseHandleReuse(t *testing.T) {
	e := requireLab(t)
	type objs struct {
		c   *Context
		pd  *PD
		cq  *CQ
		ch  *CompChannel
		mr  *MR
		qp  *QP
		srq *SRQ
		ah  *AH
	}
	gidIndex := uint8(0)
	open := func() objs {
		t.Helper()
		var o objs
		var err error
		if o.c, err = Open(e.Dev); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.c.Close() })
		g, err := o.c.GIDForIP(1, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		gidIndex = uint8(g.Index)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		o.pd, err = o.c.AllocPD()
		must(err)
		o.ch, err = o.c.CreateCompChannel()
		must(err)
		o.cq, err = o.c.CreateCQ(16, &CQOptions{Channel: o.ch})
		must(err)
		o.mr, err = o.pd.RegMR(make([]byte, 4096), AccessLocalWrite)
		must(err)
		o.qp, err = o.pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: o.cq, RecvCQ: o.cq, Cap: QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		must(err)
		must(o.qp.ModifyToInit(1, AccessLocalWrite, 0))
		o.srq, err = o.pd.CreateSRQ(SRQOptions{MaxWR: 8, MaxSGE: 1})
		must(err)
		o.ah, err = o.pd.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: g.GID, SGIDIndex: uint8(g.Index), HopLimit: 1}})
		must(err)
		return o
	}
	old := open()
	if err := old.c.Close(); err != nil {
		t.Fatal(err)
	}
	cur := open()
	t.Logf("closed context fd %d qp handle %d; new context fd %d qp handle %d", old.qp.fd, old.qp.handle, cur.qp.fd, cur.qp.handle)
	before, err := cur.qp.Query()
	if err != nil {
		t.Fatal(err)
	}
	c := old.c
	calls := qpCalls(t, old.qp, Dest{QPN: cur.qp.Num(), PSN: 5, GID: old.ah.Attr().GRH.DGID}, gidIndex, old.mr.SGE(0, 64))
	calls = append(calls, []closedCall{
		{"CQ.Arm", func() error { return old.cq.Arm(false) }},
		{"CQ.Resize", func() error { return old.cq.Resize(64) }},
		{"CQ.PollN", func() error { _, err := old.cq.PollN(labtest.Context(t, 5*time.Second), make([]WC, 1), 1); return err }},
		{"SRQ.Query", func() error { _, _, _, err := old.srq.Query(); return err }},
		{"SRQ.SetLimit", func() error { return old.srq.SetLimit(2) }},
		{"SRQ.Resize", func() error { return old.srq.Resize(16) }},
		{"SRQ.PostRecv", func() error { return old.srq.PostRecv(RecvWR{SGL: []SGE{old.mr.SGE(0, 64)}}) }},
		{"PD.RegMR", func() error { _, err := old.pd.RegMR(make([]byte, 64), AccessLocalWrite); return err }},
		{"PD.CreateQP", func() error {
			_, err := old.pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: old.cq, RecvCQ: old.cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
			return err
		}},
		{"PD.CreateSRQ", func() error { _, err := old.pd.CreateSRQ(SRQOptions{MaxWR: 4, MaxSGE: 1}); return err }},
		{"PD.CreateAH", func() error { _, err := old.pd.CreateAH(old.ah.Attr()); return err }},
		{"CompChannel.Wait", func() error { _, err := old.ch.Wait(labtest.Context(t, 5*time.Second)); return err }},
		{"Context.AllocPD", func() error { _, err := c.AllocPD(); return err }},
		{"Context.CreateCQ", func() error { _, err := c.CreateCQ(4, nil); return err }},
		{"Context.CreateCompChannel", func() error { _, err := c.CreateCompChannel(); return err }},
		{"Context.QueryDevice", func() error { _, err := c.QueryDevice(); return err }},
		{"Context.QueryDeviceEx", func() error { _, err := c.QueryDeviceEx(); return err }},
		{"Context.QueryPort", func() error { _, err := c.QueryPort(1); return err }},
		{"Context.GIDTable", func() error { _, err := c.GIDTable(1); return err }},
		{"Context.GIDForIP", func() error { _, err := c.GIDForIP(1, e.addr); return err }},
		{"Context.WaitAsyncEvent", func() error { _, err := c.WaitAsyncEvent(labtest.Context(t, 5*time.Second)); return err }},
	}...)
	wantClosed(t, calls)
	after, err := cur.qp.Query()
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("the new Context's QP changed:\nbefore %+v\nafter  %+v", before, after)
	}
	for _, o := range []object{old.qp, old.srq, old.ah, old.cq, old.mr, old.pd, old.ch, old.c} {
		if err := o.Close(); err != nil {
			t.Errorf("%T.Close after Context.Close: %v", o, err)
		}
	}
}
