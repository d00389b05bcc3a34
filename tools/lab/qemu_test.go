// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestPrefixWriter(t *testing.T) {
	var b bytes.Buffer
	var mu sync.Mutex
	w := NewPrefixWriter(&b, "node1| ", &mu)
	w.Write([]byte("a\nb"))
	w.Write([]byte("c\n\nd\n"))
	if want := "node1| a\nnode1| bc\nnode1| \nnode1| d\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{max: 16}
	tb.Write([]byte(strings.Repeat("x", 20) + "\r\nline2\r\nline3\n"))
	if got := tb.Tail(2); got != "line2\nline3" {
		t.Errorf("tail %q", got)
	}
	if len(tb.b) > 16 {
		t.Errorf("buffer grew to %d bytes", len(tb.b))
	}
}

func TestGuestPaths(t *testing.T) {
	if guestPath("/usr/bin/rping", false) != "/usr/bin/rping" || guestPath("/root/x.test", true) != "/host/root/x.test" {
		t.Error("guest paths")
	}
	if !UnderTmp("/tmp/x/y") || UnderTmp("/tmpx/y") || UnderTmp("/root/tmp") {
		t.Error("UnderTmp")
	}
	if NodeAddr(0) != "10.77.0.1" || NodeAddr(1) != "10.77.0.2" {
		t.Error("node addresses")
	}
}
