// Copyright 2026 The rdmago Authors.

package ping

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// The bytes rping puts on the wire for {buf 0x55c1d3e8a5f0, rkey 0x55e,
// size 64}: htobe64, htobe32, htobe32 (rping_format_send).
func TestInfoWireFormat(t *testing.T) {
	i := Info{Buf: 0x55c1d3e8a5f0, RKey: 0x55e, Size: 64}
	want, _ := hex.DecodeString("000055c1d3e8a5f0" + "0000055e" + "00000040")
	if got := i.Marshal(nil); !bytes.Equal(got, want) {
		t.Fatalf("marshal %x, want %x", got, want)
	}
	b := make([]byte, InfoSize)
	i.Put(b)
	if !bytes.Equal(b, want) {
		t.Fatalf("put %x", b)
	}
	back, err := ParseInfo(want)
	if err != nil || back != i {
		t.Fatalf("parse: %+v, %v", back, err)
	}
	for _, n := range []int{0, 15, 17, 64} {
		if _, err := ParseInfo(make([]byte, n)); err == nil {
			t.Errorf("ParseInfo accepted %d bytes (rping: \"Received bogus data\")", n)
		}
	}
}

// TestFillPingMatchesRping checks the ping data against what rping's
// client printed in the lab ("ping data: ..." with -S 64).
func TestFillPingMatchesRping(t *testing.T) {
	want := []string{
		"rdma-ping-0: ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqr",
		"rdma-ping-1: BCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrs",
		"rdma-ping-2: CDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrst",
	}
	buf := make([]byte, 64)
	start := byte(65)
	for n, w := range want {
		start = FillPing(buf, n, start)
		if got := CString(buf); got != w {
			t.Errorf("ping %d: %q, want %q", n, got, w)
		}
		if buf[63] != 0 || len(CString(buf)) != 63 {
			t.Errorf("ping %d: not NUL-terminated at the last byte", n)
		}
	}
	// 'z' wraps to 'A', for the characters and for the start.
	start = FillPing(buf, 7, 'z')
	if start != 'A' || CString(buf)[len("rdma-ping-7: "):][:2] != "zA" {
		t.Errorf("wrap: start %q, data %q", start, CString(buf))
	}
	// The smallest size rping accepts still holds the largest header.
	small := make([]byte, MinSize)
	FillPing(small, 2147483647, 'A')
	if got := CString(small); got != "rdma-ping-2147483647: ABC" {
		t.Errorf("minimum size: %q", got)
	}
	if MinSize != 26 {
		t.Errorf("MinSize %d, rping's RPING_MIN_BUFSIZE is 26", MinSize)
	}
}

func TestDemoConfig(t *testing.T) {
	if _, err := NewDemo(DemoConfig{Mode: "bogus"}); err == nil {
		t.Error("unknown mode accepted")
	}
	d, err := NewDemo(DemoConfig{Mode: "atomic", Size: 100})
	if err != nil || d.cfg.Size != 8 || d.cfg.Count != 10 {
		t.Errorf("atomic demo: %+v, %v", d, err)
	}
	a, b := make([]byte, 33), make([]byte, 33)
	pattern(a, 3)
	pattern(b, 4)
	if bytes.Equal(a, b) || expect(a, 3, "x") != nil || expect(a, 4, "x") == nil {
		t.Error("patterns of different iterations must differ and be checked")
	}
	if _, err := NewRping(RpingConfig{Size: MinSize - 1}); err == nil {
		t.Error("rping size below the minimum accepted")
	}
	if _, err := NewRping(RpingConfig{Size: MaxSize + 1}); err == nil {
		t.Error("rping size above the maximum accepted")
	}
}
