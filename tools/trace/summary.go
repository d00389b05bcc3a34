// Copyright 2026 The rdmago Authors.

package trace

import (
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"text/tabwriter"
)

// histBuckets is the number of log2 latency buckets: bucket i counts calls
// of [2^(i-1), 2^i) microseconds, bucket 0 those under 1us.
const histBuckets = 32

// OpStats are the counts and latencies of one operation.
type OpStats struct {
	Subsys, Op string
	Count      uint64
	Errors     uint64
	TotalNS    uint64
	MaxNS      uint64
	Hist       [histBuckets]uint64 // log2 microsecond buckets (calls with a return only)
	timed      uint64
}

// ProcStats are the counts of one process.
type ProcStats struct {
	PID    uint32
	Comm   string
	Count  uint64
	Errors uint64
	Ops    map[string]uint64 // "uverbs CREATE_QP" -> count
}

// Summary aggregates events per operation and per process (--summary).
type Summary struct {
	f     *Formatter
	ops   map[[2]string]*OpStats
	procs map[uint32]*ProcStats
}

// NewSummary returns an empty Summary that names operations with f.
func NewSummary(f *Formatter) *Summary {
	return &Summary{f: f, ops: map[[2]string]*OpStats{}, procs: map[uint32]*ProcStats{}}
}

func histBucket(ns uint64) int {
	us := ns / 1000
	b := bits.Len64(us)
	return min(b, histBuckets-1)
}

// Add counts e.
func (s *Summary) Add(e Event) {
	d := s.f.Describe(e)
	k := [2]string{d.Subsys, d.Op}
	o := s.ops[k]
	if o == nil {
		o = &OpStats{Subsys: d.Subsys, Op: d.Op}
		s.ops[k] = o
	}
	o.Count++
	failed := e.Returned && e.Ret < 0
	if failed {
		o.Errors++
	}
	if e.Returned {
		o.timed++
		o.TotalNS += e.Dur
		o.MaxNS = max(o.MaxNS, e.Dur)
		o.Hist[histBucket(e.Dur)]++
	}
	if e.Kind == KindCMEvent {
		return // delivered in kernel context: not a process's call
	}
	p := s.procs[e.PID]
	if p == nil {
		p = &ProcStats{PID: e.PID, Ops: map[string]uint64{}}
		s.procs[e.PID] = p
	}
	p.Comm = e.Comm
	p.Count++
	if failed {
		p.Errors++
	}
	p.Ops[d.Subsys+" "+d.Op]++
}

// Ops returns the per-operation stats, most frequent first.
func (s *Summary) Ops() []OpStats {
	out := make([]OpStats, 0, len(s.ops))
	for _, o := range s.ops {
		out = append(out, *o)
	}
	slices.SortFunc(out, func(a, b OpStats) int {
		if a.Count != b.Count {
			return int(int64(b.Count) - int64(a.Count))
		}
		return strings.Compare(a.Subsys+a.Op, b.Subsys+b.Op)
	})
	return out
}

// Procs returns the per-process stats by pid.
func (s *Summary) Procs() []ProcStats {
	out := make([]ProcStats, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b ProcStats) int { return int(int64(a.PID) - int64(b.PID)) })
	return out
}

// Avg is the mean latency in ns of the calls that returned.
func (o *OpStats) Avg() uint64 {
	if o.timed == 0 {
		return 0
	}
	return o.TotalNS / o.timed
}

// WriteHistogram draws o's latency histogram like bcc's funclatency.
func (o *OpStats) WriteHistogram(w io.Writer) {
	first, last := -1, -1
	var peak uint64
	for i, c := range o.Hist {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
			peak = max(peak, c)
		}
	}
	if last < 0 {
		return
	}
	fmt.Fprintf(w, "  %-24s : %-8s |%-40s|\n", "usecs", "count", "distribution")
	for i := first; i <= last; i++ {
		lo, hi := uint64(0), uint64(0)
		if i > 0 {
			lo, hi = 1<<(i-1), 1<<i-1
		}
		bar := int(o.Hist[i] * 40 / peak)
		fmt.Fprintf(w, "  %10d -> %-10d : %-8d |%-40s|\n", lo, hi, o.Hist[i], strings.Repeat("*", bar))
	}
}

// Write prints the tables: operations (count, errors, avg, max), their
// histograms when hist is set, then processes.
func (s *Summary) Write(w io.Writer, hist bool) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBSYS\tOP\tCOUNT\tERRORS\tAVG\tMAX")
	ops := s.Ops()
	for _, o := range ops {
		avg, mx := "-", "-"
		if o.timed > 0 {
			avg, mx = FormatDuration(o.Avg()), FormatDuration(o.MaxNS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", o.Subsys, o.Op, o.Count, o.Errors, avg, mx)
	}
	tw.Flush()
	if hist {
		for _, o := range ops {
			if o.timed == 0 {
				continue
			}
			fmt.Fprintf(w, "\n%s %s latency:\n", o.Subsys, o.Op)
			o.WriteHistogram(w)
		}
	}
	procs := s.Procs()
	if len(procs) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "PID\tCOMM\tCALLS\tERRORS\tTOP")
	for _, p := range procs {
		type kv struct {
			k string
			v uint64
		}
		var top []kv
		for k, v := range p.Ops {
			top = append(top, kv{k, v})
		}
		slices.SortFunc(top, func(a, b kv) int {
			if a.v != b.v {
				return int(int64(b.v) - int64(a.v))
			}
			return strings.Compare(a.k, b.k)
		})
		var parts []string
		for i, t := range top {
			if i == 4 {
				parts = append(parts, "...")
				break
			}
			parts = append(parts, fmt.Sprintf("%s×%d", t.k, t.v))
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\n", p.PID, p.Comm, p.Count, p.Errors, strings.Join(parts, ", "))
	}
	tw.Flush()
}
