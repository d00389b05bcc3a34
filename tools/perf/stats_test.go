// Copyright 2026 The rdmago Authors.

package perf

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// stampsFrom builds iteration stamps whose consecutive differences are d.
func stampsFrom(d []int64) []int64 {
	s := make([]int64, len(d)+1)
	for i, v := range d {
		s[i+1] = s[i] + v
	}
	return s
}

func TestLatencyPerftestRules(t *testing.T) {
	// Ten ordinary samples 1..10 (shuffled) and two outliers, which
	// perftest drops (LAT_MEASURE_TAIL) except that t_max and the high
	// percentiles index the first dropped one.
	d := []int64{5, 3, 200, 9, 1, 7, 2, 8, 100, 4, 6, 10}
	for _, tc := range []struct {
		name string
		mhz  float64
		rtt  int
		div  float64
	}{
		{"read", 1, 1, 1},
		{"write ping-pong halves", 1, 2, 2},
		{"ticks at 2 GHz", 2000, 1, 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Latency(64, stampsFrom(d), tc.mhz, tc.rtt)
			if err != nil {
				t.Fatal(err)
			}
			want := LatStats{
				Size: 64, Iters: 13,
				Min: 1 / tc.div, Max: 100 / tc.div,
				Typical: 5.5 / tc.div, // even count: mean of the two middle samples
				Avg:     5.5 / tc.div,
				Stdev:   math.Sqrt(8.25) / tc.div,
				P99:     100 / tc.div, // d[ceil(10*0.99)] = d[10]
				P999:    100 / tc.div,
			}
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"min", l.Min, want.Min}, {"max", l.Max, want.Max}, {"typical", l.Typical, want.Typical},
				{"avg", l.Avg, want.Avg}, {"stdev", l.Stdev, want.Stdev}, {"p99", l.P99, want.P99}, {"p99.9", l.P999, want.P999},
			} {
				if !near(f.got, f.want) {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
			if l.Size != 64 || l.Iters != 13 {
				t.Errorf("size %d iters %d", l.Size, l.Iters)
			}
		})
	}
}

func TestLatencyOddMedianAndPercentiles(t *testing.T) {
	// 1003 samples 1..1001 plus two outliers: 1001 kept (odd), the median
	// is the middle one; 99% indexes ceil(1001*0.99) = 991 -> sample 992.
	var d []int64
	for i := int64(1001); i >= 1; i-- {
		d = append(d, i)
	}
	d = append(d, 5000, 6000)
	l, err := Latency(2, stampsFrom(d), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if l.Typical != 501 || l.Min != 1 || l.Max != 5000 || l.P99 != 992 || l.P999 != 1001 {
		t.Errorf("got %+v", l)
	}
	if !near(l.Avg, 501) {
		t.Errorf("avg %v", l.Avg)
	}
	// Population stdev of 1..n is sqrt((n²-1)/12).
	if want := math.Sqrt((1001*1001 - 1) / 12.0); !near(l.Stdev, want) {
		t.Errorf("stdev %v, want %v", l.Stdev, want)
	}
}

func TestLatencyErrors(t *testing.T) {
	if _, err := Latency(2, []int64{0, 1, 2}, 1, 1); err == nil {
		t.Error("three stamps (two samples, both dropped) accepted")
	}
	if _, err := Latency(2, []int64{0, 1, 2, 3, 4}, 0, 1); err == nil {
		t.Error("zero clock rate accepted")
	}
}

func TestBWIters(t *testing.T) {
	// Ten requests posted every 10 ticks, a completion every 5 (cq_mod 5):
	// at 100 and 200 ticks. 1 tick = 1 us.
	posted := make([]int64, 10)
	for i := range posted {
		posted[i] = int64(i) * 10
	}
	completed := make([]int64, 10)
	completed[4], completed[9] = 100, 200
	const size = 1 << 20
	s, err := BWIters(size, posted, completed, 5, 1, 1, false, false)
	if err != nil {
		t.Fatal(err)
	}
	// Average: 10 MiB in 200 us = 50000 MiB/s; 10 requests in 200 us = 0.05 Mpps.
	if !near(s.Average, 50000) || !near(s.MsgRate, 0.05) || s.Iters != 10 {
		t.Errorf("average %v MB/s, %v Mpps, %d iters", s.Average, s.MsgRate, s.Iters)
	}
	// Peak: the best (completion - post)/(requests) is 20 us (0 -> 4 and
	// 0 -> 9); 1 MiB per 20 us = 50000 MiB/s. Stretches starting later are
	// slower ((200-50)/5 = 30).
	if !near(s.Peak, 50000) {
		t.Errorf("peak %v", s.Peak)
	}
	// A faster end raises the peak: the last completion at 120 gives
	// 0..9 in (120-0)/10 = 12 ticks per request (integer division, as
	// perftest's cycles_t), better than 5..9's (120-50)/5 = 14.
	completed[9] = 120
	s, _ = BWIters(size, posted, completed, 5, 1, 1, false, false)
	if want := float64(size) * 1e6 / (12 * mbFactor); !near(s.Peak, want) {
		t.Errorf("peak %v, want %v", s.Peak, want)
	}
	// noPeak leaves it 0; Gb/s divides by 1.25e8 bytes.
	s, _ = BWIters(size, posted, completed, 5, 1, 1, true, true)
	if s.Peak != 0 || !near(s.Average, 10*size*1e6/120/gbFactor) || !s.Gbits {
		t.Errorf("noPeak gbits: %+v", s)
	}
}

func TestBWItersPartialLastBatch(t *testing.T) {
	// 7 requests with cq_mod 3: completions account at 2, 5 and the last
	// (6), which perftest also considers for the peak.
	posted := []int64{0, 1, 2, 3, 4, 5, 6}
	completed := make([]int64, 7)
	completed[2], completed[5], completed[6] = 30, 60, 63
	s, err := BWIters(100, posted, completed, 3, 1, 1, false, false)
	if err != nil {
		t.Fatal(err)
	}
	// Stretches from request 0: to 2 (30/3 = 10), to 5 (60/6 = 10), and
	// the extra one to the last, 6: 63/7 = 9, the best.
	if want := 100 * 1e6 / (9.0 * mbFactor); !near(s.Peak, want) {
		t.Errorf("peak %v, want %v", s.Peak, want)
	}
	if _, err := BWIters(100, posted, completed[:3], 3, 1, 1, false, false); err == nil {
		t.Error("mismatched stamp slices accepted")
	}
}

func TestBWDurationAndLatDuration(t *testing.T) {
	s, err := BWDuration(4096, 1000, 2e6, 1000, false) // 1000 x 4 KiB in 2 ms
	if err != nil {
		t.Fatal(err)
	}
	if !near(s.Average, 4096*1000/0.002/mbFactor) || !near(s.MsgRate, 0.5) {
		t.Errorf("%+v", s)
	}
	l, err := LatDuration(2, 500, 1e6, 1000, 2) // 500 round trips in 1 ms
	if err != nil {
		t.Fatal(err)
	}
	if !near(l.Avg, 1) || !near(l.TPS, 500000) {
		t.Errorf("%+v", l)
	}
	if _, err := LatDuration(2, 0, 1, 1, 1); err == nil {
		t.Error("zero iterations accepted")
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{4, 1, 3, 2})
	if s.N != 4 || s.Min != 1 || s.Max != 4 || s.Median != 2.5 || s.Mean != 2.5 || !near(s.Stdev, math.Sqrt(1.25)) {
		t.Errorf("%+v", s)
	}
	if s := Summarize([]float64{7, 1, 3}); s.Median != 3 {
		t.Errorf("odd median %v", s.Median)
	}
	if s := Summarize(nil); s.N != 0 {
		t.Errorf("empty: %+v", s)
	}
}

func TestParseCPUInfo(t *testing.T) {
	b := []byte("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 2597.551\ncache size\t: 16384 KB\nprocessor\t: 1\ncpu MHz\t\t: 1200.000\n")
	if got := parseCPUInfoMHz(b); got != 2597.551 {
		t.Errorf("got %v", got)
	}
	if got := parseCPUInfoMHz([]byte("processor : 0\nBogoMIPS : 50.00\n")); got != 0 {
		t.Errorf("arm64 cpuinfo gave %v", got)
	}
}
