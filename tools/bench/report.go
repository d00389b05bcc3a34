// Copyright 2026 The rdmago Authors.

package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// The report: medians over the repetitions and the spread (min–max) of
// each tool; the ratio rdmago/C is the geometric mean of the per-repetition
// paired ratios with its 95 % t-interval (stats.go), and the verdict
// against the goal comes from that interval.

// caseStats summarises one case.
type caseStats struct {
	GoMedian float64 `json:"rdmago_median"`
	GoMin    float64 `json:"rdmago_min"`
	GoMax    float64 `json:"rdmago_max"`
	CMedian  float64 `json:"c_median"`
	CMin     float64 `json:"c_min"`
	CMax     float64 `json:"c_max"`
	Ratio    float64 `json:"ratio"`    // geometric mean of the paired ratios rdmago/C
	CILo     float64 `json:"ci95_lo"`  // 95 % t-interval of Ratio (log scale); 0 with < 2 pairs
	CIHi     float64 `json:"ci95_hi"`  //
	CIWidth  float64 `json:"ci_width"` // CIHi/CILo − 1; 0 without an interval
	RatioMin float64 `json:"ratio_min"`
	RatioMax float64 `json:"ratio_max"`
	Pairs    int     `json:"pairs"`
	Goal     string  `json:"goal,omitempty"`    // "≥ 1.00", "≤ 1.05"
	Verdict  string  `json:"verdict,omitempty"` // "meets", "misses", "within noise", "too few pairs"
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func values(ss []sample) []float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = s.Value
	}
	return v
}

// goalOf is the project's goal for a case: bandwidth at least the C tool's
// from 4 KiB up, latency within 5% for 2 B to 4 KiB.
func goalOf(c *benchCase) (goal string, higherBetter bool, limit float64) {
	if isBW(c.Test) {
		if c.Size >= 4096 {
			return "≥ 1.00", true, 1.00
		}
		return "", true, 0
	}
	if c.Size >= 2 && c.Size <= 4096 {
		return "≤ 1.05", false, 1.05
	}
	return "", false, 0
}

func caseStatsOf(c *benchCase) caseStats {
	var s caseStats
	g, cv := values(c.Go), values(c.C)
	if len(g) > 0 {
		s.GoMedian, s.GoMin, s.GoMax = median(g), slices.Min(g), slices.Max(g)
	}
	if len(cv) > 0 {
		s.CMedian, s.CMin, s.CMax = median(cv), slices.Min(cv), slices.Max(cv)
	}
	pr := pairedRatios(c)
	ci := pairedRatioCI(pr)
	s.Pairs, s.Ratio, s.CILo, s.CIHi = ci.N, ci.Ratio, ci.Lo, ci.Hi
	if w := ci.Width(); !math.IsInf(w, 0) {
		s.CIWidth = w
	}
	if len(pr) > 0 {
		s.RatioMin, s.RatioMax = slices.Min(pr), slices.Max(pr)
	}
	goal, higher, limit := goalOf(c)
	s.Goal = goal
	if goal != "" && s.Pairs > 0 {
		s.Verdict = verdict(ci, higher, limit)
	}
	return s
}

// readReport reads a report.json a previous run wrote (--compare).
func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--compare: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("--compare %s: not a report.json of rdmalab bench: %w", path, err)
	}
	return &r, nil
}

// sameCase says whether two cases are the same comparison.
func sameCase(a, b *benchCase) bool {
	return a.Nodes == b.Nodes && a.Test == b.Test && a.Atomic == b.Atomic && a.Polls == b.Polls && a.Size == b.Size
}

// compareLines renders this run's ratios against a previous run's, case by
// case: the change is called only when the two 95 % intervals do not
// overlap.
func compareLines(r *Report) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("## Against %s (%s)\n\n", r.BeforeFile, r.Before.Date)
	p("A change is called only where the two 95 %% intervals do not overlap.\n\n")
	p("| topology | test | size | before [95 %% CI] | now [95 %% CI] | change |\n|---|---|---:|---|---|---|\n")
	for _, c := range r.Cases {
		var old *benchCase
		for _, o := range r.Before.Cases {
			if sameCase(o, c) {
				old = o
			}
		}
		if old == nil {
			continue
		}
		o, n := old.Stats, c.Stats
		change := "none beyond the noise"
		switch {
		case o.Pairs < 2 || n.Pairs < 2:
			change = "too few pairs"
		case n.CILo > o.CIHi:
			change = "ratio up"
		case n.CIHi < o.CILo:
			change = "ratio down"
		}
		p("| %d VM | %s | %s | %.3f [%.3f–%.3f] | %.3f [%.3f–%.3f] | %s |\n", c.Nodes, caseName(c), sizeName(c.Size), o.Ratio, o.CILo, o.CIHi, n.Ratio, n.CILo, n.CIHi, change)
	}
	p("\n")
	return b.String()
}

// writeBenchReport writes report.json, report.md and bw.png into dir.
func writeBenchReport(r *Report, dir string) error {
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(j, '\n'), 0o644); err != nil {
		return err
	}
	png, err := bwChart(r)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "bw.png"), png, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.md"), []byte(benchMarkdown(r)), 0o644)
}

func topoName(n int) string {
	if n == 1 {
		return "one VM (rxe loopback)"
	}
	return "two VMs (RoCEv2 over the emulated wire)"
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

func fig(v float64) string {
	switch {
	case v == 0:
		return "–"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// benchMarkdown renders the report.
func benchMarkdown(r *Report) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# rdmago (rdmaperf) vs rdma-core (perftest)\n\n")
	if r.Options.Short {
		p("**Short mode** (`rdmalab bench --short`): a handful of cases to compare a change before and after; it reports and never fails on speed.\n\n")
	}
	p("Both tools ran in the same guests of the same boot, on %s. Every repetition runs each case with both tools back to back (which one goes first alternating), so host drift hits both alike and every repetition gives one paired ratio. ", r.Kernel)
	p("Figures are medians over the repetitions with the spread (min–max) in brackets. ")
	p("The ratio rdmago/C is the geometric mean of the paired ratios; its 95 %% confidence interval is Student's t-interval on the mean of their logarithms (mean ± t(0.975, n−1)·sd/√n, exponentiated), and n is the number of pairs. ")
	p("After %d repetitions a case got more (at most %d in all", r.Reps, r.Options.MaxReps)
	if r.Options.Budget > 0 {
		p(", none started past %.0f s per topology", r.Options.Budget)
	}
	p(") while its interval was %.0f %% wide or wider (hi/lo − 1). ", 100*r.Options.CIWidth)
	p("Verdict: \"meets\" when the whole interval is on the goal's side, \"misses\" when the whole interval is on the other side, \"within noise\" only when it straddles the goal. ")
	p("Bandwidth is perftest's \"BW average\" in MB/sec (MiB/s); latency is t_typical (the median sample) in µs. ")
	p("Absolute figures under software emulation (TCG) mean little; the ratios are the point.\n\n")
	if r.Options.ICount {
		p("**Instruction clock** (`--icount`): the guest ran on one vCPU under QEMU's `-icount shift=0,sleep=off`, where every guest instruction is 1 ns of the guest's time and, when nothing is runnable, the guest's clock jumps to its next timer instead of waiting in the host's time. ")
		p("A figure is therefore the work of the guest's CPU (the tool's, the kernel's and rxe's) and the host's load does not reach it; MB/sec here is MiB per 10⁹ guest instructions, including the other process's and the kernel's. ")
		p("Two polling processes on one vCPU would take turns at the scheduler's tick, so only the tests with one polling side run: bandwidth, read_lat and atomic_lat (the server's program waits while its device answers), and, on 6.1, send_lat as two half-polling cases, \"client-polls\" and \"server-polls\": the compared tool runs that side, polling, and the other side is perftest's `ib_send_lat -e` (sleeping on completion events) for both tools, whose wake-up takes the CPU at once; the figure is the client's. write_lat (both sides spin on memory) does not run.\n\n")
	}
	p("| | |\n|---|---|\n")
	p("| date | %s |\n| guest kernel | %s |\n| host CPU | %s |\n| Go | %s |\n| perftest | %s |\n", r.Date, r.Kernel, r.HostCPU, r.GoVersion, r.Perftest)
	var clocks []string
	for k, v := range r.ClockMHz {
		clocks = append(clocks, k+": "+v)
	}
	sort.Strings(clocks)
	p("| guest clock (cpu MHz) | %s |\n", strings.Join(clocks, "; "))
	var sources []string
	for k, v := range r.Clocksource {
		sources = append(sources, k+": "+v)
	}
	sort.Strings(sources)
	if len(sources) > 0 {
		p("| guest clock source | %s |\n", strings.Join(sources, "; "))
	}
	args := "none"
	if len(r.KernelArgs) > 0 {
		args = "`" + strings.Join(r.KernelArgs, " ") + "`"
	}
	if r.Options.ICount {
		p("| guest time | instructions (`-icount shift=0,sleep=off`), 1 vCPU |\n")
	}
	p("| extra kernel parameters | %s |\n| elapsed | %.0f s |\n\n", args, r.Elapsed)

	p("## Goals\n\n")
	p("| goal | result |\n|---|---|\n")
	for _, line := range goalLines(r) {
		p("| %s | %s |\n", line[0], line[1])
	}
	p("\n")

	if r.Before != nil {
		p("%s", compareLines(r))
	}

	for _, n := range r.Topologies {
		var cs []*benchCase
		for _, c := range r.Cases {
			if c.Nodes == n {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		p("## %s\n\n", strings.ToUpper(topoName(n)[:1])+topoName(n)[1:])
		p("| test | size | iters | metric | rdmago | perftest (C) | ratio rdmago/C [95 %% CI] | CI width | n | per-rep ratios | goal | verdict |\n|---|---:|---:|---|---|---|---|---:|---:|---|---|---|\n")
		for _, c := range cs {
			s := c.Stats
			ci, width := "", "–"
			if s.Pairs >= 2 {
				ci = fmt.Sprintf(" [%.3f–%.3f]", s.CILo, s.CIHi)
				width = fmt.Sprintf("%.1f %%", 100*s.CIWidth)
				if c.Stop == "cap" || c.Stop == "budget" {
					width += " (" + c.Stop + ")"
				}
			}
			p("| %s | %s | %d | %s | %s [%s–%s] | %s [%s–%s] | **%.3f**%s | %s | %d | %.2f–%.2f | %s | %s |\n",
				caseName(c), sizeName(c.Size), c.Iters, c.Metric,
				fig(s.GoMedian), fig(s.GoMin), fig(s.GoMax), fig(s.CMedian), fig(s.CMin), fig(s.CMax),
				s.Ratio, ci, width, s.Pairs, s.RatioMin, s.RatioMax, s.Goal, s.Verdict)
		}
		p("\n")
	}
	if len(r.Cases) > 0 {
		p("![bandwidth vs message size](bw.png)\n\n")
	}

	if len(r.Syscalls) > 0 {
		p("## System calls per operation\n\n")
		p("`strace -f -c` of the client at two iteration counts; the difference in calls divided by the difference in iterations, so setup and teardown cancel. rdmaperf's own count of its loop (read/write-class calls from /proc/self/io) is in the last column.\n\n")
		p("| topology | test | tool | iterations | syscalls/op | per call | rdmaperf self-count/op |\n|---|---|---|---|---:|---|---:|\n")
		for _, s := range r.Syscalls {
			var parts []string
			for k, v := range s.PerOp {
				parts = append(parts, fmt.Sprintf("%s %.3f", k, v))
			}
			sort.Strings(parts)
			self := ""
			if s.Self != nil {
				self = fmt.Sprintf("%.3f", s.SelfOp)
			}
			tool := "rdmaperf"
			if s.Tool == "C" {
				tool = "ib_" + s.Test
			}
			p("| %d VM | %s %s | %s | %d→%d | %.3f | %s | %s |\n", s.Nodes, s.Test, sizeName(s.Size), tool, s.Iters[0], s.Iters[1], s.Total, strings.Join(parts, ", "), self)
		}
		p("\n")
	}

	if len(r.Conn) > 0 {
		p("## rdma_cm connection setup\n\n")
		p("rdmaperf conn_time: cm.Dial from its start to its return with the connection ESTABLISHED (create id, resolve address and route, open/share the device, PD, CQs, QP, connect, RTU), connections one after another. cmtime -c 1, one process per connection: the sum of its create id, resolve addr, resolve route, create qp and connect steps.\n\n")
		p("| topology | rdmago median [min–max] µs | cmtime median [min–max] µs | ratio |\n|---|---|---|---|\n")
		for _, c := range r.Conn {
			ratio := 0.0
			if c.C.Median > 0 {
				ratio = c.Go.Median / c.C.Median
			}
			p("| %s | %s [%s–%s] (n=%d) | %s [%s–%s] (n=%d) | %.2f |\n", topoName(c.Nodes), fig(c.Go.Median), fig(c.Go.Min), fig(c.Go.Max), c.Go.N, fig(c.C.Median), fig(c.C.Min), fig(c.C.Max), c.C.N, ratio)
		}
		p("\ncmtime's steps (median µs): ")
		for _, c := range r.Conn {
			var parts []string
			for _, st := range append(cmtimeConnectSteps, "disconnect", "destroy") {
				if s, ok := c.CStep[st]; ok {
					parts = append(parts, fmt.Sprintf("%s %s", st, fig(s.Median)))
				}
			}
			p("%d VM: %s. ", c.Nodes, strings.Join(parts, ", "))
		}
		p("\n\n")
	}

	if len(r.Host) > 0 {
		p("## Host: post + poll on fake rings\n\n")
		p("`go test -bench PostPoll -benchmem ./uverbs` (the rings in ordinary memory, the test playing the kernel; the doorbell write is not made), median of %d runs.\n\n", r.Host[0].Runs)
		p("| benchmark | ns/op | ns per work request | allocs/op | B/op |\n|---|---:|---:|---:|---:|\n")
		for _, h := range r.Host {
			p("| %s | %.1f | %.1f | %g | %g |\n", h.Name, h.NsPerOp, h.NsPerWR, h.AllocsPerOp, h.BytesPerOp)
		}
		p("\n")
	}

	if len(r.Profiles) > 0 {
		p("## Profiles of rdmaperf (pprof -top)\n\n")
		var keys []string
		for k := range r.Profiles {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p("### %s\n\n```\n%s```\n\n", k, r.Profiles[k])
		}
	}

	if len(r.Glitches) > 0 {
		p("## Reference runs repeated (perftest glitches)\n\n")
		p("A perftest run whose output shows a known glitch of the C tool under emulation (its cycle-counter calibration failing its own check, \"Correlation coefficient r^2 < 0.9\", after which its figures are 0, inf or nonsense) was repeated, up to %d times; its figures were not used. These are not failures of the bench.\n\n", r.Options.Retries)
		p("| run | glitched tries | outcome | glitch |\n|---|---:|---|---|\n")
		for _, g := range r.Glitches {
			out := "repeated, then measured"
			if !g.Resolved {
				out = "given up: no pair for this repetition"
			}
			p("| %s | %d | %s | `%s` |\n", g.Case, g.Tries, out, g.Reasons[len(g.Reasons)-1])
		}
		p("\n")
	}

	if len(r.Failures) > 0 {
		p("## Failures\n\n")
		for _, f := range r.Failures {
			p("- %s\n\n```\n%s\n```\n", f.What, strings.TrimSpace(f.Output))
		}
		p("\n")
	}
	kernel := kernelFlag(r.Kernel)
	// The kernel parameters are always spelled out: the default differs
	// between rdmalab's versions.
	appendArg := "''"
	if len(r.KernelArgs) > 0 {
		appendArg = "'" + strings.Join(r.KernelArgs, " ") + "'"
	}
	icount := ""
	if r.Options.ICount {
		icount = " --icount"
	}
	if r.Options.Short {
		p("## Reproduce\n\n```sh\ngo run ./cmd/rdmalab bench --short%s --kernel %s --append %s\n```\n", icount, kernel, appendArg)
	} else {
		// The run's sizes and sections too: a latency run's iterations
		// change what t_typical is the median of.
		o := r.Options
		p("## Reproduce\n\n```sh\ngo run ./cmd/rdmalab bench%s --kernel %s --append %s --nodes %s --reps %d --max-reps %d --ci-width %g --tests %s --bw-sizes %s --lat-sizes %s"+
			" --bw-bytes %d --min-iters %d --max-iters %d --lat-iters %d --lat-iters-2 %d --budget %v --glitch-retries %d --syscalls=%t --conn=%t --host=%t\n```\n",
			icount, kernel, appendArg, joinInts(r.Topologies), r.Reps, o.MaxReps, o.CIWidth, strings.Join(o.Tests, ","), joinInts(o.BWSizes), joinInts(o.LatSizes),
			o.BWBytes, o.MinIters, o.MaxIters, o.LatIters, o.LatIters2, time.Duration(o.Budget*float64(time.Second)), o.Retries, o.Syscalls, o.ConnSetup, o.HostBench)
	}
	return b.String()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}

// goalLines summarises the goals with the numbers behind them.
func goalLines(r *Report) [][2]string {
	var out [][2]string
	summarise := func(name string, pick func(*benchCase) bool) {
		var total int
		count := map[string]int{}
		var worst *benchCase
		for _, c := range r.Cases {
			if !pick(c) || c.Stats.Goal == "" || c.Stats.Ratio == 0 {
				continue
			}
			total++
			count[c.Stats.Verdict]++
			if worst == nil || (isBW(c.Test) && c.Stats.Ratio < worst.Stats.Ratio) || (!isBW(c.Test) && c.Stats.Ratio > worst.Stats.Ratio) {
				worst = c
			}
		}
		if total == 0 {
			return
		}
		res := fmt.Sprintf("%d cases: %d meet, %d miss, %d within noise", total, count[verdictMeets], count[verdictMisses], count[verdictNoise])
		if k := count[verdictNoPairs]; k > 0 {
			res += fmt.Sprintf(", %d too few pairs", k)
		}
		if worst != nil {
			res += fmt.Sprintf("; worst: %s %s on %d VM: %.3f [95 %% CI %.3f–%.3f]", caseName(worst), sizeName(worst.Size), worst.Nodes, worst.Stats.Ratio, worst.Stats.CILo, worst.Stats.CIHi)
		}
		out = append(out, [2]string{name, res})
	}
	summarise("BW ratio ≥ 1.00 from 4 KiB up (write/read/send)", func(c *benchCase) bool { return isBW(c.Test) })
	summarise("latency ratio ≤ 1.05 (t_typical), 2 B–4 KiB", func(c *benchCase) bool { return !isBW(c.Test) })
	var allocs []string
	maxAlloc, totAlloc, totOps := uint64(0), uint64(0), uint64(0)
	maxPerOp := 0.0
	runs := 0
	for _, c := range r.Cases {
		for _, s := range c.Go {
			if s.Run != nil && s.Run.Counters != nil && s.Run.Ops > 0 {
				runs++
				m := s.Run.Counters.Mallocs
				maxAlloc = max(maxAlloc, m)
				totAlloc += m
				totOps += s.Run.Ops
				maxPerOp = max(maxPerOp, float64(m)/float64(s.Run.Ops))
			}
		}
	}
	if runs > 0 {
		allocs = append(allocs, fmt.Sprintf("lab: %d heap allocations in %d operations over %d measured loops (at most %d in one loop, %.4f/op; process-wide, so background goroutines count)",
			totAlloc, totOps, runs, maxAlloc, maxPerOp))
	}
	for _, h := range r.Host {
		allocs = append(allocs, fmt.Sprintf("host %s: %g allocs/op", strings.TrimPrefix(h.Name, "Benchmark"), h.AllocsPerOp))
	}
	if len(allocs) > 0 {
		out = append(out, [2]string{"0 allocs/op", strings.Join(allocs, "; ")})
	}
	var bells []string
	worstBell := 0.0
	bellRuns := 0
	for _, c := range r.Cases {
		for _, s := range c.Go {
			if s.Run != nil && s.Run.Posts > 0 {
				bellRuns++
				worstBell = max(worstBell, float64(s.Run.Doorbells)/float64(s.Run.Posts))
			}
		}
	}
	if bellRuns > 0 {
		bells = append(bells, fmt.Sprintf("doorbells per post: at most %.3f over %d runs (every post here is one WR; the lab test checks -l 8 rings once per list)", worstBell, bellRuns))
	}
	if len(bells) > 0 {
		out = append(out, [2]string{"one doorbell per posted list", strings.Join(bells, "")})
	}
	var sys []string
	for _, s := range r.Syscalls {
		if s.Tool != "rdmago" {
			continue
		}
		var c *syscallCase
		for _, o := range r.Syscalls {
			if o.Tool == "C" && o.Test == s.Test && o.Nodes == s.Nodes {
				c = o
			}
		}
		line := fmt.Sprintf("%d VM %s: rdmaperf %.3f/op", s.Nodes, s.Test, s.Total)
		if c != nil {
			line += fmt.Sprintf(" vs %s %.3f/op", "ib_"+s.Test, c.Total)
		}
		sys = append(sys, line)
	}
	if len(sys) > 0 {
		out = append(out, [2]string{"no syscall per poll (one write per post)", strings.Join(sys, "; ")})
	}
	return out
}

// kernelFlag is rdmalab's --kernel for a guest's uname -r: its major and
// minor version ("6.1.0-56-amd64" is 6.1, "6.12.118+deb13-amd64" 6.12).
func kernelFlag(uname string) string {
	if f := strings.SplitN(uname, ".", 3); len(f) >= 2 {
		return f[0] + "." + f[1]
	}
	return uname
}
