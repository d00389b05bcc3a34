// Copyright 2026 The rdmago Authors.

package perf

import "golang.org/x/sys/unix"

// rusage is what getrusage(2) says about the whole process.
type rusage struct {
	vcsw, ivcsw uint64  // voluntary and involuntary context switches
	user, sys   float64 // CPU seconds
}

func getRusage() rusage {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return rusage{}
	}
	tv := func(t unix.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return rusage{vcsw: uint64(ru.Nvcsw), ivcsw: uint64(ru.Nivcsw), user: tv(ru.Utime), sys: tv(ru.Stime)}
}
