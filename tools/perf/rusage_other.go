// Copyright 2026 The rdmago Authors.

//go:build !unix

package perf

// getRusage reports nothing where there is no getrusage(2).
func getRusage() rusage { return rusage{} }
