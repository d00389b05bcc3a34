// Copyright 2026 The rdmago Authors.

// Command rdmalab is the Soft-RoCE lab: it boots a Debian kernel with an rxe
// device in QEMU (one node, or two joined by a virtual wire) and runs commands
// or Go test binaries in it. The logic lives in package tools/lab.
//
//	rdmalab run [--nodes 1|2] [--kernel 6.1|6.12] [--bare] [--timeout D] -- CMD ARGS...
//	rdmalab test [--kernel K] [--nodes N] [-run REGEX] [-v] PKG...
//	rdmalab kernels [--fetch 6.1,6.12]
//	rdmalab demo [--kernel K]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
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
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var code int
	switch os.Args[1] {
	case "run":
		code = cmdRun(ctx, os.Args[2:])
	case "test":
		code = cmdTest(ctx, os.Args[2:])
	case "kernels":
		code = cmdKernels(ctx, os.Args[2:])
	case "demo":
		code = cmdDemo(ctx, os.Args[2:])
	case "bench":
		code = cmdBench(ctx, os.Args[2:])
	case "-h", "-help", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "rdmalab: unknown command %q\n%s", os.Args[1], usage)
		code = 2
	}
	os.Exit(code)
}

// labFlags registers the flags every booting command shares.
func labFlags(fs *flag.FlagSet, o *lab.Options, timeout time.Duration) {
	fs.StringVar(&o.Kernel, "kernel", lab.DefaultKernel, "kernel: 6.1 (Debian 12) or 6.12 (Debian 13)")
	fs.IntVar(&o.Nodes, "nodes", 1, "number of VMs: 1 (rxe on a veth) or 2 (rxe on virtio NICs joined by a socket)")
	fs.DurationVar(&o.Timeout, "timeout", timeout, "limit of the whole boot; a guest still running then is killed")
	fs.IntVar(&o.MemoryMB, "mem", 1024, "memory per VM in MiB")
	fs.StringVar(&o.Accel, "accel", "auto", "auto, tcg or kvm")
	fs.BoolVar(&o.Verbose, "debug", false, "show the guests' consoles and init logs")
	fs.Func("share", "host `DIR` to make writable in the guest (repeatable; the current directory always is)", func(s string) error {
		o.Shares = append(o.Shares, s)
		return nil
	})
	o.Log = os.Stderr
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "rdmalab: %v\n", err)
	if errors.Is(err, context.Canceled) {
		return 130
	}
	return 1
}

func cmdRun(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("rdmalab run", flag.ExitOnError)
	var o lab.RunOptions
	labFlags(fs, &o.Options, 10*time.Minute)
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
	status, err := lab.RunCommand(ctx, o, fs.Args(), os.Stdout, os.Stderr)
	if err != nil {
		fail(err)
		if status == 0 {
			status = 1
		}
	}
	return status
}

func cmdTest(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("rdmalab test", flag.ExitOnError)
	var o lab.TestOptions
	labFlags(fs, &o.Options, 20*time.Minute)
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
	ok, err := lab.RunTests(ctx, o, fs.Args(), os.Stdout)
	if err != nil {
		return fail(err)
	}
	if !ok {
		fmt.Println("FAIL")
		return 1
	}
	return 0
}

func cmdKernels(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("rdmalab kernels", flag.ExitOnError)
	fetch := fs.String("fetch", "", "comma-separated kernel series to fetch now (6.1,6.12)")
	fs.Parse(args)
	if *fetch != "" {
		for _, s := range strings.Split(*fetch, ",") {
			if _, err := lab.GetKernel(ctx, strings.TrimSpace(s), os.Stderr); err != nil {
				return fail(err)
			}
		}
	}
	ks, err := lab.CachedKernels()
	if err != nil {
		return fail(err)
	}
	if len(ks) == 0 {
		fmt.Println("no kernels cached; `rdmalab kernels -fetch 6.1,6.12` fetches them")
	}
	for _, k := range ks {
		fmt.Printf("%-6s %-28s %s\n", k.Series, k.Release, k.Dir)
	}
	return 0
}
