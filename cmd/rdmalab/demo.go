// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/rdmago/rdmago/tools/demo"
)

// cmdDemo is `rdmalab demo` (make demo): the flags of package tools/demo
// and its verdict.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmalab demo", flag.ExitOnError)
	fs.SetOutput(stderr)
	var o demo.Options
	labFlags(fs, &o.Options, 5*time.Minute, stderr)
	o.Size, o.SlotSize = 8<<20, 1<<20
	fs.Int64Var(&o.Size, "size", o.Size, "`BYTES` of random data to send (keep it small: the VMs are emulated)")
	fs.Int64Var(&o.SlotSize, "slot-size", o.SlotSize, "rdmacp's slot size and ib_write_bw's message size, in `BYTES`")
	fs.StringVar(&o.Timeline, "timeline", "demo-timeline.html", "write the transfer's timeline (rdmatrace record on both nodes, drawn as one HTML page) to `FILE.html`; \"\" skips it")
	fs.Parse(args)
	if err := o.Check(); err != nil {
		fmt.Fprintf(stderr, "rdmalab demo: %v\n", err)
		return 2
	}
	start := time.Now()
	r, err := demo.Run(ctx, o, stdout, stderr)
	if err != nil {
		return fail(stderr, err)
	}
	if r.Status != 0 {
		fmt.Fprintf(stdout, "rdmalab demo: FAIL — a node exited with status %d\n", r.Status)
		return r.Status
	}
	if len(r.Problems) > 0 {
		for _, p := range r.Problems {
			fmt.Fprintf(stdout, "rdmalab demo: FAIL — %s\n", p)
		}
		return 1
	}
	fmt.Fprintf(stdout, "\nrdmalab demo: %d random bytes sent from node 1 to node 0 by rdmacp over RDMA Write (RoCEv2, rxe)\n", o.Size)
	fmt.Fprintf(stdout, "  sha256 on node 1 (sha256sum of the source)   %s\n", r.SourceSHA256)
	fmt.Fprintf(stdout, "  %-6s by rdmacp send (its own check)        %s\n", r.Verify, r.SentSum)
	fmt.Fprintf(stdout, "  %-6s by rdmacp recv (check of what arrived) %s\n", r.Verify, r.RecvSum)
	fmt.Fprintf(stdout, "  sha256 on node 0 (sha256sum of the new file) %s\n", r.NewSHA256)
	fmt.Fprintf(stdout, "  rdmacp        %7.2f MB/s  (%d bytes in %.2f s, whole protocol: read, hash, write, verify, fsync, rename)\n", r.RdmacpMBs, r.SentBytes, r.Seconds)
	fmt.Fprintf(stdout, "  ib_write_bw   %7.2f MB/s  (rdma-core's C benchmark, %d-byte RDMA Writes, same boot, same two nodes)\n", r.WriteBWMBs, o.SlotSize)
	fmt.Fprintf(stdout, "  ratio         %7.2f       (MB = 2^20 bytes; both VMs are emulated (TCG): only the ratio means anything)\n", r.RdmacpMBs/r.WriteBWMBs)
	if r.Timeline != "" {
		abs, _ := filepath.Abs(r.Timeline)
		fmt.Fprintf(stdout, "  timeline      %s  (open it in a browser: %s)\n", abs, r.TimelineSays)
	}
	fmt.Fprintf(stdout, "rdmalab demo: OK — both sha256sums and both rdmacp checks agree (%v in all)\n", time.Since(start).Round(time.Second))
	return 0
}
