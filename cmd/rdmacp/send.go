// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/rdmago/rdmago/internal/cliflag"
	"github.com/rdmago/rdmago/internal/escape"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/rdma"
)

func cmdSend(ctx context.Context, args []string, nw network, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmacp send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rdmacp send [flags] FILE|DIR... HOST[:PORT]   (default port %d)\n", rdma.DefaultPort)
		fs.PrintDefaults()
	}
	var c common
	c.register(fs)
	resume := fs.Bool("resume", false, "continue partial copies the receiver kept from an interrupted transfer (both ends' prefixes are compared by CRC32C, or SHA-256 with the receiver's --verify sha256)")
	verify := fs.String("verify", "", "refuse a receiver that verifies less than `MODE`: none < crc32c < sha256 (default: whatever the receiver's --verify is)")
	retries := fs.Int("retries", 1, "send a file again up to `N` times when it fails verification")
	wait := fs.Duration("wait", 10*time.Second, "keep trying to connect for this long while no receiver listens, or while it turns senders away busy with other senders' handshakes")
	pos, err := cliflag.ParseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if len(pos) < 2 {
		fmt.Fprintln(stderr, "rdmacp send: need at least one FILE or DIR and the receiver's HOST[:PORT]")
		fs.Usage()
		return 2
	}
	if err := c.check(); err != nil {
		fmt.Fprintf(stderr, "rdmacp send: %v\n", err)
		return 2
	}
	var least transfer.Verify
	if *verify != "" {
		if least, err = parseVerify(*verify); err != nil {
			fmt.Fprintf(stderr, "rdmacp send: --verify: %v\n", err)
			return 2
		}
	}
	peer := withDefaultPort(pos[len(pos)-1])
	paths := pos[:len(pos)-1]
	sum := &sendSummary{Peer: peer, Files: []fileSummary{}}
	fail := func(err error) int {
		sum.Error = err.Error()
		report(stderr, "", err, hint(err, peer))
		if c.json {
			writeJSON(stdout, sum)
		}
		return 1
	}
	psk, err := c.psk()
	if err != nil {
		return fail(err)
	}
	items, skipped, err := transfer.Plan(paths...)
	if err != nil {
		return fail(err)
	}
	for _, s := range skipped {
		if !c.quiet {
			fmt.Fprintf(stderr, "rdmacp: skipping %s: only regular files and directories are sent\n", s)
		}
	}

	dial := nw.Dialer(peer, c.rdmaOptions(stderr))
	if c.verbose {
		dial = closeReported(dial, stderr)
	}
	bar := newProgress(stderr, !c.quiet && isTerminal(stderr))
	s := &transfer.Sender{PSK: psk, Resume: *resume, Slots: c.slots, SlotSize: int(c.slotSize), Retries: *retries, Verify: least, Progress: bar.update}
	rep, err := s.DialSend(ctx, dial, *wait, items)
	bar.finish()

	sum.fill(rep)
	sum.PeakRSS = peakRSS()
	ok := err == nil && rep.OK(len(items))
	sum.OK = ok
	for _, f := range rep.Files {
		if f.Err != nil {
			report(stderr, f.Name, f.Err, hint(f.Err, peer))
		}
	}
	if err != nil {
		sum.Error = err.Error()
		h := hint(err, peer)
		if errors.Is(err, transfer.ErrVerify) && rep.Verify != 0 {
			h = fmt.Sprintf("start the receiver with --verify %v, or send with --verify %v", least, rep.Verify)
		}
		report(stderr, "", err, h)
		if n := len(items) - len(rep.Files); n > 0 {
			fmt.Fprintf(stderr, "rdmacp: %d of %d items not sent\n", n, len(items))
		}
	}
	if !c.quiet && isTerminal(stderr) {
		verdict := "all verified"
		if !ok {
			verdict = fmt.Sprintf("%d of %d verified", sum.Verified, len(items))
		}
		fmt.Fprintf(stderr, "rdmacp: %d items, %s moved in %v (%s), %s\n", len(items), humanBytes(rep.Bytes), rep.Duration.Round(time.Millisecond), humanRate(sum.Throughput), verdict)
	}
	if c.json {
		writeJSON(stdout, sum)
	}
	if !ok {
		return 1
	}
	return 0
}

// closeReported is dial whose connections print what Close returns (-v).
func closeReported(dial transfer.DialFunc, stderr io.Writer) transfer.DialFunc {
	return func(ctx context.Context, wait time.Duration) (transfer.Transport, int, error) {
		t, n, err := dial(ctx, wait)
		if err != nil {
			return nil, n, err
		}
		return reportClose{t, stderr}, n, nil
	}
}

type reportClose struct {
	transfer.Transport
	w io.Writer
}

func (t reportClose) Close() error {
	err := t.Transport.Close()
	if err != nil {
		fmt.Fprintf(t.w, "rdmacp: close: %v\n", err)
	}
	return err
}

// report prints one error and what to do about it (h, from hint).
// Names and error texts may come from the peer: they are escaped.
func report(w io.Writer, name string, err error, h string) {
	if name != "" {
		fmt.Fprintf(w, "rdmacp: %s: %s\n", escape.Text(name), escape.Text(err.Error()))
	} else {
		fmt.Fprintf(w, "rdmacp: %s\n", escape.Text(err.Error()))
	}
	if h != "" {
		fmt.Fprintf(w, "rdmacp:   %s\n", escape.Text(h))
	}
}

// sendSummary is send's --json output.
type sendSummary struct {
	OK          bool          `json:"ok"`
	Peer        string        `json:"peer"`
	Files       []fileSummary `json:"files"`
	Verified    int           `json:"verified"`
	Bytes       int64         `json:"bytes"`
	Seconds     float64       `json:"seconds"`
	Throughput  float64       `json:"throughput_bytes_per_second"`
	Retries     int           `json:"retries"`
	Verify      string        `json:"verify,omitempty"` // the receiver's policy, as agreed: crc32c, sha256 or none
	Resent      int           `json:"resent_chunks,omitempty"`
	DialRetries int           `json:"dial_retries"`
	BusyRetries int           `json:"busy_retries"` // connections the receiver turned away busy with handshakes, each tried again
	PeakRSS     int64         `json:"peak_rss_bytes,omitempty"`
	Error       string        `json:"error,omitempty"`
}

type fileSummary struct {
	Name     string  `json:"name"`
	Kind     string  `json:"kind"`
	Size     int64   `json:"size"`
	Offset   int64   `json:"resumed_from,omitempty"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	Verify   string  `json:"verify,omitempty"` // how it was verified: crc32c, sha256 or none
	SHA256   string  `json:"sha256,omitempty"`
	CRC32C   string  `json:"crc32c,omitempty"` // 8 hex digits
	Resent   int     `json:"resent_chunks,omitempty"`
	Verified bool    `json:"verified"`
	Retries  int     `json:"retries,omitempty"`
	Error    string  `json:"error,omitempty"`
	Code     string  `json:"code,omitempty"`
}

func fileSum(f transfer.FileResult) fileSummary {
	fsum := fileSummary{Name: f.Name, Kind: f.Kind.String(), Size: f.Size, Offset: f.Offset, Bytes: f.Bytes,
		Seconds: f.Duration.Seconds(), Verified: f.Verified, Retries: f.Retries, Resent: f.Resent}
	if f.Kind == transfer.KindFile && f.Verify != 0 {
		fsum.Verify = f.Verify.String()
	}
	if f.Kind == transfer.KindFile && f.Digest != [transfer.DigestSize]byte{} {
		fsum.SHA256 = fmt.Sprintf("%x", f.Digest)
	}
	if f.Kind == transfer.KindFile && f.Verify == transfer.VerifyCRC32C && (f.Verified || f.Err == nil) {
		fsum.CRC32C = fmt.Sprintf("%08x", f.CRC32C)
	}
	if f.Err != nil {
		fsum.Error = f.Err.Error()
		var e *transfer.Error
		if errors.As(f.Err, &e) {
			fsum.Code = e.Code.String()
		}
	}
	return fsum
}

func (s *sendSummary) fill(rep *transfer.Report) {
	s.Files = []fileSummary{}
	if rep == nil {
		return
	}
	for _, f := range rep.Files {
		s.Files = append(s.Files, fileSum(f))
		if f.Verified {
			s.Verified++
		}
	}
	s.Bytes = rep.Bytes
	s.Retries = rep.Retries
	s.Resent = rep.Resent
	if rep.Verify != 0 {
		s.Verify = rep.Verify.String()
	}
	s.DialRetries = rep.DialRetries
	s.BusyRetries = rep.BusyRetries
	s.Seconds = rep.Duration.Seconds()
	if s.Seconds > 0 {
		s.Throughput = float64(rep.Bytes) / s.Seconds
	}
}
