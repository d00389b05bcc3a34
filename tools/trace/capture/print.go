// Copyright 2026 The rdmago Authors.

package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rdmago/rdmago/tools/trace/ibpkt"
	"github.com/rdmago/rdmago/tools/trace/pcap"
)

// PrintFile is `rdmatrace capture -r`: it writes one line per frame of the
// saved Ethernet capture name to w (time since the first frame, then the
// decoded RoCEv2 packet), at most count lines when count > 0.
func PrintFile(w io.Writer, name string, count int) error {
	if count < 0 {
		return fmt.Errorf("-c must not be negative")
	}
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
		fmt.Fprintf(w, "%.6f %s\n", rec.Time.Sub(start).Seconds(), frameSummary(rec.Data))
	}
	return nil
}

// frameSummary is the one-line decode of an Ethernet frame, or why it could
// not be decoded.
func frameSummary(b []byte) string {
	f, err := ibpkt.DecodeFrame(b)
	if err != nil {
		return fmt.Sprintf("(%d bytes, not decoded: %v)", len(b), err)
	}
	return f.Summary()
}
