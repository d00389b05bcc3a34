// Copyright 2026 The rdmago Authors.

package bench

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/tools/perf"
)

func TestParseHostBench(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/rdmago/rdmago/uverbs
cpu: Intel(R) Xeon(R) Processor @ 2.60GHz
BenchmarkPostPoll/list1-2         	 4188312	       281.3 ns/op	         3.555 Mwr/s	       0 B/op	       0 allocs/op
BenchmarkPostPoll/list1-2         	 4301100	       279.0 ns/op	         3.584 Mwr/s	       0 B/op	       0 allocs/op
BenchmarkPostPoll/list1-2         	 4188312	       290.0 ns/op	         3.448 Mwr/s	       0 B/op	       0 allocs/op
BenchmarkPostPoll/list16-2        	  300000	      3200 ns/op	         5.000 Mwr/s	       0 B/op	       0 allocs/op
PASS
ok  	github.com/rdmago/rdmago/uverbs	9.1s
`
	hb := parseHostBench(out)
	if len(hb) != 2 {
		t.Fatalf("got %+v", hb)
	}
	if hb[0].Name != "BenchmarkPostPoll/list1" || hb[0].NsPerOp != 281.3 || hb[0].Runs != 3 || hb[0].AllocsPerOp != 0 || hb[0].NsPerWR != 281.3 {
		t.Errorf("list1: %+v", hb[0])
	}
	if hb[1].NsPerWR != 200 {
		t.Errorf("list16: %v ns per work request, want 3200/16", hb[1].NsPerWR)
	}
}

func TestStraceCalls(t *testing.T) {
	out := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 52.63    0.010000          10      1012           write
 30.00    0.006000          45       200        12 futex
 17.37    0.003000           3        40           ioctl
------ ----------- ----------- --------- --------- ----------------
100.00    0.019000          15      1252        12 total
`
	m, err := straceCalls(out)
	if err != nil {
		t.Fatal(err)
	}
	if m["write"] != 1012 || m["futex"] != 200 || m["ioctl"] != 40 || len(m) != 3 {
		t.Errorf("got %v", m)
	}
	if _, err := straceCalls("strace: exec: No such file or directory\n"); err == nil {
		t.Error("output without a table accepted")
	}
}

// cmtime 44's output, as the lab printed it.
const cmtimeOut = `creating id
resolving address
resolving route
creating qp
connecting
disconnecting
destroying id
step              total ms     max ms     min us  us / conn
create id    :        0.14       0.10     104.00     145.00
resolve addr :        9.97       9.50    9503.00    9974.00
resolve route:        5.71       5.66    5655.00    5705.00
create qp    :        3.79       3.74    3742.00    3787.00
connect      :      301.19     176.50  176497.00  301194.00
disconnect   :        7.09       3.93    3933.00    7093.00
destroy      :        0.32       0.29     291.00     324.00
`

func TestParseCmtime(t *testing.T) {
	m, err := parseCmtime(cmtimeOut)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"create id": 104, "resolve addr": 9503, "resolve route": 5655, "create qp": 3742, "connect": 176497, "disconnect": 3933, "destroy": 291}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s: %v, want %v", k, m[k], v)
		}
	}
	if _, err := parseCmtime(strings.Replace(cmtimeOut, "connect      :", "kaboom:", 1)); err == nil {
		t.Error("missing connect step accepted")
	}
}

func TestCaseStatsAndGoals(t *testing.T) {
	mk := func(test string, size int, g, c []float64) *benchCase {
		bc := &benchCase{Test: test, Size: size}
		for i := range g {
			bc.Go = append(bc.Go, sample{Rep: i + 1, Value: g[i]})
			bc.C = append(bc.C, sample{Rep: i + 1, Value: c[i]})
		}
		return bc
	}
	// Paired ratios 1, 1.2, 1: medians 11 and 10, geometric mean 1.0627,
	// interval [0.818, 1.380] straddles 1.00.
	bw := mk("write_bw", 4096, []float64{10, 12, 11}, []float64{10, 10, 11})
	s := caseStatsOf(bw)
	if s.GoMedian != 11 || s.CMedian != 10 || !near(s.Ratio, 1.062659, 1e-5) || !near(s.CILo, 0.818128, 1e-5) || !near(s.CIHi, 1.380276, 1e-5) ||
		!near(s.CIWidth, 1.380276/0.818128-1, 1e-4) || s.RatioMin != 1 || s.RatioMax != 1.2 || s.Pairs != 3 {
		t.Errorf("stats %+v", s)
	}
	if s.Goal != "≥ 1.00" || s.Verdict != "within noise" {
		t.Errorf("goal %q %q", s.Goal, s.Verdict)
	}
	for _, c := range []struct {
		name string
		bc   *benchCase
		want string
	}{
		{"bw 5 % ahead", mk("send_bw", 65536, []float64{10.5, 10.6, 10.4, 10.5}, []float64{10, 10, 10, 10}), "meets"},
		{"bw 10 % behind", mk("read_bw", 4096, []float64{9.0, 9.2, 8.8}, []float64{10, 10, 10}), "misses"},
		{"lat at par", mk("send_lat", 2, []float64{10, 10.1, 9.9}, []float64{10, 10, 10}), "meets"},
		{"lat 10 % slower", mk("write_lat", 4096, []float64{11, 11.2, 10.9}, []float64{10, 10, 10}), "misses"},
		{"lat 1.1, 1.1, 1.0", mk("write_lat", 2, []float64{11, 11, 10}, []float64{10, 10, 10}), "within noise"},
		{"one pair", mk("write_lat", 2, []float64{11}, []float64{10}), "too few pairs"},
	} {
		if s := caseStatsOf(c.bc); s.Verdict != c.want {
			t.Errorf("%s: %q, want %q (%+v)", c.name, s.Verdict, c.want, s)
		}
	}
	// Small bandwidth messages have no goal.
	small := *bw
	small.Size = 64
	if s := caseStatsOf(&small); s.Goal != "" || s.Verdict != "" {
		t.Errorf("64 B: %+v", s)
	}
	// A tool with no sample: no ratio, no verdict.
	none := &benchCase{Test: "read_lat", Size: 2, C: []sample{{Rep: 1, Value: 3}}}
	if s := caseStatsOf(none); s.Ratio != 0 || s.Verdict != "" || s.Pairs != 0 {
		t.Errorf("no rdmago samples: %+v", s)
	}
}

func TestShellJoin(t *testing.T) {
	got := shellJoin([]string{"/x/rdmaperf", "write_bw", "-s", "64", "it's", "a b", ""})
	want := `/x/rdmaperf write_bw -s 64 'it'\''s' 'a b' ''`
	if got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

// TestToolArgsRunsGuestCopy: rdmaperf runs from the copy in the guest's
// tmpfs, not from the build on the lab's uncached share, where every start
// reads the binary from the host again.
func TestToolArgsRunsGuestCopy(t *testing.T) {
	b := &bencher{o: DefaultOptions(), perf: "/work/main/out/bench/rdmaperf", dev: []string{"rxe0"}, gid: []string{"1"}}
	c := &benchCase{Nodes: 1, Test: "write_bw", Size: 4096}
	got := b.toolArgs("rdmago", c, 0, 18701, 100)
	if got[0] != guestPerf || !strings.HasPrefix(guestPerf, "/tmp/") {
		t.Errorf("rdmaperf runs as %q, want the tmpfs copy %s", got[0], guestPerf)
	}
	if got := b.toolArgs("C", c, 0, 18701, 100); got[0] != "ib_write_bw" {
		t.Errorf("perftest runs as %q", got[0])
	}
}

func TestPairScripts(t *testing.T) {
	b := &bencher{nodes: 1}
	one := b.pairScripts([]string{"ib_write_bw", "-s", "64"}, []string{"ib_write_bw", "-s", "64", "10.77.0.1"}, "", 60e9, "/out/raw/.done-1")(0)
	for _, want := range []string{"timeout -k 5 60 ib_write_bw -s 64 > /tmp/bench.srv 2>&1 &", "ib_write_bw -s 64 10.77.0.1 > /tmp/bench.cli", "@@client rc=", "@@server rc=", "wait $spid", retryPattern, "touch /out/raw/.done-1", "if [ -f /out/raw/.done-1 ]"} {
		if !strings.Contains(one, want) {
			t.Errorf("one-node script lacks %q:\n%s", want, one)
		}
	}
	b.nodes = 2
	f := b.pairScripts([]string{"srv"}, []string{"cli", "peer"}, "strace -f -c -o /tmp/bench.strace ", 60e9, "/out/raw/.done-2")
	srv, cli := f(0), f(1)
	if strings.Contains(srv, "cli") || !strings.Contains(srv, "@@server rc=") || !strings.Contains(srv, "[ -f /out/raw/.done-2 ]") {
		t.Errorf("node 0 script:\n%s", srv)
	}
	if strings.Contains(cli, " srv ") || !strings.Contains(cli, "strace -f -c -o /tmp/bench.strace cli peer") || !strings.Contains(cli, "@@strace") || !strings.Contains(cli, "touch /out/raw/.done-2") {
		t.Errorf("node 1 script:\n%s", cli)
	}
}

func testReport() *Report {
	r := &Report{Kernel: "6.1.0-56-amd64", Topologies: []int{1, 2}, Reps: 2, ClockMHz: map[string]string{"1 node(s), node 0": "2597.551"},
		Options: benchOptionsJSON{MaxReps: 12, CIWidth: 0.05, Budget: 2400, Retries: 3, Tests: []string{"write_bw", "write_lat"}, BWSizes: []int{64, 4096}, LatSizes: []int{2}}}
	r.Glitches = []glitch{
		{Case: "1 node(s), send_lat 2 B, rep 3", Tries: 2, Reasons: []string{"Correlation coefficient r^2: 0.79 < 0.9", "Correlation coefficient r^2: 0.61 < 0.9"}, Resolved: true},
		{Case: "1 node(s), send_bw 64 B, rep 1", Tries: 4, Reasons: []string{"a", "b", "c", "Correlation coefficient r^2: 0.47 < 0.9"}},
	}
	for _, n := range []int{1, 2} {
		for _, size := range []int{64, 4096, 65536} {
			c := &benchCase{Nodes: n, Test: "write_bw", Size: size, Iters: 100, Metric: "BW average [MB/sec]"}
			for rep := 1; rep <= 2; rep++ {
				v := float64(size) / 1000 * float64(rep)
				c.Go = append(c.Go, sample{Rep: rep, Value: v, Run: &perf.SizeResult{Ops: 100, Posts: 100, Doorbells: 100, Counters: &perf.Counters{}}})
				c.C = append(c.C, sample{Rep: rep, Value: v * 0.9})
			}
			c.Stats = caseStatsOf(c)
			r.Cases = append(r.Cases, c)
		}
		lat := &benchCase{Nodes: n, Test: "write_lat", Size: 2, Iters: 100, Metric: "t_typical [usec]",
			Go: []sample{{Rep: 1, Value: 20}, {Rep: 2, Value: 22}}, C: []sample{{Rep: 1, Value: 19}, {Rep: 2, Value: 21}}, Stop: "cap"}
		lat.Stats = caseStatsOf(lat)
		r.Cases = append(r.Cases, lat)
	}
	r.Syscalls = []*syscallCase{
		{Nodes: 1, Test: "write_bw", Size: 64, Tool: "rdmago", Iters: [2]int{200, 1200}, PerOp: map[string]float64{"write": 1}, Total: 1},
		{Nodes: 1, Test: "write_bw", Size: 64, Tool: "C", Iters: [2]int{200, 1200}, PerOp: map[string]float64{"write": 1}, Total: 1},
	}
	r.Conn = []*connCase{{Nodes: 1, Go: perf.Summary{N: 2, Median: 150000}, C: perf.Summary{N: 2, Median: 190000}, CStep: map[string]perf.Summary{"connect": {Median: 170000}}}}
	r.Host = []hostBench{{Name: "BenchmarkPostPoll/list1", NsPerOp: 281.3, NsPerWR: 281.3, Runs: 5}}
	return r
}

func TestBenchMarkdown(t *testing.T) {
	md := benchMarkdown(testReport())
	for _, want := range []string{
		"## One VM (rxe loopback)", "## Two VMs",
		"| write_bw | 4 KiB | 100 | BW average [MB/sec] | 6.14 [4.10–8.19] | 5.53 [3.69–7.37] | **1.111** [1.111–1.111] | 0.0 % | 2 | 1.11–1.11 | ≥ 1.00 | meets |",
		"| write_lat | 2 B | 100 | t_typical [usec] | 21.0 [20.0–22.0] | 20.0 [19.0–21.0] | **1.050** [1.019–1.082] | 6.3 % (cap) | 2 | 1.05–1.05 | ≤ 1.05 | within noise |",
		"BW ratio ≥ 1.00 from 4 KiB up (write/read/send) | 4 cases: 4 meet, 0 miss, 0 within noise",
		"latency ratio ≤ 1.05 (t_typical), 2 B–4 KiB | 2 cases: 0 meet, 0 miss, 2 within noise",
		"Student's t-interval on the mean of their logarithms",
		"at most 12 in all, none started past 2400 s per topology) while its interval was 5 % wide or wider",
		"| 1 node(s), send_lat 2 B, rep 3 | 2 | repeated, then measured | `Correlation coefficient r^2: 0.61 < 0.9` |",
		"| 1 node(s), send_bw 64 B, rep 1 | 4 | given up: no pair for this repetition | `Correlation coefficient r^2: 0.47 < 0.9` |",
		"go run ./cmd/rdmalab bench --kernel 6.1 --append '' --nodes 1,2 --reps 2 --max-reps 12 --ci-width 0.05",
		"lab: 0 heap allocations in 1200 operations over 12 measured loops",
		"doorbells per post: at most 1.000",
		"1 VM write_bw: rdmaperf 1.000/op vs ib_write_bw 1.000/op",
		"| one VM (rxe loopback) | 150000 [–––] (n=2) | 190000 [–––] (n=2) | 0.79 |",
		"| BenchmarkPostPoll/list1 | 281.3 | 281.3 | 0 | 0 |",
		"go run ./cmd/rdmalab bench --kernel 6.1 --append '' --nodes 1,2 --reps 2",
		"| extra kernel parameters | none |",
		"![bandwidth vs message size](bw.png)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}
}

func TestBenchMarkdownKernelArgs(t *testing.T) {
	r := testReport()
	r.KernelArgs = []string{"clocksource=tsc", "tsc=reliable"}
	r.Clocksource = map[string]string{"1 node(s), node 0": "tsc", "2 node(s), node 1": "tsc"}
	md := benchMarkdown(r)
	for _, want := range []string{
		"| guest clock source | 1 node(s), node 0: tsc; 2 node(s), node 1: tsc |",
		"| extra kernel parameters | `clocksource=tsc tsc=reliable` |",
		"go run ./cmd/rdmalab bench --kernel 6.1 --append 'clocksource=tsc tsc=reliable' --nodes 1,2",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	r.Options.Short = true
	if md := benchMarkdown(r); !strings.Contains(md, "go run ./cmd/rdmalab bench --short --kernel 6.1 --append 'clocksource=tsc tsc=reliable'\n") {
		t.Errorf("short report's reproduce line:\n%s", md)
	}
}

// TestBenchMarkdownReproducesSizes: the reproduce line carries the run's
// sizes and sections (a two-VM latency report of 2,000 iterations said
// nothing of them, and its command ran 50).
func TestBenchMarkdownReproducesSizes(t *testing.T) {
	r := testReport()
	r.Options.BWBytes, r.Options.MinIters, r.Options.MaxIters = 16<<20, 100, 20000
	r.Options.LatIters, r.Options.LatIters2 = 10000, 2000
	r.Options.Budget = 720
	r.Options.Syscalls, r.Options.ConnSetup, r.Options.HostBench = false, true, false
	want := "go run ./cmd/rdmalab bench --kernel 6.1 --append '' --nodes 1,2 --reps 2 --max-reps 12 --ci-width 0.05 --tests write_bw,write_lat --bw-sizes 64,4096 --lat-sizes 2" +
		" --bw-bytes 16777216 --min-iters 100 --max-iters 20000 --lat-iters 10000 --lat-iters-2 2000 --budget 12m0s --glitch-retries 3 --syscalls=false --conn=true --host=false\n"
	if md := benchMarkdown(r); !strings.Contains(md, want) {
		t.Errorf("reproduce line: want\n%s\nin\n%s", want, md)
	}
}

func TestBWChart(t *testing.T) {
	b, err := bwChart(testReport())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if img.Bounds().Dx() != 900 || img.Bounds().Dy() != 20+2*430 {
		t.Errorf("size %v", img.Bounds())
	}
	// The write_bw series is drawn: pixels of its colour exist in each panel.
	want := testColor["write_bw"]
	for panel := 0; panel < 2; panel++ {
		found := 0
		for y := 10 + panel*430; y < 10+(panel+1)*430; y++ {
			for x := 0; x < 900; x++ {
				r, g, bb, _ := img.At(x, y).RGBA()
				if uint8(r>>8) == want.R && uint8(g>>8) == want.G && uint8(bb>>8) == want.B {
					found++
				}
			}
		}
		if found < 200 {
			t.Errorf("panel %d: %d pixels of the write_bw colour", panel, found)
		}
	}
	// Every character the chart writes has a glyph.
	for _, s := range []string{"BW AVERAGE VS MESSAGE SIZE - " + strings.ToUpper(topoName(2)), "MB/S (MIB/S)", "MESSAGE SIZE (BYTES)", "RDMAGO", "PERFTEST", "WRITE_BW", "0.1234567890"} {
		for _, r := range strings.ToUpper(s) {
			if _, ok := font5x7[r]; !ok {
				t.Errorf("no glyph for %q (in %q)", r, s)
			}
		}
	}
	if dir := os.Getenv("BENCH_PNG_OUT"); dir != "" {
		os.WriteFile(filepath.Join(dir, "test-bw.png"), b, 0o644)
	}
}

func TestOptionsCheck(t *testing.T) {
	o := DefaultOptions()
	if err := o.check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, mod := range []func(*Options){
		func(o *Options) { o.Reps = 0 },
		func(o *Options) { o.Topologies = []int{3} },
		func(o *Options) { o.Tests = []string{"write_bandwidth"} },
		func(o *Options) { o.Tests = []string{"conn_time"} },
		func(o *Options) { o.BWSizes = []int{0} },
		func(o *Options) { o.LatIters = 2 },
		func(o *Options) { o.CIWidth = 0 },
		func(o *Options) { o.Retries = -1 },
	} {
		o := DefaultOptions()
		mod(&o)
		if err := o.check(); err == nil {
			t.Errorf("accepted %+v", o)
		}
	}
}

func TestBenchCases(t *testing.T) {
	o := DefaultOptions()
	b := &bencher{o: o}
	cs := b.cases(1)
	// 3 BW tests x 3 sizes + 3 latency tests x 2 sizes + 2 atomics.
	if len(cs) != 9+6+2 {
		t.Fatalf("%d cases", len(cs))
	}
	for _, c := range cs {
		if c.Test == "write_bw" && c.Size == 64 && c.Iters != o.MaxIters {
			t.Errorf("64 B runs %d iterations, want the cap %d", c.Iters, o.MaxIters)
		}
		if c.Test == "write_bw" && c.Size == 65536 && c.Iters != 100 {
			t.Errorf("64 KiB runs %d iterations, want 4 MiB / 64 KiB = 64 raised to %d", c.Iters, o.MinIters)
		}
		if c.Test == "atomic_lat" && (c.Size != 8 || c.Atomic == "") {
			t.Errorf("atomic case %+v", c)
		}
	}
	if two := b.cases(2); two[len(two)-1].Iters != o.LatIters2 {
		t.Errorf("two-VM latency iterations %d, want %d", two[len(two)-1].Iters, o.LatIters2)
	}
}

func TestShortOptions(t *testing.T) {
	o := ShortOptions()
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if !o.Short || o.Syscalls || o.ConnSetup || o.HostBench || len(o.Topologies) != 1 || o.Topologies[0] != 1 || o.Budget <= 0 || o.MaxReps <= o.Reps {
		t.Errorf("short options %+v", o)
	}
	var names []string
	for _, c := range (&bencher{o: o}).cases(1) {
		names = append(names, fmt.Sprintf("%s %d", caseName(c), c.Size))
	}
	if got := strings.Join(names, ", "); got != "write_bw 64, write_bw 4096, send_bw 64, send_bw 4096, write_lat 2, send_lat 2" {
		t.Errorf("short cases: %s", got)
	}
	// Its loops are longer than the full report's (the point of the short
	// mode is a narrow interval in few minutes).
	full := map[string]int{}
	for _, c := range (&bencher{o: DefaultOptions()}).cases(1) {
		full[fmt.Sprintf("%s %d", caseName(c), c.Size)] = c.Iters
	}
	for _, c := range (&bencher{o: o}).cases(1) {
		name := fmt.Sprintf("%s %d", caseName(c), c.Size)
		if c.Iters <= full[name] {
			t.Errorf("short %s runs %d iterations, the full report %d: want more", name, c.Iters, full[name])
		}
	}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	before := testReport()
	before.Date = "2026-11-20T00:00:00Z"
	if err := writeBenchReport(before, dir); err != nil {
		t.Fatal(err)
	}
	old, err := readReport(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	now := testReport()
	now.Before, now.BeforeFile = old, "before/report.json"
	// One VM write_bw 4 KiB: rdmago now 20 % faster in both pairs.
	for _, c := range now.Cases {
		if c.Nodes == 1 && c.Test == "write_bw" && c.Size == 4096 {
			for i := range c.Go {
				c.Go[i].Value *= 1.2
			}
			c.Stats = caseStatsOf(c)
		}
	}
	md := benchMarkdown(now)
	for _, want := range []string{
		"## Against before/report.json (2026-11-20T00:00:00Z)",
		"| 1 VM | write_bw | 4 KiB | 1.111 [1.111–1.111] | 1.333 [1.333–1.333] | ratio up |",
		"| 1 VM | write_bw | 64 KiB | 1.111 [1.111–1.111] | 1.111 [1.111–1.111] | none beyond the noise |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if _, err := readReport(filepath.Join(dir, "report.md")); err == nil {
		t.Error("report.md read as a report.json")
	}
}

func TestICountOptions(t *testing.T) {
	o := ICountOptions(DefaultOptions())
	if !o.ICount || !slices.Equal(o.Topologies, []int{1}) || !slices.Equal(o.Tests, []string{"write_bw", "read_bw", "send_bw", "send_lat", "read_lat", "atomic_lat"}) || o.ConnSetup || o.LatIters != 2000 {
		t.Errorf("ICountOptions(DefaultOptions()): icount %t, nodes %v, tests %v, conn %t, %d latency iterations", o.ICount, o.Topologies, o.Tests, o.ConnSetup, o.LatIters)
	}
	if o.BWBytes != 16<<20 || o.MaxIters != DefaultOptions().MaxIters {
		t.Errorf("ICountOptions(DefaultOptions()): %d bytes per bandwidth run, at most %d iterations; want 16 MiB and the default's %d", o.BWBytes, o.MaxIters, DefaultOptions().MaxIters)
	}
	if err := o.check(); err != nil {
		t.Errorf("check: %v", err)
	}
	if s := ICountOptions(ShortOptions()); !slices.Equal(s.Tests, []string{"write_bw", "send_bw", "send_lat"}) || s.LatIters != ShortOptions().LatIters {
		t.Errorf("ICountOptions(ShortOptions()): tests %v, %d latency iterations", s.Tests, s.LatIters)
	}
	if got := ICountTests(o.Tests, "6.12"); slices.Contains(got, "send_lat") || len(got) != len(o.Tests)-1 {
		t.Errorf("ICountTests(%v, 6.12) = %v, want all but send_lat", o.Tests, got)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"two VMs", func(o *Options) { o.Topologies = []int{1, 2} }, "--nodes 1"},
		{"latency", func(o *Options) { o.Tests = append(o.Tests, "write_lat") }, "write_lat"},
		{"send_lat on 6.12", func(o *Options) { o.Kernel = "6.12" }, "--kernel 6.1"},
		{"cm", func(o *Options) { o.ConnSetup = true }, "--conn=false"},
	} {
		bad := ICountOptions(DefaultOptions())
		tc.mod(&bad)
		if err := bad.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: check() = %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}

// TestICountHalfCases: under the instruction clock send_lat runs as two
// half-polling cases per size, the compared tool on one side and perftest
// sleeping on events (-e) on the other, and the figure is the client's.
func TestICountHalfCases(t *testing.T) {
	o := ICountOptions(DefaultOptions())
	o.Tests, o.LatSizes = []string{"send_lat", "read_lat"}, []int{2}
	b := &bencher{o: o, nodes: 1, dev: []string{"rxe0"}, gid: []string{"1"}, addr: []string{"10.0.2.15"}}
	cs := b.cases(1)
	var names []string
	for _, c := range cs {
		names = append(names, caseName(c)+" "+sizeName(c.Size))
	}
	if want := []string{"send_lat client-polls 2 B", "send_lat server-polls 2 B", "read_lat 2 B"}; !slices.Equal(names, want) {
		t.Fatalf("cases %q, want %q", names, want)
	}
	for _, tc := range []struct {
		c          *benchCase
		tool       string
		srv, cli   string // the programs
		srvE, cliE bool   // with -e
		figure     string
	}{
		{cs[0], "rdmago", "ib_send_lat", guestPerf, true, false, "rdmago"},
		{cs[0], "C", "ib_send_lat", "ib_send_lat", true, false, "C"},
		{cs[1], "rdmago", guestPerf, "ib_send_lat", false, true, "C"},
		{cs[1], "C", "ib_send_lat", "ib_send_lat", false, true, "C"},
		{cs[2], "rdmago", guestPerf, guestPerf, false, false, "rdmago"},
	} {
		srv, cli, figure := b.caseArgs(tc.c, tc.tool, 18800)
		what := caseName(tc.c) + " " + tc.tool
		if srv[0] != tc.srv || cli[0] != tc.cli || slices.Contains(srv, "-e") != tc.srvE || slices.Contains(cli, "-e") != tc.cliE || figure != tc.figure {
			t.Errorf("%s: server %q, client %q, figure from %s; want %s (-e %t), %s (-e %t), %s", what, srv, cli, figure, tc.srv, tc.srvE, tc.cli, tc.cliE, tc.figure)
		}
		if rdmaperf := slices.Concat(srv, cli); slices.Contains(rdmaperf, guestPerf) && slices.Contains(rdmaperf, "ib_send_lat") != slices.Contains(rdmaperf, "--perftest") {
			t.Errorf("%s: server %q, client %q: rdmaperf wants --perftest exactly when its peer is perftest", what, srv, cli)
		}
		if cli[len(cli)-1] != "10.0.2.15" || !slices.Contains(srv, "18800") || !slices.Contains(cli, "18800") {
			t.Errorf("%s: server %q, client %q: want both on port 18800, the client to the server's address", what, srv, cli)
		}
	}
	b.o.ICount = false
	if cs := b.cases(1); len(cs) != 2 || cs[0].Polls != "" {
		t.Errorf("without --icount: cases %+v, want send_lat and read_lat with both sides the tool's", cs)
	}
}

func TestBenchMarkdownICount(t *testing.T) {
	r := testReport()
	r.Options.ICount = true
	md := benchMarkdown(r)
	for _, want := range []string{"go run ./cmd/rdmalab bench --icount --kernel 6.1 ", "| guest time | instructions", "**Instruction clock**"} {
		if !strings.Contains(md, want) {
			t.Errorf("want %q in\n%s", want, md)
		}
	}
	r.Options.Short = true
	if md := benchMarkdown(r); !strings.Contains(md, "bench --short --icount --kernel 6.1 ") {
		t.Errorf("short reproduce line lacks --icount:\n%s", md)
	}
	r.Options.ICount = false
	if md := benchMarkdown(r); strings.Contains(md, "icount") {
		t.Errorf("a report without --icount mentions it:\n%s", md)
	}
}

func TestSyscallTestsICount(t *testing.T) {
	if got := syscallTests(false); len(got) != 3 {
		t.Errorf("syscallTests(false) = %v, want write_bw, write_lat, read_lat", got)
	}
	for _, sc := range syscallTests(true) {
		if !isBW(sc.test) {
			t.Errorf("syscallTests(true) has %s: a latency run under the instruction clock times the scheduler", sc.test)
		}
	}
}

// TestKernelFlag: a report's reproduce line names the kernel as rdmalab's
// --kernel takes it.
func TestKernelFlag(t *testing.T) {
	for uname, want := range map[string]string{"6.1.0-56-amd64": "6.1", "6.12.118+deb13-amd64": "6.12", "6.12": "6.12", "odd": "odd"} {
		if got := kernelFlag(uname); got != want {
			t.Errorf("kernelFlag(%q) = %q, want %q", uname, got, want)
		}
	}
}
