// Copyright 2026 The rdmago Authors.

// Command rdmalab is the Soft-RoCE lab: it boots a Debian kernel with an rxe
// device in QEMU (one node, or two joined by a virtual wire) and runs commands
// or Go test binaries in it. The logic lives in package tools/lab.
//
//	rdmalab run [--nodes 1|2] [--kernel 5.10|6.1|6.12|7.3] [--bare] [--timeout D] -- CMD ARGS...
//	rdmalab test [--kernel K] [--nodes N] [-run REGEX] [-v] PKG...
//	rdmalab kernels [--fetch 6.1,6.12]
//	rdmalab demo [--kernel K]
//	rdmalab bench [flags]
//
// The demo lives in package tools/demo, the benchmark in tools/bench; this
// command holds their flags and output.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/tools/lab"
)

const usage = `usage:
  rdmalab run [flags] -- CMD ARGS...   run CMD in every lab node; exit with its status
  rdmalab test [flags] PKG...          build PKG's tests on the host, run them in the lab
  rdmalab kernels [-fetch 6.1,6.12]    list (or fetch) the cached lab kernels
  rdmalab demo [flags]                 two nodes: rdmacp sends a file over RDMA, verified, vs ib_write_bw
  rdmalab bench [flags]                rdmaperf vs perftest in the same boot: Markdown/JSON/PNG report
Run 'rdmalab CMD -h' for the flags of CMD.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "run":
		return cmdRun(ctx, args[1:], stdout, stderr)
	case "test":
		return cmdTest(ctx, args[1:], stdout, stderr)
	case "kernels":
		return cmdKernels(ctx, args[1:], stdout, stderr)
	case "demo":
		return cmdDemo(ctx, args[1:], stdout, stderr)
	case "bench":
		return cmdBench(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "rdmalab: unknown command %q\n%s", args[0], usage)
		return 2
	}
}

// labFlags registers the flags every booting command shares.
func labFlags(fs *flag.FlagSet, o *lab.Options, timeout time.Duration, stderr io.Writer) {
	fs.StringVar(&o.Kernel, "kernel", lab.DefaultKernel, "kernel: "+lab.KernelNames()+" (Debian 11, 12, 13, trixie-backports)")
	fs.IntVar(&o.Nodes, "nodes", 1, "number of VMs: 1 (rxe on a veth) or 2 (rxe on virtio NICs joined by a socket)")
	fs.DurationVar(&o.Timeout, "timeout", timeout, "limit of the whole boot; a guest still running then is killed")
	fs.IntVar(&o.MemoryMB, "mem", 1024, "memory per VM in MiB")
	fs.StringVar(&o.Accel, "accel", "auto", "auto, tcg or kvm")
	fs.BoolVar(&o.Verbose, "debug", false, "show the guests' consoles and init logs")
	icountFlag(fs, &o.ICount, "")
	appendFlag(fs, &o.Append)
	fs.Func("share", "host `DIR` to make writable in the guest (repeatable; the current directory always is)", func(s string) error {
		o.Shares = append(o.Shares, s)
		return nil
	})
	o.Log = stderr
}

// icountFlag registers --icount (lab.Options.ICount); more is added to
// the usage.
func icountFlag(fs *flag.FlagSet, v *bool, more string) {
	fs.BoolVar(v, "icount", *v, "guest time counts instructions (QEMU -icount shift=0,sleep=off, one vCPU per VM, TCG only): what a guest times is its own CPU's work, whatever the host's load"+more)
}

// flagSet reports whether name was given on fs's command line (after
// fs.Parse).
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// hasBoolFlag reports whether args set the boolean flag name to true
// before flag parsing (for flags that change other flags' defaults).
func hasBoolFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			break
		}
		if s, ok := strings.CutPrefix(a, "-"); ok {
			s = strings.TrimPrefix(s, "-")
			if s == name || s == name+"=true" {
				return true
			}
		}
	}
	return false
}

// appendFlag registers --append, the guests' extra kernel parameters; the
// flag's value replaces *args (an empty one: none).
func appendFlag(fs *flag.FlagSet, args *[]string) {
	def := strings.Join(*args, " ")
	if def == "" {
		def = "none"
	}
	fs.Func("append", "extra kernel `PARAMS` for the guests, space-separated, after the lab's own (console=ttyS0 quiet panic=-1), e.g. \"clocksource=tsc tsc=reliable\"; '' for none (default "+def+")", func(s string) error {
		v, err := lab.ParseKernelArgs(s)
		*args = v
		return err
	})
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "rdmalab: %v\n", err)
	if errors.Is(err, context.Canceled) {
		return 130
	}
	return 1
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmalab run", flag.ExitOnError)
	fs.SetOutput(stderr)
	var o lab.RunOptions
	labFlags(fs, &o.Options, 10*time.Minute, stderr)
	fs.BoolVar(&o.Bare, "bare", false, "run CMD (a static binary) in the initramfs root: no libc, no rdma-core")
	fs.Func("env", "`K=V` to add to the command's environment (repeatable)", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want K=V, got %q", s)
		}
		o.Env = append(o.Env, s)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: rdmalab run [flags] -- CMD ARGS...\n\nThe command runs in every node with RDMALAB_NODE, RDMALAB_ADDR, RDMALAB_PEER and\nRDMALAB_DEV set; rdmalab exits with the first non-zero status across nodes.")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	status, err := lab.RunCommand(ctx, o, fs.Args(), stdout, stderr)
	if err != nil {
		fail(stderr, err)
		if status == 0 {
			status = 1
		}
	}
	return status
}

func cmdTest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmalab test", flag.ExitOnError)
	fs.SetOutput(stderr)
	var o lab.TestOptions
	labFlags(fs, &o.Options, 20*time.Minute, stderr)
	fs.StringVar(&o.Run, "run", "", "run only tests matching `REGEX` (as go test -run)")
	fs.BoolVar(&o.V, "v", false, "verbose: stream every test's output")
	fs.Func("args", "extra test binary `FLAG` such as -test.count=2 (repeatable)", func(s string) error {
		o.TestArgs = append(o.TestArgs, s)
		return nil
	})
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: rdmalab test [flags] PKG...\n\nBuilds each package's test binary on the host (CGO_ENABLED=0), boots the lab once and\nruns every binary bare in every node, in the package's directory.")
		fs.PrintDefaults()
	}
	fs.Parse(args)
	ok, err := lab.RunTests(ctx, o, fs.Args(), stdout)
	if err != nil {
		return fail(stderr, err)
	}
	if !ok {
		fmt.Fprintln(stdout, "FAIL")
		return 1
	}
	return 0
}

func cmdKernels(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmalab kernels", flag.ExitOnError)
	fs.SetOutput(stderr)
	fetch := fs.String("fetch", "", "comma-separated kernel series to fetch now (of "+lab.KernelNames()+")")
	fs.Parse(args)
	if *fetch != "" {
		for _, s := range strings.Split(*fetch, ",") {
			if _, err := lab.GetKernel(ctx, strings.TrimSpace(s), stderr); err != nil {
				return fail(stderr, err)
			}
		}
	}
	ks, err := lab.CachedKernels()
	if err != nil {
		return fail(stderr, err)
	}
	if len(ks) == 0 {
		fmt.Fprintln(stdout, "no kernels cached; `rdmalab kernels -fetch 6.1,6.12` fetches the two make test runs whole")
	}
	for _, k := range ks {
		fmt.Fprintf(stdout, "%-6s %-28s %s\n", k.Series, k.Release, k.Dir)
	}
	return 0
}
