// Copyright 2026 The rdmago Authors.

package trace

import (
	"errors"
	"slices"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/rdmanl"
)

func TestRXEFuncsDefault(t *testing.T) {
	if got := rxeFuncs(true); !slices.Equal(got, RXEFuncs) {
		t.Errorf("rxeFuncs(all) = %v, want RXEFuncs %v", got, RXEFuncs)
	}
	got := rxeFuncs(false)
	want := []string{"rxe_post_send", "rxe_post_recv", "rxe_rcv", "rxe_xmit_packet", "rxe_cq_post"}
	if !slices.Equal(got, want) {
		t.Errorf("rxeFuncs(default) = %v, want %v (RXEPacketFuncs in RXEFuncs' order)", got, want)
	}
	// A name in RXEPacketFuncs that RXEFuncs lacks would silently not be counted.
	for _, fn := range RXEPacketFuncs {
		if !slices.Contains(RXEFuncs, fn) {
			t.Errorf("RXEPacketFuncs has %s, which RXEFuncs lacks", fn)
		}
	}
}

func TestMovingQPs(t *testing.T) {
	qps := []rdmanl.QP{
		{DevName: "rxe0", LQPN: 1, Type: abi.IB_QPT_GSI, State: abi.IB_QPS_RTS}, // every port's GSI QP
		{DevName: "rxe0", LQPN: 17, Type: abi.IB_QPT_RC, State: abi.IB_QPS_INIT},
		{DevName: "rxe0", LQPN: 18, Type: abi.IB_QPT_RC, State: abi.IB_QPS_RESET},
	}
	if got := movingQPs(qps); len(got) != 0 {
		t.Errorf("GSI in RTS and RC QPs in RESET/INIT: moving %v, want none", got)
	}
	qps = append(qps,
		rdmanl.QP{DevName: "rxe0", LQPN: 19, Type: abi.IB_QPT_RC, State: abi.IB_QPS_RTS},
		rdmanl.QP{DevName: "rxe0", LQPN: 20, Type: abi.IB_QPT_UD, State: abi.IB_QPS_RTR},
		rdmanl.QP{DevName: "rxe0", LQPN: 21, Type: abi.IB_QPT_RC, State: abi.IB_QPS_ERR}, // still flushing
	)
	want := []string{"rxe0 qpn 19 (RC, RTS)", "rxe0 qpn 20 (UD, RTR)", "rxe0 qpn 21 (RC, ERR)"}
	if got := movingQPs(qps); !slices.Equal(got, want) {
		t.Errorf("moving %v, want %v", got, want)
	}
}

func TestRXEAttachNote(t *testing.T) {
	for _, tc := range []struct {
		probes []Probe
		want   string
	}{
		{[]Probe{{Name: "kprobe:ib_uverbs_write", Attached: true}}, ""},
		{[]Probe{{Name: "fentry:rxe_rcv", Attached: true}, {Name: "fentry:rxe_cq_post", Attached: true},
			{Name: "kprobe:rxe_responder", Err: errors.New("absent")}}, "rxe counters: 2 fentry programs"},
		{[]Probe{{Name: "kprobe:rxe_rcv", Attached: true, Note: "arg 0 (skb) (not fentry: QPs may be moving packets (rxe0 qpn 17 (RC, RTS)): ...)"},
			{Name: "kprobe:rxe_cq_post", Attached: true, Note: "cqe (not fentry: kprobes asked for)"}},
			"rxe counters: 0 fentry programs, 2 kprobes (not fentry: QPs may be moving packets (rxe0 qpn 17 (RC, RTS)): ...)"},
	} {
		if got := rxeAttachNote(tc.probes); got != tc.want {
			t.Errorf("rxeAttachNote(%v) = %q, want %q", tc.probes, got, tc.want)
		}
	}
}
