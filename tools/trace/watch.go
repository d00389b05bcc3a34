// Copyright 2026 The rdmago Authors.

package trace

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rdmago/rdmago/internal/sysfs"
)

// WatchOptions configure Watch: which events rdmatrace shows and how.
type WatchOptions struct {
	Options // which processes to trace, and whether to probe rxe

	Dev      string        // show only uverbs calls on this RDMA device (e.g. rxe0) and its counters; "" shows all
	JSON     bool          // one JSON object per event instead of a line
	Summary  bool          // counts and latencies instead of events (at the end, and every Interval)
	Hist     bool          // with Summary: a latency histogram per operation
	Interval time.Duration // with Summary: also write it every Interval; 0 only at the end
	Quiet    bool          // do not list the probes that were skipped
}

// Check reports options that do not go together, and a Dev that is not an
// RDMA device here.
func (o WatchOptions) Check() error {
	if o.Interval < 0 {
		return fmt.Errorf("--interval must not be negative")
	}
	if o.Interval > 0 && !o.Summary {
		return fmt.Errorf("--interval needs --summary")
	}
	if o.NoRXE && (o.RXEAll || o.RXEFentry || o.RXEKprobes) {
		return fmt.Errorf("--no-rxe leaves the rxe data path alone: it does not go with --rxe-all, --rxe-fentry or --rxe-kprobes")
	}
	if o.RXEFentry && o.RXEKprobes {
		return fmt.Errorf("--rxe-fentry and --rxe-kprobes contradict each other: give one (or neither: fentry programs while no QP is active)")
	}
	if o.Dev != "" {
		if _, err := os.Stat(sysfs.ClassInfiniband + "/" + o.Dev); err != nil {
			return fmt.Errorf("--dev %s: no such RDMA device (see ls %s)", o.Dev, sysfs.ClassInfiniband)
		}
	}
	return nil
}

// keep reports whether event e passes the filters that the probes do not
// apply in the kernel: a CM event is delivered in kernel context and cannot
// be attributed to a process, so a PID or command filter drops it; a
// completion is posted in softirq or work-queue context, so such a filter
// keeps it when f knows its QP's owner and the owner passes; a Dev filter
// drops calls on other known devices (f.Devices).
func (o WatchOptions) keep(e Event, f *Formatter) bool {
	filtered := o.PID != 0 || o.Comm != ""
	switch {
	case e.Kind == KindCMEvent && filtered:
		return false
	case e.Kind == KindCompletion && filtered:
		owner, ok := f.completionOwner(e)
		return ok && (o.PID == 0 || owner.PID == uint32(o.PID)) && (o.Comm == "" || owner.Comm == o.Comm)
	}
	devices := f.Devices
	if o.Dev != "" && e.Dev != 0 && devices[e.Dev] != "" && devices[e.Dev] != o.Dev {
		return false
	}
	return true
}

// Watch is rdmatrace's trace mode: it attaches the probes (New), writes
// every event that passes the filters to stdout (a line, JSON, or into the
// summary) until ctx is done, and then the summary, the rxe data-path hit
// counts and the hw_counters that changed. Skipped probes, progress and
// lost events go to stderr. It needs what New needs.
func Watch(ctx context.Context, o WatchOptions, stdout, stderr io.Writer) error {
	if err := o.Check(); err != nil {
		return err
	}
	if o.RingBytes == 0 {
		o.RingBytes = lineRingBytes
	}
	t, err := o.attach(stderr)
	if err != nil {
		return err
	}
	defer t.Close()
	var devs []string
	if o.Dev != "" {
		devs = []string{o.Dev}
	}
	hwBefore, _ := sysfs.ReadHWCounters(sysfs.ClassInfiniband, devs)

	f := &Formatter{
		Names:    ABINames{},
		Devices:  UverbsDevices(sysfs.ClassVerbs),
		Start:    monotonicNow(),
		PageSize: os.Getpagesize(),
	}
	if !o.NoRXE {
		// The QPs that exist already: their create events are not coming.
		if err := f.LearnQPOwners(); err != nil {
			fmt.Fprintf(stderr, "rdmatrace: %v (the rxe counts of QPs created before tracing are not attributed)\n", err)
		}
	}
	sum := NewSummary(f)
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	fmt.Fprintln(stderr, "rdmatrace: tracing; Ctrl-C to stop")
	var tick <-chan time.Time
	if o.Interval > 0 {
		tk := time.NewTicker(o.Interval)
		defer tk.Stop()
		tick = tk.C
	}
	events := make(chan Event, 256)
	readErr := make(chan error, 1)
	go func() {
		defer close(events)
		if err := readEvents(ctx, t, func(e Event) { events <- e }); err != nil {
			readErr <- err
		}
	}()
loop:
	for {
		select {
		case e, ok := <-events:
			if !ok {
				break loop
			}
			if !o.keep(e, f) {
				continue
			}
			switch {
			case o.Summary:
				sum.Add(e)
			case o.JSON:
				b, err := f.JSON(e)
				if err != nil {
					return err
				}
				out.Write(append(b, '\n'))
			default:
				fmt.Fprintln(out, f.Line(e))
			}
			if len(events) == 0 {
				out.Flush()
			}
		case <-tick:
			fmt.Fprintf(out, "--- %s\n", time.Now().Format(time.TimeOnly))
			sum.Write(out, o.Hist)
			writeRXE(out, stderr, t, f, o.Options, hwBefore, devs)
			out.Flush()
		}
	}
	select {
	case err := <-readErr:
		return err
	default:
	}

	w := stderr
	if o.Summary {
		sum.Write(out, o.Hist)
		w = out
	}
	writeRXE(w, stderr, t, f, o.Options, hwBefore, devs)
	if s := lostReport(t, f); s != "" {
		fmt.Fprintln(stderr, "rdmatrace:", s)
	}
	out.Flush()
	return t.Close()
}

// attach attaches the probes (New) and, unless o.Quiet, lists the ones
// skipped on stderr. The caller closes the Tracer.
func (o WatchOptions) attach(stderr io.Writer) (*Tracer, error) {
	t, err := New(o.Options)
	if err != nil {
		return nil, err
	}
	if !o.Quiet {
		WriteProbes(stderr, t.Probes(), false)
		if s := rxeAttachNote(t.Probes()); s != "" {
			fmt.Fprintln(stderr, "rdmatrace:", s)
		}
	}
	return t, nil
}

// rxeAttachNote says how the rxe counters among probes were attached (how
// many fentry programs, how many kprobes and why the first of those is not
// fentry: their cost differs), or "" when none was.
func rxeAttachNote(probes []Probe) string {
	var fentry, kprobe int
	why := ""
	for _, p := range probes {
		switch {
		case !p.Attached:
		case strings.HasPrefix(p.Name, "fentry:rxe_"):
			fentry++
		case strings.HasPrefix(p.Name, "kprobe:rxe_"):
			kprobe++
			if _, w, ok := strings.Cut(p.Note, "(not fentry: "); ok && why == "" {
				why = " (not fentry: " + w
			}
		}
	}
	switch {
	case fentry+kprobe == 0:
		return ""
	case kprobe == 0:
		return fmt.Sprintf("rxe counters: %d fentry programs", fentry)
	}
	return fmt.Sprintf("rxe counters: %d fentry programs, %d kprobes%s", fentry, kprobe, why)
}

// readEvents reads t's events and hands each to use until ctx is done
// (then it hands over what is left in the ring and returns) or reading
// fails (then it returns the error). Watch and Record run it in a
// goroutine of their own.
func readEvents(ctx context.Context, t *Tracer, use func(Event)) error {
	for {
		e, err := t.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return t.Drain(use)
			}
			return err
		}
		use(e)
	}
}

// lineRingBytes is the ring buffer of Watch and Record: 16 MiB hold some
// 70,000 small records, the bursts of a perftest loop while the reader
// formats (or, with --summary, adds up: with 1 MiB, four busy pingpong
// processes lost 4,000 of their events in 4 s on 6.12).
const lineRingBytes = 16 << 20

// ListProbes is `rdmatrace probes`: it attaches every probe (all of
// RXEFuncs), writes which ones this kernel has to w, and detaches. It needs
// what New needs.
func ListProbes(w io.Writer) error {
	t, err := New(Options{RXEAll: true})
	if err != nil {
		return err
	}
	WriteProbes(w, t.Probes(), true)
	return t.Close()
}

// WriteProbes writes a line per probe that was skipped and why, and with
// verbose also one per attached probe and what it records.
func WriteProbes(w io.Writer, probes []Probe, verbose bool) {
	for _, p := range probes {
		switch {
		case p.Attached && verbose:
			fmt.Fprintf(w, "attached  %-40s %s\n", p.Name, p.Note)
		case p.Attached:
		default:
			fmt.Fprintf(w, "skipped   %-40s %v\n", p.Name, p.Err)
		}
	}
}

// writeRXE writes the rxe hit counts of the QPs whose owner passes the
// filter of o (Formatter.OwnedRXE; the owners are refreshed from RDMA
// netlink first) and the hw_counters that changed since hwBefore to w; a
// failure to read the counts goes to stderr.
func writeRXE(w, stderr io.Writer, t *Tracer, f *Formatter, o Options, hwBefore []sysfs.HWCounters, devs []string) {
	counts, err := t.RXECounts()
	if err != nil {
		fmt.Fprintln(stderr, "rdmatrace:", err)
	}
	if len(counts) > 0 {
		// QPs whose create event was lost are still in the dump if alive.
		if err := f.LearnQPOwners(); err != nil {
			fmt.Fprintln(stderr, "rdmatrace:", err)
		}
	}
	counts, other := f.OwnedRXE(counts, o)
	if len(counts) > 0 || other > 0 {
		fmt.Fprintln(w, "\nrxe data path (probe hits):")
		for _, c := range counts {
			qp := fmt.Sprintf("qpn %d", c.QPN)
			if c.QPN == QPNUnknown {
				qp = "qpn ?"
			}
			what := c.Func
			if c.Error {
				what += " (error status)"
			}
			owner := "-"
			if c.PID != 0 {
				owner = QPOwner{c.PID, c.Comm}.String()
			}
			fmt.Fprintf(w, "  %-32s %-10s %-24s %d\n", what, qp, owner, c.Count)
		}
		if other > 0 {
			fmt.Fprintf(w, "  (%d hits on QPs of other processes or of no known process not shown)\n", other)
		}
	}
	now, err := sysfs.ReadHWCounters(sysfs.ClassInfiniband, devs)
	if err != nil {
		return
	}
	if d := DiffHWCounters(hwBefore, now, false); len(d) > 0 {
		fmt.Fprintln(w, "\nhw_counters changes:")
		for _, c := range d {
			fmt.Fprintf(w, "  %s/%d %-24s +%d (%d)\n", c.Dev, c.Port, c.Name, c.Now-c.Before, c.Now)
		}
	}
}

// lostReport is Formatter.LostReport of what t lost so far.
func lostReport(t *Tracer, f *Formatter) string {
	ringFull, inflightFull, err := t.Lost()
	if err != nil {
		return err.Error()
	}
	ds, err := t.Dropped()
	if err != nil {
		return err.Error()
	}
	return f.LostReport(ringFull, inflightFull, ds)
}
