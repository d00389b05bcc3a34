// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// BenchmarkLabWriteLat is ib_write_lat's algorithm on one rxe device: two RC
// QPs take turns RDMA-WRITING a 4-byte sequence number into each other's
// buffer, each spinning on its own memory for the peer's write (no receive,
// no completion wait on the critical path). ns/op is one round trip;
// usec/lat is half of it, the figure ib_write_lat prints. With -test.v it
// also runs rdma-core's ib_write_lat in the same boot for the ratio.
//
//	go run ./cmd/rdmalab test -run XXX -args -test.bench=LabWriteLat ./uverbs
func BenchmarkLabWriteLat(b *testing.B) {
	e := requireLab(b)
	c := openLab(b, e)
	x, y := rcPair(b, c, e, epOpts{})
	seqAt := func(ep *endpoint) *uint32 { return (*uint32)(unsafe.Pointer(&ep.buf[0])) }
	post := func(from, to *endpoint, seq uint32, signaled bool) {
		var src [4]byte
		*(*uint32)(unsafe.Pointer(&src)) = seq
		f := SendInline
		if signaled {
			f |= SendSignaled
		}
		if err := from.qp.PostSend(SendWR{Opcode: WRRDMAWrite, Flags: f, Inline: src[:], RemoteAddr: to.mr.Addr(), RKey: to.mr.RKey()}); err != nil {
			panic(err)
		}
	}
	// Send completions are polled every 16 writes (perftest's cq_mod) so the
	// send ring never fills.
	reap := func(ep *endpoint, wcs []WC) {
		for ep.cq.Poll(wcs) > 0 {
		}
	}
	run := func(n int) []time.Duration {
		lat := make([]time.Duration, 0, n)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // y: wait for x's write, answer
			defer wg.Done()
			wcs := make([]WC, 16)
			for i := 1; i <= n; i++ {
				for atomic.LoadUint32(seqAt(y)) != uint32(i) {
				}
				post(y, x, uint32(i), i%16 == 0)
				reap(y, wcs)
			}
		}()
		wcs := make([]WC, 16)
		for i := 1; i <= n; i++ {
			start := time.Now()
			post(x, y, uint32(i), i%16 == 0)
			for atomic.LoadUint32(seqAt(x)) != uint32(i) {
			}
			lat = append(lat, time.Since(start))
			reap(x, wcs)
		}
		wg.Wait()
		*seqAt(x), *seqAt(y) = 0, 0
		return lat
	}
	run(100) // warm up
	b.ResetTimer()
	lat := run(b.N)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	typical := lat[len(lat)/2]
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	b.ReportMetric(float64(typical.Nanoseconds())/2000, "usec/lat(typical)")
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(lat))/2000, "usec/lat(avg)")
	cOnce.Do(func() { cTypical, cAvg, cErr = runWriteLat(e) })
	if cErr != nil {
		b.Logf("ib_write_lat: %v", cErr)
	} else if cTypical > 0 {
		b.ReportMetric(cTypical, "C-usec/lat(typical)")
		b.ReportMetric(cAvg, "C-usec/lat(avg)")
		b.ReportMetric(float64(typical.Nanoseconds())/2000/cTypical, "ratio(typical)")
	}
}

var (
	cOnce    sync.Once
	cTypical float64
	cAvg     float64
	cErr     error
)

// runWriteLat runs perftest's ib_write_lat server and client on the lab
// device, as the comparison for BenchmarkLabWriteLat, and returns t_typical.
func runWriteLat(e labEnv) (typical, avg float64, err error) {
	if _, err := os.Stat("/host/usr/bin/ib_write_lat"); err != nil {
		return 0, 0, fmt.Errorf("perftest not installed on the host: %w", err)
	}
	c, err := Open(e.Dev)
	if err != nil {
		return 0, 0, err
	}
	g, err := c.GIDForIP(1, e.addr)
	c.Close()
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	args := []string{"-d", e.Dev, "-x", strconv.Itoa(g.Index), "-s", "4", "-n", "2000", "-p", "18700"}
	srv := hostTool(ctx, "/usr/bin/ib_write_lat", args...)
	if err := srv.Start(); err != nil {
		return 0, 0, err
	}
	defer srv.Wait()
	var out []byte
	for i := 0; i < 50; i++ {
		time.Sleep(200 * time.Millisecond)
		out, err = hostTool(ctx, "/usr/bin/ib_write_lat", append(args, e.Addr)...).CombinedOutput()
		if err == nil {
			break
		}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("ib_write_lat client: %v: %s", err, out)
	}
	// "#bytes #iterations t_min t_max t_typical t_avg ..." then the values.
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 6 && f[0] == "4" && f[1] == "2000" {
			typical, err = strconv.ParseFloat(f[4], 64)
			if err == nil {
				avg, err = strconv.ParseFloat(f[5], 64)
			}
			if err == nil && (math.IsInf(typical, 0) || math.IsInf(avg, 0)) {
				err = fmt.Errorf("ib_write_lat printed no finite latency:\n%s", out)
			}
			return typical, avg, err
		}
	}
	return 0, 0, fmt.Errorf("no result line in ib_write_lat's output:\n%s", out)
}
