// Copyright 2026 The rdmago Authors.

package trace

import (
	"fmt"
	"slices"

	"github.com/rdmago/rdmago/internal/sysfs"
)

// CounterDelta is the change of one counter between two readings.
type CounterDelta struct {
	Dev         string
	Port        int
	Name        string
	Before, Now uint64
}

// DiffHWCounters returns the counters that changed from before to now, two
// readings of sysfs.ReadHWCounters (or all of now's counters when all is
// set), sorted.
func DiffHWCounters(before, now []sysfs.HWCounters, all bool) []CounterDelta {
	prev := map[string]uint64{}
	for _, c := range before {
		for n, v := range c.Values {
			prev[fmt.Sprintf("%s/%d/%s", c.Dev, c.Port, n)] = v
		}
	}
	var out []CounterDelta
	for _, c := range now {
		names := make([]string, 0, len(c.Values))
		for n := range c.Values {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			v := c.Values[n]
			p := prev[fmt.Sprintf("%s/%d/%s", c.Dev, c.Port, n)]
			if all || v != p {
				out = append(out, CounterDelta{Dev: c.Dev, Port: c.Port, Name: n, Before: p, Now: v})
			}
		}
	}
	return out
}
