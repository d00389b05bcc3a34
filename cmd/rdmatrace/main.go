// Copyright 2026 The rdmago Authors.

// Command rdmatrace shows what any process does with RDMA, with eBPF probes
// written in Go (no C, no clang), and captures RoCEv2 packets.
//
//	rdmatrace [-p PID] [-c COMM] [--dev DEV] [--json] [--summary [--interval D] [--hist]] [--duration D] [--no-rxe | --rxe-all] [--rxe-fentry | --rxe-kprobes] [--ring MIB]
//	rdmatrace probes
//	rdmatrace capture -i IFACE [-w FILE.pcap] [-c COUNT] [--duration D] [-s SNAPLEN] [-q]
//	rdmatrace capture -r FILE.pcap
//	rdmatrace record -o FILE [-i IFACE] [-p PID] [-c COMM] [--dev DEV] [--duration D]
//	rdmatrace timeline FILE... -o PAGE.html
//
// Tracing needs root, Linux 5.8+ with kprobes and BTF, and the RDMA modules
// (ib_uverbs, rdma_ucm, rdma_rxe) loaded; what cannot be probed is reported
// and skipped. Capturing needs CAP_NET_RAW. The event loop and its filters
// live in package tools/trace (Watch), the capture loop in
// tools/trace/capture; this command holds their flags.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/tools/trace"
	"github.com/rdmago/rdmago/tools/trace/capture"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) > 0 && args[0] == "capture":
		err = runCapture(ctx, args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "record":
		err = runRecord(ctx, args[1:], stderr)
	case len(args) > 0 && args[0] == "timeline":
		err = runTimeline(args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "probes":
		err = runProbes(args[1:], stdout, stderr)
	default:
		err = runTrace(ctx, args, stdout, stderr)
	}
	if errors.Is(err, flag.ErrHelp) {
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "rdmatrace:", err)
		return 1
	}
	return 0
}

// withDuration is ctx, cancelled after d too when d > 0.
func withDuration(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func runProbes(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rdmatrace probes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: rdmatrace probes\n\nAttaches every probe, prints which ones this kernel has, and detaches.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("probes takes no arguments, got %q", fs.Args())
	}
	return trace.ListProbes(stdout)
}

func runTrace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o trace.WatchOptions
	var duration time.Duration
	fs := flag.NewFlagSet("rdmatrace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.PID, "p", 0, "trace only process `PID`")
	fs.StringVar(&o.Comm, "c", "", "trace only processes named `COMM` (at most 15 bytes, as in /proc/PID/comm)")
	fs.StringVar(&o.Dev, "dev", "", "show only uverbs calls on RDMA device `DEV` (e.g. rxe0) and its counters")
	fs.BoolVar(&o.JSON, "json", false, "print one JSON object per event")
	fs.BoolVar(&o.Summary, "summary", false, "print counts and latencies instead of events (on exit, and every --interval)")
	fs.BoolVar(&o.Hist, "hist", false, "with --summary: add a latency histogram per operation")
	fs.DurationVar(&o.Interval, "interval", 0, "with --summary: also print it every `D` (e.g. 5s)")
	fs.DurationVar(&duration, "duration", 0, "stop after `D` (default: until Ctrl-C or SIGTERM)")
	fs.BoolVar(&o.NoRXE, "no-rxe", false, "do not probe the rxe data path")
	fs.BoolVar(&o.RXEAll, "rxe-all", false, rxeAllUsage)
	fs.BoolVar(&o.RXEFentry, "rxe-fentry", false, "attach the rxe counters as fentry programs even while QPs are active (by default they are fentry programs only if no QP is past INIT when attached, kprobes otherwise: attaching fentry while rxe was busy crashed the QEMU lab's 6.12)")
	fs.BoolVar(&o.RXEKprobes, "rxe-kprobes", false, "attach the rxe counters as kprobes, never fentry programs")
	fs.BoolVar(&o.Quiet, "q", false, "do not list skipped probes")
	ringMiB := fs.Int("ring", 0, "kernel ring buffer of `MIB` MiB, a power of two (default 16)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: rdmatrace [flags]
       rdmatrace probes
       rdmatrace capture -i IFACE [-w FILE.pcap] [-c COUNT] [--duration D]
       rdmatrace capture -r FILE.pcap
       rdmatrace record -o FILE [-i IFACE] [filters]
       rdmatrace timeline FILE... -o PAGE.html

Traces the RDMA calls of every process (uverbs write/ioctl/mmap, rdma_cm
commands, CM events), one line per call:
  12.345678 rping[812] uverbs/rxe0 CREATE_QP type=RC ... -> ok 41us qp=1 qpn=17
and counts the rxe data path per QP: doorbells (rxe_post_send/recv), packets
out and in (rxe_xmit_packet, rxe_rcv) and completions (rxe_cq_post); with
--rxe-all also rxe's internal steps (task scheduling, requester, completer,
responder), which cost more throughput (some ten probe hits per packet
instead of two).

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (subcommands: probes, capture, record, timeline)", fs.Arg(0))
	}
	if duration < 0 {
		return fmt.Errorf("--duration must not be negative")
	}
	if *ringMiB < 0 || *ringMiB&(*ringMiB-1) != 0 || *ringMiB > 1<<10 {
		return fmt.Errorf("--ring %d: want a power of two of MiB up to 1024 (e.g. 64)", *ringMiB)
	}
	o.RingBytes = *ringMiB << 20
	ctx, cancel := withDuration(ctx, duration)
	defer cancel()
	return trace.Watch(ctx, o, stdout, stderr) // it checks o first
}

// rxeAllUsage is the --rxe-all flag of trace and record.
const rxeAllUsage = "also count rxe's internal steps per QP (rxe_sched_task, rxe_run_task, rxe_requester, rxe_completer, rxe_responder, rxe_sender, rxe_receiver, rxe_comp_queue_pkt, rxe_resp_queue_pkt): some ten probe hits per packet instead of two, slowing a busy QP more"

func runCapture(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o capture.RunOptions
	var duration time.Duration
	fs := flag.NewFlagSet("rdmatrace capture", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Iface, "i", "", "capture on interface `IFACE` (the netdev under the rxe device, e.g. eth0)")
	fs.StringVar(&o.File, "w", "", "write the packets to `FILE.pcap` (Wireshark/tshark dissect UDP 4791 as InfiniBand)")
	rfile := fs.String("r", "", "print the RoCEv2 packets of a saved pcap `FILE` instead of capturing")
	fs.IntVar(&o.Count, "c", 0, "stop after `COUNT` packets")
	fs.DurationVar(&duration, "duration", 0, "stop after `D`")
	fs.IntVar(&o.SnapLen, "s", 0, "keep at most `SNAPLEN` bytes per packet (default 9216)")
	fs.BoolVar(&o.Quiet, "q", false, "do not print a line per packet")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: rdmatrace capture -i IFACE [-w FILE.pcap] [-c COUNT] [--duration D] [-s SNAPLEN] [-q]
       rdmatrace capture -r FILE.pcap

Captures RoCEv2 frames (UDP destination port 4791) with a packet socket and
prints one line per packet:
  0.000123 > 10.77.0.1:49152 > 10.77.0.2:4791 RC RDMA WRITE Only QP=0x000011 PSN=5 ...

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *rfile != "" {
		if o.Iface != "" || o.File != "" {
			return fmt.Errorf("-r reads a file: it does not go with -i or -w")
		}
		out := bufio.NewWriter(stdout)
		defer out.Flush()
		return capture.PrintFile(out, *rfile, o.Count)
	}
	if duration < 0 {
		return fmt.Errorf("--duration must not be negative")
	}
	ctx, cancel := withDuration(ctx, duration)
	defer cancel()
	return capture.Run(ctx, o, stdout, stderr) // it checks -i and -c
}
