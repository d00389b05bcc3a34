// Copyright 2026 The rdmago Authors.

package timeline

import (
	"fmt"
	"strings"
	"time"
)

// How a node's clock was aligned (Alignment.Method).
const (
	AlignPackets  = "packets"  // packets seen on both sides, both ways: bounded
	AlignOneWay   = "one-way"  // packets seen on both sides one way only: off by up to the wire delay
	AlignRealtime = "realtime" // the headers' CLOCK_REALTIME readings: as good as the wall clocks
)

// Alignment is how one node's clock was put on node 0's.
type Alignment struct {
	Node   string `json:"node"`
	Method string `json:"method"` // Align*
	// OffsetNS is the node's CLOCK_MONOTONIC minus node 0's.
	OffsetNS int64 `json:"offset_ns"`
	// UncertaintyNS is the ± on OffsetNS (half the gap between the
	// tightest bounds); -1 when the recordings do not bound it.
	UncertaintyNS int64 `json:"uncertainty_ns"`
	Pairs         int   `json:"pairs"` // packets seen on both sides
}

// align returns, for each recording, the ns to subtract from its
// CLOCK_MONOTONIC time stamps to put them on recording 0's clock, and says
// in m.Clock how it found them.
//
// A packet node 0 sent at a (its clock) and node n received at b (n's clock)
// bounds the offset θ = clock_n − clock_0 from above: b = a + θ + delay, with
// delay ≥ 0, so θ ≤ b − a. A packet the other way bounds it from below:
// θ ≥ c − d for sent at c (n's clock), received at d (node 0's). The
// request/response pairs (a request and its acknowledge or read response)
// give both bounds; θ is the middle of the tightest pair, ± half their gap,
// as NTP does with one exchange. Without packets seen on both sides the
// CLOCK_REALTIME reference pairs of the headers are used, which are only as
// good as the nodes' wall clocks.
func align(recs []Recording, wire []wirePkt, m *Model) []int64 {
	off := make([]int64, len(recs))
	m.Align = nil
	var says []string
	for n := 1; n < len(recs); n++ {
		// The tightest bound each way: clock_to − clock_from + delay.
		var hi, lo int64 // θ ≤ hi, θ ≥ lo
		var nHi, nLo int
		for _, w := range wire {
			if w.seen != "both" {
				continue
			}
			d := w.recv - w.send
			switch {
			case w.from == 0 && w.to == n:
				if nHi == 0 || d < hi {
					hi = d
				}
				nHi++
			case w.from == n && w.to == 0:
				if nLo == 0 || -d > lo {
					lo = -d
				}
				nLo++
			}
		}
		name := recs[n].Header.Node
		switch {
		case nHi > 0 && nLo > 0:
			theta := lo + (hi-lo)/2
			unc := (hi - lo) / 2
			off[n] = theta
			note := ""
			if hi < lo {
				unc = -unc
				note = " (the bounds cross: the capture time stamps jitter by about that much)"
			}
			m.Align = append(m.Align, Alignment{Node: name, Method: AlignPackets, OffsetNS: theta, UncertaintyNS: unc, Pairs: nHi + nLo})
			says = append(says, fmt.Sprintf("%s aligned to %s from %d packets %s→%s and %d packets %s→%s seen on both sides: offset %v ± %v%s",
				name, recs[0].Header.Node, nHi, recs[0].Header.Node, name, nLo, name, recs[0].Header.Node,
				time.Duration(theta), time.Duration(unc), note))
		case nHi > 0 || nLo > 0:
			b := hi
			if nLo > 0 {
				b = lo
			}
			off[n] = b
			m.Align = append(m.Align, Alignment{Node: name, Method: AlignOneWay, OffsetNS: b, UncertaintyNS: -1, Pairs: nHi + nLo})
			says = append(says, fmt.Sprintf("%s aligned to %s from packets seen on both sides in one direction only: offset %v, assuming no wire delay (error up to the one-way delay)",
				name, recs[0].Header.Node, time.Duration(b)))
		default:
			h0, hn := recs[0].Header, recs[n].Header
			off[n] = (hn.RealNS - int64(hn.MonoNS)) - (h0.RealNS - int64(h0.MonoNS))
			m.Align = append(m.Align, Alignment{Node: name, Method: AlignRealtime, OffsetNS: off[n], UncertaintyNS: -1})
			says = append(says, fmt.Sprintf("%s aligned to %s by the CLOCK_REALTIME readings in the recordings' headers (no packet was captured on both sides): only as good as the two wall clocks",
				name, recs[0].Header.Node))
		}
	}
	if len(recs) == 1 {
		says = append(says, "one node: its CLOCK_MONOTONIC")
	}
	m.Clock = strings.Join(says, "; ")
	return off
}
