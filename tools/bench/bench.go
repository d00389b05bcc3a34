// Copyright 2026 The rdmago Authors.

// Package bench is `rdmalab bench`: rdmaperf (Go, package uverbs) against
// perftest (C, rdma-core) in the same lab guests (package tools/lab), the
// same boot, interleaved run by run, over one VM (rxe loopback) and two VMs
// (a RoCEv2 wire), repeated; plus the host microbenchmark of post+poll on
// fake rings, system calls per operation (strace -c, both tools), and
// rdma_cm connection setup against cmtime. It writes report.md, report.json
// and bw.png (report.go, png.go).
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmago/rdmago/tools/lab"
	"github.com/rdmago/rdmago/tools/lab/labproto"
	"github.com/rdmago/rdmago/tools/perf"
)

// Options configure Run.
type Options struct {
	lab.Options       // kernel, time limit, log; Nodes is ignored (see Topologies)
	Topologies  []int // node counts to run: 1 and/or 2

	Tests    []string      // rdmaperf test names; atomic_lat runs FETCH_AND_ADD and CMP_AND_SWAP
	BWSizes  []int         // message sizes of the bandwidth tests
	LatSizes []int         // message sizes of write/send/read latency
	Reps     int           // repetitions of every case, interleaved (the minimum)
	MaxReps  int           // cap of the adaptive repetitions (≤ Reps: no adaptive ones)
	CIWidth  float64       // a case gets more repetitions while its 95 % interval is this wide or wider (relative)
	Budget   time.Duration // no adaptive repetition starts past this much time on one topology (0: no limit)
	Retries  int           // repetitions of a reference (perftest) run that hit a known glitch of the C tool
	Short    bool          // the short mode (ShortOptions); recorded in the report
	Compare  string        // a previous report.json: the report shows its ratios next to this run's

	BWBytes    int64 // bytes per bandwidth run: iterations = BWBytes/size, clamped to [MinIters, MaxIters]
	MinIters   int
	MaxIters   int
	LatIters   int // iterations per latency run on one VM
	LatIters2  int // ... on two VMs (a round trip over the emulated wire is much slower)
	RunTimeout time.Duration

	Syscalls  bool // strace -c both tools (write_bw, write_lat)
	ConnSetup bool // rdmaperf conn_time against cmtime
	ConnCount int  // connections timed per tool
	HostBench bool // go test -bench PostPoll ./uverbs on the host
	Profile   bool // pprof CPU profiles of rdmaperf (write_bw 64 B, write_lat 2 B)

	OutDir string // where the report, rdmaperf and the raw outputs go (inside the repository)
}

// DefaultOptions is the full run: every test on one and two VMs, 3 to 12
// repetitions (the extra ones only for cases whose interval is still 5 %
// wide or wider, within 40 minutes per topology), strace, cm and host runs.
func DefaultOptions() Options {
	return Options{
		// The TSC clock source (lab.TSCArgs): both tools' clock reads are
		// vDSO reads, and perftest's cycle calibration against
		// gettimeofday fails about ten times less often than on HPET
		// (2 of 111 runs against 20 of 122, docs/performance.md).
		Options:    lab.Options{Kernel: lab.DefaultKernel, Timeout: 60 * time.Minute, Append: slices.Clone(lab.TSCArgs)},
		Topologies: []int{1, 2},
		Tests:      []string{"write_bw", "read_bw", "send_bw", "write_lat", "send_lat", "read_lat", "atomic_lat"},
		BWSizes:    []int{64, 4096, 65536},
		LatSizes:   []int{2, 4096},
		Reps:       3,
		MaxReps:    12,
		CIWidth:    0.05,
		Budget:     40 * time.Minute,
		Retries:    3,
		BWBytes:    4 << 20,
		MinIters:   100,
		MaxIters:   2000,
		LatIters:   500,
		LatIters2:  50,
		RunTimeout: 3 * time.Minute,
		Syscalls:   true,
		ConnSetup:  true,
		ConnCount:  5,
		HostBench:  true,
		OutDir:     "out/bench",
	}
}

// ShortOptions is the short mode, `rdmalab bench --short`: one VM, six
// cases that cover the known gaps (write/send bandwidth at 64 B and 4 KiB,
// write/send latency at 2 B), at least 4 and at most 10 repetitions within
// a 4-minute budget, no strace, cm or host runs. Its loops are longer than
// the full report's (16 MiB per bandwidth run up to 20,000 iterations,
// 10,000 latency iterations: 0.1 to 0.6 s of measuring against about 2 s of
// setup per run), which narrows the intervals more cheaply than more
// repetitions would: 30 to 140 ms loops varied by ±10–40 % from one
// repetition to the next. About 6 minutes under TCG on a quiet host; made
// to compare a change before and after.
func ShortOptions() Options {
	o := DefaultOptions()
	o.Timeout = 15 * time.Minute
	o.Topologies = []int{1}
	o.Tests = []string{"write_bw", "send_bw", "write_lat", "send_lat"}
	o.BWSizes = []int{64, 4096}
	o.LatSizes = []int{2}
	o.Reps = 4
	o.MaxReps = 10
	o.Budget = 4 * time.Minute
	o.BWBytes, o.MaxIters, o.LatIters = 16<<20, 20000, 10000
	o.Syscalls, o.ConnSetup, o.HostBench = false, false, false
	o.Short = true
	o.OutDir = "out/bench-short"
	return o
}

// ICountOptions is o under `rdmalab bench --icount` (lab.Options.ICount):
// the guest's clock counts instructions on one vCPU, so a figure is the
// guest CPU's work and the host's load does not move it (bandwidth
// intervals 0.6–5 % wide after 4 to 12 repetitions, against 27–65 % on
// the host's clock the same day: docs/performance.md). Only what
// that clock can time (icountTimes): one VM (two exchange packets in the
// host's time), no cm setup, and the tests where no two processes poll at
// once: two polling processes on one vCPU take turns at the scheduler's
// tick (write_lat 2 B measured 4,000 µs), so write_lat is left out and
// send_lat runs as two half-polling cases (halfCases). Bandwidth runs move
// at least 16 MiB (within MaxIters): on 6.12, where rxe works from a
// workqueue and even the instruction clock varies from run to run, the
// 4 KiB and 64 KiB intervals were 4.4–17.3 % wide with 4 MiB runs (four of
// six at the 12-repetition cap) and 1.5–4.7 % with 16 MiB (but send_bw
// 4 KiB, 9.1 % at the cap); on 6.1, write's and read's went from 0.1–2.7 %
// to 0.5–0.6 %, in the same three minutes, which go to set-up more than to
// the loops (docs/performance.md). Latency runs take at least
// 2,000 iterations: t_typical is a median, and a run of them takes tens of
// milliseconds of the guest's time against seconds of set-up.
func ICountOptions(o Options) Options {
	o.ICount = true
	o.BWBytes = max(o.BWBytes, 16<<20)
	o.LatIters = max(o.LatIters, 2000)
	o.Topologies = []int{1}
	o.Tests = ICountTests(o.Tests, o.Kernel)
	o.ConnSetup = false
	return o
}

// ICountTests is tests without those the instruction clock cannot time on
// kernel (icountTimes). `rdmalab bench --icount` applies it again once
// --kernel is known, unless --tests was given.
func ICountTests(tests []string, kernel string) []string {
	return slices.DeleteFunc(slices.Clone(tests), func(t string) bool { return icountTimes(t, kernel) != "" })
}

// icountTimes says why the instruction clock cannot time test on one vCPU
// of kernel, or "" when it can. A bandwidth test has one polling process
// (the other sleeps on its control socket, or polls only between its own
// posts), and so do read_lat and atomic_lat (the server's program waits
// for the end while its device answers). send_lat runs as halfCases, on
// 6.1 only: on 6.12 their sleeping peer, ib_send_lat -e, does not finish
// (its server hangs, in ib_uverbs_event_read where looked at, perftest
// against itself too: 16 of 19 pairs under the instruction clock, 4 of 4
// on the host's,
// docs/performance.md). write_lat spins on memory on both
// sides, and perftest's ib_write_lat cannot sleep on events instead.
func icountTimes(test, kernel string) string {
	switch {
	case isBW(test) || test == "read_lat" || test == "atomic_lat":
		return ""
	case test == "send_lat" && kernel == "6.1":
		return ""
	case test == "send_lat":
		return "under --icount send_lat's polling side is timed against ib_send_lat -e sleeping on events, which does not finish on " + kernel + " (its server stays in ib_uverbs_event_read, against perftest's own client too); run it with --kernel 6.1"
	}
	return "under --icount a " + test + " run times the scheduler, not the tools (one vCPU: both sides spin on memory and take turns at its tick, and perftest's side cannot sleep on events instead)"
}

// halfPeer is the flag that makes perftest's side of a half-polling case
// sleep on completion events (its --use_event).
const halfPeer = "-e"

// halfCases are the sides a send_lat case runs under the instruction clock:
// the compared tool runs one side, polling, and the other side is perftest
// sleeping on completion events (ib_send_lat -e), the same program for both
// tools. On one vCPU two polling sides take turns at the scheduler's tick;
// with one side asleep, the completion of each message wakes it and it
// takes the CPU at once, so a round trip is both sides' work, and the
// difference between the tools is the polling side's. Measured on 6.1:
// t_typical 26.07 µs for perftest polling against 26.18 for rdmaperf, the
// same on either side (docs/performance.md).
var halfCases = []string{"client", "server"}

// isBW reports whether test is a bandwidth test (its figure is BW average).
func isBW(test string) bool { return strings.HasSuffix(test, "_bw") }

// perftestProgram is the C counterpart of an rdmaperf test.
func perftestProgram(test string) string { return "ib_" + test }

// benchCase is one (topology, test, size) compared across tools.
type benchCase struct {
	Nodes  int    `json:"nodes"`
	Test   string `json:"test"`
	Atomic string `json:"atomic,omitempty"`
	// Polls is the side the compared tool runs in a half-polling case
	// (halfCases: "client" or "server"); the other side is perftest
	// sleeping on events. "" when both sides are the tool's.
	Polls  string `json:"polls,omitempty"`
	Size   int    `json:"bytes"`
	Iters  int    `json:"iterations"`
	Metric string `json:"metric"`

	Go []sample `json:"rdmago"`
	C  []sample `json:"c"`

	Reps int    `json:"reps"`           // repetitions run
	Stop string `json:"stop,omitempty"` // why it got no more: "narrow", "cap", "budget"

	Stats caseStats `json:"stats"`
}

// sample is one run of one tool.
type sample struct {
	Rep   int              `json:"rep"`
	Value float64          `json:"value"` // the case's metric
	BW    *perf.BWStats    `json:"bw,omitempty"`
	Lat   *perf.LatStats   `json:"lat,omitempty"`
	Run   *perf.SizeResult `json:"rdmaperf,omitempty"`
	Wall  float64          `json:"wall_sec"`
}

// failure is a run that produced no figure.
type failure struct {
	What   string `json:"what"`
	Output string `json:"output"`
}

// syscallCase is strace -c of one tool's client at two iteration counts.
type syscallCase struct {
	Nodes  int                `json:"nodes"`
	Test   string             `json:"test"`
	Size   int                `json:"bytes"`
	Tool   string             `json:"tool"`
	N1, N2 int                `json:"-"`
	Iters  [2]int             `json:"iterations"`
	PerOp  map[string]float64 `json:"per_op"` // (calls(N2)-calls(N1))/(N2-N1) per system call
	Total  float64            `json:"total_per_op"`
	Self   *perf.Counters     `json:"rdmaperf_counters,omitempty"` // rdmaperf's own count of its loop (N2 run)
	SelfOp float64            `json:"rdmaperf_writes_per_op,omitempty"`
}

// connCase is connection setup over rdma_cm.
type connCase struct {
	Nodes int                     `json:"nodes"`
	Go    perf.Summary            `json:"rdmago_usec"` // cm.Dial to ESTABLISHED
	C     perf.Summary            `json:"cmtime_usec"` // cmtime -c 1: create id + resolve addr + resolve route + create qp + connect
	CStep map[string]perf.Summary `json:"cmtime_steps_usec"`
}

// hostBench is one go test -bench line.
type hostBench struct {
	Name        string  `json:"name"`
	NsPerOp     float64 `json:"ns_per_op"`
	NsPerWR     float64 `json:"ns_per_wr"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	Runs        int     `json:"runs"`
}

// Report is everything a bench run found; report.json is this.
type Report struct {
	Date       string            `json:"date"`
	Kernel     string            `json:"kernel"`
	Topologies []int             `json:"topologies"`
	Reps       int               `json:"reps"`
	GoVersion  string            `json:"go"`
	Perftest   string            `json:"perftest"`
	HostCPU    string            `json:"host_cpu"`
	ClockMHz   map[string]string `json:"clock_mhz"` // per node: cpuinfo rate perftest uses
	// Clocksource is the guest kernel's clock source per node (hpet, tsc):
	// with hpet every clock_gettime is a system call, which Go's runtime
	// makes far more often than perftest (see lab.TSCArgs).
	Clocksource map[string]string `json:"clocksource,omitempty"`
	KernelArgs  []string          `json:"kernel_args,omitempty"` // lab.Options.Append of the boots
	Cases       []*benchCase      `json:"cases"`
	Syscalls    []*syscallCase    `json:"syscalls,omitempty"`
	Conn        []*connCase       `json:"conn_setup,omitempty"`
	Host        []hostBench       `json:"host_bench,omitempty"`
	Profiles    map[string]string `json:"profiles,omitempty"` // test -> pprof -top
	Failures    []failure         `json:"failures,omitempty"`
	Glitches    []glitch          `json:"reference_glitches,omitempty"`
	Before      *Report           `json:"-"` // Options.Compare, read back
	BeforeFile  string            `json:"compared_with,omitempty"`
	Elapsed     float64           `json:"elapsed_sec"`
	Options     benchOptionsJSON  `json:"options"`
}

type benchOptionsJSON struct {
	Short     bool     `json:"short,omitempty"`
	MaxReps   int      `json:"max_reps"`
	CIWidth   float64  `json:"ci_width_target"`
	Budget    float64  `json:"budget_sec_per_topology"`
	Retries   int      `json:"glitch_retries"`
	Tests     []string `json:"tests"`
	BWSizes   []int    `json:"bw_sizes"`
	LatSizes  []int    `json:"lat_sizes"`
	BWBytes   int64    `json:"bw_bytes"`
	MinIters  int      `json:"min_iters,omitempty"`
	MaxIters  int      `json:"max_iters,omitempty"`
	LatIters  int      `json:"lat_iters"`
	LatIters2 int      `json:"lat_iters_two_vms"`
	Syscalls  bool     `json:"syscalls"`
	ConnSetup bool     `json:"conn_setup"`
	HostBench bool     `json:"host_bench"`
	ICount    bool     `json:"icount,omitempty"` // lab.Options.ICount: the guest's clock counted instructions
}

// bencher runs one bench.
type bencher struct {
	o      Options
	log    io.Writer
	out    string // absolute OutDir
	perf   string // absolute path of the static rdmaperf
	rep    *Report
	port   int
	lab    *lab.Lab
	gid    []string // per node
	dev    []string
	addr   []string
	nodes  int
	repo   string
	flags  int                                                       // pair runs so far (names their flag files)
	run    func(c *benchCase, tool string, rep int) (*sample, error) // runCase; tests replace it
	failMu sync.Mutex
}

// Run is `rdmalab bench`. It returns the report it wrote to
// OutDir/report.md (also report.json and bw.png).
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	start := time.Now()
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	out, err := filepath.Abs(o.OutDir)
	if err != nil {
		return nil, err
	}
	if lab.UnderTmp(out) {
		return nil, fmt.Errorf("--out %s: the guests have a /tmp of their own; pick a directory elsewhere", out)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	b := &bencher{o: o, log: o.Log, out: out, repo: cwd, port: 18700}
	b.rep = &Report{
		Date: time.Now().UTC().Format(time.RFC3339), Topologies: o.Topologies, Reps: o.Reps,
		GoVersion: runtime.Version(), HostCPU: hostCPU(), ClockMHz: map[string]string{}, Clocksource: map[string]string{}, KernelArgs: o.Append,
		Options: benchOptionsJSON{Short: o.Short, MaxReps: max(o.MaxReps, o.Reps), CIWidth: o.CIWidth, Budget: o.Budget.Seconds(), Retries: o.Retries, Tests: o.Tests, BWSizes: o.BWSizes, LatSizes: o.LatSizes, BWBytes: o.BWBytes, MinIters: o.MinIters, MaxIters: o.MaxIters, LatIters: o.LatIters, LatIters2: o.LatIters2,
			Syscalls: o.Syscalls, ConnSetup: o.ConnSetup, HostBench: o.HostBench, ICount: o.ICount},
	}
	if o.Compare != "" {
		before, err := readReport(o.Compare)
		if err != nil {
			return nil, err
		}
		b.rep.Before, b.rep.BeforeFile = before, o.Compare
	}
	if err := b.checkTools(); err != nil {
		return nil, err
	}
	if err := b.buildRdmaperf(ctx); err != nil {
		return nil, err
	}
	if o.HostBench {
		b.hostBench(ctx)
	}
	for _, n := range o.Topologies {
		if err := b.topology(ctx, n); err != nil {
			return nil, err
		}
	}
	b.rep.Elapsed = time.Since(start).Seconds()
	for _, c := range b.rep.Cases {
		c.Stats = caseStatsOf(c)
	}
	if err := writeBenchReport(b.rep, out); err != nil {
		return nil, err
	}
	return b.rep, nil
}

func (o *Options) check() error {
	if o.Reps < 1 {
		return fmt.Errorf("--reps %d: at least one repetition", o.Reps)
	}
	if o.CIWidth <= 0 {
		return fmt.Errorf("--ci-width %g: want a relative width above 0 (0.05 is 5 %%)", o.CIWidth)
	}
	if o.Retries < 0 {
		return fmt.Errorf("--glitch-retries %d: want 0 or more", o.Retries)
	}
	if len(o.Topologies) == 0 {
		return errors.New("--nodes: no topology to run (1, 2 or 1,2)")
	}
	for _, n := range o.Topologies {
		if n != 1 && n != 2 {
			return fmt.Errorf("--nodes %d: the lab has one or two nodes", n)
		}
	}
	for _, t := range o.Tests {
		pt, err := perf.ParseTest(t)
		if err != nil || pt == perf.ConnTime {
			return fmt.Errorf("--tests: %q is not one of write_bw, read_bw, send_bw, write_lat, send_lat, read_lat, atomic_lat", t)
		}
	}
	if o.ICount {
		if slices.Contains(o.Topologies, 2) {
			return errors.New("--icount --nodes 2: two VMs exchange packets in the host's time, which the guests' instruction clocks do not count; run --nodes 1")
		}
		for _, t := range o.Tests {
			if why := icountTimes(t, o.Kernel); why != "" {
				return fmt.Errorf("--icount --tests %s: %s; leave it out", t, why)
			}
		}
		if o.ConnSetup {
			return errors.New("--icount --conn: connection setup waits on the kernel's timers, to which an idle guest's clock jumps under --icount; add --conn=false")
		}
	}
	for _, s := range append(append([]int(nil), o.BWSizes...), o.LatSizes...) {
		if s < 1 || s > perf.MaxSize {
			return fmt.Errorf("size %d: want 1..%d bytes", s, perf.MaxSize)
		}
	}
	if o.MinIters < 5 || o.MaxIters < o.MinIters || o.LatIters < 5 || o.LatIters2 < 5 {
		return fmt.Errorf("iterations: min %d, max %d, latency %d/%d: perftest needs at least 5", o.MinIters, o.MaxIters, o.LatIters, o.LatIters2)
	}
	return nil
}

// checkTools makes sure the C programs are on the host (the guests run the
// host's).
func (b *bencher) checkTools() error {
	var missing []string
	need := map[string]bool{}
	for _, t := range b.o.Tests {
		need[perftestProgram(t)] = true
	}
	if b.o.ConnSetup {
		need["cmtime"] = true
	}
	if b.o.Syscalls {
		need["strace"] = true
	}
	for p := range need {
		if _, err := exec.LookPath(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("not on the host: %s (apt-get install perftest rdmacm-utils strace)", strings.Join(missing, ", "))
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", "perftest").Output(); err == nil {
		b.rep.Perftest = string(out)
	}
	return nil
}

// buildRdmaperf builds the static rdmaperf into the output directory, which
// the guests see at the same path.
func (b *bencher) buildRdmaperf(ctx context.Context) error {
	b.perf = filepath.Join(b.out, "rdmaperf")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", b.perf, "./cmd/rdmaperf")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	cmd.Dir = b.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build rdmaperf (run rdmalab bench from the repository root): %v\n%s", err, out)
	}
	fmt.Fprintf(b.log, "rdmalab bench: built %s\n", b.perf)
	return nil
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(-\d+)?\s+(\d+)\s+([\d.]+) ns/op(.*)$`)

// hostBench runs uverbs' post+poll benchmark on fake rings.
func (b *bencher) hostBench(ctx context.Context) {
	fmt.Fprintln(b.log, "rdmalab bench: host: go test -bench PostPoll ./uverbs")
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", "^BenchmarkPostPoll$", "-benchmem", "-count", "5", "./uverbs")
	cmd.Dir = b.repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.fail("host benchmark (go test -bench PostPoll ./uverbs)", string(out))
		return
	}
	b.rep.Host = parseHostBench(string(out))
}

// parseHostBench reads go test -bench output, taking each benchmark's
// median over its runs.
func parseHostBench(out string) []hostBench {
	type acc struct{ ns, allocs, bytes []float64 }
	var order []string
	m := map[string]*acc{}
	for _, line := range strings.Split(out, "\n") {
		g := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if g == nil {
			continue
		}
		name := g[1]
		a := m[name]
		if a == nil {
			a = &acc{}
			m[name] = a
			order = append(order, name)
		}
		ns, _ := strconv.ParseFloat(g[4], 64)
		a.ns = append(a.ns, ns)
		f := strings.Fields(g[5])
		for i := 0; i+1 < len(f); i++ {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "allocs/op":
				a.allocs = append(a.allocs, v)
			case "B/op":
				a.bytes = append(a.bytes, v)
			}
		}
	}
	var hb []hostBench
	for _, name := range order {
		a := m[name]
		h := hostBench{Name: name, NsPerOp: median(a.ns), AllocsPerOp: median(a.allocs), BytesPerOp: median(a.bytes), Runs: len(a.ns)}
		h.NsPerWR = h.NsPerOp
		if i := strings.Index(name, "/list"); i >= 0 {
			if n, err := strconv.Atoi(name[i+len("/list"):]); err == nil && n > 0 {
				h.NsPerWR = h.NsPerOp / float64(n)
			}
		}
		hb = append(hb, h)
	}
	return hb
}

func hostCPU() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return fmt.Sprintf("%s (%d CPUs)", strings.TrimSpace(v), runtime.NumCPU())
		}
	}
	return runtime.GOARCH
}

func (b *bencher) fail(what, out string) {
	const keep = 3000
	if len(out) > keep {
		out = "..." + out[len(out)-keep:]
	}
	b.failMu.Lock()
	b.rep.Failures = append(b.rep.Failures, failure{What: what, Output: out})
	b.failMu.Unlock()
	fmt.Fprintf(b.log, "rdmalab bench: FAILED %s\n%s\n", what, indent(out))
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 12 {
		lines = lines[len(lines)-12:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// topology boots n nodes and runs every case on them.
func (b *bencher) topology(ctx context.Context, n int) error {
	o := b.o.Options
	o.Nodes = n
	shares, err := lab.Shares(append(append([]string(nil), o.Shares...), b.out))
	if err != nil {
		return err
	}
	o.Shares = shares
	fmt.Fprintf(b.log, "rdmalab bench: booting %d node(s)\n", n)
	l, err := lab.Start(ctx, o)
	if err != nil {
		return err
	}
	defer l.Close()
	b.lab, b.nodes = l, n
	if b.rep.Kernel == "" {
		b.rep.Kernel = l.GuestKernel()
	}
	if err := b.discover(); err != nil {
		return err
	}
	cases := b.cases(n)
	if err := b.repeat(ctx, cases, n); err != nil {
		return err
	}
	b.rep.Cases = append(b.rep.Cases, cases...)
	if b.o.Syscalls {
		b.syscalls(n)
	}
	if b.o.ConnSetup {
		b.connSetup(n)
	}
	if b.o.Profile && n == 1 {
		b.profiles()
	}
	b.lab = nil
	return l.Close()
}

// repeat runs the repetitions of a topology's cases: every case, both
// tools back to back (which one goes first alternating), once per round.
// After the first Reps rounds only the cases whose interval is still
// CIWidth wide or wider take part, until MaxReps or the Budget.
func (b *bencher) repeat(ctx context.Context, cases []*benchCase, n int) error {
	t0 := time.Now()
	maxReps := max(b.o.MaxReps, b.o.Reps)
	var roundWall time.Duration // the last round's duration per case
	for rep := 0; rep < maxReps; rep++ {
		active := cases
		if rep >= b.o.Reps {
			active = nil
			for _, c := range cases {
				if c.Stop == "" && needsMore(c, b.o.CIWidth) {
					active = append(active, c)
				} else if c.Stop == "" {
					c.Stop = "narrow"
				}
			}
			if len(active) == 0 {
				break
			}
			if b.o.Budget > 0 && time.Since(t0)+roundWall*time.Duration(len(active)) > b.o.Budget {
				for _, c := range active {
					c.Stop = "budget"
				}
				fmt.Fprintf(b.log, "rdmalab bench: %d node(s): budget %v reached after %d rounds; %d case(s) still wider than %.0f %%\n",
					n, b.o.Budget, rep, len(active), 100*b.o.CIWidth)
				break
			}
		}
		r0 := time.Now()
		for i, c := range active {
			order := []string{"rdmago", "C"}
			if (rep+i)%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			for _, tool := range order {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s, err := b.runChecked(c, tool, rep)
				if err != nil {
					if !errors.Is(err, errGlitch) {
						b.fail(fmt.Sprintf("%d node(s), %s %s %d B, rep %d", n, tool, caseName(c), c.Size, rep+1), err.Error())
					}
					continue
				}
				if tool == "rdmago" {
					c.Go = append(c.Go, *s)
				} else {
					c.C = append(c.C, *s)
				}
				fmt.Fprintf(b.log, "rdmalab bench: [rep %d/%d, %s] %d node(s) %-6s %-26s %8d B  %s = %.3f (%.1fs)\n",
					rep+1, maxReps, time.Since(t0).Round(time.Second), n, tool, caseName(c), c.Size, c.Metric, s.Value, s.Wall)
			}
			c.Reps = rep + 1
		}
		roundWall = time.Since(r0) / time.Duration(len(active))
		if rep+1 >= b.o.Reps {
			var wide []string
			for _, c := range active {
				if ci := pairedRatioCI(pairedRatios(c)); ci.Width() >= b.o.CIWidth {
					wide = append(wide, fmt.Sprintf("%s %s ±%.0f%%", caseName(c), sizeName(c.Size), 50*ci.Width()))
				}
			}
			fmt.Fprintf(b.log, "rdmalab bench: %d node(s) after %d rounds, %d case(s) wider than %.0f %%: %s\n", n, rep+1, len(wide), 100*b.o.CIWidth, strings.Join(wide, ", "))
		}
	}
	for _, c := range cases {
		if c.Stop == "" {
			if needsMore(c, b.o.CIWidth) {
				c.Stop = "cap"
			} else {
				c.Stop = "narrow"
			}
		}
	}
	return nil
}

func caseName(c *benchCase) string {
	switch {
	case c.Atomic != "":
		return c.Test + " " + c.Atomic
	case c.Polls != "":
		return c.Test + " " + c.Polls + "-polls"
	}
	return c.Test
}

// cases lists the comparisons of a topology.
func (b *bencher) cases(nodes int) []*benchCase {
	var cs []*benchCase
	latIters := b.o.LatIters
	if nodes == 2 {
		latIters = b.o.LatIters2
	}
	for _, t := range b.o.Tests {
		pt, _ := perf.ParseTest(t)
		switch {
		case pt.IsBW():
			for _, s := range b.o.BWSizes {
				n := int(b.o.BWBytes / int64(s))
				n = min(max(n, b.o.MinIters), b.o.MaxIters)
				cs = append(cs, &benchCase{Nodes: nodes, Test: t, Size: s, Iters: n, Metric: "BW average [MB/sec]"})
			}
		case pt == perf.AtomicLat:
			for _, a := range []string{"FETCH_AND_ADD", "CMP_AND_SWAP"} {
				cs = append(cs, &benchCase{Nodes: nodes, Test: t, Atomic: a, Size: 8, Iters: latIters, Metric: "t_typical [usec]"})
			}
		case pt == perf.SendLat && b.o.ICount:
			for _, s := range b.o.LatSizes {
				for _, side := range halfCases {
					cs = append(cs, &benchCase{Nodes: nodes, Test: t, Polls: side, Size: s, Iters: latIters, Metric: "t_typical [usec]"})
				}
			}
		default:
			for _, s := range b.o.LatSizes {
				cs = append(cs, &benchCase{Nodes: nodes, Test: t, Size: s, Iters: latIters, Metric: "t_typical [usec]"})
			}
		}
	}
	return cs
}

// guestPerf is where each guest runs rdmaperf from: a copy in its tmpfs,
// which discover makes. The lab's project share, where the build is, is a
// 9p mount without a page cache, and every start of a binary from there
// reads it again from the host (600-640 9p requests per rdmaperf run, against
// none from the copy: docs/performance.md), while perftest's
// programs come from the cached root.
const guestPerf = "/tmp/rdmaperf-bench"

// discover finds each node's device, address and RoCE v2 IPv4 GID index,
// and the clock rate perftest will use, and copies rdmaperf to guestPerf.
func (b *bencher) discover() error {
	script := "cp " + shellJoin([]string{b.perf, guestPerf}) + " && echo copied=" + guestPerf + "\n" + discoverScript
	outs, err := b.step(func(int) string { return script }, 30*time.Second)
	if err != nil {
		return err
	}
	b.gid = make([]string, b.nodes)
	b.dev = make([]string, b.nodes)
	b.addr = make([]string, b.nodes)
	for i, o := range outs {
		kv := map[string]string{}
		for _, l := range strings.Split(o.out, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
				kv[k] = v
			}
		}
		if kv["copied"] != guestPerf {
			return fmt.Errorf("node %d: could not copy rdmaperf to %s:\n%s", i, guestPerf, o.out)
		}
		if kv["gid"] == "" || kv["dev"] == "" || kv["addr"] == "" {
			return fmt.Errorf("node %d: no RoCE v2 IPv4 GID found:\n%s", i, o.out)
		}
		b.gid[i], b.dev[i], b.addr[i] = kv["gid"], kv["dev"], kv["addr"]
		b.rep.ClockMHz[fmt.Sprintf("%d node(s), node %d", b.nodes, i)] = kv["mhz"]
		b.rep.Clocksource[fmt.Sprintf("%d node(s), node %d", b.nodes, i)] = kv["clocksource"]
	}
	return nil
}

// discoverScript prints a node's settings for discover.
const discoverScript = `d=$RDMALAB_DEV; p=/sys/class/infiniband/$d/ports/1
for f in $p/gids/*; do i=${f##*/}; g=$(cat $f 2>/dev/null); t=$(cat $p/gid_attrs/types/$i 2>/dev/null)
  case "$t/$g" in "RoCE v2/0000:0000:0000:0000:0000:ffff:"*) echo "gid=$i"; break;; esac
done
echo "dev=$d"; echo "addr=$RDMALAB_ADDR"; echo "peer=$RDMALAB_PEER"
grep -m1 "cpu MHz" /proc/cpuinfo | sed 's/.*: /mhz=/'
echo "clocksource=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"`

// stepOut is one node's output of a step.
type stepOut struct {
	out    string
	status int
	wall   time.Duration
}

// step runs script(node) with /bin/sh in every node at once (in the host
// root, the repository as working directory) and collects the output.
func (b *bencher) step(script func(node int) string, limit time.Duration) ([]stepOut, error) {
	n := b.lab.Nodes()
	steps := make([]labproto.StepMsg, n)
	outs := make([]lab.Output, n)
	bufs := make([]*bytes.Buffer, n)
	for i := range steps {
		bufs[i] = &bytes.Buffer{}
		s := script(i)
		if s == "" {
			s = "true"
		}
		steps[i] = labproto.StepMsg{Args: []string{"/bin/sh", "-c", s}, Dir: b.repo, Env: []string{"LC_ALL=C"}}
		outs[i] = lab.Output{Stdout: bufs[i], Stderr: bufs[i]}
	}
	t0 := time.Now()
	res, err := b.lab.Run(steps, outs)
	wall := time.Since(t0)
	so := make([]stepOut, n)
	for i := range so {
		so[i] = stepOut{out: bufs[i].String(), wall: wall}
		if i < len(res) {
			so[i].status = res[i].Status
			if res[i].Error != "" {
				so[i].out += "\n" + res[i].Error
			}
		}
	}
	if err != nil {
		return so, err
	}
	if wall > limit {
		return so, fmt.Errorf("step took %v (limit %v)", wall, limit)
	}
	return so, nil
}

// nextPort gives every run its own port, so no run meets a previous one's
// lingering socket.
func (b *bencher) nextPort() int {
	b.port++
	if b.port > 19400 {
		b.port = 18701
	}
	return b.port
}

// toolArgs is the command line of tool for case c (without the host).
func (b *bencher) toolArgs(tool string, c *benchCase, node, port int, iters int, extra ...string) []string {
	var args []string
	if tool == "rdmago" {
		args = []string{guestPerf, c.Test}
	} else {
		args = []string{perftestProgram(c.Test)}
	}
	if c.Atomic == "" {
		args = append(args, "-s", strconv.Itoa(c.Size))
	} else {
		args = append(args, "-A", c.Atomic)
	}
	args = append(args, "-n", strconv.Itoa(iters), "-d", b.dev[node], "-x", b.gid[node], "-p", strconv.Itoa(port))
	if tool == "rdmago" {
		args = append(args, "--json", "--timeout", strconv.Itoa(int(b.o.RunTimeout.Seconds()))+"s")
		if c.Polls != "" {
			args = append(args, "--perftest") // its peer is perftest's
		}
	} else {
		args = append(args, "-F")
	}
	return append(args, extra...)
}

// retryPattern matches a client that came before its server.
const retryPattern = "Couldn't connect to|Unable to init the socket connection|connection refused|no listener|connection rejected"

// pairScripts returns the shell of a server/client pair: one script on one
// node (server in the background), or the server on node 0 and the client
// on node 1. The client retries while the server is not listening yet, and
// when it is done it leaves a flag file in the shared output directory:
// the server gets a few seconds to finish, then it is stopped (cmtime's
// server never exits by itself, and a server whose client failed would
// otherwise wait for its time limit). wrap prefixes the client (strace).
func (b *bencher) pairScripts(srv, cli []string, wrap string, limit time.Duration, flag string) func(int) string {
	t := strconv.Itoa(int(limit.Seconds()))
	client := fmt.Sprintf(`i=0
while :; do
  sleep 0.3
  timeout -k 5 %s %s%s > /tmp/bench.cli 2>&1; rc=$?
  [ $rc = 0 ] && break
  i=$((i+1)); [ $i -ge 60 ] && break
  grep -qE "%s" /tmp/bench.cli || break
done
touch %s
echo "@@client rc=$rc"; cat /tmp/bench.cli
[ -f /tmp/bench.strace ] && { echo "@@strace"; cat /tmp/bench.strace; rm -f /tmp/bench.strace; }
`, t, wrap, shellJoin(cli), retryPattern, shellJoin([]string{flag}))
	server := fmt.Sprintf(`timeout -k 5 %s %s > /tmp/bench.srv 2>&1 &
spid=$!
while kill -0 $spid 2>/dev/null; do
  if [ -f %s ]; then
    i=0; while kill -0 $spid 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    kill $spid 2>/dev/null; break
  fi
  sleep 0.2
done
wait $spid; echo "@@server rc=$?" > /tmp/bench.srvrc
`, t, shellJoin(srv), shellJoin([]string{flag}))
	report := "cat /tmp/bench.srvrc /tmp/bench.srv\n"
	if b.nodes == 1 {
		return func(int) string {
			return "rm -f /tmp/bench.srvrc\n( " + server + ") &\nswait=$!\n" + client + "wait $swait\n" + report
		}
	}
	return func(node int) string {
		if node == 0 {
			return server + report
		}
		return client
	}
}

// shellJoin quotes args for sh.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// pair runs a server/client pair and returns the client's output. The
// whole output of both sides is kept in OutDir/raw/name.txt.
func (b *bencher) pair(name string, srv, cli []string, wrap string) (string, time.Duration, error) {
	b.flags++
	flag := filepath.Join(b.out, "raw", fmt.Sprintf(".done-%d", b.flags))
	os.MkdirAll(filepath.Dir(flag), 0o755)
	os.Remove(flag)
	defer os.Remove(flag)
	outs, err := b.step(b.pairScripts(srv, cli, wrap, b.o.RunTimeout, flag), b.o.RunTimeout+time.Minute)
	all := fmt.Sprintf("# server: %s\n# client: %s%s\n", shellJoin(srv), wrap, shellJoin(cli))
	for i, o := range outs {
		all += fmt.Sprintf("--- node %d (status %d)\n%s", i, o.status, o.out)
	}
	raw := filepath.Join(b.out, "raw")
	if os.MkdirAll(raw, 0o755) == nil {
		os.WriteFile(filepath.Join(raw, fmt.Sprintf("%dvm-%s.txt", b.nodes, name)), []byte(all), 0o644)
	}
	if err != nil {
		return all, 0, fmt.Errorf("%v\n%s", err, all)
	}
	cliOut := outs[len(outs)-1].out
	before, after, ok := strings.Cut(cliOut, "@@client rc=")
	_ = before
	if !ok {
		return all, 0, fmt.Errorf("no client output\n%s", all)
	}
	rc, body, _ := strings.Cut(after, "\n")
	if s, _, _ := strings.Cut(body, "@@server rc="); s != "" {
		body = s
	}
	if strings.TrimSpace(rc) != "0" {
		return all, 0, fmt.Errorf("client exit status %s\n%s", rc, all)
	}
	return body, outs[0].wall, nil
}

// glitch is a reference (perftest) run that hit a known glitch of the C
// tool and was repeated.
type glitch struct {
	Case     string   `json:"case"` // "1 node(s), send_lat 2 B, rep 3"
	Tries    int      `json:"tries"`
	Reasons  []string `json:"reasons"`  // the matching line of each glitched try
	Resolved bool     `json:"resolved"` // a later try gave a figure
}

// errGlitch marks a reference run given up after Retries glitched tries;
// it is recorded in Report.Glitches, not as a failure.
var errGlitch = errors.New("known glitch of the C tool")

// runChecked is runCase, with a run whose figure came from perftest (the
// reference, or the perftest client of a half-polling case) and hit a known
// glitch of the C tool repeated up to Retries times (each try recorded in
// the report's glitches). After that it returns errGlitch.
func (b *bencher) runChecked(c *benchCase, tool string, rep int) (*sample, error) {
	var g *glitch
	for try := 0; ; try++ {
		run := b.run
		if run == nil {
			run = b.runCase
		}
		s, err := run(c, tool, rep)
		reason := ""
		if err != nil {
			var ge glitchError
			if errors.As(err, &ge) {
				reason = ge.reason
			}
		}
		if reason == "" {
			if g != nil {
				g.Resolved = err == nil
				b.rep.Glitches = append(b.rep.Glitches, *g)
			}
			return s, err
		}
		if g == nil {
			g = &glitch{Case: fmt.Sprintf("%d node(s), %s %s, rep %d", b.nodes, caseName(c), sizeName(c.Size), rep+1)}
		}
		g.Tries++
		g.Reasons = append(g.Reasons, reason)
		fmt.Fprintf(b.log, "rdmalab bench: %s: perftest glitch (%s), try %d of %d\n", g.Case, reason, try+1, b.o.Retries+1)
		if try >= b.o.Retries {
			b.rep.Glitches = append(b.rep.Glitches, *g)
			return nil, fmt.Errorf("%s: %w after %d tries", g.Case, errGlitch, g.Tries)
		}
	}
}

// glitchError is a run whose output shows a known C-tool glitch; its
// figures (if any) are not used.
type glitchError struct{ reason string }

func (e glitchError) Error() string { return "perftest glitch: " + e.reason }

// caseArgs are the server's and the client's command lines of case c run
// with tool, and whose output has the figure ("rdmago" or "C"): the
// client's, which in a half-polling case whose compared side is the server
// is perftest's for both tools.
func (b *bencher) caseArgs(c *benchCase, tool string, port int) (srv, cli []string, figure string) {
	srv = b.toolArgs(tool, c, 0, port, c.Iters)
	cli = append(b.toolArgs(tool, c, b.nodes-1, port, c.Iters), b.addr[0])
	switch c.Polls {
	case "client":
		srv = b.toolArgs("C", c, 0, port, c.Iters, halfPeer)
	case "server":
		cli = append(b.toolArgs("C", c, b.nodes-1, port, c.Iters, halfPeer), b.addr[0])
		return srv, cli, "C"
	}
	return srv, cli, tool
}

// runCase runs case c once with tool.
func (b *bencher) runCase(c *benchCase, tool string, rep int) (*sample, error) {
	srv, cli, figure := b.caseArgs(c, tool, b.nextPort())
	name := fmt.Sprintf("%s-%s-%d-%s-rep%d", strings.ReplaceAll(caseName(c), " ", "-"), sizeLabel(c.Size), c.Size, tool, rep+1)
	body, wall, err := b.pair(name, srv, cli, "")
	if figure == "C" {
		out := body
		if err != nil {
			out = err.Error()
		}
		if g := perf.PerftestGlitch(out); g != "" {
			return nil, glitchError{g}
		}
	}
	if err != nil {
		return nil, err
	}
	s := &sample{Rep: rep + 1, Wall: wall.Seconds()}
	if figure == "rdmago" {
		var r perf.Report
		if err := json.Unmarshal([]byte(jsonPart(body)), &r); err != nil || len(r.Results) != 1 {
			return nil, fmt.Errorf("rdmaperf --json output (%v):\n%s", err, body)
		}
		s.Run = r.Results[0]
		s.BW, s.Lat = s.Run.BW, s.Run.Lat
	} else {
		t, err := perf.ParseTable(body)
		if err != nil {
			return nil, fmt.Errorf("%v:\n%s", err, body)
		}
		if len(t.BW) == 1 {
			s.BW = &t.BW[0]
		}
		if len(t.Lat) == 1 {
			s.Lat = &t.Lat[0]
		}
	}
	switch {
	case s.BW != nil:
		s.Value = s.BW.Average
	case s.Lat != nil:
		s.Value = s.Lat.Typical
	default:
		return nil, fmt.Errorf("no result line:\n%s", body)
	}
	if !(s.Value > 0) {
		return nil, fmt.Errorf("result %v is not positive:\n%s", s.Value, body)
	}
	return s, nil
}

// jsonPart is the JSON document in an output (rdmaperf prints nothing else
// on stdout, but the shell may add lines).
func jsonPart(s string) string {
	i := strings.Index(s, "{")
	j := strings.LastIndex(s, "}")
	if i < 0 || j < i {
		return s
	}
	return s[i : j+1]
}

// straceCalls reads strace -c's table: calls per system call.
func straceCalls(out string) (map[string]float64, error) {
	m := map[string]float64{}
	in := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == "%" && f[1] == "time" {
			in = true
			continue
		}
		if !in || len(f) < 5 || strings.HasPrefix(f[0], "---") {
			continue
		}
		if f[len(f)-1] == "total" {
			break
		}
		// % time, seconds, usecs/call, calls, [errors,] syscall
		calls, err := strconv.ParseFloat(f[3], 64)
		if err != nil {
			continue
		}
		m[f[len(f)-1]] += calls
	}
	if !in {
		return nil, errors.New("no strace -c table")
	}
	return m, nil
}

// syscallTest is a case whose system calls are counted.
type syscallTest struct {
	test string
	size int
}

// syscallTests are the cases of the syscalls section: write_bw 64 B, and
// write_lat and read_lat 2 B except under the instruction clock (ICount),
// where a latency run on one vCPU waits for the scheduler's tick.
func syscallTests(icount bool) []syscallTest {
	if icount {
		return []syscallTest{{"write_bw", 64}}
	}
	return []syscallTest{{"write_bw", 64}, {"write_lat", 2}, {"read_lat", 2}}
}

// syscalls counts the system calls per operation of both tools' clients:
// strace -c -f at two iteration counts, the difference divided by the
// difference in iterations (setup and teardown cancel out).
func (b *bencher) syscalls(nodes int) {
	for _, sc := range syscallTests(b.o.ICount) {
		c := &benchCase{Test: sc.test, Size: sc.size}
		n1, n2 := 200, 1200
		if nodes == 2 && !isBW(sc.test) {
			n1, n2 = 50, 250
		}
		for _, tool := range []string{"rdmago", "C"} {
			var calls [2]map[string]float64
			var self *perf.Counters
			ok := true
			for k, n := range []int{n1, n2} {
				port := b.nextPort()
				srv := b.toolArgs(tool, c, 0, port, n)
				cli := append(b.toolArgs(tool, c, b.nodes-1, port, n), b.addr[0])
				wrap := "strace -f -c -o /tmp/bench.strace "
				body, _, err := b.pair(fmt.Sprintf("strace-%s-%s-n%d", sc.test, tool, n), srv, cli, wrap)
				if err == nil {
					head, st, found := strings.Cut(body, "@@strace")
					if found {
						calls[k], err = straceCalls(st)
						body = head
					} else {
						err = fmt.Errorf("no strace output:\n%s", body)
					}
				}
				if err != nil {
					b.fail(fmt.Sprintf("%d node(s), strace %s %s -n %d", nodes, tool, sc.test, n), err.Error())
					ok = false
					break
				}
				if tool == "rdmago" && k == 1 {
					var r perf.Report
					if json.Unmarshal([]byte(jsonPart(body)), &r) == nil && len(r.Results) == 1 {
						self = r.Results[0].Counters
					}
				}
			}
			if !ok {
				continue
			}
			s := &syscallCase{Nodes: nodes, Test: sc.test, Size: sc.size, Tool: tool, Iters: [2]int{n1, n2}, PerOp: map[string]float64{}, Self: self}
			for name, v2 := range calls[1] {
				d := (v2 - calls[0][name]) / float64(n2-n1)
				if d > 0.0005 || d < -0.0005 {
					s.PerOp[name] = d
					s.Total += d
				}
			}
			if self != nil {
				s.SelfOp = float64(self.WriteCalls+self.ReadCalls) / float64(n2)
			}
			b.rep.Syscalls = append(b.rep.Syscalls, s)
			fmt.Fprintf(b.log, "rdmalab bench: %d node(s) strace %-6s %-9s %.3f syscalls/op %v\n", nodes, tool, sc.test, s.Total, s.PerOp)
		}
	}
}

var cmtimeStep = regexp.MustCompile(`^(create id|bind addr|resolve addr|resolve route|create qp|connect|disconnect|destroy)\s*:\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)`)

// parseCmtime reads cmtime's step table: per step, the per-connection time
// (its "min us" column, which with -c 1 is the one connection's).
func parseCmtime(out string) (map[string]float64, error) {
	m := map[string]float64{}
	for _, l := range strings.Split(out, "\n") {
		g := cmtimeStep.FindStringSubmatch(strings.TrimSpace(l))
		if g == nil {
			continue
		}
		us, err := strconv.ParseFloat(g[4], 64)
		if err != nil {
			return nil, err
		}
		m[g[1]] = us
	}
	for _, s := range cmtimeConnectSteps {
		if _, ok := m[s]; !ok {
			return nil, fmt.Errorf("cmtime printed no %q step:\n%s", s, out)
		}
	}
	return m, nil
}

// cmtimeConnectSteps are the steps that make up what cm.Dial does.
var cmtimeConnectSteps = []string{"create id", "resolve addr", "resolve route", "create qp", "connect"}

// connSetup times rdma_cm connection setup: rdmaperf conn_time (ConnCount
// sequential Dials) against ConnCount runs of cmtime -c 1.
func (b *bencher) connSetup(nodes int) {
	cc := &connCase{Nodes: nodes, CStep: map[string]perf.Summary{}}
	port := b.nextPort()
	n := strconv.Itoa(b.o.ConnCount)
	srv := []string{guestPerf, "conn_time", "-n", n, "-p", strconv.Itoa(port), "--json", "--timeout", "120s"}
	body, _, err := b.pair("conn_time", srv, append(append([]string(nil), srv...), b.addr[0]), "")
	if err == nil {
		var r perf.Report
		if err = json.Unmarshal([]byte(jsonPart(body)), &r); err == nil && (len(r.Results) != 1 || r.Results[0].Conn == nil) {
			err = errors.New("no conn_time result")
		}
		if err == nil {
			cc.Go = *r.Results[0].Conn
		}
	}
	if err != nil {
		b.fail(fmt.Sprintf("%d node(s), rdmaperf conn_time", nodes), err.Error())
		return
	}
	var total []float64
	steps := map[string][]float64{}
	for i := 0; i < b.o.ConnCount; i++ {
		port := b.nextPort()
		p := strconv.Itoa(port)
		srv := []string{"cmtime", "-c", "1", "-p", p}
		cli := []string{"cmtime", "-c", "1", "-p", p, "-s", b.addr[0]}
		body, _, err := b.pair(fmt.Sprintf("cmtime-%d", i+1), srv, cli, "")
		var m map[string]float64
		if err == nil {
			m, err = parseCmtime(body)
		}
		if err != nil {
			b.fail(fmt.Sprintf("%d node(s), cmtime run %d", nodes, i+1), err.Error())
			continue
		}
		sum := 0.0
		for _, s := range cmtimeConnectSteps {
			sum += m[s]
		}
		total = append(total, sum)
		for k, v := range m {
			steps[k] = append(steps[k], v)
		}
	}
	cc.C = perf.Summarize(total)
	for k, v := range steps {
		cc.CStep[k] = perf.Summarize(v)
	}
	b.rep.Conn = append(b.rep.Conn, cc)
	fmt.Fprintf(b.log, "rdmalab bench: %d node(s) connection setup: rdmago median %.0f us, cmtime %.0f us\n", nodes, cc.Go.Median, cc.C.Median)
}

// profiles records CPU profiles of rdmaperf's message-rate and latency
// loops (write and send: the send cases are issue 19's largest one-VM
// gaps) and keeps pprof's top functions.
func (b *bencher) profiles() {
	b.rep.Profiles = map[string]string{}
	for _, pc := range []struct {
		test  string
		size  int
		iters int
	}{{"write_bw", 64, 20000}, {"write_lat", 2, 3000}, {"send_bw", 64, 20000}, {"send_lat", 2, 3000}} {
		c := &benchCase{Test: pc.test, Size: pc.size}
		port := b.nextPort()
		prof := filepath.Join(b.out, "cpu-"+pc.test+".pprof")
		srv := b.toolArgs("rdmago", c, 0, port, pc.iters)
		cli := append(b.toolArgs("rdmago", c, b.nodes-1, port, pc.iters, "--cpuprofile", prof), b.addr[0])
		if _, _, err := b.pair("profile-"+pc.test, srv, cli, ""); err != nil {
			b.fail("profile "+pc.test, err.Error())
			continue
		}
		out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", b.perf, prof).CombinedOutput()
		if err != nil {
			b.fail("pprof "+pc.test, string(out))
			continue
		}
		b.rep.Profiles[fmt.Sprintf("%s %d B", pc.test, pc.size)] = string(out)
	}
}
