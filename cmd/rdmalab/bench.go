// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rdmago/rdmago/tools/bench"
	"github.com/rdmago/rdmago/tools/lab"
)

// cmdBench is `rdmalab bench`: rdmaperf against perftest in the lab, with
// the report written to --out.
func cmdBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, ok := benchOptions(args, stderr)
	if !ok {
		return 2
	}
	r, err := bench.Run(ctx, o)
	if err != nil {
		return fail(stderr, err)
	}
	dir, _ := filepath.Abs(o.OutDir)
	fmt.Fprintf(stdout, "rdmalab bench: %d cases, %d failures, %d perftest runs repeated for a known glitch, in %s; report: %s\n", len(r.Cases), len(r.Failures),
		len(r.Glitches), (time.Duration(r.Elapsed) * time.Second).String(), filepath.Join(dir, "report.md"))
	// Speed never fails the command, nor do perftest's known glitches
	// (repeated, and listed in the report); a run that produced no figure
	// for another reason does.
	if len(r.Failures) > 0 {
		return 1
	}
	return 0
}

// benchOptions parses bench's command line; false after printing the
// usage for stray arguments.
func benchOptions(args []string, stderr io.Writer) (bench.Options, bool) {
	fs := flag.NewFlagSet("rdmalab bench", flag.ExitOnError)
	fs.SetOutput(stderr)
	o := bench.DefaultOptions()
	short := hasBoolFlag(args, "short")
	if short {
		o = bench.ShortOptions()
	}
	if hasBoolFlag(args, "icount") {
		o = bench.ICountOptions(o)
	}
	fs.Bool("short", short, "the short mode: one VM, 6 cases (write/send BW 64 B and 4 KiB, write/send latency 2 B), 4–10 repetitions in a 4-minute budget, no strace/cm/host runs; to compare a change before and after (about 6 minutes; other flags still apply)")
	// labFlags' --nodes takes one count; bench takes a list.
	fs.StringVar(&o.Kernel, "kernel", o.Kernel, "kernel: "+lab.KernelNames()+" (Debian 11, 12, 13, trixie-backports)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "limit of each boot (all runs on one topology)")
	fs.IntVar(&o.MemoryMB, "mem", 1024, "memory per VM in MiB")
	fs.StringVar(&o.Accel, "accel", "auto", "auto, tcg or kvm")
	fs.BoolVar(&o.Verbose, "debug", false, "show the guests' consoles and init logs")
	icountFlag(fs, &o.ICount, "; the bench then runs one VM, no cm setup, and the tests with one polling side (bandwidth, read_lat, atomic_lat, and on 6.1 send_lat against ib_send_lat -e on either side): what that clock can time")
	appendFlag(fs, &o.Append)
	o.Log = stderr
	fs.Func("nodes", "topologies to run, comma-separated: `1,2` (one VM over rxe loopback, two VMs over a wire)", func(s string) error {
		v, err := intList(s)
		o.Topologies = v
		return err
	})
	tests := fs.String("tests", strings.Join(o.Tests, ","), "tests to compare (rdmaperf names; ib_ + name is the C tool)")
	fs.Func("bw-sizes", "message sizes of the bandwidth tests (default 64,4096,65536)", func(s string) error {
		v, err := intList(s)
		o.BWSizes = v
		return err
	})
	fs.Func("lat-sizes", "message sizes of write/send/read latency (default 2,4096)", func(s string) error {
		v, err := intList(s)
		o.LatSizes = v
		return err
	})
	fs.IntVar(&o.Reps, "reps", o.Reps, "repetitions of every case, at least (medians, spread and intervals are over all of them)")
	fs.IntVar(&o.MaxReps, "max-reps", o.MaxReps, "more repetitions, up to this many, for the cases whose 95 % interval is still -ci-width wide or wider")
	fs.Float64Var(&o.CIWidth, "ci-width", o.CIWidth, "relative width of the ratio's 95 % interval (hi/lo - 1) below which a case needs no more repetitions")
	fs.DurationVar(&o.Budget, "budget", o.Budget, "no more adaptive repetitions start past this much time on one topology (0: no limit)")
	fs.IntVar(&o.Retries, "glitch-retries", o.Retries, "repeat a perftest run that hit a known glitch of the C tool (r^2 < 0.9) up to this many times")
	fs.Int64Var(&o.BWBytes, "bw-bytes", o.BWBytes, "bytes per bandwidth run: iterations = this / size, within [-min-iters, -max-iters]")
	fs.IntVar(&o.MinIters, "min-iters", o.MinIters, "fewest iterations of a bandwidth run")
	fs.IntVar(&o.MaxIters, "max-iters", o.MaxIters, "most iterations of a bandwidth run")
	fs.IntVar(&o.LatIters, "lat-iters", o.LatIters, "iterations of a latency run on one VM")
	fs.IntVar(&o.LatIters2, "lat-iters-2", o.LatIters2, "iterations of a latency run on two VMs")
	fs.DurationVar(&o.RunTimeout, "run-timeout", o.RunTimeout, "limit of one server/client run")
	fs.BoolVar(&o.Syscalls, "syscalls", o.Syscalls, "count system calls per operation with strace -c (both tools)")
	fs.BoolVar(&o.ConnSetup, "conn", o.ConnSetup, "time rdma_cm connection setup against cmtime")
	fs.IntVar(&o.ConnCount, "conn-count", o.ConnCount, "connections timed per tool")
	fs.BoolVar(&o.HostBench, "host", o.HostBench, "run the host post+poll benchmark (go test -bench PostPoll ./uverbs)")
	fs.BoolVar(&o.Profile, "profile", false, "record pprof CPU profiles of rdmaperf in the guest and include the top functions")
	fs.StringVar(&o.Compare, "compare", "", "a previous run's `report.json`: show its ratios and intervals next to this run's")
	fs.StringVar(&o.OutDir, "out", o.OutDir, "`DIR` for report.md, report.json, bw.png (and the built rdmaperf)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: rdmalab bench [flags]\n\nBoots the lab (one VM, then two) and runs rdmaperf and perftest in the same guests,\ninterleaved and repeated, then writes a report (Markdown, JSON, PNG chart) to --out.\nThe default run takes minutes under TCG; widen it with -bw-sizes, -reps, -bw-bytes.")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if fs.NArg() > 0 {
		fs.Usage()
		return o, false
	}
	o.Tests = strings.Split(*tests, ",")
	if o.ICount && !flagSet(fs, "tests") {
		o.Tests = bench.ICountTests(o.Tests, o.Kernel) // what the clock can time on --kernel
	}
	return o, true
}

func intList(s string) ([]int, error) {
	var v []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q: want comma-separated integers", s)
		}
		v = append(v, n)
	}
	return v, nil
}
