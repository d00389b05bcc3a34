// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rdmago/rdmago/internal/cliflag"
	"github.com/rdmago/rdmago/internal/escape"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/rdma"
)

func cmdRecv(ctx context.Context, args []string, nw network, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmacp recv", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: rdmacp recv [flags] DIR")
		fs.PrintDefaults()
	}
	var c common
	c.register(fs)
	listen := fs.String("listen", fmt.Sprintf("0.0.0.0:%d", rdma.DefaultPort), "listen on `ADDR[:PORT]` (0.0.0.0: every RDMA device)")
	once := fs.Bool("once", false, "serve one sender, then exit (0 only if all its files were verified)")
	force := fs.Bool("force", false, "replace existing files (never directories)")
	var maxSize size = transfer.DefaultMaxFileSize
	fs.Var(&maxSize, "max-size", "refuse files larger than `SIZE` (e.g. 10G)")
	maxFiles := fs.Int("max-files", transfer.DefaultMaxFiles, "refuse more than `N` files on one connection")
	maxConns := fs.Int("max-conns", transfer.DefaultMaxConns, "serve at most `N` senders at once")
	maxHand := fs.Int("max-handshakes", 0, "serve at most `N` senders still in their handshake (default a quarter of --max-conns)")
	handTimeout := fs.Duration("handshake-timeout", transfer.DefaultHandshakeTimeout, "drop a sender that has not finished HELLO (and AUTH) this long after connecting")
	idle := fs.Duration("idle-timeout", transfer.DefaultIdleTimeout, "drop a sender that says nothing for this long")
	verify := fs.String("verify", "crc32c", "how to verify what arrives, `MODE`: crc32c (each chunk, a corrupted one is sent again; the file's CRC32C is reported), sha256 (the whole file's SHA-256, what sha256sum prints; the only one that resists tampering with --psk-file) or none")
	pos, err := cliflag.ParseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fmt.Fprintln(stderr, "rdmacp recv: need exactly one destination DIR")
		fs.Usage()
		return 2
	}
	if err := c.check(); err != nil {
		fmt.Fprintf(stderr, "rdmacp recv: %v\n", err)
		return 2
	}
	v, err := parseVerify(*verify)
	if err != nil {
		fmt.Fprintf(stderr, "rdmacp recv: --verify: %v\n", err)
		return 2
	}
	dir := pos[0]
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("not a directory")
		}
		fmt.Fprintf(stderr, "rdmacp recv: destination %s: %v: create the directory first\n", dir, err)
		return 2
	}
	psk, err := c.psk()
	if err != nil {
		fmt.Fprintf(stderr, "rdmacp recv: %v\n", err)
		return 2
	}
	r := &transfer.Receiver{Dir: dir, Force: *force, PSK: psk, Slots: c.slots, SlotSize: int(c.slotSize),
		MaxFiles: *maxFiles, MaxFileSize: int64(maxSize), MaxConns: *maxConns, MaxHandshakes: *maxHand, HandshakeTimeout: *handTimeout, IdleTimeout: *idle, Verify: v}
	// Failed connections and refused requests are logged rate-limited
	// per peer address: a storm of hostile ones must not fill the disk.
	cr := &connReporter{stdout: stdout, stderr: stderr, c: &c, lim: newConnLimiter(time.Now, logInterval, logBurst, logPeers)}
	opts := c.rdmaOptions(stderr)
	opts.OnRefuse = cr.refuse
	ln, err := nw.Listen(ctx, withDefaultPort(*listen), opts)
	if err != nil {
		report(stderr, "", err, hint(err, *listen))
		return 1
	}
	defer ln.Close()
	if !c.quiet {
		fmt.Fprintf(stderr, "rdmacp: receiving into %s on %s\n", dir, ln.Addr())
	}
	onConn := cr.report
	flushCtx, stopFlush := context.WithCancel(ctx)
	flushed := make(chan struct{})
	go func() { defer close(flushed); cr.run(flushCtx) }()
	defer func() { stopFlush(); <-flushed; cr.flush(true) }()
	if *once {
		t, err := ln.Accept(ctx)
		if err != nil {
			report(stderr, "", err, hint(err, *listen))
			return 1
		}
		rep, err := r.ServeConn(ctx, t)
		t.Close()
		onConn(rep, err)
		if err != nil || !rep.OK() {
			return 1
		}
		return 0
	}
	if err := r.Serve(ctx, ln, onConn); err != nil && !errors.Is(err, context.Canceled) {
		report(stderr, "", err, hint(err, *listen))
		return 1
	}
	return 0
}

// recvSummary is recv's --json output: one line per connection.
type recvSummary struct {
	OK         bool          `json:"ok"`
	Peer       string        `json:"peer,omitempty"`
	Files      []fileSummary `json:"files"` // the first results, then failures (see transfer.ConnReport)
	Items      int           `json:"items"`
	Verified   int           `json:"verified"`
	Omitted    int           `json:"omitted,omitempty"` // results not listed in files
	Bytes      int64         `json:"bytes"`
	Seconds    float64       `json:"seconds"`
	Throughput float64       `json:"throughput_bytes_per_second"`
	PeakRSS    int64         `json:"peak_rss_bytes,omitempty"`
	Error      string        `json:"error,omitempty"`
}

func recvReport(stdout, stderr io.Writer, c *common, rep *transfer.ConnReport, err error) {
	s := recvSummary{Files: []fileSummary{}}
	if rep != nil {
		s.Peer, s.Bytes, s.Seconds = rep.Peer, rep.Bytes, rep.Duration.Seconds()
		s.Items, s.Verified, s.Omitted = rep.Items, rep.Verified, rep.Omitted
		for _, f := range rep.Files {
			s.Files = append(s.Files, fileSum(f))
			if f.Err != nil {
				report(stderr, f.Name, f.Err, hint(f.Err, rep.Peer))
			}
		}
		if s.Seconds > 0 {
			s.Throughput = float64(rep.Bytes) / s.Seconds
		}
	}
	s.OK = err == nil && rep.OK()
	s.PeakRSS = peakRSS()
	from := "a sender"
	if s.Peer != "" {
		from = escape.Text(s.Peer)
	}
	if err != nil {
		s.Error = err.Error()
		// The error may carry the peer's text: escaped.
		fmt.Fprintf(stderr, "rdmacp: %s: %s\n", from, escape.Text(err.Error()))
		if h := hint(err, from); h != "" && !errors.Is(err, transfer.ErrProtocol) {
			fmt.Fprintf(stderr, "rdmacp:   %s\n", escape.Text(h))
		}
	}
	if !c.quiet {
		fmt.Fprintf(stderr, "rdmacp: from %s: %d of %d items verified, %s in %v (%s)\n",
			from, s.Verified, s.Items, humanBytes(s.Bytes), time.Duration(s.Seconds*float64(time.Second)).Round(time.Millisecond), humanRate(s.Throughput))
	}
	if c.json {
		writeJSON(stdout, s)
	}
}
