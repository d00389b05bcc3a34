// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"
)

// Counter is one port counter: ports/N/counters/NAME (Kind "port", the IB
// PMA counters; rxe has none) or ports/N/hw_counters/NAME (Kind "hw", the
// driver's, such as rxe's sent_pkts).
type Counter struct {
	Dev   string  `json:"dev"`
	Port  int     `json:"port"`
	Kind  string  `json:"kind"`
	Name  string  `json:"name"`
	Value uint64  `json:"value"`
	Rate  float64 `json:"rate_per_sec,omitempty"` // set by Rates
}

// Counters reads every counter of every port of dev (all devices when dev
// is empty), sorted by device, port, kind and name.
func (s *System) Counters(dev string) ([]Counter, error) {
	devs, err := s.devices(dev)
	if err != nil {
		return nil, err
	}
	var out []Counter
	for _, d := range devs {
		for _, p := range d.Ports {
			pc, hw, err := s.FS.Counters(d.Name, p.Num)
			if err != nil {
				return nil, err
			}
			for kind, m := range map[string]map[string]uint64{"port": pc, "hw": hw} {
				for n, v := range m {
					out = append(out, Counter{Dev: d.Name, Port: p.Num, Kind: kind, Name: n, Value: v})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Dev != b.Dev {
			return a.Dev < b.Dev
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		if a.Kind != b.Kind {
			return a.Kind > b.Kind // "port" before "hw"
		}
		return a.Name < b.Name
	})
	return out, nil
}

// Rates returns cur with Rate set to the per-second change since prev over
// dt. A counter that went backwards (reset, or a device recreated) gets rate
// 0; counters missing from prev get no rate.
func Rates(prev, cur []Counter, dt time.Duration) []Counter {
	type key struct {
		dev        string
		port       int
		kind, name string
	}
	old := make(map[key]uint64, len(prev))
	for _, c := range prev {
		old[key{c.Dev, c.Port, c.Kind, c.Name}] = c.Value
	}
	out := make([]Counter, len(cur))
	for i, c := range cur {
		out[i] = c
		if v, ok := old[key{c.Dev, c.Port, c.Kind, c.Name}]; ok && dt > 0 && c.Value >= v {
			out[i].Rate = float64(c.Value-v) / dt.Seconds()
		}
	}
	return out
}

// WriteCounters prints one counter per line; with rates (withRate) a
// per-second column follows.
func WriteCounters(w io.Writer, cs []Counter, withRate bool) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if withRate {
		fmt.Fprintln(tw, "DEV/PORT\tKIND\tCOUNTER\tVALUE\tPER SEC")
	} else {
		fmt.Fprintln(tw, "DEV/PORT\tKIND\tCOUNTER\tVALUE")
	}
	for _, c := range cs {
		if withRate {
			fmt.Fprintf(tw, "%s/%d\t%s\t%s\t%d\t%.1f\n", c.Dev, c.Port, c.Kind, c.Name, c.Value, c.Rate)
		} else {
			fmt.Fprintf(tw, "%s/%d\t%s\t%s\t%d\n", c.Dev, c.Port, c.Kind, c.Name, c.Value)
		}
	}
	tw.Flush()
}
