// Copyright 2026 The rdmago Authors.

package trace

import (
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Data-path traces of rdma-core's C programs, recorded in the lab by
// TestLabDataPath with the rxe probes attached and
// -rdmatrace.datapath=testdata/datapath (rdmalab test ... -args
// -rdmatrace.datapath=testdata/datapath), in the files golden_linux_test.go
// describes: the doorbells carry the WQE read from the send ring, and the
// completions rxe posted are records of their own.
var dataPathDir = flag.String("rdmatrace.datapath", "", "lab: write the data-path traces into `DIR` (testdata/datapath)")

// TestDataPathTraces decodes the recorded data-path traces: the lines must
// be those recorded, and checkDataPath must hold.
func TestDataPathTraces(t *testing.T) {
	recs, _ := filepath.Glob("testdata/datapath/*.rec")
	if len(recs) == 0 {
		t.Fatal("no data-path traces in testdata/datapath (record them in the lab: see datapath_linux_test.go)")
	}
	for _, rec := range recs {
		name := strings.TrimSuffix(filepath.Base(rec), ".rec")
		t.Run(name, func(t *testing.T) {
			evs := goldenCompare(t, rec)
			switch {
			case strings.HasPrefix(name, "ibv_rc_pingpong-"):
				checkDataPath(t, evs, "SEND")
			case strings.HasPrefix(name, "rping-"):
				checkDataPath(t, evs, "SEND", "RDMA_READ", "RDMA_WRITE")
			default:
				t.Errorf("no check for the program of %s", name)
			}
		})
	}
}

// checkDataPath checks a trace made with the rxe probes: every POST_SEND
// doorbell shows the WR it rang for (one of wantOps at least once each,
// RDMA and atomic WRs with their remote address and key), every signaled
// WR comes back as a completion of the same QP, wr_id and kind, every
// completion is of a QP the trace saw created and is shown in its
// creator's name, and the process of each completion line is the QP's.
func checkDataPath(t *testing.T, evs []Event, wantOps ...string) {
	t.Helper()
	f := &Formatter{Names: ABINames{}}
	type wr struct {
		qpn   uint64
		wrID  string
		op    string
		owner string
	}
	var signaled []wr
	completed := map[wr]bool{}
	owner := map[uint64]string{} // QPN -> comm[pid] of its creation
	ops := map[string]int{}
	completions := 0
	for i, e := range evs {
		d := f.Describe(e)
		line := f.Line(e)
		who := fmt.Sprintf("%s[%d]", e.Comm, e.PID)
		if q, ok := fieldVal(d.Resp, "qpn").(uint64); ok && fieldVal(d.Resp, "qp") != nil && d.Result == "ok" {
			owner[q] = who
		}
		switch {
		case d.Op == "POST_SEND" && d.Result == "ok":
			op, ok := fieldVal(d.Args, "wr").(string)
			if !ok {
				t.Errorf("event %d: a doorbell without its WR: %s", i, line)
				continue
			}
			ops[op]++
			if strings.HasPrefix(op, "RDMA_") || strings.HasPrefix(op, "ATOMIC_") {
				if fieldVal(d.Args, "va") == "0x0" || fieldVal(d.Args, "rkey") == nil {
					t.Errorf("event %d: %s without its remote address and key: %s", i, op, line)
				}
			}
			qpn, _ := fieldVal(d.Args, "qpn").(uint64)
			if strings.HasPrefix(fieldVal(d.Args, "flags").(string), "signaled") && fieldVal(d.Args, "posted") == nil {
				signaled = append(signaled, wr{qpn, fieldVal(d.Args, "wr_id").(string), strings.TrimSuffix(op, "_WITH_IMM"), who})
			}
		case e.Kind == KindCompletion:
			completions++
			qpn, _ := fieldVal(d.Args, "qpn").(uint64)
			o, ok := owner[qpn]
			if !ok {
				t.Errorf("event %d: a completion of QPN %d, which the trace did not see created: %s", i, qpn, line)
				continue
			}
			if !strings.Contains(line, " "+o+" cq COMPLETION ") {
				t.Errorf("event %d: a completion of %s's QP not shown as theirs: %s", i, o, line)
			}
			completed[wr{qpn, fieldVal(d.Args, "wr_id").(string), fieldVal(d.Args, "opcode").(string), o}] = true
		}
	}
	for _, op := range wantOps {
		if ops[op] == 0 {
			t.Errorf("no %s posted; posted: %v", op, ops)
		}
	}
	if len(signaled) == 0 || completions == 0 {
		t.Fatalf("%d signaled WRs and %d completions traced, want some of each", len(signaled), completions)
	}
	for _, w := range signaled {
		if !completed[w] {
			t.Errorf("signaled %s wr_id %s on QPN %d of %s has no completion", w.op, w.wrID, w.qpn, w.owner)
		}
	}
	t.Logf("%d WRs posted %v, %d signaled, %d completions", len(signaled), ops, len(signaled), completions)
}

// saveDataPath writes the run into -rdmatrace.datapath's directory as
// NAME-<kernel major.minor>.{rec,out,txt}.
func saveDataPath(t *testing.T, name string, run cToolRun) {
	t.Helper()
	if *dataPathDir == "" {
		return
	}
	old := *goldenDir
	*goldenDir = *dataPathDir
	defer func() { *goldenDir = old }()
	saveGolden(t, name, run)
}
