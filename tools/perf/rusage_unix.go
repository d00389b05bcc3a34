// Copyright 2026 The rdmago Authors.

//go:build unix

package perf

import "golang.org/x/sys/unix"

// getRusage is getrusage(2) for RUSAGE_SELF; zero if it fails.
func getRusage() rusage {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return rusage{}
	}
	tv := func(t unix.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return rusage{vcsw: uint64(ru.Nvcsw), ivcsw: uint64(ru.Nivcsw), minflt: uint64(ru.Minflt), user: tv(ru.Utime), sys: tv(ru.Stime)}
}
