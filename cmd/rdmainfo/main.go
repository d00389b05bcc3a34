// Copyright 2026 The rdmago Authors.

// Command rdmainfo shows RDMA devices, ports, GIDs, links, resources and
// counters, creates and deletes Soft-RoCE links, and diagnoses why RDMA does
// not work — in one static binary, without rdma-core or iproute2. The logic
// lives in package tools/devinfo.
//
//	rdmainfo devices                          like ibv_devices
//	rdmainfo show [DEV] [-v]                  like ibv_devinfo [-v]
//	rdmainfo gids [DEV]                       like show_gids, marking the RoCE v2 entry of each address
//	rdmainfo link show                        like rdma link show
//	rdmainfo link add NAME type rxe netdev IF like rdma link add (needs CAP_NET_ADMIN)
//	rdmainfo link del NAME                    like rdma link delete
//	rdmainfo resources [-d DEV] [KIND]        per-process summary, or rdma resource show KIND (qp cq mr pd cm_id srq)
//	rdmainfo counters [DEV] [--watch D]       port and hw counters, with rates
//	rdmainfo diagnose                         checks with verdicts and fixes; exit status 1 if RDMA is blocked
//
// Every subcommand takes --json.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/internal/cliflag"
	"github.com/rdmago/rdmago/tools/devinfo"
)

const usage = `usage: rdmainfo COMMAND [flags] [args]

  devices                          RDMA devices and node GUIDs (ibv_devices)
  show [DEV] [-v]                  device and port attributes (ibv_devinfo [-v])
  gids [DEV]                       GID tables; marks the RoCE v2 entry of each address (show_gids)
  link show                        ports, states and netdevs (rdma link show)
  link add NAME type rxe netdev IF create a Soft-RoCE device (needs CAP_NET_ADMIN)
  link del NAME                    delete a software RDMA device
  resources [-d DEV] [KIND]        who holds QPs, CQs, MRs, PDs, SRQs; KIND (qp cq mr pd cm_id srq) lists them
  counters [DEV] [--watch D]       port and hw counters; --watch prints rates every D
  diagnose                         check everything RDMA needs; exit status 1 when something blocks it

Every command takes --json.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// run is the whole command; sys is nil for the live system.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, sys *devinfo.System) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("rdmainfo "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonOut := fs.Bool("json", false, "print JSON")
	verbose := fs.Bool("v", false, "show: all attributes (ibv_devinfo -v)")
	dev := fs.String("d", "", "resources: only this `DEV`ice")
	watch := fs.Duration("watch", 0, "counters: print rates every `D` (e.g. 1s) until interrupted")
	count := fs.Int("count", 0, "counters --watch: stop after `N` rounds (0: until interrupted)")
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	pos, err := cliflag.ParseInterleaved(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if sys == nil {
		live, err := devinfo.Live()
		if err != nil {
			fmt.Fprintf(stderr, "rdmainfo: %v\n", err)
			return 1
		}
		sys = live
		defer sys.Close()
	}
	out := func(v any, text func(io.Writer)) int {
		if *jsonOut {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				fmt.Fprintf(stderr, "rdmainfo: %v\n", err)
				return 1
			}
			return 0
		}
		text(stdout)
		return 0
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "rdmainfo %s: %v\n", cmd, err)
		return 1
	}
	maxArgs := func(n int) bool {
		if len(pos) > n {
			fmt.Fprintf(stderr, "rdmainfo %s: unexpected arguments %q\n%s", cmd, pos[n:], usage)
			return false
		}
		return true
	}
	arg := func(i int) string {
		if i < len(pos) {
			return pos[i]
		}
		return ""
	}

	switch cmd {
	case "devices":
		if !maxArgs(0) {
			return 2
		}
		devs, err := sys.Devices()
		if err != nil {
			return fail(err)
		}
		return out(devs, func(w io.Writer) { devinfo.WriteDevices(w, devs) })
	case "show":
		if !maxArgs(1) {
			return 2
		}
		infos, err := sys.Show(arg(0))
		if err != nil {
			return fail(err)
		}
		return out(infos, func(w io.Writer) { devinfo.WriteShow(w, infos, *verbose) })
	case "gids":
		if !maxArgs(1) {
			return 2
		}
		rows, err := sys.GIDs(arg(0))
		if err != nil {
			return fail(err)
		}
		return out(rows, func(w io.Writer) { devinfo.WriteGIDs(w, rows) })
	case "link":
		return runLink(sys, pos, out, fail, stderr)
	case "resources", "resource", "res":
		if !maxArgs(1) {
			return 2
		}
		if kind := arg(0); kind != "" {
			rs, err := sys.Resources(kind, *dev)
			if err != nil {
				return fail(err)
			}
			if rs == nil {
				rs = []devinfo.Res{}
			}
			return out(rs, func(w io.Writer) { devinfo.WriteResources(w, kind, rs) })
		}
		rep, err := sys.ResourceSummary(*dev)
		if err != nil {
			return fail(err)
		}
		return out(rep, func(w io.Writer) { devinfo.WriteResourceSummary(w, rep) })
	case "counters":
		if !maxArgs(1) {
			return 2
		}
		return runCounters(ctx, sys, arg(0), *watch, *count, *jsonOut, stdout, out, fail)
	case "diagnose":
		if !maxArgs(0) {
			return 2
		}
		rep := sys.Diagnose()
		code := out(rep, func(w io.Writer) { devinfo.WriteReport(w, rep) })
		if code == 0 && rep.Blocking() {
			code = 1
		}
		return code
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "rdmainfo: unknown command %q\n%s", cmd, usage)
	return 2
}

func runLink(sys *devinfo.System, pos []string, out func(any, func(io.Writer)) int, fail func(error) int, stderr io.Writer) int {
	sub := "show"
	if len(pos) > 0 {
		sub = pos[0]
	}
	switch sub {
	case "show", "list", "ls":
		links, err := sys.Links()
		if err != nil {
			return fail(err)
		}
		if links == nil {
			links = []devinfo.Link{}
		}
		return out(links, func(w io.Writer) { devinfo.WriteLinks(w, links) })
	case "add":
		// link add NAME type TYPE netdev IF, keywords in any order after NAME.
		if len(pos) != 6 {
			fmt.Fprintf(stderr, "usage: rdmainfo link add NAME type rxe netdev IFNAME\n")
			return 2
		}
		name, kw := pos[1], map[string]string{}
		for i := 2; i+1 < len(pos); i += 2 {
			kw[pos[i]] = pos[i+1]
		}
		if kw["type"] == "" || kw["netdev"] == "" || len(kw) != 2 {
			fmt.Fprintf(stderr, "usage: rdmainfo link add NAME type rxe netdev IFNAME\n")
			return 2
		}
		if err := sys.LinkAdd(name, kw["type"], kw["netdev"]); err != nil {
			return fail(err)
		}
		links, err := sys.Links()
		if err != nil {
			return fail(err)
		}
		var added []devinfo.Link
		for _, l := range links {
			if l.Dev == name {
				added = append(added, l)
			}
		}
		return out(added, func(w io.Writer) { devinfo.WriteLinks(w, added) })
	case "del", "delete":
		if len(pos) != 2 {
			fmt.Fprintf(stderr, "usage: rdmainfo link del NAME\n")
			return 2
		}
		if err := sys.LinkDel(pos[1]); err != nil {
			return fail(err)
		}
		return out(map[string]string{"deleted": pos[1]}, func(io.Writer) {})
	}
	fmt.Fprintf(stderr, "rdmainfo link: unknown subcommand %q (show, add, del)\n", sub)
	return 2
}

func runCounters(ctx context.Context, sys *devinfo.System, dev string, watch time.Duration, count int, jsonOut bool, stdout io.Writer, out func(any, func(io.Writer)) int, fail func(error) int) int {
	cs, err := sys.Counters(dev)
	if err != nil {
		return fail(err)
	}
	if watch <= 0 {
		if cs == nil {
			cs = []devinfo.Counter{}
		}
		return out(cs, func(w io.Writer) { devinfo.WriteCounters(w, cs, false) })
	}
	t := time.NewTicker(watch)
	defer t.Stop()
	prev, last := cs, time.Now()
	for n := 0; count == 0 || n < count; n++ {
		select {
		case <-ctx.Done():
			return 0
		case now := <-t.C:
			cur, err := sys.Counters(dev)
			if err != nil {
				return fail(err)
			}
			rated := devinfo.Rates(prev, cur, now.Sub(last))
			prev, last = cur, now
			if jsonOut {
				json.NewEncoder(stdout).Encode(struct {
					Time     time.Time         `json:"time"`
					Counters []devinfo.Counter `json:"counters"`
				}{now, rated})
				continue
			}
			fmt.Fprintf(stdout, "%s\n", now.Format(time.TimeOnly))
			devinfo.WriteCounters(stdout, rated, true)
			fmt.Fprintln(stdout)
		}
	}
	return 0
}
