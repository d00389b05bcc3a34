// Copyright 2026 The rdmago Authors.

//go:build amd64 || arm64

package perf

// ticks reads the CPU's cycle counter (ticks_$GOARCH.s): a few cycles, no
// system call, unlike time.Now on a clock source without a vDSO path (the
// lab's TCG guests run on the HPET, where every clock_gettime is a system
// call and an emulated device read).
func ticks() int64

const cycleCounter = true
