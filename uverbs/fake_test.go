// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"net/netip"
	"runtime"
	"testing"

	"github.com/rdmago/rdmago/uverbs/internal/rxe"
	"golang.org/x/sys/unix"
)

// testContext is a Context whose command fd is the write end of a pipe, so
// tests can read back the exact bytes each command writes (a byte-level fake
// of the kernel, like mdlayher/netlink's nltest). Commands that need a
// response get none: only response-less commands and encoders are tested so.
func testContext(t *testing.T) (*Context, int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	c := &Context{
		dev:      Device{Name: "fake0"},
		prov:     providerRXE,
		fd:       p[1],
		res:      &resources{fd: p[1], maps: map[*byte][]byte{}, pins: map[*runtime.Pinner]struct{}{}},
		byHandle: map[uint64]any{},
	}
	for i := range c.objs {
		c.objs[i] = map[object]struct{}{}
	}
	t.Cleanup(func() {
		c.res.release()
		unix.Close(p[0])
	})
	return c, p[0]
}

// readCmd reads what one command wrote into the pipe.
func readCmd(t *testing.T, r int) []byte {
	t.Helper()
	hdr := make([]byte, 8)
	if n, err := unix.Read(r, hdr); err != nil || n != 8 {
		t.Fatalf("read command header: %d, %v", n, err)
	}
	words := int(hdr[4]) | int(hdr[5])<<8
	body := make([]byte, words*4-8)
	if n, err := unix.Read(r, body); err != nil || n != len(body) {
		t.Fatalf("read command body: %d of %d, %v", n, len(body), err)
	}
	return append(hdr, body...)
}

// fakeQP is a QP on in-memory rings whose doorbell only counts.
func fakeQP(typ QPType, sendWR, recvWR, sge, inline int) *QP {
	slot := rxe.SendWQEHeader + max(sge*16, inline)
	qp := &QP{typ: typ, num: 0x11, cap: QPCap{MaxSendWR: sendWR, MaxRecvWR: recvWR, MaxSendSGE: sge, MaxRecvSGE: sge, MaxInlineData: inline}}
	qp.sq = rxe.SendQueue{Q: rxe.NewMemQueue(sendWR, slot), MaxSGE: sge, MaxInline: inline, UD: typ == QPTypeUD}
	qp.rq = rxe.RecvQueue{Q: rxe.NewMemQueue(recvWR, rxe.RecvWQEHeader+sge*16), MaxSGE: sge}
	qp.ring = func() error { qp.doorbells.Add(1); return nil }
	qp.state.Store(uint32(QPSRTS))
	return qp
}

// fakeCQ is a CQ on an in-memory ring; the test plays the kernel with
// fakeComplete.
func fakeCQ(n int) *CQ {
	return &CQ{ring: rxe.CQ{Q: rxe.NewMemQueue(n, 64)}}
}

type netipAddr = netip.Addr

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
