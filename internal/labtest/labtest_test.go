// Copyright 2026 The rdmago Authors.

package labtest

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

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
	failed bool
}

func (r *recorder) Helper()      {}
func (r *recorder) Error(...any) { r.failed = true }
func (r *recorder) Fatal(...any) { r.failed = true }
