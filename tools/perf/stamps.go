// Copyright 2026 The rdmago Authors.

package perf

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
)

// RDMAPERF_STAMPS=FILE writes the stamps of each iteration-count bandwidth
// loop to FILE (FILE.SIZE when the run measures several sizes) after the
// loop: a "# mhz M" line, then one line per post, "posted completed" in
// cycle-counter ticks (completed is 0 where no completion was accounted).
// The distribution of the gaps between posts tells a uniformly slower loop
// from a steady one with stalls (docs/performance.md).
var stampsFile = os.Getenv("RDMAPERF_STAMPS")

// dumpStamps writes the stamps if RDMAPERF_STAMPS asks for them; a failure
// is reported on stderr and does not fail the run.
func (s *session) dumpStamps(size int, posted, completed []int64) {
	if stampsFile == "" || len(posted) == 0 {
		return
	}
	name := stampsFile
	if len(s.cfg.Sizes) > 1 {
		name += "." + strconv.Itoa(size)
	}
	if err := writeStamps(name, s.clock.MHz, posted, completed); err != nil {
		fmt.Fprintf(os.Stderr, "rdmaperf: RDMAPERF_STAMPS: %v\n", err)
	}
}

func writeStamps(name string, mhz float64, posted, completed []int64) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# mhz %g\n", mhz)
	for i, p := range posted {
		var c int64
		if i < len(completed) {
			c = completed[i]
		}
		fmt.Fprintf(w, "%d %d\n", p, c)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
