// Copyright 2026 The rdmago Authors.

package rtnl

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"
	"time"
)

// The golden requests were captured with `strace -xx -e trace=sendmsg` from
// iproute2 6.1's tc (Debian 12) on a veth t0 at index 3 in a private network
// namespace:
//
//	tc qdisc replace dev t0 root handle 10: netem loss 2%
//	tc qdisc replace dev t0 root handle 10: netem delay 10ms 2ms loss 1.5% 25% reorder 10% gap 5 limit 500
//	tc qdisc del dev t0 root
//	tc qdisc show dev t0
//
// They agree with the layouts of struct tcmsg (rtnetlink.h) and struct
// tc_netem_qopt, tc_netem_corr, tc_netem_reorder (pkt_sched.h): netem's
// probabilities are u32 with 2^32-1 for 100 %, its delays 64 ns ticks.

const goldenTcmsg = "00000000" + "03000000" + "00001000" + "ffffffff" + "00000000"

func TestReplaceNetemGolden(t *testing.T) {
	want := goldenTcmsg + "0a0001006e6574656d000000" + "1c000200" +
		"00000000" + "e8030000" + "52b81e05" + "00000000" + "00000000" + "00000000"
	got, err := replaceNetemReq(3, Netem{Loss: 2})
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != want {
		t.Errorf("netem loss 2%%\n got %x\nwant %s", got, want)
	}

	want = goldenTcmsg + "0a0001006e6574656d000000" + "38000200" +
		"5a620200" + "f4010000" + "3d0ad703" + "05000000" + "00000000" + "127a0000" +
		"10000100" + "00000000" + "00000040" + "00000000" + // TCA_NETEM_CORR
		"0c000300" + "9a999919" + "00000000" // TCA_NETEM_REORDER
	got, err = replaceNetemReq(3, Netem{Latency: 10 * time.Millisecond, Jitter: 2 * time.Millisecond,
		Loss: 1.5, LossCorrelation: 25, Reorder: 10, Gap: 5, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != want {
		t.Errorf("netem delay, loss, reorder\n got %x\nwant %s", got, want)
	}
}

func TestDelAndGetQdiscGolden(t *testing.T) {
	want := "00000000" + "03000000" + "00000000" + "ffffffff" + "00000000"
	if got := hex.EncodeToString(delRootQdiscReq(3)); got != want {
		t.Errorf("del root\n got %s\nwant %s", got, want)
	}
	want = "00000000" + "03000000" + "00000000" + "00000000" + "00000000"
	if got := hex.EncodeToString(getQdiscsReq(3)); got != want {
		t.Errorf("show dev\n got %s\nwant %s", got, want)
	}
}

func TestNetemBadInput(t *testing.T) {
	for _, tc := range []struct {
		n    Netem
		want string
	}{
		{Netem{Loss: 101}, "loss 101%"},
		{Netem{Loss: -1}, "loss -1%"},
		{Netem{Loss: math.NaN()}, "loss NaN%"},
		{Netem{Duplicate: 200}, "duplicate 200%"},
		{Netem{LossCorrelation: 100.5}, "loss correlation"},
		{Netem{Reorder: 5}, "reorder needs a delay"},
		{Netem{Latency: -time.Millisecond}, "delay -1ms"},
		{Netem{Jitter: 300 * time.Second}, "jitter 5m0s"},
	} {
		_, err := replaceNetemReq(1, tc.n)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error about %q", tc.n, err, tc.want)
		}
	}
	// Reorder with a delay and no gap gets tc's gap 1.
	got, err := replaceNetemReq(1, Netem{Latency: time.Millisecond, Reorder: 50})
	if err != nil {
		t.Fatal(err)
	}
	if gap := hex.EncodeToString(got[20+12+4+12 : 20+12+4+16]); gap != "01000000" {
		t.Errorf("gap %s, want 1", gap)
	}
}

// A netem root qdisc as RTM_GETQDISC reports it, laid out like the kernel's
// tc_fill_qdisc/netem_dump (6.1) write it: tcmsg; TCA_KIND; TCA_OPTIONS
// (tc_netem_qopt + TCA_NETEM_CORR + TCA_NETEM_REORDER + TCA_NETEM_ECN);
// TCA_STATS2 (gnet_stats_basic padded to 16 bytes, gnet_stats_queue).
func TestParseQdisc(t *testing.T) {
	msg, err := hex.DecodeString("00000000" + "03000000" + "00001000" + "ffffffff" + "02000000" +
		"0a0001006e6574656d000000" +
		"40000200" + "5a620200" + "f4010000" + "3d0ad703" + "05000000" + "00000000" + "127a0000" +
		"10000100" + "00000000" + "00000040" + "00000000" +
		"0c000300" + "9a999919" + "00000000" +
		"08000700" + "00000000" + // TCA_NETEM_ECN
		"30000700" + "14000100" + "40e2010000000000" + "2c010000" + "00000000" +
		"18000300" + "01000000" + "ea050000" + "11000000" + "00000000" + "02000000")
	if err != nil {
		t.Fatal(err)
	}
	q, err := parseQdisc(msg)
	if err != nil {
		t.Fatal(err)
	}
	if q.Kind != "netem" || q.Ifindex != 3 || q.Handle != NetemHandle || q.Parent != TC_H_ROOT {
		t.Errorf("qdisc %+v", q)
	}
	want := QdiscStats{Bytes: 123456, Packets: 300, Qlen: 1, Backlog: 1514, Drops: 17, Overlimits: 2}
	if q.Stats != want {
		t.Errorf("stats %+v, want %+v", q.Stats, want)
	}
	n := q.Netem
	if n == nil {
		t.Fatal("no netem options")
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	if n.Latency != 10*time.Millisecond || n.Jitter != 2*time.Millisecond || n.Limit != 500 || n.Gap != 5 ||
		!near(n.Loss, 1.5) || !near(n.LossCorrelation, 25) || !near(n.Reorder, 10) || n.DelayCorrelation != 0 || n.Duplicate != 0 {
		t.Errorf("netem %+v", *n)
	}
	if _, err := parseQdisc(msg[:12]); err == nil {
		t.Error("a short tcmsg was accepted")
	}
	bad := append([]byte(nil), msg[:20+12]...)
	bad = append(bad, 0x0c, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0) // 8-byte tc_netem_qopt
	if _, err := parseQdisc(bad); err == nil {
		t.Error("a short tc_netem_qopt was accepted")
	}
}

// TestNetemRoundTrip: what netemOptions encodes, parseNetem reads back.
func TestNetemRoundTrip(t *testing.T) {
	in := Netem{Latency: 5 * time.Millisecond, Jitter: time.Millisecond, DelayCorrelation: 10,
		Loss: 3, LossCorrelation: 0, Duplicate: 0.5, Reorder: 25, ReorderCorrelation: 50, Gap: 0, Limit: 0}
	b, err := netemOptions(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := parseNetem(b)
	if err != nil {
		t.Fatal(err)
	}
	in.Limit, in.Gap = 1000, 1 // tc's defaults
	for _, p := range [][2]float64{{in.DelayCorrelation, out.DelayCorrelation}, {in.Loss, out.Loss},
		{in.Duplicate, out.Duplicate}, {in.Reorder, out.Reorder}, {in.ReorderCorrelation, out.ReorderCorrelation}} {
		if math.Abs(p[0]-p[1]) > 1e-6 {
			t.Errorf("%v%% came back as %v%%", p[0], p[1])
		}
	}
	if out.Latency != in.Latency || out.Jitter != in.Jitter || out.Limit != in.Limit || out.Gap != in.Gap {
		t.Errorf("round trip\n got %+v\nwant %+v", *out, in)
	}
}
