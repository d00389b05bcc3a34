// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// The rstream comparison: rstream's custom test (run_test: a sync, then
// COUNT transfers of SIZE bytes from the client and COUNT back, ITERS
// times) between every pair of peers, in one lab node (rxe loops back),
// alternating. rstream runs with -T b (blocking calls; its default spins
// on MSG_DONTWAIT) and sets SO_SNDBUF and SO_RCVBUF to 512 KiB, which
// rsockets double: the Go rsockets get 1 MiB rings to match, Go's TCP
// sockets 512 KiB buffers. Blocking rsockets in C poll the CQ for 10 µs
// (polling_time) before they sleep; Go's poll only when Options.PollTime
// asks, which the "poll" peers set to the same 10 µs.
const (
	benchBWSize, benchBWCount   = 64 << 10, 512 // 32 MiB each way: 64 MiB moved
	benchLatSize, benchLatIters = 64, 500       // 500 round trips of 64 B
	benchSockBuf                = 512 << 10
)

func benchOptions(p benchPeer) Options {
	o := Options{SendBuffer: 2 * benchSockBuf, RecvBuffer: 2 * benchSockBuf}
	if p.poll {
		o.PollTime = 10 * time.Microsecond
	}
	return o
}

// benchPeer is one end of a pair: rstream (C) or Go, over rsockets or TCP.
type benchPeer struct {
	c    bool // rstream
	tcp  bool // sockets (rstream -T s; package net)
	poll bool // Go: Options.PollTime 10 µs
}

func (p benchPeer) String() string {
	s := map[bool]string{true: "C rstream", false: "Go"}[p.c]
	switch {
	case p.tcp:
		return s + " TCP"
	case p.poll:
		return s + " (poll 10 µs)"
	}
	return s
}

type benchPair struct{ server, client benchPeer }

func (p benchPair) String() string { return p.client.String() + " → " + p.server.String() }

// benchPairs: C rsockets with themselves, Go's with themselves, each way
// between them (Go without and with polling), and TCP on the same netdev,
// C and Go.
var benchPairs = []benchPair{
	{benchPeer{c: true}, benchPeer{c: true}},
	{benchPeer{}, benchPeer{}},
	{benchPeer{c: true}, benchPeer{}},
	{benchPeer{}, benchPeer{c: true}},
	{benchPeer{poll: true}, benchPeer{poll: true}},
	{benchPeer{c: true}, benchPeer{poll: true}},
	{benchPeer{poll: true}, benchPeer{c: true}},
	{benchPeer{c: true, tcp: true}, benchPeer{c: true, tcp: true}},
	{benchPeer{tcp: true}, benchPeer{tcp: true}},
}

// rstreamTime reads the client's figure from rstream's output (its
// show_perf line: name size xfers iters total time Gb/sec usec/xfer) as
// the total time: usec/xfer × 2 × count × iters (the time column has
// only 10 ms resolution).
func rstreamTime(out []byte, count, iters int) (time.Duration, error) {
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 8 || f[0] != "custom" {
			continue
		}
		us, err := strconv.ParseFloat(f[7], 64)
		if err != nil {
			break
		}
		return time.Duration(us * float64(2*count*iters) * float64(time.Microsecond)), nil
	}
	return 0, fmt.Errorf("no result line in rstream's output:\n%s", out)
}

// benchRun runs one test of pair p on port and returns the client's time.
func benchRun(b *testing.B, ctx context.Context, e labtest.Env, p benchPair, port string, size, count, iters int) (time.Duration, error) {
	args := []string{"-S", strconv.Itoa(size), "-C", strconv.Itoa(count), "-I", strconv.Itoa(iters), "-T", "b", "-p", port}
	if p.server.tcp {
		args = append(args, "-T", "s")
	}
	addr := e.Addr + ":" + port
	// The server side, started first; done gives its error.
	done := make(chan error, 1)
	var sout bytes.Buffer
	switch {
	case p.server.c:
		cmd := cTool(b, ctx, false, "rstream", append(args, "-b", e.Addr)...)
		cmd.Stdout, cmd.Stderr = &sout, &sout
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		go func() { done <- cmd.Wait() }()
	default:
		var l net.Listener
		var err error
		if p.server.tcp {
			l, err = net.Listen("tcp", addr)
		} else {
			lc := ListenConfig{Options: benchOptions(p.server)}
			l, err = lc.Listen(ctx, "tcp", addr)
		}
		if err != nil {
			return 0, err
		}
		go func() {
			defer l.Close()
			c, err := l.Accept()
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			setTCPBuffers(c)
			_, err = rstreamTest(c, false, size, count, iters, false)
			done <- err
		}()
	}
	var d time.Duration
	var cerr error
	switch {
	case p.client.c:
		var out []byte
		out, cerr = labtest.Retry(ctx, func(err error) bool { return strings.Contains(err.Error(), "Connection refused") },
			func() ([]byte, error) {
				out, err := cTool(b, ctx, false, "rstream", append(args, "-s", e.Addr)...).CombinedOutput()
				if err != nil {
					err = fmt.Errorf("rstream client: %v:\n%s", err, out)
				}
				return out, err
			})
		if cerr == nil {
			d, cerr = rstreamTime(out, count, iters)
		}
	default:
		var c net.Conn
		if p.client.tcp {
			c, cerr = labtest.Retry(ctx, func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) },
				func() (net.Conn, error) { var d net.Dialer; return d.DialContext(ctx, "tcp", addr) })
		} else {
			c, cerr = dialRetry(ctx, &Dialer{Options: benchOptions(p.client)}, addr)
		}
		if cerr == nil {
			setTCPBuffers(c)
			d, cerr = rstreamTest(c, true, size, count, iters, false)
			c.Close()
		}
	}
	var serr error
	select {
	case serr = <-done:
	case <-ctx.Done():
		serr = ctx.Err()
	}
	if serr != nil {
		serr = fmt.Errorf("server (%v): %v\n%s", p.server, serr, sout.Bytes())
	}
	return d, errors.Join(cerr, serr)
}

// setTCPBuffers gives a TCP connection rstream's SO_SNDBUF and SO_RCVBUF.
func setTCPBuffers(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(benchSockBuf)
		tc.SetWriteBuffer(benchSockBuf)
	}
}

// median and the range of v (sorted in place).
func medianRange(v []float64) (med, lo, hi float64) {
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return 0, 0, 0
	}
	med = v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return med, v[0], v[n-1]
}

// BenchmarkLabRstream compares this package with rdma-core's rstream
// (librdmacm's rsockets in C) and with TCP on the same netdev, in one lab
// node: each b.Loop iteration is one round running every pair of
// benchPairs once (the order rotated each round) for bandwidth (32 MiB
// each way in 64 KiB transfers, rstream -S 65536 -C 512) and for latency
// (500 round trips of 64 B, -S 64 -C 1 -I 500), always timed by the
// client. It asserts only that every transfer completed with every byte;
// it logs each figure and, at the end, the medians over the rounds with
// their ranges and each median's ratio to C rsockets' (rstream to
// rstream). Under emulation only those ratios mean something. Run it with
// scripts/rsocket-bench.sh.
func BenchmarkLabRstream(b *testing.B) {
	e := labtest.Require(b)
	labtest.OneNode(b, "it compares pairs of peers on one node's loopback, in one boot")
	ctx := labtest.Context(b, 60*time.Minute)
	bw := map[benchPair][]float64{}  // MiB/s
	lat := map[benchPair][]float64{} // µs per round trip
	port, round := 200, 0
	for b.Loop() {
		for k := range benchPairs {
			p := benchPairs[(k+round)%len(benchPairs)]
			port++
			d, err := benchRun(b, ctx, e, p, labPort(port), benchBWSize, benchBWCount, 1)
			if err != nil {
				b.Fatalf("%v, bandwidth: %v", p, err)
			}
			mbs := float64(2*benchBWSize*benchBWCount) / (1 << 20) / d.Seconds()
			bw[p] = append(bw[p], mbs)
			port++
			d, err = benchRun(b, ctx, e, p, labPort(port), benchLatSize, 1, benchLatIters)
			if err != nil {
				b.Fatalf("%v, latency: %v", p, err)
			}
			us := d.Seconds() * 1e6 / benchLatIters
			lat[p] = append(lat[p], us)
			b.Logf("round %d: %-30v %8.2f MiB/s  %8.1f µs round trip", round+1, p, mbs, us)
		}
		round++
	}
	// Ratios: of the medians, and the range of each round's ratio to the
	// reference's figure in the same round.
	ref := benchPairs[0]
	ratio := func(fig map[benchPair][]float64, p benchPair) string {
		m, _, _ := medianRange(slices.Clone(fig[p]))
		rm, _, _ := medianRange(slices.Clone(fig[ref]))
		var per []float64
		for r := range fig[p] {
			per = append(per, fig[p][r]/fig[ref][r])
		}
		_, lo, hi := medianRange(per)
		return fmt.Sprintf("%.2f [%.2f–%.2f]", m/rm, lo, hi)
	}
	var t strings.Builder
	fmt.Fprintf(&t, "%d rounds; medians [range]; × C: ratio of the medians to %v's [range of the rounds' ratios]\n", round, ref)
	fmt.Fprintf(&t, "| client → server | bandwidth, MiB/s | × C | 64 B round trip, µs | × C |\n|---|---|---|---|---|\n")
	for _, p := range benchPairs {
		m, lo, hi := medianRange(slices.Clone(bw[p]))
		lm, llo, lhi := medianRange(slices.Clone(lat[p]))
		fmt.Fprintf(&t, "| %v | %.1f [%.1f–%.1f] | %s | %.0f [%.0f–%.0f] | %s |\n", p, m, lo, hi, ratio(bw, p), lm, llo, lhi, ratio(lat, p))
	}
	b.Log("\n" + t.String())
}
