// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"net/netip"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// labEnv is the lab environment plus the address every QP is reached at.
type labEnv struct {
	labtest.Env
	addr netip.Addr
}

func requireLab(t testing.TB) labEnv {
	t.Helper()
	e := labtest.Require(t)
	le := labEnv{Env: e}
	if e.Addr != "" {
		a, err := netip.ParseAddr(e.Addr)
		if err != nil {
			t.Fatalf("RDMALAB_ADDR %q: %v", e.Addr, err)
		}
		le.addr = a
	}
	return le
}

func openLab(t testing.TB, e labEnv) *Context {
	t.Helper()
	c, err := Open(e.Dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close context: %v", err)
		}
	})
	return c
}

// endpoint is a QP with its own CQ and a registered buffer.
type endpoint struct {
	qp  *QP
	cq  *CQ
	mr  *MR
	buf []byte
	gid GIDEntry
}

// epOpts configures newEndpoint.
type epOpts struct {
	typ     QPType
	size    int
	access  AccessFlags
	cap     QPCap
	srq     *SRQ
	channel *CompChannel
	cq      *CQ // use this CQ instead of creating one
}

func newEndpoint(t testing.TB, c *Context, pd *PD, e labEnv, o epOpts) *endpoint {
	t.Helper()
	if o.typ == 0 {
		o.typ = QPTypeRC
	}
	if o.size == 0 {
		o.size = 1 << 16
	}
	if o.access == 0 {
		o.access = AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic
	}
	if o.cap.MaxSendWR == 0 {
		o.cap = QPCap{MaxSendWR: 64, MaxRecvWR: 64, MaxSendSGE: 4, MaxRecvSGE: 4, MaxInlineData: 128}
	}
	cq := o.cq
	if cq == nil {
		var err error
		if cq, err = c.CreateCQ(256, &CQOptions{Channel: o.channel}); err != nil {
			t.Fatal(err)
		}
	}
	buf, err := AllocBuffer(o.size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { buf.Close() })
	mr, err := pd.RegMR(buf.Bytes(), o.access)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := pd.CreateQP(QPInitAttr{Type: o.typ, SendCQ: cq, RecvCQ: cq, SRQ: o.srq, Cap: o.cap})
	if err != nil {
		t.Fatal(err)
	}
	gid, err := c.GIDForIP(1, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	qkey := uint32(0)
	if o.typ == QPTypeUD {
		qkey = udQKey
	}
	if err := qp.ModifyToInit(1, o.access, qkey); err != nil {
		t.Fatal(err)
	}
	return &endpoint{qp: qp, cq: cq, mr: mr, buf: buf.Bytes(), gid: gid}
}

const udQKey = 0x11111111

func (ep *endpoint) dest(psn uint32) Dest {
	return Dest{QPN: ep.qp.Num(), PSN: psn, GID: ep.gid.GID}
}

func (ep *endpoint) connectOpts() *ConnectOptions {
	return &ConnectOptions{SGIDIndex: ep.gid.Index}
}

// rcPair makes two connected RC endpoints on one device (rxe loops packets to
// its own address back).
func rcPair(t testing.TB, c *Context, e labEnv, o epOpts) (*endpoint, *endpoint) {
	t.Helper()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	a := newEndpoint(t, c, pd, e, o)
	b := newEndpoint(t, c, pd, e, o)
	if err := a.qp.Connect(b.dest(200), 100, a.connectOpts()); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Connect(a.dest(100), 200, b.connectOpts()); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// wait polls ep's CQ for n completions and fails the test on a timeout or
// any unsuccessful one.
func (ep *endpoint) wait(t testing.TB, n int) []WC {
	t.Helper()
	wcs := ep.waitAny(t, n)
	for _, wc := range wcs {
		if err := wc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return wcs
}

func (ep *endpoint) waitAny(t testing.TB, n int) []WC {
	t.Helper()
	wcs := make([]WC, n)
	got, err := ep.cq.PollN(labtest.Context(t, 20*time.Second), wcs, n)
	if err != nil {
		t.Fatalf("%v (have %+v)", err, wcs[:got])
	}
	return wcs
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}
