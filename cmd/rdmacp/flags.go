// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/rdma"
)

// network is how rdmacp connects: RDMA (rdmaNet), or memory in tests.
type network interface {
	Listen(ctx context.Context, addr string, opts *rdma.Options) (transfer.Listener, error)
	// Dialer connects to addr for transfer.Sender.DialSend.
	Dialer(addr string, opts *rdma.Options) transfer.DialFunc
}

type rdmaNet struct{}

func (rdmaNet) Listen(ctx context.Context, addr string, opts *rdma.Options) (transfer.Listener, error) {
	return rdma.Listen(ctx, addr, opts)
}

func (rdmaNet) Dialer(addr string, opts *rdma.Options) transfer.DialFunc {
	return rdma.Dialer(addr, opts)
}

// common are the flags of both commands.
type common struct {
	pskFile  string
	slots    int
	slotSize size
	window   size
	depth    int
	ackTO    int
	json     bool
	quiet    bool
	verbose  bool
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.pskFile, "psk-file", "", "authenticate both ends with the pre-shared key in `FILE` (the same on both ends; at least 16 bytes)")
	fs.IntVar(&c.slots, "slots", transfer.DefaultSlots, "window `N`: how many slots the receiver exposes (the receiver's value caps the sender's)")
	c.slotSize = transfer.DefaultSlotSize
	fs.Var(&c.slotSize, "slot-size", "`SIZE` of a slot, e.g. 256K, 1M (the receiver's value caps the sender's)")
	fs.Var(&c.window, "window", "window `SIZE` (sets --slots to SIZE / --slot-size), e.g. 16M")
	fs.IntVar(&c.depth, "queue-depth", rdma.DefaultMaxSlots, "`N` writes the connection can have in flight (its receive queue depth less control messages); caps the receiver's --slots")
	fs.IntVar(&c.ackTO, "ack-timeout", 0, "local ACK timeout `EXP` of the connection, 4.096 µs × 2^EXP (1..31; 0 keeps rdma_cm's default, 2.1 s on Linux 6.1): on a lossy link 14 (67 ms) recovers from a lost packet much sooner")
	fs.BoolVar(&c.json, "json", false, "print a JSON summary on standard output")
	fs.BoolVar(&c.quiet, "q", false, "print errors only")
	fs.BoolVar(&c.verbose, "v", false, "narrate every rdma_cm and verbs step")
}

func (c *common) check() error {
	if c.window > 0 {
		c.slots = int(max(1, int64(c.window)/int64(max(c.slotSize, 1))))
	}
	switch {
	case c.slots < 1 || c.slots > transfer.MaxSlots:
		return fmt.Errorf("--slots %d: want 1..%d", c.slots, transfer.MaxSlots)
	case c.slotSize < 1 || c.slotSize > transfer.MaxSlotSize:
		return fmt.Errorf("--slot-size %v: want 1..%v", c.slotSize, size(transfer.MaxSlotSize))
	case int64(c.slots)*int64(c.slotSize) > transfer.MaxWindow:
		return fmt.Errorf("--slots × --slot-size is %v: the window may not exceed %v", size(int64(c.slots)*int64(c.slotSize)), size(transfer.MaxWindow))
	case c.depth < 1 || c.depth > transfer.MaxSlots:
		return fmt.Errorf("--queue-depth %d: want 1..%d", c.depth, transfer.MaxSlots)
	case c.ackTO < 0 || c.ackTO > 31:
		return fmt.Errorf("--ack-timeout %d: want 1..31 (an exponent: 4.096 µs × 2^N), or 0 for rdma_cm's default", c.ackTO)
	}
	return nil
}

func (c *common) psk() ([]byte, error) {
	if c.pskFile == "" {
		return nil, nil
	}
	return readPSKFile(c.pskFile)
}

func (c *common) rdmaOptions(stderr io.Writer) *rdma.Options {
	cfg := &rdma.Options{MaxSlots: c.depth, AckTimeout: uint8(c.ackTO)}
	if c.verbose {
		cfg.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, "rdmacp: "+format+"\n", args...) }
	}
	return cfg
}

// size is a byte count flag: 4096, 64K, 1M, 1MiB, 2G.
type size int64

func (s *size) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s = size(n)
	return nil
}

func (s size) String() string { return humanBytes(int64(s)) }

func parseSize(v string) (int64, error) {
	t := strings.TrimSpace(v)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "iB"), "B")
	mult := int64(1)
	if t != "" {
		switch strings.ToUpper(t[len(t)-1:]) {
		case "K":
			mult = 1 << 10
		case "M":
			mult = 1 << 20
		case "G":
			mult = 1 << 30
		case "T":
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size (examples: 4096, 64K, 1M, 2G)", v)
	}
	return n * mult, nil
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

func humanRate(bps float64) string {
	if bps <= 0 {
		return "-"
	}
	return humanBytes(int64(bps)) + "/s"
}

func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()+0.5))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// withDefaultPort adds rdma.DefaultPort to an address without a port.
func withDefaultPort(addr string) string {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	return net.JoinHostPort(addr, strconv.Itoa(rdma.DefaultPort))
}

// parseVerify parses --verify: crc32c, sha256 or none.
func parseVerify(s string) (transfer.Verify, error) {
	for _, v := range []transfer.Verify{transfer.VerifyCRC32C, transfer.VerifySHA256, transfer.VerifyNone} {
		if v.String() == s {
			return v, nil
		}
	}
	return 0, fmt.Errorf("verification %q: want crc32c (the default), sha256 or none", s)
}

// minPSKLen is the shortest pre-shared key --psk-file accepts, in bytes.
const minPSKLen = 16

// readPSKFile reads a pre-shared key: the file's bytes less one trailing
// newline (so `head -c 32 /dev/urandom | base64 > key` works). Both ends
// must use the same key.
func readPSKFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read pre-shared key: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) < minPSKLen {
		return nil, fmt.Errorf("pre-shared key %s has %d bytes, want at least %d: make one with `head -c 32 /dev/urandom | base64 > %s`", path, len(b), minPSKLen, path)
	}
	return b, nil
}
