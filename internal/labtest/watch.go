// Copyright 2026 The rdmago Authors.

package labtest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/sysfs"
)

// Watch makes a test that is still running after d log what the kernel
// holds for this node's device: the change of its port counters since the
// call (rxe's tell lost packets, retries, duplicates and RNR waits) and
// its queue pairs as `rdma res show qp` prints them (states and PSNs), then
// what more returns (nil: nothing), e.g. a connection's own flow-control
// state. It is for tests whose only other word on a stall would be
// "deadline exceeded"; it stops with the test.
func (e Env) Watch(t testing.TB, d time.Duration, more func() string) {
	before := e.counters()
	ctx, cancel := context.WithCancel(context.Background())
	qps := HostTool(t, ctx, "rdma", "res", "show", "qp", "link", e.Dev+"/1") // looked up here: Missing must run in the test's goroutine
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-stop:
			return
		case <-time.After(d):
		}
		var b strings.Builder
		fmt.Fprintf(&b, "still running after %v; %s:\n  counters changed: %s", d, e.Dev, diffCounters(before, e.counters()))
		time.AfterFunc(10*time.Second, cancel)
		out, err := qps.CombinedOutput()
		fmt.Fprintf(&b, "\n  rdma res show qp (err %v):\n%s", err, out)
		if more != nil {
			fmt.Fprintf(&b, "\n  %s", more())
		}
		t.Log(b.String())
	}()
	t.Cleanup(func() { close(stop); <-done; cancel() })
}

func (e Env) counters() map[string]uint64 {
	cs, err := sysfs.FS{}.HWCounters([]string{e.Dev})
	if err != nil || len(cs) == 0 {
		return nil
	}
	return cs[0].Values
}

// diffCounters lists the counters that changed, as name +delta.
func diffCounters(before, after map[string]uint64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if d := after[k] - before[k]; d != 0 {
			parts = append(parts, fmt.Sprintf("%s +%d", k, d))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
