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
)

// The report: medians over the repetitions, the spread (min–max) of each
// tool, and the ratio rdmago/C of the medians with the range of the per-rep
// ratios (each rep's two runs were interleaved, so pairing them by rep
// cancels slow drift of the machine).

// caseStats summarises one case.
type caseStats struct {
	GoMedian float64 `json:"rdmago_median"`
	GoMin    float64 `json:"rdmago_min"`
	GoMax    float64 `json:"rdmago_max"`
	CMedian  float64 `json:"c_median"`
	CMin     float64 `json:"c_min"`
	CMax     float64 `json:"c_max"`
	Ratio    float64 `json:"ratio"` // rdmago median / C median
	RatioMin float64 `json:"ratio_min"`
	RatioMax float64 `json:"ratio_max"`
	Pairs    int     `json:"pairs"`
	Goal     string  `json:"goal,omitempty"`    // "≥ 1.00", "≤ 1.05"
	Verdict  string  `json:"verdict,omitempty"` // "met", "not met", "within spread"
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
	if strings.HasSuffix(c.Test, "_bw") {
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
	if s.GoMedian > 0 && s.CMedian > 0 {
		s.Ratio = s.GoMedian / s.CMedian
	}
	byRep := map[int]float64{}
	for _, x := range c.C {
		byRep[x.Rep] = x.Value
	}
	s.RatioMin, s.RatioMax = math.Inf(1), math.Inf(-1)
	for _, x := range c.Go {
		if cval, ok := byRep[x.Rep]; ok && cval > 0 {
			r := x.Value / cval
			s.RatioMin, s.RatioMax = min(s.RatioMin, r), max(s.RatioMax, r)
			s.Pairs++
		}
	}
	if s.Pairs == 0 {
		s.RatioMin, s.RatioMax = 0, 0
	}
	goal, higher, limit := goalOf(c)
	s.Goal = goal
	if goal != "" && s.Ratio > 0 {
		met := s.Ratio >= limit
		if !higher {
			met = s.Ratio <= limit
		}
		switch {
		case met:
			s.Verdict = "met"
		case higher && s.RatioMax >= limit, !higher && s.RatioMin <= limit:
			s.Verdict = "within spread"
		default:
			s.Verdict = "not met"
		}
	}
	return s
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
	p("Both tools ran in the same guests of the same boot, one after the other for every case and repetition (the order alternating), on %s. ", r.Kernel)
	p("Figures are medians of %d repetitions with the spread (min–max) in brackets; the ratio is rdmago/C of the medians, with the range of the per-repetition ratios. ", r.Reps)
	p("Bandwidth is perftest's \"BW average\" in MB/sec (MiB/s); latency is t_typical (the median sample) in µs. ")
	p("Absolute figures under software emulation (TCG) mean little; the ratios are the point.\n\n")
	p("| | |\n|---|---|\n")
	p("| date | %s |\n| guest kernel | %s |\n| host CPU | %s |\n| Go | %s |\n| perftest | %s |\n", r.Date, r.Kernel, r.HostCPU, r.GoVersion, r.Perftest)
	var clocks []string
	for k, v := range r.ClockMHz {
		clocks = append(clocks, k+": "+v)
	}
	sort.Strings(clocks)
	p("| guest clock (cpu MHz) | %s |\n| elapsed | %.0f s |\n\n", strings.Join(clocks, "; "), r.Elapsed)

	p("## Goals\n\n")
	p("| goal | result |\n|---|---|\n")
	for _, line := range goalLines(r) {
		p("| %s | %s |\n", line[0], line[1])
	}
	p("\n")

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
		p("| test | size | iters | metric | rdmago | perftest (C) | ratio rdmago/C | goal |\n|---|---:|---:|---|---|---|---|---|\n")
		for _, c := range cs {
			s := c.Stats
			goal := ""
			if s.Goal != "" {
				goal = s.Goal + " " + s.Verdict
			}
			p("| %s | %s | %d | %s | %s [%s–%s] | %s [%s–%s] | **%.2f** [%.2f–%.2f] | %s |\n",
				caseName(c), sizeName(c.Size), c.Iters, c.Metric,
				fig(s.GoMedian), fig(s.GoMin), fig(s.GoMax), fig(s.CMedian), fig(s.CMin), fig(s.CMax),
				s.Ratio, s.RatioMin, s.RatioMax, goal)
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

	if len(r.Failures) > 0 {
		p("## Failures\n\n")
		for _, f := range r.Failures {
			p("- %s\n\n```\n%s\n```\n", f.What, strings.TrimSpace(f.Output))
		}
		p("\n")
	}
	p("## Reproduce\n\n```sh\ngo run ./cmd/rdmalab bench --kernel %s --nodes %s --reps %d --tests %s --bw-sizes %s --lat-sizes %s\n```\n",
		strings.SplitN(r.Kernel, ".0-", 2)[0], joinInts(r.Topologies), r.Reps, strings.Join(r.Options.Tests, ","), joinInts(r.Options.BWSizes), joinInts(r.Options.LatSizes))
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
		var met, total int
		var worst *benchCase
		for _, c := range r.Cases {
			if !pick(c) || c.Stats.Goal == "" || c.Stats.Ratio == 0 {
				continue
			}
			total++
			if c.Stats.Verdict == "met" {
				met++
			}
			if worst == nil || (strings.HasSuffix(c.Test, "_bw") && c.Stats.Ratio < worst.Stats.Ratio) || (!strings.HasSuffix(c.Test, "_bw") && c.Stats.Ratio > worst.Stats.Ratio) {
				worst = c
			}
		}
		if total == 0 {
			return
		}
		res := fmt.Sprintf("%d of %d cases met", met, total)
		if worst != nil {
			res += fmt.Sprintf("; worst: %s %s on %d VM: %.2f [%.2f–%.2f]", caseName(worst), sizeName(worst.Size), worst.Nodes, worst.Stats.Ratio, worst.Stats.RatioMin, worst.Stats.RatioMax)
		}
		out = append(out, [2]string{name, res})
	}
	summarise("BW ratio ≥ 1.00 from 4 KiB up (write/read/send)", func(c *benchCase) bool { return strings.HasSuffix(c.Test, "_bw") })
	summarise("latency ratio ≤ 1.05 (t_typical), 2 B–4 KiB", func(c *benchCase) bool { return !strings.HasSuffix(c.Test, "_bw") })
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
