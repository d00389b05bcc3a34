// Copyright 2026 The rdmago Authors.

package perf

import (
	"errors"
	"flag"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/tools/perf/ptwire"
)

func parse(t *testing.T, args ...string) *Config {
	t.Helper()
	c, err := ParseArgs(args, io.Discard)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return c
}

func TestParseDefaults(t *testing.T) {
	for _, tc := range []struct {
		args                              []string
		sizes                             []int
		iters, tx, rx, cqMod, inline, qps int
		host                              string
		rdmacm                            bool
	}{
		// perftest's defaults: BW 64 KiB x 5000, tx 128; above 8 KiB every
		// send is signalled.
		{args: []string{"write_bw"}, sizes: []int{65536}, iters: 5000, tx: 128, rx: 1, cqMod: 1, qps: 1},
		{args: []string{"ib_write_bw", "-s", "4096"}, sizes: []int{4096}, iters: 5000, tx: 128, rx: 1, cqMod: 100, qps: 1},
		{args: []string{"send_bw", "-s", "64", "-n", "300", "10.0.0.1"}, sizes: []int{64}, iters: 300, tx: 128, rx: 300, cqMod: 100, qps: 1, host: "10.0.0.1"},
		// Latency: 2 bytes x 1000, tx depth 1 caps the CQ moderation at 1.
		{args: []string{"write_lat"}, sizes: []int{2}, iters: 1000, tx: 1, rx: 1, cqMod: 1, qps: 1},
		{args: []string{"send_lat", "-n", "100"}, sizes: []int{2}, iters: 100, tx: 1, rx: 100, cqMod: 1, qps: 1},
		{args: []string{"atomic_lat", "-R", "host"}, sizes: []int{8}, iters: 1000, tx: 1, rx: 1, cqMod: 1, qps: 1, host: "host", rdmacm: true},
		{args: []string{"atomic_bw", "--perftest", "host"}, sizes: []int{8}, iters: 5000, tx: 128, rx: 1, cqMod: 100, qps: 1, host: "host"},
		// perftest's rdma_cm exchange, several QPs.
		{args: []string{"send_bw", "--perftest", "-R", "-q", "2", "-s", "1024", "host"}, sizes: []int{1024}, iters: 5000, tx: 128, rx: 512, cqMod: 100, qps: 2, host: "host", rdmacm: true},
		// tx depth is capped by the iterations; -I is dropped for READ.
		{args: []string{"read_bw", "-n", "50", "-I", "64", "-q", "4"}, sizes: []int{65536}, iters: 50, tx: 50, rx: 1, cqMod: 1, qps: 4},
		{args: []string{"write_bw", "-I", "64", "-s", "32"}, sizes: []int{32}, iters: 5000, tx: 128, rx: 1, cqMod: 100, inline: 64, qps: 1},
		// conn_time is rdma_cm's.
		{args: []string{"conn_time", "h"}, sizes: []int{0}, iters: 20, tx: 0, rx: 0, cqMod: 0, qps: 1, host: "h", rdmacm: true},
	} {
		c := parse(t, tc.args...)
		got := []any{c.Sizes, c.Iters, c.TxDepth, c.RxDepth, c.CQMod, c.Inline, c.QPs, c.Host, c.RDMACM}
		want := []any{tc.sizes, tc.iters, tc.tx, tc.rx, tc.cqMod, tc.inline, tc.qps, tc.host, tc.rdmacm}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got  %v\n want %v", tc.args, got, want)
		}
	}
}

func TestParsePerftestSpellings(t *testing.T) {
	// Short and long names, host anywhere (getopt permutes), = syntax.
	a := parse(t, "write_bw", "-s", "4096", "-n", "100", "-q", "2", "-t", "64", "-d", "rxe0", "-x", "1", "-p", "18600", "-R", "10.77.0.1", "-Q", "8")
	b := parse(t, "write_bw", "10.77.0.1", "--size=4096", "--iters", "100", "--qp=2", "--tx-depth=64", "--ib-dev=rxe0", "--gid-index=1", "--port=18600", "--rdma_cm", "--cq-mod=8")
	for _, c := range []*Config{a, b} {
		got := []any{c.Sizes, c.Iters, c.QPs, c.TxDepth, c.Device, c.GIDIndex, c.Port, c.RDMACM, c.Host, c.CQMod}
		want := []any{[]int{4096}, 100, 2, 64, "rxe0", 1, 18600, true, "10.77.0.1", 8}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	all := parse(t, "send_bw", "-a", "-n", "10")
	if len(all.Sizes) != 23 || all.Sizes[0] != 2 || all.Sizes[22] != 8<<20 || all.CQMod != 10 {
		t.Errorf("-a: sizes %v, cq_mod %d (RUN_ALL keeps the moderation, capped by tx depth 10)", all.Sizes, all.CQMod)
	}
	cas := parse(t, "atomic_lat", "-A", "CMP_AND_SWAP")
	if cas.Atomic != CmpAndSwap || cas.Atomic.String() != "CMP_AND_SWAP" {
		t.Errorf("-A: %v", cas.Atomic)
	}
	if c := parse(t, "write_bw", "-l", "4", "-n", "100"); c.PostList != 4 || c.CQMod != 4 {
		t.Errorf("-l 4: post list %d, cq_mod %d", c.PostList, c.CQMod)
	}
}

func TestParseDuration(t *testing.T) {
	c := parse(t, "write_bw", "-D", "4")
	if c.Duration != 4*time.Second || c.Margin != time.Second || !c.NoPeak {
		t.Errorf("-D 4: %v margin %v noPeak %v", c.Duration, c.Margin, c.NoPeak)
	}
	c = parse(t, "write_lat", "-D", "600ms", "-f", "100ms")
	if c.Duration != 600*time.Millisecond || c.Margin != 100*time.Millisecond {
		t.Errorf("-D 600ms -f 100ms: %v %v", c.Duration, c.Margin)
	}
}

func TestParseWarmup(t *testing.T) {
	if c := parse(t, "read_bw"); c.Warmup != 30*time.Millisecond {
		t.Errorf("default warm-up %v, want 30ms", c.Warmup)
	}
	if c := parse(t, "read_bw", "--warmup", "0"); c.Warmup != 0 {
		t.Errorf("--warmup 0: %v", c.Warmup)
	}
	if c := parse(t, "read_bw", "--warmup", "5ms", "--perftest"); c.Warmup != 5*time.Millisecond {
		t.Errorf("--warmup 5ms: %v", c.Warmup)
	}
}

// TestSpinUp: the spin lasts at least its duration by the clock the loop
// uses, and none at all when off.
func TestSpinUp(t *testing.T) {
	clk := calibrate(10 * time.Millisecond)
	const d = 20 * time.Millisecond
	t0 := time.Now()
	spinUp(clk, d)
	// The calibrated rate is within a few percent of the truth.
	if got := time.Since(t0); got < d*9/10 {
		t.Errorf("spinUp(%v) returned after %v", d, got)
	}
	t0 = time.Now()
	spinUp(clk, 0)
	spinUp(clk, -time.Second)
	if got := time.Since(t0); got > time.Second {
		t.Errorf("spinUp(0) and spinUp(-1s) took %v", got)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no test given"},
		{[]string{"write_bandwidth"}, "unknown test"},
		{[]string{"write_bw", "-a", "-s", "64"}, "exclude each other"},
		{[]string{"write_bw", "-a", "-D", "2"}, "exclude each other"},
		{[]string{"write_bw", "-n", "10", "-D", "2"}, "exclude each other"},
		{[]string{"write_bw", "-n", "3"}, "at least 5"},
		{[]string{"write_bw", "-s", "0"}, "at least 1 byte"},
		{[]string{"write_lat", "-q", "2"}, "one QP"},
		{[]string{"atomic_lat", "-s", "16"}, "8 bytes"},
		{[]string{"write_bw", "-A", "CMP_AND_SWAP"}, "atomic_lat and atomic_bw only"},
		{[]string{"atomic_bw", "-s", "16"}, "atomic_bw works on 8 bytes"},
		{[]string{"write_bw", "--perftest", "-a"}, "give -s instead of -a"},
		{[]string{"write_bw", "--perftest", "-D", "2"}, "-D is not implemented against perftest"},
		{[]string{"conn_time", "--perftest"}, "no perftest counterpart"},
		{[]string{"atomic_lat", "-A", "XOR"}, "FETCH_AND_ADD or CMP_AND_SWAP"},
		{[]string{"write_bw", "-D", "2", "-f", "1"}, "twice the margin"},
		{[]string{"write_bw", "-m", "1500"}, "-m 1500"},
		{[]string{"write_bw", "-p", "70000"}, "-p 70000"},
		{[]string{"write_bw", "a", "b"}, "more than one host"},
		{[]string{"write_bw", "-l", "4", "-Q", "8"}, "the CQ moderation is the list length"},
		{[]string{"write_bw", "-l", "4", "-n", "10"}, "multiple of the list length"},
		{[]string{"write_lat", "-l", "2", "-t", "4"}, "bandwidth tests"},
		{[]string{"conn_time", "-s", "64"}, "conn_time takes -n"},
		{[]string{"write_bw", "-D", "soon"}, "want seconds"},
		{[]string{"write_bw", "--warmup", "-1ms"}, "--warmup -1ms: want 0 or more"},
	} {
		_, err := ParseArgs(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
	if _, err := ParseArgs([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

func TestAdopt(t *testing.T) {
	cl := parse(t, "send_bw", "-s", "1024", "-n", "77", "-q", "3", "-t", "32", "host")
	srv := parse(t, "send_bw")
	if err := srv.adopt(helloFrom(cl)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(srv.Sizes, []int{1024}) || srv.Iters != 77 || srv.QPs != 3 || srv.TxDepth != 32 || srv.RxDepth != 77 {
		t.Errorf("server adopted %+v", srv)
	}
	other := parse(t, "write_bw")
	if err := other.adopt(helloFrom(cl)); err == nil || !strings.Contains(err.Error(), "same test") {
		t.Errorf("mismatched test: %v", err)
	}
	h := helloFrom(cl)
	h.Version++
	if err := srv.adopt(h); err == nil || !strings.Contains(err.Error(), "protocol") {
		t.Errorf("version: %v", err)
	}
	h = helloFrom(cl)
	h.QPs = 0
	if err := srv.adopt(h); err == nil {
		t.Error("zero QPs adopted")
	}
}

// A run takes one P unless GOMAXPROCS is set (loopProcs says why).
func TestLoopProcs(t *testing.T) {
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	if n := loopProcs(); n != 1 {
		t.Errorf("GOMAXPROCS unset: loopProcs %d, want 1", n)
	}
	t.Setenv("GOMAXPROCS", "3")
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	if n := loopProcs(); n != 3 {
		t.Errorf("GOMAXPROCS=3: loopProcs %d, want 3 (the user's setting)", n)
	}
}

// TestPtPeerLeft: rdmaperf's failures in two-node lab runs whose perftest
// peer exited after its run (its timing check failed): the client's at
// the closing barrier (TCP), the passive server's at the end of the run
// (rdma_cm: the receive flushed by the disconnection, seen in a 6.1
// two-node make test with ib_atomic_bw -R).
func TestPtPeerLeft(t *testing.T) {
	for _, tc := range []struct{ step, err string }{
		{"closing", "exit status 1: rdmaperf: perftest exchange, closing: read tcp 10.77.0.2:51412->10.77.0.1:18702: read: connection reset by peer"},
		{"end of the run", "exit status 1: rdmaperf: perftest exchange (rdma_cm), end of the run: " + ptwire.ErrPeerClosed.Error() + " (work request 0x1 on QP 0x4ef failed: IBV_WC_WR_FLUSH_ERR: flushed)"},
		{"end of the run", "exit status 1: rdmaperf: perftest exchange, end of the run: " + ptwire.ErrPeerClosed.Error()},
	} {
		if !ptPeerLeft(errors.New(tc.err), tc.step) {
			t.Errorf("not taken at %q: %s", tc.step, tc.err)
		}
	}
	for _, tc := range []struct{ step, err string }{
		{"closing", "exit status 1: rdmaperf: perftest exchange, closing: the peer sent \"oops\", want \"done\""},
		{"closing", "exit status 1: rdmaperf: perftest exchange, keys: read tcp 10.77.0.2:51412->10.77.0.1:18702: read: connection reset by peer"},
		{"closing", "exit status 1: rdmaperf: perftest exchange, closing: timed out"},
		{"end of the run", "exit status 1: rdmaperf: perftest exchange (rdma_cm), QP addresses: " + ptwire.ErrPeerClosed.Error()},
		{"end of the run", "exit status 1: rdmaperf: perftest exchange (rdma_cm), end of the run: work request 0x1 on QP 0x4ef failed: IBV_WC_REM_ACCESS_ERR"},
	} {
		if ptPeerLeft(errors.New(tc.err), tc.step) {
			t.Errorf("taken at %q: %s", tc.step, tc.err)
		}
	}
}

// TestPerftestGlitch tells perftest's own timing-check failure (outputs
// seen in lab runs of the bench, TestLabPerftestQPs and
// TestLabStraceAgrees) from real failures.
func TestPerftestGlitch(t *testing.T) {
	for _, out := range []string{
		"Correlation coefficient r^2: 0.718137 < 0.9\nCan't produce a report\n Send BW Test\n",
		"Correlation coefficient r^2: 0.475514 < 0.9\n---\n Send BW Test",
		"result 0 is not positive:\nCorrelation coefficient r^2: 0.892634 < 0.9\n",
		"Correlation coefficient r^2: -nan < 0.9",
		"Correlation coefficient r^2: 0.770424 < 0.9\nCan't produce a report\n----\n RDMA_Write BW Test\n",
	} {
		if g := PerftestGlitch(out); !strings.HasPrefix(g, "Correlation coefficient r^2:") || strings.Contains(g, "\n") {
			t.Errorf("%q: glitch %q, want its line", out, g)
		}
	}
	for _, out := range []string{
		"",
		" 2       500          10.70          3893.00      10.90",
		"Couldn't connect to 10.77.0.1:18753\n",
		"Correlation coefficient r^2: 0.95\n",
		"Failed status local QP operation error\n",
	} {
		if g := PerftestGlitch(out); g != "" {
			t.Errorf("%q: glitch %q", out, g)
		}
	}
}

// TestFirstPoster: the side that spins before its loop (warmUp) is the one
// whose first post the peer waits for outside its own measurement.
func TestFirstPoster(t *testing.T) {
	for _, tc := range []struct {
		test           Test
		client, server bool
	}{
		{WriteBW, true, false}, {ReadBW, true, false}, {SendBW, true, false}, {AtomicBW, true, false},
		{ReadLat, true, false}, {AtomicLat, true, false},
		{SendLat, true, false},  // the client sends first
		{WriteLat, false, true}, // the server writes first
		{ConnTime, false, false},
	} {
		if c, s := firstPoster(tc.test, false), firstPoster(tc.test, true); c != tc.client || s != tc.server {
			t.Errorf("%v: client %t, server %t; want %t, %t", tc.test, c, s, tc.client, tc.server)
		}
	}
}
