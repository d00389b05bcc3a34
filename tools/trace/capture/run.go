// Copyright 2026 The rdmago Authors.

package capture

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rdmago/rdmago/tools/trace/pcap"
)

// RunOptions configure Run.
type RunOptions struct {
	Iface   string // interface to capture on (the netdev under the rxe device)
	File    string // also write the packets to this pcap file; "" writes none
	Count   int    // stop after this many packets; 0 runs until ctx is done
	SnapLen int    // bytes kept per packet; 0 is DefaultSnapLen
	Quiet   bool   // no line per packet
}

// Run is `rdmatrace capture -i`: it captures RoCEv2 frames on o.Iface until
// ctx is done or o.Count packets came, writes one decoded line per packet
// to stdout (time since the first, direction, packet) and the packets to
// o.File, and reports the start and the socket's counts on stderr. It needs
// CAP_NET_RAW.
func Run(ctx context.Context, o RunOptions, stdout, stderr io.Writer) error {
	if o.Iface == "" {
		return fmt.Errorf("capture needs -i IFACE (or -r FILE)")
	}
	if o.Count < 0 {
		return fmt.Errorf("-c must not be negative")
	}
	h, err := Open(o.Iface, o.SnapLen)
	if err != nil {
		return err
	}
	defer h.Close()
	var pw *pcap.Writer
	var bw *bufio.Writer
	if o.File != "" {
		f, err := os.Create(o.File)
		if err != nil {
			return fmt.Errorf("create %s: %w", o.File, err)
		}
		defer f.Close()
		bw = bufio.NewWriter(f)
		sl := o.SnapLen
		if sl == 0 {
			sl = DefaultSnapLen
		}
		if pw, err = pcap.NewWriter(bw, sl, pcap.LinkTypeEthernet, true); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "rdmatrace: capturing RoCEv2 (udp dst port 4791) on %s\n", o.Iface)
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	var start time.Time
	n := 0
	for o.Count == 0 || n < o.Count {
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
		if !o.Quiet {
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
			return fmt.Errorf("write %s: %w", o.File, err)
		}
	}
	rcv, drop, _ := h.Stats()
	fmt.Fprintf(stderr, "rdmatrace: %d packets captured (socket: %d passed the filter, %d dropped)\n", n, rcv, drop)
	return h.Close()
}
