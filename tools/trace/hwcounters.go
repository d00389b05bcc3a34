// Copyright 2026 The rdmago Authors.

package trace

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SysfsInfiniband is where the RDMA devices are listed.
const SysfsInfiniband = "/sys/class/infiniband"

// HWCounters are the hw_counters of one device port
// (/sys/class/infiniband/DEV/ports/N/hw_counters/*; rxe's are sent_pkts,
// rcvd_pkts, duplicate_request, out_of_seq_request, rcvd_seq_err,
// rcvd_rnr_err, retry_exceeded_err, ack_deferred, ...).
type HWCounters struct {
	Dev    string
	Port   int
	Values map[string]uint64
}

// ReadHWCounters reads the counters of every port of the devices named in
// devs (all devices under root when devs is empty). root is normally
// SysfsInfiniband. Devices or ports without counters are skipped.
func ReadHWCounters(root string, devs []string) ([]HWCounters, error) {
	if len(devs) == 0 {
		all, err := readDir(root)
		if err != nil {
			return nil, fmt.Errorf("list RDMA devices: %w", err)
		}
		devs = all
	}
	var out []HWCounters
	for _, dev := range devs {
		ports, err := readDir(filepath.Join(root, dev, "ports"))
		if err != nil {
			return nil, fmt.Errorf("device %s: %w", dev, err)
		}
		for _, p := range ports {
			port, err := strconv.Atoi(p)
			if err != nil {
				continue
			}
			dir := filepath.Join(root, dev, "ports", p, "hw_counters")
			names, err := readDir(dir)
			if err != nil {
				continue
			}
			c := HWCounters{Dev: dev, Port: port, Values: map[string]uint64{}}
			for _, n := range names {
				b, err := os.ReadFile(filepath.Join(dir, n))
				if err != nil {
					continue // e.g. lifespan is writable only
				}
				v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
				if err != nil {
					continue
				}
				c.Values[n] = v
			}
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b HWCounters) int {
		if a.Dev != b.Dev {
			return strings.Compare(a.Dev, b.Dev)
		}
		return a.Port - b.Port
	})
	return out, nil
}

// CounterDelta is the change of one counter between two readings.
type CounterDelta struct {
	Dev         string
	Port        int
	Name        string
	Before, Now uint64
}

// DiffHWCounters returns the counters that changed from before to now (or
// all of now's counters when all is set), sorted.
func DiffHWCounters(before, now []HWCounters, all bool) []CounterDelta {
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
