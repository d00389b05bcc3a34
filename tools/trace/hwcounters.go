// Copyright 2026 The rdmago Authors.

package trace

import (
	"fmt"
	"slices"

	"github.com/rdmago/rdmago/internal/sysfs"
)

// SysfsInfiniband is where the RDMA devices are listed.
const SysfsInfiniband = sysfs.ClassInfiniband

// HWCounters are the hw_counters of one device port
// (/sys/class/infiniband/DEV/ports/N/hw_counters/*; rxe's are sent_pkts,
// rcvd_pkts, duplicate_request, out_of_seq_request, rcvd_seq_err,
// rcvd_rnr_err, retry_exceeded_err, ack_deferred, ...).
type HWCounters = sysfs.HWCounters

// ReadHWCounters reads the counters of every port of the devices named in
// devs (all devices under root when devs is empty). root is normally
// SysfsInfiniband. Devices or ports without counters are skipped.
func ReadHWCounters(root string, devs []string) ([]HWCounters, error) {
	return sysfs.ReadHWCounters(root, devs)
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
