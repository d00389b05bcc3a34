// Copyright 2026 The rdmago Authors.

// Command rdmatrace shows what any process does with RDMA, with eBPF probes
// written in Go (no C, no clang), and captures RoCEv2 packets.
//
//	rdmatrace [-p PID] [-c COMM] [--dev DEV] [--json] [--summary [--interval D] [--hist]] [--duration D] [--no-rxe]
//	rdmatrace probes
//	rdmatrace capture -i IFACE [-w FILE.pcap] [-c COUNT] [--duration D] [-s SNAPLEN] [-q]
//	rdmatrace capture -r FILE.pcap
//
// Tracing needs root, Linux 5.8+ with kprobes and BTF, and the RDMA modules
// (ib_uverbs, rdma_ucm, rdma_rxe) loaded; what cannot be probed is reported
// and skipped. Capturing needs CAP_NET_RAW.
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
	"github.com/rdmago/rdmago/tools/trace/ibpkt"
	"github.com/rdmago/rdmago/tools/trace/pcap"
)

func main() {
	args := os.Args[1:]
	var err error
	switch {
	case len(args) > 0 && args[0] == "capture":
		err = runCapture(args[1:])
	case len(args) > 0 && args[0] == "probes":
		err = runProbes(args[1:])
	default:
		err = runTrace(args)
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdmatrace:", err)
		os.Exit(1)
	}
}

// signalContext is cancelled by SIGINT/SIGTERM, and after d when d > 0.
func signalContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if d <= 0 {
		return ctx, stop
	}
	ctx2, cancel := context.WithTimeout(ctx, d)
	return ctx2, func() { cancel(); stop() }
}

func runProbes(args []string) error {
	fs := flag.NewFlagSet("rdmatrace probes", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: rdmatrace probes\n\nAttaches every probe, prints which ones this kernel has, and detaches.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("probes takes no arguments, got %q", fs.Args())
	}
	t, err := trace.New(trace.Options{})
	if err != nil {
		return err
	}
	printProbes(os.Stdout, t.Probes(), true)
	return t.Close()
}

func printProbes(w io.Writer, probes []trace.Probe, verbose bool) {
	for _, p := range probes {
		switch {
		case p.Attached && verbose:
			fmt.Fprintf(w, "attached  %-40s %s\n", p.Name, p.Note)
		case p.Attached:
		default:
			fmt.Fprintf(w, "skipped   %-40s %v\n", p.Name, p.Err)
		}
	}
}

type traceFlags struct {
	pid      int
	comm     string
	dev      string
	json     bool
	summary  bool
	hist     bool
	interval time.Duration
	duration time.Duration
	noRXE    bool
	quiet    bool
}

func runTrace(args []string) error {
	var tf traceFlags
	fs := flag.NewFlagSet("rdmatrace", flag.ContinueOnError)
	fs.IntVar(&tf.pid, "p", 0, "trace only process `PID`")
	fs.StringVar(&tf.comm, "c", "", "trace only processes named `COMM` (at most 15 bytes, as in /proc/PID/comm)")
	fs.StringVar(&tf.dev, "dev", "", "show only uverbs calls on RDMA device `DEV` (e.g. rxe0) and its counters")
	fs.BoolVar(&tf.json, "json", false, "print one JSON object per event")
	fs.BoolVar(&tf.summary, "summary", false, "print counts and latencies instead of events (on exit, and every --interval)")
	fs.BoolVar(&tf.hist, "hist", false, "with --summary: add a latency histogram per operation")
	fs.DurationVar(&tf.interval, "interval", 0, "with --summary: also print it every `D` (e.g. 5s)")
	fs.DurationVar(&tf.duration, "duration", 0, "stop after `D` (default: until Ctrl-C or SIGTERM)")
	fs.BoolVar(&tf.noRXE, "no-rxe", false, "do not probe the rxe data path")
	fs.BoolVar(&tf.quiet, "q", false, "do not list skipped probes")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: rdmatrace [flags]
       rdmatrace probes
       rdmatrace capture -i IFACE [-w FILE.pcap] [-c COUNT] [--duration D]
       rdmatrace capture -r FILE.pcap

Traces the RDMA calls of every process (uverbs write/ioctl/mmap, rdma_cm
commands, CM events) and counts the rxe data path per QP, one line per call:
  12.345678 rping[812] uverbs/rxe0 CREATE_QP type=RC ... -> ok 41us qp=1 qpn=17

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (subcommands: probes, capture)", fs.Arg(0))
	}
	if tf.interval < 0 || tf.duration < 0 {
		return fmt.Errorf("--interval and --duration must not be negative")
	}
	if tf.interval > 0 && !tf.summary {
		return fmt.Errorf("--interval needs --summary")
	}
	if tf.dev != "" {
		if _, err := os.Stat(trace.SysfsInfiniband + "/" + tf.dev); err != nil {
			return fmt.Errorf("--dev %s: no such RDMA device (see ls %s)", tf.dev, trace.SysfsInfiniband)
		}
	}

	// Signals are caught from here on, so a SIGTERM while the probes load
	// still ends in Close.
	ctx, cancel := signalContext(tf.duration)
	defer cancel()
	t, err := trace.New(trace.Options{PID: tf.pid, Comm: tf.comm, NoRXE: tf.noRXE})
	if err != nil {
		return err
	}
	defer t.Close()
	if !tf.quiet {
		printProbes(os.Stderr, t.Probes(), false)
	}
	var devs []string
	if tf.dev != "" {
		devs = []string{tf.dev}
	}
	hwBefore, _ := trace.ReadHWCounters(trace.SysfsInfiniband, devs)

	f := &trace.Formatter{
		Names:    trace.ABINames{},
		Devices:  trace.UverbsDevices("/sys/class/infiniband_verbs"),
		Start:    monotonicNow(),
		PageSize: os.Getpagesize(),
	}
	sum := trace.NewSummary(f)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	fmt.Fprintln(os.Stderr, "rdmatrace: tracing; Ctrl-C to stop")
	var tick <-chan time.Time
	if tf.interval > 0 {
		tk := time.NewTicker(tf.interval)
		defer tk.Stop()
		tick = tk.C
	}
	events := make(chan trace.Event, 256)
	readErr := make(chan error, 1)
	go func() {
		defer close(events)
		for {
			e, err := t.Read(ctx)
			if err != nil {
				if ctx.Err() == nil {
					readErr <- err
				}
				return
			}
			events <- e
		}
	}()
	filtered := tf.pid != 0 || tf.comm != ""
loop:
	for {
		select {
		case e, ok := <-events:
			if !ok {
				break loop
			}
			if e.Kind == trace.KindCMEvent && filtered {
				continue // delivered in kernel context: not attributable to a process
			}
			if tf.dev != "" && e.Dev != 0 && f.Devices[e.Dev] != "" && f.Devices[e.Dev] != tf.dev {
				continue
			}
			switch {
			case tf.summary:
				sum.Add(e)
			case tf.json:
				b, err := f.JSON(e)
				if err != nil {
					return err
				}
				out.Write(append(b, '\n'))
			default:
				fmt.Fprintln(out, f.Line(e))
			}
			if len(events) == 0 {
				out.Flush()
			}
		case <-tick:
			fmt.Fprintf(out, "--- %s\n", time.Now().Format(time.TimeOnly))
			sum.Write(out, tf.hist)
			writeRXE(out, t, hwBefore, devs)
			out.Flush()
		}
	}
	select {
	case err := <-readErr:
		return err
	default:
	}

	w := io.Writer(os.Stderr)
	if tf.summary {
		sum.Write(out, tf.hist)
		w = out
	}
	writeRXE(w, t, hwBefore, devs)
	if ringFull, inflightFull, err := t.Lost(); err == nil && ringFull+inflightFull > 0 {
		fmt.Fprintf(os.Stderr, "rdmatrace: lost %d events (ring buffer full) and %d calls (in-flight table full)\n", ringFull, inflightFull)
	}
	out.Flush()
	return t.Close()
}

// writeRXE prints the rxe hit counts and the hw_counters that changed since
// hwBefore.
func writeRXE(w io.Writer, t *trace.Tracer, hwBefore []trace.HWCounters, devs []string) {
	counts, err := t.RXECounts()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdmatrace:", err)
	}
	if len(counts) > 0 {
		fmt.Fprintln(w, "\nrxe data path (kprobe hits):")
		for _, c := range counts {
			qp := fmt.Sprintf("qpn %d", c.QPN)
			if c.QPN == trace.QPNUnknown {
				qp = "qpn ?"
			}
			what := c.Func
			if c.Error {
				what += " (error status)"
			}
			fmt.Fprintf(w, "  %-32s %-10s %d\n", what, qp, c.Count)
		}
	}
	now, err := trace.ReadHWCounters(trace.SysfsInfiniband, devs)
	if err != nil {
		return
	}
	if d := trace.DiffHWCounters(hwBefore, now, false); len(d) > 0 {
		fmt.Fprintln(w, "\nhw_counters changes:")
		for _, c := range d {
			fmt.Fprintf(w, "  %s/%d %-24s +%d (%d)\n", c.Dev, c.Port, c.Name, c.Now-c.Before, c.Now)
		}
	}
}

func runCapture(args []string) error {
	fs := flag.NewFlagSet("rdmatrace capture", flag.ContinueOnError)
	iface := fs.String("i", "", "capture on interface `IFACE` (the netdev under the rxe device, e.g. eth0)")
	wfile := fs.String("w", "", "write the packets to `FILE.pcap` (Wireshark/tshark dissect UDP 4791 as InfiniBand)")
	rfile := fs.String("r", "", "print the RoCEv2 packets of a saved pcap `FILE` instead of capturing")
	count := fs.Int("c", 0, "stop after `COUNT` packets")
	duration := fs.Duration("duration", 0, "stop after `D`")
	snap := fs.Int("s", 0, "keep at most `SNAPLEN` bytes per packet (default 9216)")
	quiet := fs.Bool("q", false, "do not print a line per packet")
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
		if *iface != "" || *wfile != "" {
			return fmt.Errorf("-r reads a file: it does not go with -i or -w")
		}
		out := bufio.NewWriter(os.Stdout)
		defer out.Flush()
		return readPcap(out, *rfile, *count)
	}
	if *iface == "" {
		return fmt.Errorf("capture needs -i IFACE (or -r FILE)")
	}
	if *count < 0 || *duration < 0 {
		return fmt.Errorf("-c and --duration must not be negative")
	}
	h, err := capture.Open(*iface, *snap)
	if err != nil {
		return err
	}
	defer h.Close()
	var pw *pcap.Writer
	var bw *bufio.Writer
	if *wfile != "" {
		f, err := os.Create(*wfile)
		if err != nil {
			return fmt.Errorf("create %s: %w", *wfile, err)
		}
		defer f.Close()
		bw = bufio.NewWriter(f)
		sl := *snap
		if sl == 0 {
			sl = capture.DefaultSnapLen
		}
		if pw, err = pcap.NewWriter(bw, sl, pcap.LinkTypeEthernet, true); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "rdmatrace: capturing RoCEv2 (udp dst port 4791) on %s\n", *iface)
	ctx, cancel := signalContext(*duration)
	defer cancel()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var start time.Time
	n := 0
	for *count == 0 || n < *count {
		p, err := h.ReadPacket(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		n++
		if start.IsZero() {
			start = p.Time
		}
		if pw != nil {
			if err := pw.WritePacket(p.Time, p.Data, p.OrigLen); err != nil {
				return err
			}
		}
		if !*quiet {
			dir := "<"
			if p.Outgoing {
				dir = ">"
			}
			fmt.Fprintf(out, "%.6f %s %s\n", p.Time.Sub(start).Seconds(), dir, frameSummary(p.Data))
			out.Flush()
		}
	}
	if bw != nil {
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", *wfile, err)
		}
	}
	rcv, drop, _ := h.Stats()
	fmt.Fprintf(os.Stderr, "rdmatrace: %d packets captured (socket: %d passed the filter, %d dropped)\n", n, rcv, drop)
	return h.Close()
}

func frameSummary(b []byte) string {
	f, err := ibpkt.DecodeFrame(b)
	if err != nil {
		return fmt.Sprintf("(%d bytes, not decoded: %v)", len(b), err)
	}
	return f.Summary()
}

// readPcap prints one line per frame of a saved capture.
func readPcap(out io.Writer, name string, count int) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := pcap.NewReader(bufio.NewReader(f))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if r.LinkType != pcap.LinkTypeEthernet {
		return fmt.Errorf("%s: link type %d, only Ethernet (1) is decoded", name, r.LinkType)
	}
	var start time.Time
	for n := 0; count == 0 || n < count; n++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if start.IsZero() {
			start = rec.Time
		}
		fmt.Fprintf(out, "%.6f %s\n", rec.Time.Sub(start).Seconds(), frameSummary(rec.Data))
	}
	return nil
}
