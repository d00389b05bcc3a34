// Copyright 2026 The rdmago Authors.

package main

import "golang.org/x/sys/unix"

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock of the tracer's
// event times (bpf_ktime_get_ns); 0 if it cannot be read.
func monotonicNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}
