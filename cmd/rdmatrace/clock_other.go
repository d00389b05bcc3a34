// Copyright 2026 The rdmago Authors.

//go:build !linux

package main

// monotonicNow is 0 off Linux, where there is no tracer whose event times
// it would be compared with.
func monotonicNow() uint64 { return 0 }
