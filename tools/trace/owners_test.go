// Copyright 2026 The rdmago Authors.

package trace

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmago/rdmago/internal/abi"
)

// createQP is the record of a successful CREATE_QP by pid/comm that got QP
// handle h and number qpn.
func createQP(pid uint32, comm string, h, qpn uint32) record {
	return record{ts: 1, dur: 1, ret: 64, pid: pid, tid: pid + 1, comm: comm, kind: KindVerbsWrite, flags: flagReturned | flagData | flagResp,
		data: cmd(abi.IB_USER_VERBS_CMD_CREATE_QP, 16, 8, uint64(1), uint64(2), uint32(0), uint32(1), uint32(2), uint32(0),
			uint32(64), uint32(32), uint32(1), uint32(1), uint32(0), uint8(0), uint8(abi.IB_QPT_RC)),
		resp: le(h, qpn)}
}

// TestOwnedRXE: the rxe counts under a -p or -c filter are those of the QPs
// the filtered processes created; without a filter every count stays, with
// the owners known.
func TestOwnedRXE(t *testing.T) {
	f := &Formatter{Names: ABINames{}}
	f.Describe(mustDecode(t, createQP(7, "rping", 1, 17)))
	f.Describe(mustDecode(t, createQP(7, "rping", 2, 18)))
	f.Describe(mustDecode(t, createQP(9, "ibv_rc_pingpong", 1, 19)))
	if o, ok := f.QPOwner(19); !ok || o != (QPOwner{9, "ibv_rc_pingpong"}) {
		t.Errorf("QPOwner(19) = %v, %v", o, ok)
	}
	counts := []RXECount{
		{Func: "rxe_rcv", QPN: 17, Count: 10},
		{Func: "rxe_rcv", QPN: 18, Count: 20},
		{Func: "rxe_rcv", QPN: 19, Count: 40},
		{Func: "rxe_rcv", QPN: 33, Count: 80}, // nobody known
		{Func: "rxe_sched_task", QPN: QPNUnknown, Count: 160},
	}
	for _, tc := range []struct {
		name  string
		o     Options
		want  []RXECount
		other uint64
	}{
		{"pid", Options{PID: 7}, []RXECount{
			{Func: "rxe_rcv", QPN: 17, Count: 10, PID: 7, Comm: "rping"},
			{Func: "rxe_rcv", QPN: 18, Count: 20, PID: 7, Comm: "rping"},
		}, 40 + 80 + 160},
		{"comm", Options{Comm: "ibv_rc_pingpong"}, []RXECount{
			{Func: "rxe_rcv", QPN: 19, Count: 40, PID: 9, Comm: "ibv_rc_pingpong"},
		}, 10 + 20 + 80 + 160},
		{"both, no match", Options{PID: 9, Comm: "rping"}, nil, 310},
		{"none", Options{}, []RXECount{
			{Func: "rxe_rcv", QPN: 17, Count: 10, PID: 7, Comm: "rping"},
			{Func: "rxe_rcv", QPN: 18, Count: 20, PID: 7, Comm: "rping"},
			{Func: "rxe_rcv", QPN: 19, Count: 40, PID: 9, Comm: "ibv_rc_pingpong"},
			{Func: "rxe_rcv", QPN: 33, Count: 80},
			{Func: "rxe_sched_task", QPN: QPNUnknown, Count: 160},
		}, 0},
	} {
		got, other := f.OwnedRXE(counts, tc.o)
		if diff := cmp.Diff(tc.want, got); diff != "" || other != tc.other {
			t.Errorf("%s: OwnedRXE (-want +got):\n%s\nother hits %d, want %d", tc.name, diff, other, tc.other)
		}
	}
}

// TestProcOwner: a thread id (here the main thread's, which is the pid)
// resolves to its process and command name; a thread that does not exist
// does not.
func TestProcOwner(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	o, ok := procOwner(uint32(os.Getpid()))
	comm, _ := os.ReadFile("/proc/self/comm")
	if !ok || o.PID != uint32(os.Getpid()) || o.Comm != strings.TrimSpace(string(comm)) {
		t.Errorf("procOwner(%d) = %v, %v; want %d, %q", os.Getpid(), o, ok, os.Getpid(), strings.TrimSpace(string(comm)))
	}
	if o, ok := procOwner(1 << 30); ok {
		t.Errorf("procOwner of no thread = %v, true", o)
	}
}
