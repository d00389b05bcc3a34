// Copyright 2026 The rdmago Authors.

package timeline

import (
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/tools/trace"
)

// traceRecording turns a data-path trace of rdmatrace's tests (records,
// each after its u32 length) into a one-node recording, as `rdmatrace
// record` would have written it.
func traceRecording(t *testing.T, path string) Recording {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &trace.Formatter{Names: trace.ABINames{}}
	r := Recording{Header: trace.RecordHeader{Format: trace.RecordFormat, Node: "node0"}}
	for len(b) >= 4 {
		n := binary.LittleEndian.Uint32(b)
		e, err := trace.DecodeEvent(b[4 : 4+n])
		if err != nil {
			t.Fatal(err)
		}
		r.Entries = append(r.Entries, f.EntryOf(e))
		b = b[4+n:]
	}
	return r
}

// TestDataPathCausal draws rping (server and client on one node, traced
// with the rxe probes on 6.1): its posts show the WR, its completions are
// items in the lane of the process owning the QP, nothing in this clean run
// is red (libibverbs' ENOSPC size probe, GET_EVENT interrupted at exit and
// the flushed completions of the teardown are normal), and a GET_EVENT
// that waited is a span placed at its return, after what it waited for.
func TestDataPathCausal(t *testing.T) {
	m, err := Build([]Recording{traceRecording(t, "../trace/testdata/datapath/rping-6.1.rec")})
	if err != nil {
		t.Fatal(err)
	}
	find := func(pred func(Item) bool) (Item, bool) {
		i := slices.IndexFunc(m.Items, pred)
		if i < 0 {
			return Item{}, false
		}
		return m.Items[i], true
	}
	var completions, flushed int
	lanes := map[string]bool{}
	for _, l := range m.Lanes {
		if l.Kind == LaneProcess {
			lanes[l.ID] = true
		}
	}
	for _, it := range m.Items {
		if slices.Contains(it.Class, "err") {
			t.Errorf("red in a clean run: %s %q", it.Kind, it.Label)
		}
		if it.Kind == ItemCompletion {
			completions++
			if !lanes[it.Lane] {
				t.Errorf("completion %q in lane %s, not a process's", it.Label, it.Lane)
			}
			if slices.Contains(it.Class, "flush") {
				flushed++
			}
		}
	}
	if completions != 22 || flushed != 2 {
		t.Errorf("%d completions, %d flushed; want the 22 traced, 2 flushed", completions, flushed)
	}
	read, ok := find(func(it Item) bool { return strings.HasPrefix(it.Label, "POST_SEND RDMA_READ 64 B → va 0x") })
	if !ok || !strings.HasSuffix(read.Label, "(signaled)") || read.RKey == "" {
		t.Errorf("the RDMA READ post: %q rkey %q", read.Label, read.RKey)
	}
	if _, ok := find(func(it Item) bool {
		return it.Kind == ItemCompletion && it.Lane == read.Lane && strings.HasPrefix(it.Label, "completion RDMA_READ 64 B") && it.T > read.T
	}); !ok {
		t.Errorf("no RDMA READ completion after its post in %s", read.Lane)
	}
	// The server's wait for a connection ends when the client connects.
	connect, ok1 := find(func(it Item) bool { return strings.HasPrefix(it.Label, "CONNECT") })
	req, ok2 := find(func(it Item) bool { return it.Label == "GET_EVENT CONNECT_REQUEST" })
	if !ok1 || !ok2 {
		t.Fatalf("no CONNECT (%v) or GET_EVENT CONNECT_REQUEST (%v)", ok1, ok2)
	}
	if req.T < connect.T || req.T0 == 0 || req.T0 > connect.T || req.Y0 >= req.Y {
		t.Errorf("GET_EVENT CONNECT_REQUEST at %d (from %d, rows %v to %v), the client's CONNECT at %d: want a span over it",
			req.T, req.T0, req.Y0, req.Y, connect.T)
	}
	// DISCONNECTED comes after the data.
	disc, _ := find(func(it Item) bool { return it.Label == "GET_EVENT DISCONNECTED" })
	last, _ := find(func(it Item) bool { return it.Kind == ItemCompletion && strings.Contains(it.Label, "RDMA_WRITE") })
	if disc.T < last.T {
		t.Errorf("GET_EVENT DISCONNECTED at %d, before the RDMA WRITE completion at %d", disc.T, last.T)
	}
}
