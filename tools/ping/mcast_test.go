// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/uverbs"
)

func TestMcastCheck(t *testing.T) {
	const size, count = 64, 4
	newM := func() *Mcast {
		m := &Mcast{cfg: McastConfig{Count: count, Size: size}, slot: size + GRHSize}
		m.buf.B = make([]byte, count*m.slot)
		return m
	}
	// land puts d into receive slot i and returns its completion from qpn.
	land := func(m *Mcast, i int, d []byte, qpn uint32) uverbs.WC {
		copy(m.buf.B[i*m.slot+GRHSize:], d)
		return uverbs.WC{WRID: uint64(i), ByteLen: uint32(len(d) + GRHSize), Flags: uverbs.WCWithImm, Imm: qpn, SrcQP: qpn}
	}
	ours := func(i int) []byte {
		d := make([]byte, size)
		mcastMessage(d, i)
		return d
	}
	mckeys := make([]byte, size) // mckey sends its buffer as it is
	want := make([]byte, size)

	m := newM()
	peer := ""
	for i := range count {
		who, err := m.check(i, land(m, i, ours(i), 0x12), peer, want)
		if err != nil || who != "rdmaping" {
			t.Fatalf("rdmaping datagram %d: %q, %v", i, who, err)
		}
		peer = who
	}
	m = newM()
	if who, err := m.check(0, land(m, 0, mckeys, 0x34), "", want); err != nil || who != "mckey" {
		t.Fatalf("mckey datagram: %q, %v", who, err)
	}

	for _, tc := range []struct {
		name string
		wc   func(m *Mcast) uverbs.WC
		peer string
		err  string
	}{
		{"corrupted", func(m *Mcast) uverbs.WC { d := ours(2); d[40]++; return land(m, 1, d, 0x12) }, "", "datagram 2 from rdmaping: data mismatch"},
		{"short", func(m *Mcast) uverbs.WC { return land(m, 0, ours(0)[:size-1], 0x12) }, "", "63 bytes, want 64"},
		{"no immediate", func(m *Mcast) uverbs.WC { wc := land(m, 0, ours(0), 0x12); wc.Flags = 0; return wc }, "", "want the sender's QPN"},
		{"immediate not the QPN", func(m *Mcast) uverbs.WC { wc := land(m, 0, ours(0), 0x12); wc.Imm = 0x13; return wc }, "", "immediate 0x13"},
		{"mixed senders", func(m *Mcast) uverbs.WC { return land(m, 0, mckeys, 0x34) }, "rdmaping", "senders rdmaping and mckey mixed"},
		{"failed", func(m *Mcast) uverbs.WC { wc := land(m, 0, ours(0), 0x12); wc.Status = uverbs.WCLocLenErr; return wc }, "", "IBV_WC_LOC_LEN_ERR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newM()
			if who, err := m.check(0, tc.wc(m), tc.peer, want); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q, %v; want an error with %q", who, err, tc.err)
			}
		})
	}
}

// TestMcastReceiveNeedsPosts: Receive refuses to wait for datagrams it has
// posted no receives for (the receives go first, before the attach).
func TestMcastReceiveNeedsPosts(t *testing.T) {
	m := &Mcast{cfg: McastConfig{Count: 2, Size: 64}, slot: 64 + GRHSize}
	if err := m.Receive(context.Background()); err == nil || !strings.Contains(err.Error(), "before PostReceives") {
		t.Errorf("Receive without PostReceives: %v; want an error saying to post first", err)
	}
}
