// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rdmago/rdmago/tools/timeline"
	"github.com/rdmago/rdmago/tools/trace"
)

func runRecord(ctx context.Context, args []string, stderr io.Writer) error {
	var o trace.RecordOptions
	var duration time.Duration
	fs := flag.NewFlagSet("rdmatrace record", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.File, "o", "", "write the recording to `FILE` (JSON lines; `rdmatrace timeline` draws it)")
	fs.StringVar(&o.Iface, "i", "", "also capture the RoCEv2 packets on interface `IFACE` (the netdev under the rxe device)")
	fs.StringVar(&o.Node, "node", "", "this node's `NAME` in the recording (default: the hostname)")
	fs.IntVar(&o.PID, "p", 0, "record only process `PID`")
	fs.StringVar(&o.Comm, "c", "", "record only processes named `COMM` (at most 15 bytes, as in /proc/PID/comm)")
	fs.StringVar(&o.Dev, "dev", "", "record only uverbs calls on RDMA device `DEV` (e.g. rxe0)")
	fs.BoolVar(&o.NoRXE, "no-rxe", false, "do not probe the rxe data path")
	fs.BoolVar(&o.RXEAll, "rxe-all", false, rxeAllUsage)
	fs.DurationVar(&duration, "duration", 0, "stop after `D` (default: until Ctrl-C or SIGTERM)")
	fs.BoolVar(&o.Quiet, "q", false, "do not list skipped probes")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: rdmatrace record -o FILE [-i IFACE] [-p PID] [-c COMM] [--dev DEV] [--duration D]

Records every RDMA call of the chosen processes (decoded arguments and
results), the kernel's CM events, the rxe data-path counts and, with -i, the
RoCEv2 packets on IFACE, all on this node's CLOCK_MONOTONIC, into FILE. Run
it on each node, then draw them together:
  rdmatrace timeline node0.rec node1.rec -o exchange.html

flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (record writes to -o FILE)", fs.Arg(0))
	}
	if duration < 0 {
		return fmt.Errorf("--duration must not be negative")
	}
	ctx, cancel := withDuration(ctx, duration)
	defer cancel()
	return trace.Record(ctx, o, stderr) // it checks o first
}

func runTimeline(args []string, stdout, stderr io.Writer) error {
	var out, title string
	fs := flag.NewFlagSet("rdmatrace timeline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&out, "o", "", "write the page to `FILE.html`")
	fs.StringVar(&title, "title", "", "the page's `TITLE` (default: the nodes' names)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: rdmatrace timeline FILE... -o PAGE.html

Draws recordings made by `+"`rdmatrace record`"+` (one per node) as one
self-contained HTML page: a sequence diagram with a lane per process and per
node's kernel and the wire between nodes, the nodes' clocks aligned from the
packets both captured.

flags:
`)
		fs.PrintDefaults()
	}
	// Flags may come after the files.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) == 0 || out == "" {
		return fmt.Errorf("timeline needs recordings and -o PAGE.html (see rdmatrace timeline -h)")
	}
	m, err := timeline.Load(files)
	if err != nil {
		return err
	}
	if title != "" {
		m.Title = title
	}
	if err := timeline.WriteFile(out, m); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rdmatrace: %s: %d lanes, %d items (%d packets, %d calls and events); %s\n",
		out, len(m.Lanes), len(m.Items), m.Packets, m.Calls, m.Clock)
	return nil
}
