// Copyright 2026 The rdmago Authors.

// Command rdmacp copies files and directories over RDMA Write, verified end
// to end with SHA-256 and written atomically (package transfer; the
// transport is package transfer/rdma over cm and uverbs, no cgo).
//
//	rdmacp recv [flags] DIR                   receive into DIR
//	rdmacp send [flags] FILE|DIR... HOST[:PORT]
//
// The exit status is 0 only when every file was verified by the receiver.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `usage:
  rdmacp recv [flags] DIR                       receive files into DIR
  rdmacp send [flags] FILE|DIR... HOST[:PORT]   send files and directories
Run 'rdmacp recv -h' or 'rdmacp send -h' for the flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopProfile := startProfile(os.Stderr)
	code := run(ctx, os.Args[1:], rdmaNet{}, os.Stdout, os.Stderr)
	stopProfile()
	os.Exit(code)
}

// run is the whole command with its network and outputs injected (tests
// use an in-memory network).
func run(ctx context.Context, args []string, nw network, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "recv", "receive":
		return cmdRecv(ctx, args[1:], nw, stdout, stderr)
	case "send":
		return cmdSend(ctx, args[1:], nw, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "rdmacp: unknown command %q\n%s", args[0], usage)
	return 2
}
