// Copyright 2026 The rdmago Authors.

//go:build !amd64 && !arm64

package perf

import "time"

var epoch = time.Now()

// ticks falls back to the monotonic clock, in nanoseconds, where there is no
// cycle counter to read from Go assembly.
func ticks() int64 { return int64(time.Since(epoch)) }

const cycleCounter = false
