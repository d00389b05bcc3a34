// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rdmago/rdmago/internal/labtest"
)

// mwLab is a PD with an MR that windows can be bound to.
type mwLab struct {
	t   *testing.T
	c   *Context
	e   labEnv
	pd  *PD
	mr  *MR // AccessMWBind
	buf []byte
}

func newMWLab(t *testing.T) *mwLab {
	e := requireLab(t)
	c := openLab(t, e)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	b, err := AllocBuffer(1 << 14)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	mr, err := pd.RegMR(b.Bytes(), AccessLocalWrite|AccessRemoteRead|AccessRemoteWrite|AccessMWBind)
	if err != nil {
		t.Fatal(err)
	}
	// A kernel whose rxe has no windows (5.10) says so: a gated test.
	mw, err := pd.AllocMW(MWType1)
	if err != nil {
		labtest.Lacks(t, err, errors.Is(err, ErrNotSupported))
	}
	mw.Close()
	return &mwLab{t: t, c: c, e: e, pd: pd, mr: mr, buf: b.Bytes()}
}

// pair is two connected RC endpoints on the lab's PD: a the requester, b
// the responder whose QP windows of type 2 are bound on.
func (l *mwLab) pair() (*endpoint, *endpoint) {
	a := newEndpoint(l.t, l.c, l.pd, l.e, epOpts{})
	b := newEndpoint(l.t, l.c, l.pd, l.e, epOpts{})
	if err := a.qp.Connect(b.dest(300), 400, a.connectOpts()); err != nil {
		l.t.Fatal(err)
	}
	if err := b.qp.Connect(a.dest(400), 300, b.connectOpts()); err != nil {
		l.t.Fatal(err)
	}
	return a, b
}

// bind2 binds mw (type 2) on b's QP to [off, off+n) of the lab MR.
func (l *mwLab) bind2(b *endpoint, mw *MW, off, n int, access AccessFlags) uint32 {
	l.t.Helper()
	rkey := IncRKey(mw.RKey())
	err := b.qp.PostSend(SendWR{ID: 77, Opcode: WRBindMW, Flags: SendSignaled,
		Bind: &MWBindWR{MW: mw, RKey: rkey, Info: MWBindInfo{MR: l.mr, Addr: l.mr.Addr() + uint64(off), Length: uint64(n), Access: access}}})
	if err != nil {
		l.t.Fatal(err)
	}
	if wc := b.wait(l.t, 1)[0]; wc.Opcode != WCBindMW || wc.WRID != 77 {
		l.t.Fatalf("bind completion %+v", wc)
	}
	if mw.RKey() != rkey {
		l.t.Fatalf("window rkey %#x after the bind, want %#x", mw.RKey(), rkey)
	}
	return rkey
}

// write RDMA WRITEs n bytes from a to addr under rkey and returns the
// completion.
func write(t *testing.T, a *endpoint, addr uint64, rkey uint32, n int) WC {
	t.Helper()
	fill(a.buf[:n], byte(n))
	if err := a.qp.PostSend(SendWR{ID: 5, Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, n)}, RemoteAddr: addr, RKey: rkey}); err != nil {
		t.Fatal(err)
	}
	return a.waitAny(t, 1)[0]
}

// TestLabMWType2: a type 2 window bound through the send queue opens its
// range (rxe bounds it by its MR only, so only an access past the MR's end
// is checked to fail); SEND_WITH_INV and LOCAL_INV revoke it and the
// receiver learns the invalidated rkey.
func TestLabMWType2(t *testing.T) {
	l := newMWLab(t)
	mw, err := l.pd.AllocMW(MWType2)
	if err != nil {
		t.Fatal(err)
	}
	if mw.Type() != MWType2 {
		t.Errorf("type %v", mw.Type())
	}
	const off, n = 4096, 1024
	base := l.mr.Addr() + off

	// Inside the window: write and read.
	a, b := l.pair()
	rkey := l.bind2(b, mw, off, n, AccessRemoteRead|AccessRemoteWrite)
	if wc := write(t, a, base+100, rkey, 512); wc.Status != WCSuccess {
		t.Fatalf("write inside the window: %v", wc.Err())
	}
	if !bytes.Equal(l.buf[off+100:off+612], a.buf[:512]) {
		t.Error("write through the window: bytes differ")
	}
	if err := a.qp.PostSend(SendWR{ID: 6, Opcode: WRRDMARead, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(8192, 1024)}, RemoteAddr: base, RKey: rkey}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1)
	if !bytes.Equal(a.buf[8192:8192+1024], l.buf[off:off+n]) {
		t.Error("read through the window: bytes differ")
	}
	// SEND_WITH_INV names the window's rkey: the receive reports it.
	if err := b.qp.PostRecv(RecvWR{ID: 8, SGL: []SGE{b.mr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(SendWR{ID: 7, Opcode: WRSendWithInv, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 16)}, InvalidateRKey: rkey}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1)
	wc := b.wait(t, 1)[0]
	if got, ok := wc.InvalidatedRKey(); !ok || got != rkey || wc.Opcode != WCRecv || wc.ByteLen != 16 {
		t.Errorf("receive of SEND_WITH_INV: %+v, invalidated rkey %#x %v, want %#x", wc, got, ok, rkey)
	}
	// The old rkey no longer opens anything.
	if wc := write(t, a, base, rkey, 8); wc.Status != WCRemAccessErr {
		t.Errorf("write under the invalidated rkey: %v, want %v", wc.Status, WCRemAccessErr)
	}

	// Bound again (a new rkey), then revoked locally.
	a, b = l.pair()
	rkey2 := l.bind2(b, mw, off, n, AccessRemoteWrite)
	if rkey2 == rkey {
		t.Errorf("rebind kept rkey %#x", rkey)
	}
	if wc := write(t, a, base, rkey2, 64); wc.Status != WCSuccess {
		t.Fatalf("write after the rebind: %v", wc.Err())
	}
	if err := b.qp.PostSend(SendWR{ID: 9, Opcode: WRLocalInv, Flags: SendSignaled, InvalidateRKey: rkey2}); err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1)[0]; wc.Opcode != WCLocalInv {
		t.Errorf("local invalidate completion %+v", wc)
	}
	if wc := write(t, a, base, rkey2, 8); wc.Status != WCRemAccessErr {
		t.Errorf("write after LOCAL_INV: %v, want %v", wc.Status, WCRemAccessErr)
	}

	// Past the end of the MR through the window: refused.
	a, b = l.pair()
	rkey3 := l.bind2(b, mw, off, n, AccessRemoteWrite)
	if wc := write(t, a, l.mr.Addr()+uint64(len(l.buf))-8, rkey3, 64); wc.Status != WCRemAccessErr {
		t.Errorf("write past the MR's end through the window: %v, want %v", wc.Status, WCRemAccessErr)
	}
	// (Inside the MR but across the window's end rxe does not refuse: it
	// checks a window's accesses against its MR only; see the package doc.)
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Errorf("second close: %v", err)
	}
}

// TestLabMWType1: ibv_bind_mw on a type 1 window; its access rights hold.
func TestLabMWType1(t *testing.T) {
	l := newMWLab(t)
	mw, err := l.pd.AllocMW(MWType1)
	if err != nil {
		t.Fatal(err)
	}
	defer mw.Close()
	a, b := l.pair()
	const off, n = 0, 2048
	fill(l.buf[:n], 5)
	rkey, err := b.qp.BindMW(mw, MWBindInfo{MR: l.mr, Addr: l.mr.Addr() + off, Length: n, Access: AccessRemoteRead}, 11, SendSignaled)
	if err != nil {
		t.Fatal(err)
	}
	if wc := b.wait(t, 1)[0]; wc.Opcode != WCBindMW || wc.WRID != 11 || mw.RKey() != rkey {
		t.Fatalf("bind completion %+v, rkey %#x want %#x", wc, mw.RKey(), rkey)
	}
	if err := a.qp.PostSend(SendWR{ID: 6, Opcode: WRRDMARead, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, n)}, RemoteAddr: l.mr.Addr(), RKey: rkey}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1)
	if !bytes.Equal(a.buf[:n], l.buf[:n]) {
		t.Error("read through the type 1 window: bytes differ")
	}
	// Read-only: a write is refused.
	if wc := write(t, a, l.mr.Addr(), rkey, 8); wc.Status != WCRemAccessErr {
		t.Errorf("write through a read-only window: %v, want %v", wc.Status, WCRemAccessErr)
	}
	// BindMW is for type 1 windows only.
	mw2, err := l.pd.AllocMW(MWType2)
	if err != nil {
		t.Fatal(err)
	}
	defer mw2.Close()
	if _, err := b.qp.BindMW(mw2, MWBindInfo{MR: l.mr, Length: 8}, 0, 0); err == nil {
		t.Error("BindMW took a type 2 window")
	}
}
