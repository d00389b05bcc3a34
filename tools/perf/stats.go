// Copyright 2026 The rdmago Authors.

package perf

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// The statistics follow perftest 4.5's print_report_bw and print_report_lat
// (src/perftest_parameters.c) so that a figure here means what the same
// column means there. Times are in ticks of the cycle counter; mhz converts
// them (ticks per microsecond).

// Units of the bandwidth columns: perftest's "MB/sec" is MiB/s (0x100000
// bytes); --report_gbits gives 10^9 bits.
const (
	mbFactor = 0x100000
	gbFactor = 125000000
)

// BWStats is one line of a bandwidth report.
type BWStats struct {
	Size    int     `json:"bytes"`
	Iters   uint64  `json:"iterations"`
	Peak    float64 `json:"bw_peak"`    // MB/sec (MiB/s), or Gb/sec with Gbits
	Average float64 `json:"bw_average"` // same unit as Peak
	MsgRate float64 `json:"msg_rate_mpps"`
	Gbits   bool    `json:"gbits,omitempty"`
}

// BWIters computes the bandwidth of an iterations run. posted[i] is when work
// request i was posted (for post lists, only the first of each list is
// stamped); completed[j] is when the completion accounting for requests up to
// j arrived (every cqMod-th, and the last). The peak is the best rate of any
// stretch between a post and a later completion; the average spans the
// first post to the last completion. Peak is 0 with noPeak.
func BWIters(size int, posted, completed []int64, cqMod, postList int, mhz float64, noPeak, gbits bool) (BWStats, error) {
	n := len(posted)
	if n == 0 || len(completed) != n {
		return BWStats{}, fmt.Errorf("bandwidth: %d posts and %d completion stamps", n, len(completed))
	}
	if mhz <= 0 {
		return BWStats{}, errors.New("bandwidth: no clock rate")
	}
	if cqMod < 1 {
		cqMod = 1
	}
	if postList < 1 {
		postList = 1
	}
	ff := float64(mbFactor)
	if gbits {
		ff = gbFactor
	}
	toSec := mhz * 1e6 // ticks per second
	s := BWStats{Size: size, Iters: uint64(n), Gbits: gbits}
	total := completed[n-1] - posted[0]
	if total <= 0 {
		return s, fmt.Errorf("bandwidth: the run took %d ticks", total)
	}
	s.Average = float64(size) * float64(n) * toSec / (float64(total) * ff)
	s.MsgRate = float64(n) * toSec / (float64(total) * 1e6)
	if noPeak {
		return s, nil
	}
	best := int64(math.MaxInt64)
	for i := 0; i < n; i += postList {
		for j := (i+cqMod)/cqMod*cqMod - 1; j < n; j += cqMod {
			if t := (completed[j] - posted[i]) / int64(j-i+1); t < best {
				best = t
			}
		}
		if n%cqMod != 0 {
			j := n - 1
			if t := (completed[j] - posted[i]) / int64(j-i+1); t < best {
				best = t
			}
		}
	}
	if best > 0 && best != math.MaxInt64 {
		// perftest: (size * cycles_to_units) / (opt_delta * format_factor)
		s.Peak = float64(int64(size)*int64(toSec)) / (float64(best) * ff)
	}
	return s, nil
}

// BWDuration computes the bandwidth of a -D run: iters requests completed in
// ticks.
func BWDuration(size int, iters uint64, ticks int64, mhz float64, gbits bool) (BWStats, error) {
	if ticks <= 0 || mhz <= 0 {
		return BWStats{}, fmt.Errorf("bandwidth: sample of %d ticks at %g MHz", ticks, mhz)
	}
	ff := float64(mbFactor)
	if gbits {
		ff = gbFactor
	}
	toSec := mhz * 1e6
	return BWStats{
		Size: size, Iters: iters, Gbits: gbits,
		Average: float64(size) * float64(iters) * toSec / (float64(ticks) * ff),
		MsgRate: float64(iters) * toSec / (float64(ticks) * 1e6),
	}, nil
}

// LatStats is one line of a latency report, in microseconds.
type LatStats struct {
	Size    int     `json:"bytes"`
	Iters   uint64  `json:"iterations"`
	Min     float64 `json:"t_min_usec"`
	Max     float64 `json:"t_max_usec"`
	Typical float64 `json:"t_typical_usec"`
	Avg     float64 `json:"t_avg_usec"`
	Stdev   float64 `json:"t_stdev_usec"`
	P99     float64 `json:"p99_usec"`
	P999    float64 `json:"p99_9_usec"`
	// Duration runs report only the average and transactions per second.
	TPS float64 `json:"tps,omitempty"`
}

// latTail is perftest's LAT_MEASURE_TAIL: the largest samples dropped.
const latTail = 2

// Latency computes perftest's latency figures from the stamps of consecutive
// iterations: each sample is the time between two posts, divided by rtt
// (2 for ping-pong tests, whose samples are round trips). The samples are
// sorted and the two largest dropped; t_typical is their median, t_max the
// largest kept, the percentiles index the kept samples at ceil(n·p).
//
// perftest's t_stdev truncates each deviation to whole microseconds before
// squaring it (an int in print_report_lat); this is the exact standard
// deviation of the same samples.
func Latency(size int, stamps []int64, mhz float64, rtt int) (LatStats, error) {
	if len(stamps) < latTail+2 {
		return LatStats{}, fmt.Errorf("latency: %d samples, need at least %d iterations", len(stamps), latTail+2)
	}
	if mhz <= 0 || rtt < 1 {
		return LatStats{}, fmt.Errorf("latency: clock %g MHz, rtt factor %d", mhz, rtt)
	}
	d := make([]int64, len(stamps)-1)
	for i := range d {
		d[i] = stamps[i+1] - stamps[i]
	}
	slices.Sort(d)
	n := len(d) - latTail
	q := mhz * float64(rtt)
	us := func(t float64) float64 { return t / q }
	var sum float64
	for _, v := range d[:n] {
		sum += us(float64(v))
	}
	avg := sum / float64(n)
	var sq float64
	for _, v := range d[:n] {
		dev := avg - us(float64(v))
		sq += dev * dev
	}
	return LatStats{
		Size:    size,
		Iters:   uint64(len(stamps)),
		Min:     us(float64(d[0])),
		Max:     us(float64(d[n])),
		Typical: us(median(d[:n])),
		Avg:     avg,
		Stdev:   math.Sqrt(sq / float64(n)),
		P99:     us(float64(d[int(math.Ceil(float64(n)*0.99))])),
		P999:    us(float64(d[int(math.Ceil(float64(n)*0.999))])),
	}, nil
}

// median is perftest's get_median of sorted samples: the middle one, or the
// mean of the two middle ones for an even count.
func median(d []int64) float64 {
	n := len(d)
	if n%2 == 0 {
		return float64(d[n/2]+d[n/2-1]) / 2
	}
	return float64(d[n/2])
}

// LatDuration computes a -D latency line: iters round trips (or requests)
// in ticks.
func LatDuration(size int, iters uint64, ticks int64, mhz float64, rtt int) (LatStats, error) {
	if iters == 0 || ticks <= 0 || mhz <= 0 {
		return LatStats{}, fmt.Errorf("latency: %d iterations in %d ticks at %g MHz", iters, ticks, mhz)
	}
	us := float64(ticks) / mhz
	return LatStats{
		Size: size, Iters: iters,
		Avg: us / float64(rtt) / float64(iters),
		TPS: float64(iters) / (us / 1e6),
	}, nil
}

// Summary is the distribution of repeated measurements (of connection setup
// times, in microseconds): count, min, max, median, mean, standard deviation.
type Summary struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Stdev  float64 `json:"stdev"`
}

// Summarize describes v (which it sorts).
func Summarize(v []float64) Summary {
	if len(v) == 0 {
		return Summary{}
	}
	slices.Sort(v)
	s := Summary{N: len(v), Min: v[0], Max: v[len(v)-1]}
	if len(v)%2 == 1 {
		s.Median = v[len(v)/2]
	} else {
		s.Median = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	for _, x := range v {
		s.Mean += x
	}
	s.Mean /= float64(len(v))
	for _, x := range v {
		s.Stdev += (x - s.Mean) * (x - s.Mean)
	}
	s.Stdev = math.Sqrt(s.Stdev / float64(len(v)))
	return s
}
