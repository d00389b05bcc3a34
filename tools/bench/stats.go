// Copyright 2026 The rdmago Authors.

package bench

import (
	"math"
	"slices"
	"sort"
)

// The statistics that let the bench judge a case. Every repetition runs
// both tools back to back (the order alternating), so a repetition gives
// one paired ratio rdmago/C in which slow drift of the host cancels. The
// ratio reported is the geometric mean of the paired ratios, and its
// confidence interval is Student's t-interval on the mean of their
// logarithms, exponentiated:
//
//	d_i = ln(go_i / c_i),  mean ± t(0.975, n-1) · sd / √n  →  [e^lo, e^hi]
//
// Logs make the interval symmetric for a ratio (0.9 and 1/0.9 are equally
// far from 1) and the paired design removes the between-repetition drift
// from the variance. The interval's width is hi/lo − 1 (relative), which
// is what the adaptive repetitions drive below the target.

// tTable is the two-sided 95 % quantile of Student's t, t(0.975, df), for
// df = 1..30.
var tTable = [...]float64{
	12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
}

// tQuantile975 is t(0.975, df). Past the table it interpolates linearly in
// 1/df between 30 (2.042), 60 (2.000), 120 (1.980) and ∞ (1.960), which is
// within 0.002 of the exact value.
func tQuantile975(df int) float64 {
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(tTable):
		return tTable[df-1]
	}
	knots := []struct{ inv, t float64 }{{1.0 / 30, 2.042}, {1.0 / 60, 2.000}, {1.0 / 120, 1.980}, {0, 1.960}}
	x := 1 / float64(df)
	for i := 0; i+1 < len(knots); i++ {
		a, b := knots[i], knots[i+1]
		if x <= a.inv && x >= b.inv {
			return b.t + (a.t-b.t)*(x-b.inv)/(a.inv-b.inv)
		}
	}
	return 1.960
}

// ratioCI is the paired-ratio estimate of one case.
type ratioCI struct {
	N     int     // pairs
	Ratio float64 // geometric mean of the paired ratios
	Lo    float64 // 95 % interval; 0 with fewer than two pairs
	Hi    float64
}

// Width is the interval's relative width hi/lo − 1 (+Inf without an
// interval).
func (r ratioCI) Width() float64 {
	if r.N < 2 || r.Lo <= 0 {
		return math.Inf(1)
	}
	return r.Hi/r.Lo - 1
}

// pairedRatioCI computes the estimate from paired ratios rdmago/C (each
// > 0; others are ignored).
func pairedRatioCI(ratios []float64) ratioCI {
	var d []float64
	for _, r := range ratios {
		if r > 0 && !math.IsInf(r, 0) && !math.IsNaN(r) {
			d = append(d, math.Log(r))
		}
	}
	n := len(d)
	if n == 0 {
		return ratioCI{}
	}
	mean := 0.0
	for _, x := range d {
		mean += x
	}
	mean /= float64(n)
	out := ratioCI{N: n, Ratio: math.Exp(mean)}
	if n < 2 {
		return out
	}
	ss := 0.0
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	half := tQuantile975(n-1) * math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	out.Lo, out.Hi = math.Exp(mean-half), math.Exp(mean+half)
	return out
}

// Verdicts of a case against its goal.
const (
	verdictMeets   = "meets"
	verdictMisses  = "misses"
	verdictNoise   = "within noise"
	verdictNoPairs = "too few pairs"
)

// verdict judges an interval against a goal: higherBetter means the ratio
// must be at least limit (bandwidth), otherwise at most limit (latency).
// "within noise" only when the interval straddles the limit.
func verdict(ci ratioCI, higherBetter bool, limit float64) string {
	if ci.N < 2 || ci.Lo <= 0 {
		return verdictNoPairs
	}
	if higherBetter {
		switch {
		case ci.Lo >= limit:
			return verdictMeets
		case ci.Hi < limit:
			return verdictMisses
		}
		return verdictNoise
	}
	switch {
	case ci.Hi <= limit:
		return verdictMeets
	case ci.Lo > limit:
		return verdictMisses
	}
	return verdictNoise
}

// pairedRatios pairs a case's samples by repetition: one ratio rdmago/C
// per repetition that has a figure from both tools.
func pairedRatios(c *benchCase) []float64 {
	byRep := map[int]float64{}
	for _, x := range c.C {
		byRep[x.Rep] = x.Value
	}
	var reps []int
	goByRep := map[int]float64{}
	for _, x := range c.Go {
		if cv, ok := byRep[x.Rep]; ok && cv > 0 && x.Value > 0 {
			goByRep[x.Rep] = x.Value
			reps = append(reps, x.Rep)
		}
	}
	sort.Ints(reps)
	reps = slices.Compact(reps)
	r := make([]float64, len(reps))
	for i, rep := range reps {
		r[i] = goByRep[rep] / byRep[rep]
	}
	return r
}

// needsMore says whether a case should get another repetition: its
// interval is not yet narrower than target (relative width).
func needsMore(c *benchCase, target float64) bool {
	return pairedRatioCI(pairedRatios(c)).Width() >= target
}
