// Copyright 2026 The rdmago Authors.

package labtest

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

var errNotYet = errors.New("nobody listens yet")

// TestRetry: Retry dials again only on the errors again matches, and gives
// up with the last error when ctx ends.
func TestRetry(t *testing.T) {
	again := func(err error) bool { return errors.Is(err, errNotYet) }
	calls := 0
	got, err := Retry(context.Background(), again, func() (int, error) {
		if calls++; calls < 3 {
			return 0, errNotYet
		}
		return 42, nil
	})
	if got != 42 || err != nil || calls != 3 {
		t.Fatalf("Retry = %d, %v after %d calls; want 42, nil after 3", got, err, calls)
	}

	other := errors.New("refused")
	calls = 0
	if _, err := Retry(context.Background(), again, func() (int, error) { calls++; return 0, other }); err != other || calls != 1 {
		t.Fatalf("Retry on another error = %v after %d calls; want it at once", err, calls)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	if _, err := Retry(ctx, again, func() (int, error) { return 0, errNotYet }); err != errNotYet {
		t.Fatalf("Retry after ctx ended = %v, want the last dial error", err)
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
	failed bool
}

func (r *recorder) Helper()      {}
func (r *recorder) Error(...any) { r.failed = true }
func (r *recorder) Fatal(...any) { r.failed = true }
