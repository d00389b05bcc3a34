// Copyright 2026 The rdmago Authors.

package perf

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Clock says how ticks convert to time.
type Clock struct {
	MHz        float64 `json:"mhz"`                   // ticks per microsecond used for the figures
	Calibrated float64 `json:"calibrated_mhz"`        // measured against CLOCK_MONOTONIC
	CPUInfo    float64 `json:"cpuinfo_mhz,omitempty"` // "cpu MHz" of /proc/cpuinfo, what perftest uses
	Source     string  `json:"source"`
}

// ticksIn is how many ticks d lasts.
func (c Clock) ticksIn(d time.Duration) int64 { return int64(d.Seconds() * c.MHz * 1e6) }

// cpuinfoTolerance is how close /proc/cpuinfo's rate must be to the
// calibrated one to be used.
const cpuinfoTolerance = 0.02

// calibrate measures the tick rate over d. On x86 it then uses
// /proc/cpuinfo's "cpu MHz" when that agrees within 2%, perftest's own rule
// (get_cpu_mhz: the cpuinfo rate unless its regression against
// gettimeofday differs by more than 2%): both tools then convert cycles with
// the same figure, and the ratio carries no calibration difference.
func calibrate(d time.Duration) Clock {
	if !cycleCounter {
		return Clock{MHz: 1000, Calibrated: 1000, Source: "monotonic clock (ns)"}
	}
	t0, c0 := clockPair()
	time.Sleep(d)
	t1, c1 := clockPair()
	best := float64(c1-c0) / (float64(t1.Sub(t0)) / 1e3)
	c := Clock{MHz: best, Calibrated: best, Source: "cycle counter, calibrated"}
	if runtime.GOARCH == "amd64" {
		c.CPUInfo = cpuinfoMHz()
		if c.CPUInfo > 0 && math.Abs(c.CPUInfo-best)/best < cpuinfoTolerance {
			c.MHz = c.CPUInfo
			c.Source = "cycle counter, /proc/cpuinfo rate (as perftest)"
		}
	}
	return c
}

// clockPair reads the time and the counter as close together as it can: of
// a few tries (a busy host can deschedule the thread between two reads), the
// one whose counter reads bracket the clock read most tightly.
func clockPair() (time.Time, int64) {
	var t time.Time
	var c int64
	best := int64(math.MaxInt64)
	for i := 0; i < 8; i++ {
		a := ticks()
		now := time.Now()
		b := ticks()
		if b-a < best {
			best, t, c = b-a, now, a+(b-a)/2
		}
	}
	return t, c
}

func cpuinfoMHz() float64 {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return parseCPUInfoMHz(b)
}

// parseCPUInfoMHz returns the first "cpu MHz" of /proc/cpuinfo.
func parseCPUInfoMHz(b []byte) float64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil && f > 0 {
				return f
			}
		}
	}
	return 0
}

// Counters are what the process did during a measured loop.
type Counters struct {
	// ReadCalls and WriteCalls are the read- and write-class system calls
	// of the whole process (/proc/self/io syscr and syscw: read, pread,
	// readv, write, ...; the doorbell is a write). Other system calls
	// (ioctl, futex, nanosleep, epoll) are not counted there: run the
	// tool under strace -c -f for all of them.
	ReadCalls  uint64 `json:"syscr"`
	WriteCalls uint64 `json:"syscw"`
	Mallocs    uint64 `json:"mallocs"` // heap allocations (runtime.MemStats.Mallocs)
	// Context switches of all the process's threads (getrusage): voluntary
	// (a thread blocked: the Go scheduler parking or sleeping) and
	// involuntary (preempted by the kernel), and the CPU time used.
	VolCtxSw   uint64 `json:"vcsw"`
	InvolCtxSw uint64 `json:"ivcsw"`
	// MinorFaults are the page faults of all the process's threads that
	// needed no I/O (getrusage's ru_minflt): memory touched for the first
	// time. Under the lab's transparent huge pages one such fault in Go's
	// heap clears 2 MiB.
	MinorFaults uint64  `json:"minflt"`
	UserSec     float64 `json:"user_sec"`
	SysSec      float64 `json:"sys_sec"`
}

// rusage is what getrusage(2) says about the whole process (zero where it
// cannot be read).
type rusage struct {
	vcsw, ivcsw uint64  // voluntary and involuntary context switches
	minflt      uint64  // minor page faults
	user, sys   float64 // CPU seconds
}

type snapshot struct {
	syscr, syscw uint64
	allocs       uint64
	ok           bool
	ru           rusage
}

// takeSnapshot reads the counters. Reading /proc/self/io is itself one read,
// which the next snapshot sees: sub removes it. The allocation count comes
// from runtime.ReadMemStats, which flushes every P's allocation cache first
// (runtime/metrics counts small allocations only when a span is refilled, so
// it would charge earlier allocations to the loop).
func takeSnapshot() snapshot {
	var s snapshot
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.allocs = ms.Mallocs
	s.ru = getRusage()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return s
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "syscr":
			s.syscr, s.ok = n, true
		case "syscw":
			s.syscw = n
		}
	}
	return s
}

// sub returns what happened between s0 and s, less the snapshot's own work
// (one read of /proc/self/io, and the allocations of reading it, measured
// once by measureSnapshotCost).
func (s snapshot) sub(s0 snapshot, cost snapshot) Counters {
	d := func(a, b, c uint64) uint64 {
		if a < b+c {
			return 0
		}
		return a - b - c
	}
	return Counters{
		ReadCalls:   d(s.syscr, s0.syscr, cost.syscr),
		WriteCalls:  d(s.syscw, s0.syscw, cost.syscw),
		Mallocs:     d(s.allocs, s0.allocs, cost.allocs),
		VolCtxSw:    d(s.ru.vcsw, s0.ru.vcsw, 0),
		InvolCtxSw:  d(s.ru.ivcsw, s0.ru.ivcsw, 0),
		MinorFaults: d(s.ru.minflt, s0.ru.minflt, 0),
		UserSec:     s.ru.user - s0.ru.user,
		SysSec:      s.ru.sys - s0.ru.sys,
	}
}

// measureSnapshotCost is what two back-to-back snapshots differ by.
func measureSnapshotCost() snapshot {
	var best snapshot
	for i := 0; i < 3; i++ {
		a := takeSnapshot()
		b := takeSnapshot()
		if i == 0 {
			best = snapshot{syscr: b.syscr - a.syscr, syscw: b.syscw - a.syscw, allocs: b.allocs - a.allocs}
			continue
		}
		best.syscr = min(best.syscr, b.syscr-a.syscr)
		best.syscw = min(best.syscw, b.syscw-a.syscw)
		best.allocs = min(best.allocs, b.allocs-a.allocs)
	}
	return best
}
