// Copyright 2026 The rdmago Authors.

package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/tools/perf"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestTQuantile975(t *testing.T) {
	// Published values of t(0.975, df).
	for _, c := range []struct {
		df   int
		want float64
	}{{1, 12.706}, {2, 4.303}, {4, 2.776}, {9, 2.262}, {30, 2.042}, {40, 2.021}, {60, 2.000}, {120, 1.980}, {1000, 1.962}} {
		if got := tQuantile975(c.df); !near(got, c.want, 0.002) {
			t.Errorf("t(0.975, %d) = %.4f, want %.3f", c.df, got, c.want)
		}
	}
	if !math.IsInf(tQuantile975(0), 1) {
		t.Error("df 0 has a finite quantile")
	}
}

func TestPairedRatioCI(t *testing.T) {
	// Golden values computed independently: exp(mean(ln r) ± t·sd/√n).
	for _, c := range []struct {
		r             []float64
		ratio, lo, hi float64
	}{
		{[]float64{1.1, 1.2, 1.0}, 1.096961, 0.874583, 1.375884},
		{[]float64{0.95, 1.0, 0.97, 0.99, 0.96, 0.98}, 0.974850, 0.955410, 0.994687},
		{[]float64{1.10, 1.12, 1.08, 1.11, 1.09}, 1.099909, 1.080453, 1.119715},
	} {
		ci := pairedRatioCI(c.r)
		if ci.N != len(c.r) || !near(ci.Ratio, c.ratio, 1e-5) || !near(ci.Lo, c.lo, 1e-4) || !near(ci.Hi, c.hi, 1e-4) {
			t.Errorf("%v: %+v, want %.6f [%.6f, %.6f]", c.r, ci, c.ratio, c.lo, c.hi)
		}
		if w := ci.Width(); !near(w, c.hi/c.lo-1, 1e-4) {
			t.Errorf("%v: width %.5f", c.r, w)
		}
	}
	// The interval is symmetric on a log scale: inverting every ratio
	// inverts the estimate and swaps the ends.
	a, b := pairedRatioCI([]float64{1.1, 1.2, 1.0}), pairedRatioCI([]float64{1 / 1.1, 1 / 1.2, 1})
	if !near(a.Ratio*b.Ratio, 1, 1e-12) || !near(a.Lo*b.Hi, 1, 1e-12) {
		t.Errorf("not log-symmetric: %+v %+v", a, b)
	}
	// One pair: an estimate, no interval. Unusable ratios are dropped.
	if ci := pairedRatioCI([]float64{1.2, 0, math.Inf(1), math.NaN()}); ci.N != 1 || ci.Ratio != 1.2 || ci.Lo != 0 || !math.IsInf(ci.Width(), 1) {
		t.Errorf("one pair: %+v", ci)
	}
	if ci := pairedRatioCI(nil); ci.N != 0 || ci.Ratio != 0 {
		t.Errorf("no pairs: %+v", ci)
	}
	// Identical ratios: a zero-width interval.
	if ci := pairedRatioCI([]float64{0.9, 0.9, 0.9}); !near(ci.Lo, 0.9, 1e-12) || !near(ci.Hi, 0.9, 1e-12) || ci.Width() > 1e-12 {
		t.Errorf("constant: %+v", ci)
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		higher bool
		limit  float64
		want   string
	}{
		// Bandwidth, goal ≥ 1.00.
		{1.00, 1.04, true, 1.00, verdictMeets},
		{1.01, 1.30, true, 1.00, verdictMeets},
		{0.90, 0.99, true, 1.00, verdictMisses},
		{0.97, 1.02, true, 1.00, verdictNoise},
		{0.97, 1.00, true, 1.00, verdictNoise}, // the goal itself is inside
		// Latency, goal ≤ 1.05.
		{0.98, 1.05, false, 1.05, verdictMeets},
		{1.06, 1.12, false, 1.05, verdictMisses},
		{1.02, 1.08, false, 1.05, verdictNoise},
		{1.05, 1.09, false, 1.05, verdictNoise},
	} {
		ci := ratioCI{N: 5, Ratio: math.Sqrt(c.lo * c.hi), Lo: c.lo, Hi: c.hi}
		if got := verdict(ci, c.higher, c.limit); got != c.want {
			t.Errorf("[%.2f, %.2f] against %v %.2f: %q, want %q", c.lo, c.hi, map[bool]string{true: "≥", false: "≤"}[c.higher], c.limit, got, c.want)
		}
	}
	if got := verdict(ratioCI{N: 1, Ratio: 2}, true, 1); got != verdictNoPairs {
		t.Errorf("one pair: %q", got)
	}
}

func TestPairedRatiosAndNeedsMore(t *testing.T) {
	c := &benchCase{Test: "send_bw", Size: 4096,
		// rep 2 has no C figure (a glitch given up), rep 4 no rdmago figure.
		Go: []sample{{Rep: 3, Value: 30}, {Rep: 1, Value: 10}, {Rep: 2, Value: 20}},
		C:  []sample{{Rep: 1, Value: 10}, {Rep: 3, Value: 25}, {Rep: 4, Value: 9}}}
	r := pairedRatios(c)
	if len(r) != 2 || r[0] != 1 || r[1] != 1.2 {
		t.Fatalf("pairs %v, want [1 1.2] (reps 1 and 3)", r)
	}
	if !needsMore(c, 0.05) {
		t.Error("two pairs 20 % apart are narrow enough")
	}
	c.Go = []sample{{Rep: 1, Value: 10}, {Rep: 2, Value: 10.1}, {Rep: 3, Value: 9.9}, {Rep: 4, Value: 10}}
	c.C = []sample{{Rep: 1, Value: 10}, {Rep: 2, Value: 10}, {Rep: 3, Value: 10}, {Rep: 4, Value: 10}}
	if needsMore(c, 0.05) {
		t.Errorf("ratios within ±1 %% need more: %+v", pairedRatioCI(pairedRatios(c)))
	}
}

// fakeRuns plays the lab: figures per (case, tool) in order, an error
// string to return instead where the figure is negative.
type fakeRuns struct {
	figs  map[string][]float64
	errs  map[string][]string
	calls []string
}

func (f *fakeRuns) run(c *benchCase, tool string, rep int) (*sample, error) {
	k := caseName(c) + "/" + tool
	f.calls = append(f.calls, fmt.Sprintf("%s rep%d", k, rep+1))
	if e := f.errs[k]; len(e) > 0 {
		f.errs[k] = e[1:]
		if e[0] != "" {
			if g := perf.PerftestGlitch(e[0]); g != "" && tool == "C" {
				return nil, glitchError{g}
			}
			return nil, errors.New(e[0])
		}
	}
	v := f.figs[k]
	if len(v) == 0 {
		return nil, errors.New("fake: out of figures")
	}
	f.figs[k] = v[1:]
	return &sample{Rep: rep + 1, Value: v[0]}, nil
}

func TestRepeatAdaptiveAndGlitches(t *testing.T) {
	o := DefaultOptions()
	o.Reps, o.MaxReps, o.CIWidth, o.Retries, o.Budget = 3, 6, 0.05, 2, 0
	b := &bencher{o: o, log: io.Discard, rep: &Report{}, nodes: 1}
	f := &fakeRuns{
		figs: map[string][]float64{
			// Steady at 1.00: narrow after the 3 first rounds.
			"write_bw/rdmago": {10, 10.01, 9.99},
			"write_bw/C":      {10, 10, 10},
			// Noisy: runs to the cap of 6.
			"send_lat/rdmago": {10, 13, 9, 12, 10, 14},
			"send_lat/C":      {10, 10, 10, 10, 10, 10},
		},
		errs: map[string][]string{
			// Rep 1 of send_lat's C: one glitch, then a figure. Rep 2: a
			// figure. Rep 3: three glitches (Retries+1): given up.
			"send_lat/C": {"Correlation coefficient r^2: 0.47 < 0.9", "", "", "Correlation coefficient r^2: 0.5 < 0.9", "Correlation coefficient r^2: 0.6 < 0.9", "result 0 is not positive:\nCorrelation coefficient r^2: 0.7 < 0.9"},
		},
	}
	b.run = f.run
	steady := &benchCase{Nodes: 1, Test: "write_bw", Size: 4096}
	noisy := &benchCase{Nodes: 1, Test: "send_lat", Size: 2}
	if err := b.repeat(context.Background(), []*benchCase{steady, noisy}, 1); err != nil {
		t.Fatal(err)
	}
	if steady.Reps != 3 || steady.Stop != "narrow" || len(steady.Go) != 3 || len(steady.C) != 3 {
		t.Errorf("steady: %d reps, stop %q, %d/%d samples", steady.Reps, steady.Stop, len(steady.Go), len(steady.C))
	}
	if noisy.Reps != 6 || noisy.Stop != "cap" || len(noisy.Go) != 6 || len(noisy.C) != 5 {
		t.Errorf("noisy: %d reps, stop %q, %d/%d samples", noisy.Reps, noisy.Stop, len(noisy.Go), len(noisy.C))
	}
	if n := len(pairedRatios(noisy)); n != 5 {
		t.Errorf("noisy: %d pairs, want 5 (rep 3 given up)", n)
	}
	if len(b.rep.Failures) != 0 {
		t.Errorf("glitches counted as failures: %+v", b.rep.Failures)
	}
	if len(b.rep.Glitches) != 2 {
		t.Fatalf("glitches %+v", b.rep.Glitches)
	}
	g0, g1 := b.rep.Glitches[0], b.rep.Glitches[1]
	if g0.Case != "1 node(s), send_lat 2 B, rep 1" || g0.Tries != 1 || !g0.Resolved || g0.Reasons[0] != "Correlation coefficient r^2: 0.47 < 0.9" {
		t.Errorf("first glitch %+v", g0)
	}
	if g1.Case != "1 node(s), send_lat 2 B, rep 3" || g1.Tries != 3 || g1.Resolved {
		t.Errorf("second glitch %+v", g1)
	}
	// Both tools run back to back in every round, the order alternating.
	want := []string{"write_bw/rdmago rep1", "write_bw/C rep1", "send_lat/C rep1", "send_lat/C rep1", "send_lat/rdmago rep1",
		"write_bw/C rep2", "write_bw/rdmago rep2"}
	if len(f.calls) < len(want) || strings.Join(f.calls[:len(want)], ",") != strings.Join(want, ",") {
		t.Errorf("order %v", f.calls)
	}
	// An ordinary failure of the C tool is a failure.
	b.rep = &Report{}
	f.errs["write_bw/C"] = []string{"client exit status 1"}
	f.figs["write_bw/rdmago"], f.figs["write_bw/C"] = []float64{1}, []float64{1}
	if _, err := b.runChecked(steady, "C", 0); err == nil || errors.Is(err, errGlitch) || len(b.rep.Glitches) != 0 {
		t.Errorf("plain failure: %v, glitches %+v", err, b.rep.Glitches)
	}
}
