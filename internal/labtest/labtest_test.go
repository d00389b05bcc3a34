// Copyright 2026 The rdmago Authors.

package labtest

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestOneNode: OneNode skips in a two-node lab only.
func TestOneNode(t *testing.T) {
	for _, c := range []struct {
		node, nodes string
		skip        bool
	}{
		{"", "", false},   // the host
		{"0", "1", false}, // one node
		{"0", "2", true},
		{"1", "2", true},
	} {
		t.Setenv("RDMALAB_NODE", c.node)
		t.Setenv("RDMALAB_NODES", c.nodes)
		var rec recorder
		OneNode(&rec, "both ends here")
		if rec.skipped != c.skip {
			t.Errorf("node %q of %q: skipped %v, want %v", c.node, c.nodes, rec.skipped, c.skip)
		}
	}
}

// TestRunRolesOneNode: with one node both sides run, and an error of
// either fails the test, as does a serving side that never returns.
func TestRunRolesOneNode(t *testing.T) {
	ok := func() error { return nil }
	bad := func() error { return errors.New("side failed") }
	for _, tc := range []struct {
		name          string
		serve, client func() error
		fail          bool
	}{
		{"both succeed", ok, ok, false},
		{"serve fails", bad, ok, true},
		{"client fails", ok, bad, true},
		// runtime.Goexit, as t.FailNow in the goroutine would do.
		{"serve exits", func() error { runtime.Goexit(); return nil }, ok, true},
	} {
		var ran atomic.Int32
		count := func(f func() error) func() error { return func() error { ran.Add(1); return f() } }
		var rec recorder
		Env{}.RunRoles(&rec, count(tc.serve), count(tc.client))
		if rec.failed != tc.fail || ran.Load() != 2 {
			t.Errorf("%s: failed %v after %d sides ran; want %v after 2", tc.name, rec.failed, ran.Load(), tc.fail)
		}
	}
}

// recorder is a testing.TB that only records failure.
type recorder struct {
	testing.TB
	failed, skipped bool
}

func (r *recorder) Skipf(string, ...any) { r.skipped = true }
func (r *recorder) Helper()              {}
func (r *recorder) Error(...any)         { r.failed = true }
func (r *recorder) Fatal(...any)         { r.failed = true }
