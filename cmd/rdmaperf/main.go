// Copyright 2026 The rdmago Authors.

// Command rdmaperf is perftest (ib_write_bw, ib_read_lat, ...) in pure Go on
// package uverbs: the same tests, flags, algorithms and table layout, so its
// figures read side by side with the C tools'. It needs no rdma-core: build
// it with CGO_ENABLED=0 and run it on any Linux with an RDMA device
// (Soft-RoCE: `rdma link add rxe0 type rxe netdev eth0`).
//
//	rdmaperf write_bw [-s SIZE|-a] [-n ITERS|-D SEC] [-q QPS] [-t DEPTH] [-R] [-d DEV] [-x GID] [-p PORT]          (server)
//	rdmaperf write_bw [flags] HOST                                                                          (client)
//
// Tests: write_bw, read_bw, send_bw, write_lat, read_lat, send_lat,
// atomic_lat and atomic_bw (-A FETCH_AND_ADD|CMP_AND_SWAP), and conn_time (rdma_cm
// connection setup, like rdma-core's cmtime). --json prints one JSON
// document instead of the table; --cpuprofile writes a pprof profile.
// With --perftest it speaks perftest's own TCP exchange (with -R perftest's
// rdma_cm exchange) instead of its own protocol, as client of perftest's
// servers (ib_write_bw, ib_atomic_lat, ...) or as server for their clients;
// both sides then take the same test, -s, -n, -q and -R, as two perftest
// programs do. A server without --perftest whose client turns out to be
// perftest speaks its exchange all the same, and says so on stderr; a
// client facing perftest's server cannot (perftest's server has read its
// first message as a version by then) and asks for --perftest.
// The logic lives in tools/perf.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rdmago/rdmago/tools/perf"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := perf.ParseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, perf.Usage)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdmaperf: %v\n", err)
		return 2
	}
	if err := perf.Run(ctx, cfg, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "rdmaperf %v: %v\n", cfg.Test, err)
		return 1
	}
	return 0
}
