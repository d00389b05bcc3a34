// Copyright 2026 The rdmago Authors.

package perf

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// RDMAPERF_ALLOCTRACE=1 records every allocation and, when a measured loop
// allocated, prints where to stderr: the diagnostic behind the 0 allocs/op
// goal. The stacks are those since the collection before the size started,
// so the control messages around the loop show up too; the loop's own are
// the ones under the loop functions.

var allocTrace = os.Getenv("RDMAPERF_ALLOCTRACE") != ""

func init() {
	if allocTrace {
		runtime.MemProfileRate = 1
	}
}

type allocSnap map[[32]uintptr]int64

// takeAllocSnap reads the allocation profile, which is current as of the
// last collection (settle's before a loop; finish collects again).
func takeAllocSnap() allocSnap {
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, true)
	for {
		recs = make([]runtime.MemProfileRecord, n+64)
		var ok bool
		if n, ok = runtime.MemProfile(recs, true); ok {
			recs = recs[:n]
			break
		}
	}
	m := allocSnap{}
	for _, r := range recs {
		m[r.Stack0] += r.AllocObjects
	}
	return m
}

// report prints the stacks that allocated since s0.
func (s allocSnap) report(w io.Writer, s0 allocSnap) {
	for stk, n := range s {
		d := n - s0[stk]
		if d <= 0 {
			continue
		}
		var b strings.Builder
		frames := runtime.CallersFrames(stackPCs(stk))
		for {
			f, more := frames.Next()
			fmt.Fprintf(&b, "\n\t%s %s:%d", f.Function, f.File, f.Line)
			if !more {
				break
			}
		}
		fmt.Fprintf(w, "rdmaperf: %d allocation(s) during the measured loop at:%s\n", d, b.String())
	}
}

func stackPCs(stk [32]uintptr) []uintptr {
	for i, pc := range stk {
		if pc == 0 {
			return stk[:i]
		}
	}
	return stk[:]
}
