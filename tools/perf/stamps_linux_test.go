// Copyright 2026 The rdmago Authors.

// Not under -race: the race detector's shadow memory faults on the first
// write to each page of its own (17,114 for these 32 MiB), so the count
// would say nothing about newStamps.

//go:build !race

package perf

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNewStampsPrefaulted checks that filling the stamps newStamps returns
// takes no page fault: the loops fill them while measuring. The faults are
// this thread's (RUSAGE_THREAD, the goroutine locked to it): the process's
// count also takes the faults of the runtime's other threads and of other
// tests, 6 in one two-node lab run. Unprefaulted, the fill takes 8192
// faults, or 16 where transparent huge pages back the heap (the lab's
// guests).
func TestNewStampsPrefaulted(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	const n = 4 << 20 // 32 MiB: 8192 small pages, 16 huge ones
	s := newStamps(n)
	minflt := func() int64 {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Fatalf("getrusage: %v", err)
		}
		return ru.Minflt
	}
	before := minflt()
	for i := range s {
		s[i] = int64(i)
	}
	if d := minflt() - before; d > 2 {
		t.Errorf("filling %d stamps (%d MiB) took %d minor faults on this thread, want none", n, n*8>>20, d)
	}
}
