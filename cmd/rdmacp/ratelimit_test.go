// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/transfer"
)

// fakeClock is the limiter's injected clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func reporterForTest(clk *fakeClock, burst, max int) (*connReporter, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	lim := newConnLimiter(clk.now, 10*time.Second, burst, max)
	return &connReporter{stdout: &stdout, stderr: &stderr, c: &common{}, lim: lim}, &stderr
}

func failed(peer string) *transfer.ConnReport { return &transfer.ConnReport{Peer: peer} }

func lines(b *bytes.Buffer) []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// TestRecvLogRateLimit: a storm of failed connections from one address
// prints the first few in full, then one summary line when the interval
// ends, not two lines per connection (issue 33: 1,213 lines for 600
// connects in 30 s).
func TestRecvLogRateLimit(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	r, stderr := reporterForTest(clk, 3, 8)
	for i := range 600 {
		err := error(&transfer.Error{Code: transfer.CodeProtocol, Text: "bad HELLO"})
		if i%2 == 1 {
			err = &transfer.Error{Code: transfer.CodeAuthFailed, Text: "bad AUTH"}
		}
		r.report(failed(fmt.Sprintf("10.77.0.2:%d", 40000+i)), err)
	}
	full := lines(stderr)
	if len(full) > 3*3 {
		t.Fatalf("%d lines for 600 failed connections from one address, want those of 3:\n%s", len(full), stderr)
	}
	for _, l := range full {
		if strings.Contains(l, "more connections") {
			t.Fatalf("summary before the interval ended: %q", l)
		}
	}
	// An honest sender is never held back.
	stderr.Reset()
	r.report(&transfer.ConnReport{Peer: "10.77.0.2:50000", Items: 1, Verified: 1}, nil)
	if len(lines(stderr)) != 1 {
		t.Fatalf("a successful connection: %q, want its one line", stderr)
	}
	stderr.Reset()
	r.flush(false) // within the interval: nothing yet
	if stderr.Len() != 0 {
		t.Fatalf("flush within the interval printed %q", stderr)
	}
	clk.t = clk.t.Add(10 * time.Second)
	r.flush(false)
	want := "rdmacp: 597 more connections from 10.77.0.2 failed (authentication failed: 299, protocol error: 298) in the last 10s\n"
	if got := stderr.String(); got != want {
		t.Fatalf("summary:\n got %q\nwant %q", got, want)
	}
	// The next interval starts afresh: the address is shown again.
	stderr.Reset()
	r.report(failed("10.77.0.2:1"), transfer.ErrProtocol)
	if stderr.Len() == 0 || !strings.Contains(stderr.String(), "10.77.0.2") {
		t.Fatalf("first failure of a new interval not shown: %q", stderr)
	}
	stderr.Reset()
	r.flush(true)
	if stderr.Len() != 0 {
		t.Fatalf("nothing suppressed, yet flush printed %q", stderr)
	}
}

// TestRecvLogRateLimitExit: what is suppressed is summed up at exit, the
// peer's text escaped.
func TestRecvLogRateLimitExit(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	r, stderr := reporterForTest(clk, 1, 8)
	peer := "fe80::1\x1bc%eth0"
	for range 4 {
		r.report(failed("["+peer+"]:7"), transfer.ErrPeerGone)
	}
	clk.t = clk.t.Add(3 * time.Second)
	stderr.Reset()
	r.flush(true)
	got := stderr.String()
	if strings.Contains(got, "\x1b") || !strings.Contains(got, "3 more connections from fe80::1") ||
		!strings.HasSuffix(got, "failed (peer gone: 3) in the last 3s\n") {
		t.Fatalf("exit summary %q", got)
	}
}

// TestRecvLogRateLimitEvicts: the limiter tracks at most max addresses;
// the oldest is evicted, its summary printed then.
func TestRecvLogRateLimitEvicts(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	r, stderr := reporterForTest(clk, 1, 4)
	for a := range 5 {
		for range 3 {
			r.report(failed(fmt.Sprintf("10.0.0.%d:9", a)), transfer.ErrProtocol)
		}
		clk.t = clk.t.Add(time.Second)
	}
	if n := len(r.lim.peers); n > 4 {
		t.Fatalf("%d addresses tracked, want at most 4", n)
	}
	if !strings.Contains(stderr.String(), "rdmacp: 2 more connections from 10.0.0.0 failed (protocol error: 2) in the last 4s\n") {
		t.Fatalf("the evicted address's summary missing:\n%s", stderr)
	}
	stderr.Reset()
	r.flush(true)
	if n := strings.Count(stderr.String(), "more connections"); n != 4 {
		t.Fatalf("exit: %d summaries, want 4:\n%s", n, stderr)
	}
}

// TestRecvRefusalsRateLimited: the requests the listener refuses (a peer
// speaking rsockets) are printed rate-limited per peer address as failed
// connections are, and summed up at exit, not one line each.
func TestRecvRefusalsRateLimited(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	nw := newMemNet()
	rc := make(chan result, 1)
	go func() { rc <- runCmd(rctx, nw, "recv", "-q", t.TempDir()) }()
	select {
	case <-nw.ready:
	case r := <-rc:
		t.Fatalf("recv exited before listening: %d: %s", r.code, r.stderr)
	}
	nw.mu.Lock()
	refuse := nw.cfg.OnRefuse
	nw.mu.Unlock()
	if refuse == nil {
		t.Fatal("recv's listener has no OnRefuse: its refusals are not rate-limited")
	}
	const n = 600
	for i := range n {
		peer := netip.AddrPortFrom(netip.MustParseAddr("10.77.0.2"), uint16(40000+i))
		refuse(peer, fmt.Sprintf("a peer speaking rsockets tried to connect from %v: refused", peer))
	}
	refuse(netip.AddrPort{}, "a peer speaking rsockets tried to connect from an unknown address: refused")
	stop()
	r := <-rc
	if r.code != 0 {
		t.Fatalf("recv: exit %d: %s", r.code, r.stderr)
	}
	if got := strings.Count(r.stderr, "tried to connect from 10.77.0.2:"); got != logBurst {
		t.Errorf("%d refusal lines for %d refused requests from one address, want %d:\n%s", got, n, logBurst, r.stderr)
	}
	if !strings.Contains(r.stderr, "tried to connect from an unknown address") {
		t.Errorf("the refusal from an unknown address was not shown:\n%s", r.stderr)
	}
	want := fmt.Sprintf("rdmacp: %d more connections from 10.77.0.2 failed (%s: %d) in the last ", n-logBurst, refusedReason, n-logBurst)
	if !strings.Contains(r.stderr, want) {
		t.Errorf("no exit summary %q:\n%s", want, r.stderr)
	}
	if got := len(strings.Split(strings.TrimSpace(r.stderr), "\n")); got > logBurst+2 {
		t.Errorf("%d lines on stderr, want at most %d:\n%s", got, logBurst+2, r.stderr)
	}
}
