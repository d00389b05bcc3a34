// Copyright 2026 The rdmago Authors.

package rtnl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rdmago/rdmago/internal/netlink"
)

// Traffic-control messages and attributes (include/uapi/linux/rtnetlink.h,
// pkt_sched.h, gen_stats.h).
const (
	RTM_NEWQDISC = 36
	RTM_DELQDISC = 37
	RTM_GETQDISC = 38

	TCA_KIND    = 1
	TCA_OPTIONS = 2
	TCA_STATS   = 3
	TCA_STATS2  = 7

	TCA_STATS_BASIC = 1
	TCA_STATS_QUEUE = 3

	TCA_NETEM_CORR      = 1
	TCA_NETEM_REORDER   = 3
	TCA_NETEM_LATENCY64 = 10
	TCA_NETEM_JITTER64  = 11

	TC_H_ROOT = 0xFFFFFFFF

	// NLM_F_REPLACE is include/uapi/linux/netlink.h's flag for new
	// requests (the same bit as NLM_F_ROOT for get requests).
	NLM_F_REPLACE = 0x100

	tcmsgLen        = 20 // sizeof(struct tcmsg)
	tcNetemQoptLen  = 24 // sizeof(struct tc_netem_qopt)
	psChedShift     = 6  // PSCHED_SHIFT: netem's latency and jitter are in 64 ns ticks
	netemDefLimit   = 1000
	maxNetemLatency = time.Duration(math.MaxUint32) << psChedShift
)

// NetemHandle is the handle ReplaceNetem gives its qdisc: "10:" in tc's
// notation (major 0x10, minor 0).
const NetemHandle = 0x10 << 16

// Netem is a netem qdisc's configuration (tc-netem(8)). Probabilities are
// percentages, 0 to 100; delays are kept in netem's 64 ns ticks (rounded
// down), as tc sends them.
type Netem struct {
	Latency time.Duration // delay added to every packet (tc's "delay T")
	Jitter  time.Duration // random variation of Latency ("delay T J")
	// DelayCorrelation is how much each packet's jitter depends on the
	// previous one's ("delay T J C").
	DelayCorrelation float64
	Loss             float64 // random loss ("loss P")
	LossCorrelation  float64 // ("loss P C")
	Duplicate        float64 // ("duplicate P")
	// Reorder sends this share of the packets at once while the others
	// wait Latency ("reorder P"; needs Latency, like tc).
	Reorder            float64
	ReorderCorrelation float64 // ("reorder P C")
	// Gap reorders every Gap-th packet instead ("gap N"); with Reorder set
	// and Gap 0, tc's default of 1 is used.
	Gap uint32
	// Limit is the queue length in packets ("limit N"); 0 means tc's
	// default, 1000.
	Limit uint32
}

// Qdisc is a queueing discipline as RTM_GETQDISC reports it (`tc -s qdisc
// show`).
type Qdisc struct {
	Kind    string // "netem", "pfifo_fast", "noqueue", ...
	Ifindex int32
	Handle  uint32
	Parent  uint32 // TC_H_ROOT for a link's root qdisc
	Netem   *Netem // the options of a netem qdisc; nil for other kinds
	Stats   QdiscStats
}

// QdiscStats are a qdisc's counters (struct gnet_stats_basic and struct
// gnet_stats_queue from TCA_STATS2).
type QdiscStats struct {
	Bytes      uint64
	Packets    uint32
	Qlen       uint32
	Backlog    uint32
	Drops      uint32 // for netem: packets it dropped (Loss) or found its queue full for
	Requeues   uint32
	Overlimits uint32
}

// tcmsg encodes struct tcmsg.
func tcmsg(index int32, handle, parent uint32) []byte {
	b := make([]byte, tcmsgLen)
	b[0] = AF_UNSPEC
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], handle)
	binary.NativeEndian.PutUint32(b[12:], parent)
	return b
}

// probability converts a percentage to netem's scale, where 2^32-1 is 100 %
// (rounded to nearest, as tc does).
func probability(what string, pct float64) (uint32, error) {
	if math.IsNaN(pct) || pct < 0 || pct > 100 {
		return 0, fmt.Errorf("netem %s %v%%: want a percentage from 0 to 100", what, pct)
	}
	return uint32(math.Round(pct / 100 * math.MaxUint32)), nil
}

// percent is probability's inverse.
func percent(p uint32) float64 { return float64(p) / math.MaxUint32 * 100 }

// ticks converts a delay to netem's 64 ns ticks.
func ticks(what string, d time.Duration) (uint32, error) {
	if d < 0 || d > maxNetemLatency {
		return 0, fmt.Errorf("netem %s %v: want 0 to %v", what, d, maxNetemLatency)
	}
	return uint32(d >> psChedShift), nil
}

// netemOptions encodes the TCA_OPTIONS payload of a netem qdisc: struct
// tc_netem_qopt followed by TCA_NETEM_* attributes (the kernel parses them
// with nla_parse_nested_compat), the way tc sends them.
func netemOptions(n Netem) ([]byte, error) {
	var q [6]uint32 // latency, limit, loss, gap, duplicate, jitter
	var err error
	if q[0], err = ticks("delay", n.Latency); err != nil {
		return nil, err
	}
	if q[5], err = ticks("jitter", n.Jitter); err != nil {
		return nil, err
	}
	q[1] = n.Limit
	if q[1] == 0 {
		q[1] = netemDefLimit
	}
	var corr [3]uint32 // delay, loss, duplicate correlation
	var reorder [2]uint32
	for _, p := range []struct {
		what string
		pct  float64
		dst  *uint32
	}{
		{"loss", n.Loss, &q[2]},
		{"duplicate", n.Duplicate, &q[4]},
		{"delay correlation", n.DelayCorrelation, &corr[0]},
		{"loss correlation", n.LossCorrelation, &corr[1]},
		{"reorder", n.Reorder, &reorder[0]},
		{"reorder correlation", n.ReorderCorrelation, &reorder[1]},
	} {
		if *p.dst, err = probability(p.what, p.pct); err != nil {
			return nil, err
		}
	}
	q[3] = n.Gap
	if reorder[0] != 0 {
		if n.Latency == 0 {
			return nil, errors.New("netem reorder needs a delay: reordered packets are the ones sent without it")
		}
		if q[3] == 0 {
			q[3] = 1
		}
	}
	b := u32s(q[:]...) // struct tc_netem_qopt
	var e netlink.Encoder
	if corr != [3]uint32{} {
		e.Bytes(TCA_NETEM_CORR, u32s(corr[:]...))
	}
	if reorder[0] != 0 {
		e.Bytes(TCA_NETEM_REORDER, u32s(reorder[:]...))
	}
	return append(b, e.Encode()...), nil
}

// u32s encodes v as consecutive native-endian u32s.
func u32s(v ...uint32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.NativeEndian.AppendUint32(b, x)
	}
	return b
}

// replaceNetemReq is the RTM_NEWQDISC payload (sent with
// NLM_F_CREATE|NLM_F_REPLACE) of `tc qdisc replace dev X root handle 10:
// netem ...` on link index.
func replaceNetemReq(index int32, n Netem) ([]byte, error) {
	opts, err := netemOptions(n)
	if err != nil {
		return nil, err
	}
	var e netlink.Encoder
	e.String(TCA_KIND, "netem")
	e.Bytes(TCA_OPTIONS, opts)
	return append(tcmsg(index, NetemHandle, TC_H_ROOT), e.Encode()...), nil
}

// delRootQdiscReq is the RTM_DELQDISC payload of `tc qdisc del dev X root`.
func delRootQdiscReq(index int32) []byte { return tcmsg(index, 0, TC_H_ROOT) }

// getQdiscsReq is the RTM_GETQDISC dump request of `tc qdisc show dev X`.
func getQdiscsReq(index int32) []byte { return tcmsg(index, 0, 0) }

// parseNetem decodes a netem qdisc's TCA_OPTIONS as the kernel dumps them.
func parseNetem(b []byte) (*Netem, error) {
	if len(b) < tcNetemQoptLen {
		return nil, fmt.Errorf("rtnl: short tc_netem_qopt (%d bytes)", len(b))
	}
	u := func(i int) uint32 { return binary.NativeEndian.Uint32(b[4*i:]) }
	n := &Netem{
		Latency:   time.Duration(u(0)) << psChedShift,
		Limit:     u(1),
		Loss:      percent(u(2)),
		Gap:       u(3),
		Duplicate: percent(u(4)),
		Jitter:    time.Duration(u(5)) << psChedShift,
	}
	attrs, err := netlink.ParseAttrs(b[tcNetemQoptLen:])
	if err != nil {
		return nil, fmt.Errorf("rtnl: netem attributes: %w", err)
	}
	for _, a := range attrs {
		switch a.Type {
		case TCA_NETEM_CORR:
			if len(a.Data) >= 12 {
				n.DelayCorrelation = percent(binary.NativeEndian.Uint32(a.Data))
				n.LossCorrelation = percent(binary.NativeEndian.Uint32(a.Data[4:]))
			}
		case TCA_NETEM_REORDER:
			if len(a.Data) >= 8 {
				n.Reorder = percent(binary.NativeEndian.Uint32(a.Data))
				n.ReorderCorrelation = percent(binary.NativeEndian.Uint32(a.Data[4:]))
			}
		case TCA_NETEM_LATENCY64:
			n.Latency = time.Duration(a.Uint64())
		case TCA_NETEM_JITTER64:
			n.Jitter = time.Duration(a.Uint64())
		}
	}
	return n, nil
}

// parseQdisc decodes an RTM_NEWQDISC message (an answer to RTM_GETQDISC).
func parseQdisc(b []byte) (Qdisc, error) {
	if len(b) < tcmsgLen {
		return Qdisc{}, fmt.Errorf("rtnl: short tcmsg (%d bytes)", len(b))
	}
	q := Qdisc{
		Ifindex: int32(binary.NativeEndian.Uint32(b[4:])),
		Handle:  binary.NativeEndian.Uint32(b[8:]),
		Parent:  binary.NativeEndian.Uint32(b[12:]),
	}
	attrs, err := netlink.ParseAttrs(b[tcmsgLen:])
	if err != nil {
		return Qdisc{}, fmt.Errorf("rtnl: qdisc attributes: %w", err)
	}
	var opts []byte
	for _, a := range attrs {
		switch a.Type {
		case TCA_KIND:
			q.Kind = a.String()
		case TCA_OPTIONS:
			opts = a.Data
		case TCA_STATS2:
			st, err := netlink.ParseAttrs(a.Data)
			if err != nil {
				return Qdisc{}, fmt.Errorf("rtnl: qdisc statistics: %w", err)
			}
			for _, s := range st {
				d := s.Data
				switch {
				case s.Type == TCA_STATS_BASIC && len(d) >= 12:
					q.Stats.Bytes = binary.NativeEndian.Uint64(d)
					q.Stats.Packets = binary.NativeEndian.Uint32(d[8:])
				case s.Type == TCA_STATS_QUEUE && len(d) >= 20:
					q.Stats.Qlen = binary.NativeEndian.Uint32(d)
					q.Stats.Backlog = binary.NativeEndian.Uint32(d[4:])
					q.Stats.Drops = binary.NativeEndian.Uint32(d[8:])
					q.Stats.Requeues = binary.NativeEndian.Uint32(d[12:])
					q.Stats.Overlimits = binary.NativeEndian.Uint32(d[16:])
				}
			}
		}
	}
	if q.Kind == "netem" && opts != nil {
		if q.Netem, err = parseNetem(opts); err != nil {
			return Qdisc{}, err
		}
	}
	return q, nil
}
