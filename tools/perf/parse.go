// Copyright 2026 The rdmago Authors.

package perf

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Table is what a perftest or rdmaperf report says: its result lines, and
// the warnings perftest prints about its clock.
type Table struct {
	BW       []BWStats
	Lat      []LatStats
	Warnings []string
}

// ParseTable reads the result lines of perftest's (or rdmaperf's) text
// output: the lines under a " #bytes ..." header up to the next dashed line.
// Lines it cannot read there are errors, so a changed layout is noticed.
func ParseTable(out string) (Table, error) {
	var t Table
	const (
		none = iota
		bw
		lat
		latDur
	)
	mode := none
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "#bytes") && strings.Contains(trim, "BW peak"):
			mode = bw
			continue
		case strings.HasPrefix(trim, "#bytes") && strings.Contains(trim, "t_min"):
			mode = lat
			continue
		case strings.HasPrefix(trim, "#bytes") && strings.Contains(trim, "tps average"):
			mode = latDur
			continue
		case strings.HasPrefix(trim, "----"), trim == "":
			mode = none
			continue
		case strings.Contains(trim, "Conflicting CPU frequency") || strings.HasPrefix(trim, "Warning"):
			t.Warnings = append(t.Warnings, trim)
			continue
		}
		if mode == none {
			continue
		}
		f := strings.Fields(trim)
		nums := make([]float64, len(f))
		for i, s := range f {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return t, fmt.Errorf("result line %q: field %d: %w", trim, i+1, err)
			}
			nums[i] = v
		}
		switch mode {
		case bw:
			if len(nums) < 5 {
				return t, fmt.Errorf("bandwidth line %q: %d fields, want 5", trim, len(nums))
			}
			t.BW = append(t.BW, BWStats{Size: int(nums[0]), Iters: uint64(nums[1]), Peak: nums[2], Average: nums[3], MsgRate: nums[4]})
		case lat:
			if len(nums) < 9 {
				return t, fmt.Errorf("latency line %q: %d fields, want 9", trim, len(nums))
			}
			t.Lat = append(t.Lat, LatStats{Size: int(nums[0]), Iters: uint64(nums[1]), Min: nums[2], Max: nums[3],
				Typical: nums[4], Avg: nums[5], Stdev: nums[6], P99: nums[7], P999: nums[8]})
		case latDur:
			if len(nums) < 4 {
				return t, fmt.Errorf("latency line %q: %d fields, want 4", trim, len(nums))
			}
			t.Lat = append(t.Lat, LatStats{Size: int(nums[0]), Iters: uint64(nums[1]), Avg: nums[2], TPS: nums[3]})
		}
	}
	return t, sc.Err()
}
