// Copyright 2026 The rdmago Authors.

package trace

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// Tracer owns the eBPF maps, programs and links. Create it with New, read
// events with Read, and Close it (which detaches everything).
type Tracer struct {
	maps   map[string]*ebpf.Map
	progs  []*ebpf.Program
	links  []link.Link
	rd     *ringbuf.Reader
	rec    ringbuf.Record // Read's buffer, reused
	probes []Probe
	rxe    []rxePlan
	closed bool
	// tracefsMounted is set when New mounted tracefs; Close unmounts it.
	tracefsMounted string
}

// New loads and attaches the probes: kprobes and kretprobes on
// ib_uverbs_write, ib_uverbs_ioctl, ib_uverbs_mmap (module ib_uverbs) and
// ucma_write (rdma_ucm), the tracepoint rdma_cma:cm_event_handler, and
// counting programs (fentry programs or kprobes: Options.RXEFentry) on the
// rxe functions of RXEPacketFuncs (RXEFuncs with RXEAll) that the running
// kernel has. A probe that cannot be attached (module not loaded, function
// absent) is recorded in Probes and skipped; New fails only when nothing at
// all could be attached or the kernel lacks BPF. It needs root (CAP_BPF and
// CAP_PERFMON), Linux 5.8+ (ring buffer, bpf_probe_read_user) with kprobes,
// and tracefs (mounted at /sys/kernel/tracing for the Tracer's lifetime when
// missing). The caller must Close the Tracer.
func New(opts Options) (_ *Tracer, err error) {
	if !regsSupported {
		return nil, fmt.Errorf("kprobe argument layout unknown on this architecture (amd64 and arm64 are supported)")
	}
	if opts.PID < 0 {
		return nil, fmt.Errorf("bad pid %d", opts.PID)
	}
	if len(opts.Comm) >= commLen {
		return nil, fmt.Errorf("comm %q is longer than the kernel's %d-byte command names", opts.Comm, commLen-1)
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return nil, fmt.Errorf("raise RLIMIT_MEMLOCK: %w", err)
	}
	t := &Tracer{maps: map[string]*ebpf.Map{}}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if err := t.createMaps(opts.RingBytes); err != nil {
		return nil, err
	}
	// Before any attach: cilium/ebpf remembers where tracefs is (or that it
	// is missing) the first time it looks.
	tracefs, mounted, tracefsErr := tracefsDir()
	if mounted {
		t.tracefsMounted = tracefs
	}
	f := filter{PID: uint32(opts.PID), Comm: opts.Comm}

	ko := unknownOffsets
	var vmlinux *btf.Spec
	if spec, err := btf.LoadKernelSpec(); err == nil {
		vmlinux = spec
		ko, _ = kernelOffsetsFrom(spec) // unknown offsets only drop details
	}

	ret, err := retProg(defaultUCMResp)
	if err != nil {
		return nil, err
	}
	var bigRetP *ebpf.Program // the return probe of ioctl and ucma (big records)
	retP, retErr := t.load("rdmatrace_ret", ebpf.Kprobe, ret)
	if retErr == nil {
		var bigRet asm.Instructions
		if bigRet, err = retBigProg(defaultUCMResp); err != nil {
			return nil, err
		}
		bigRetP, retErr = t.load("rdmatrace_retbig", ebpf.Kprobe, bigRet)
	}

	type entry struct {
		sym   string
		name  string
		build func() (asm.Instructions, error)
		what  string
		big   bool
	}
	entries := []entry{
		{"ib_uverbs_write", "uverbs_write", func() (asm.Instructions, error) { return verbsWriteEntry(KindVerbsWrite, f, ko) },
			"uverbs write() commands: name, header, response", false},
		{"ib_uverbs_ioctl", "uverbs_ioctl", func() (asm.Instructions, error) { return verbsIoctlEntry(f, ko) },
			"RDMA_VERBS_IOCTL: object, method, attributes and their buffers", true},
		{"ib_uverbs_mmap", "uverbs_mmap", func() (asm.Instructions, error) { return verbsMmapEntry(f, ko) },
			"mmap of rings: offset and length", false},
		{"ucma_write", "ucma_write", func() (asm.Instructions, error) { return ucmaWriteEntry(f, ko) },
			"rdma_cm commands: name, arguments, response", true},
	}
	for _, e := range entries {
		p := Probe{Name: "kprobe:" + e.sym, Note: e.what}
		if retErr != nil {
			p.Err = retErr
			t.probes = append(t.probes, p)
			continue
		}
		insns, err := e.build()
		if err == nil {
			var prog *ebpf.Program
			if prog, err = t.load("rdmatrace_"+e.name, ebpf.Kprobe, insns); err == nil {
				// The return probe first: an entry never waits for a missing return.
				var rl, el link.Link
				rp := retP
				if e.big {
					rp = bigRetP
				}
				if rl, err = link.Kretprobe(e.sym, rp, nil); err == nil {
					t.links = append(t.links, rl)
					if el, err = link.Kprobe(e.sym, prog, nil); err == nil {
						t.links = append(t.links, el)
					}
				}
			}
		}
		p.Attached, p.Err = err == nil, probeError(e.sym, err)
		t.probes = append(t.probes, p)
	}

	if !opts.NoCM {
		p := Probe{Name: "tracepoint:rdma_cma:cm_event_handler", Note: "CM events: name, status, cm_id, addresses"}
		p.Err = tracefsErr
		if p.Err == nil {
			p.Err = t.attachCMEvent(tracefs)
		}
		p.Attached = p.Err == nil
		t.probes = append(t.probes, p)
	}

	if !opts.NoRXE {
		t.attachRXE(vmlinux, rxeFuncs(opts.RXEAll), opts)
	}

	attached := false
	for _, p := range t.probes {
		attached = attached || p.Attached
	}
	if !attached {
		var errs []string
		for _, p := range t.probes {
			errs = append(errs, fmt.Sprintf("%s: %v", p.Name, p.Err))
		}
		return nil, fmt.Errorf("no probe could be attached (are ib_uverbs/rdma_ucm loaded?):\n  %s",
			strings.Join(errs, "\n  "))
	}
	if t.rd, err = ringbuf.NewReader(t.maps[mapEvents]); err != nil {
		return nil, fmt.Errorf("open ring buffer reader: %w", err)
	}
	return t, nil
}

func probeError(sym string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s is not in this kernel (module not loaded?): %w", sym, err)
	}
	return err
}

// mapSpecs are the maps the programs share.
func mapSpecs(ringBytes int) map[string]*ebpf.MapSpec {
	if ringBytes == 0 {
		ringBytes = 1 << 20
	}
	return map[string]*ebpf.MapSpec{
		mapInflight:  {Name: "rdmatrace_infl", Type: ebpf.Hash, KeySize: 8, ValueSize: recSize, MaxEntries: 4096},
		mapEvents:    {Name: "rdmatrace_evts", Type: ebpf.RingBuf, MaxEntries: uint32(ringBytes)},
		mapStats:     {Name: "rdmatrace_stat", Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: statCount},
		mapRXECounts: {Name: "rdmatrace_rxe", Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: 8192},
		mapDrops:     {Name: "rdmatrace_drop", Type: ebpf.Hash, KeySize: dropKeySize, ValueSize: 8, MaxEntries: 1024},
		// Big records (ioctl, ucma): control-path calls, fewer at a time.
		mapBigInflight: {Name: "rdmatrace_binfl", Type: ebpf.Hash, KeySize: 8, ValueSize: uint32(bigRecSize), MaxEntries: 1024},
		mapScratch:     {Name: "rdmatrace_scr", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: uint32(bigRecSize), MaxEntries: 1},
	}
}

func (t *Tracer) createMaps(ringBytes int) error {
	if ringBytes != 0 && (ringBytes < os.Getpagesize() || ringBytes&(ringBytes-1) != 0) {
		return fmt.Errorf("ring buffer size %d must be a power of two of at least a page", ringBytes)
	}
	for name, spec := range mapSpecs(ringBytes) {
		m, err := ebpf.NewMap(spec)
		if err != nil {
			return fmt.Errorf("create map %s: %w", name, err)
		}
		t.maps[name] = m
	}
	return nil
}

// load associates the program's map references with the tracer's maps and
// loads it.
func (t *Tracer) load(name string, typ ebpf.ProgramType, insns asm.Instructions) (*ebpf.Program, error) {
	prog, err := loadProgram(name, typ, insns, t.maps)
	if err != nil {
		return nil, err
	}
	t.progs = append(t.progs, prog)
	return prog, nil
}

func loadProgram(name string, typ ebpf.ProgramType, insns asm.Instructions, maps map[string]*ebpf.Map) (*ebpf.Program, error) {
	return loadSpec(&ebpf.ProgramSpec{Name: name, Type: typ}, insns, maps)
}

// loadSpec loads insns as spec (Name, Type and, for tracing programs,
// AttachType and AttachTo taken from it) with their map references bound.
func loadSpec(spec *ebpf.ProgramSpec, insns asm.Instructions, maps map[string]*ebpf.Map) (*ebpf.Program, error) {
	name := spec.Name
	insns = slices.Clone(insns)
	for ref := range insns.ReferenceOffsets() {
		m, ok := maps[ref]
		if !ok {
			continue // a jump label
		}
		if err := insns.AssociateMap(ref, m); err != nil {
			return nil, fmt.Errorf("program %s: map %s: %w", name, ref, err)
		}
	}
	prog, err := ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Name:         name,
		Type:         spec.Type,
		AttachType:   spec.AttachType,
		AttachTo:     spec.AttachTo,
		License:      "GPL",
		Instructions: insns,
	}, ebpf.ProgramOptions{LogSizeStart: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("load program %s: %w", name, err)
	}
	return prog, nil
}

// tracefsDir finds the tracefs mount, mounting it at /sys/kernel/tracing when
// there is none (mounted is then true).
func tracefsDir() (dir string, mounted bool, err error) {
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// id parent major:minor root mountpoint opts ... - fstype source superopts
			fields := strings.Fields(sc.Text())
			if i := slices.Index(fields, "-"); i > 4 && i+1 < len(fields) && fields[i+1] == "tracefs" && fields[3] == "/" {
				return fields[4], false, nil
			}
		}
	}
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(filepath.Join(d, "events")); err == nil {
			return d, false, nil
		}
	}
	const d = "/sys/kernel/tracing"
	if err := unix.Mount("tracefs", d, "tracefs", 0, ""); err != nil {
		return "", false, fmt.Errorf("tracefs is not mounted and mounting it at %s failed: %w (mount -t tracefs tracefs %s)", d, err, d)
	}
	return d, true, nil
}

func (t *Tracer) attachCMEvent(dir string) error {
	f, err := os.Open(filepath.Join(dir, "events/rdma_cma/cm_event_handler/format"))
	if err != nil {
		return fmt.Errorf("rdma_cma:cm_event_handler (module rdma_cm not loaded?): %w", err)
	}
	fields, err := parseTPFormat(f)
	f.Close()
	if err != nil {
		return err
	}
	cf, err := cmEventFieldsFrom(fields)
	if err != nil {
		return err
	}
	insns, err := cmEventProg(cf)
	if err != nil {
		return err
	}
	prog, err := t.load("rdmatrace_cmev", ebpf.TracePoint, insns)
	if err != nil {
		return err
	}
	l, err := link.Tracepoint("rdma_cma", "cm_event_handler", prog, nil)
	if err != nil {
		return fmt.Errorf("attach tracepoint rdma_cma:cm_event_handler: %w", err)
	}
	t.links = append(t.links, l)
	return nil
}

func (t *Tracer) attachRXE(vmlinux *btf.Spec, funcs []string, opts Options) {
	var syms map[string]bool
	if f, err := os.Open("/proc/kallsyms"); err == nil {
		syms, _ = moduleSymbols(f, "rdma_rxe")
		f.Close()
	}
	if len(syms) == 0 {
		t.probes = append(t.probes, Probe{Name: "kprobe:rxe_*", Err: fmt.Errorf("module rdma_rxe is not loaded (no rdma_rxe symbols in /proc/kallsyms)")})
		return
	}
	var mod typeFinder
	if vmlinux != nil {
		if spec, err := btf.LoadKernelModuleSpec("rdma_rxe"); err == nil {
			mod = chain{spec, vmlinux}
		}
	}
	t.rxe = planRXE(mod, funcs)
	for _, p := range t.rxe {
		if !syms[p.Func] {
			t.probes = append(t.probes, Probe{Name: "kprobe:" + p.Func, Note: p.How,
				Err: fmt.Errorf("%s is not a function of this kernel's rdma_rxe", p.Func)})
			continue
		}
		notFentry := rxeNotFentry(opts)
		if notFentry == nil {
			if notFentry = t.attachRXEFentry(p); notFentry == nil {
				t.probes = append(t.probes, Probe{Name: "fentry:" + p.Func, Attached: true, Note: p.How})
				continue
			}
		}
		pr := Probe{Name: "kprobe:" + p.Func, Note: fmt.Sprintf("%s (not fentry: %v)", p.How, notFentry)}
		insns, err := rxeProgFor(p, false)
		if err == nil {
			var prog *ebpf.Program
			if prog, err = t.load("rdmatrace_rxe", ebpf.Kprobe, insns); err == nil {
				var l link.Link
				if l, err = link.Kprobe(p.Func, prog, nil); err == nil {
					t.links = append(t.links, l)
				}
			}
		}
		pr.Attached, pr.Err = err == nil, probeError(p.Func, err)
		t.probes = append(t.probes, pr)
	}
}

// rxeNotFentry says why an rxe counter is to be a kprobe rather than an
// fentry program, or nil when it may be fentry: by default, only while no
// QP may be moving packets (movingQPs, asked of RDMA netlink right before
// each attach, to keep the window small).
func rxeNotFentry(opts Options) error {
	switch {
	case opts.RXEKprobes:
		return errors.New("kprobes asked for")
	case opts.RXEFentry:
		return nil
	}
	qps, err := dumpQPs()
	if err != nil {
		return fmt.Errorf("cannot tell whether rxe is busy: %w", err)
	}
	if busy := movingQPs(qps); len(busy) > 0 {
		list := strings.Join(busy[:min(len(busy), 3)], ", ")
		if len(busy) > 3 {
			list += fmt.Sprintf(" and %d more", len(busy)-3)
		}
		return fmt.Errorf("QPs may be moving packets (%s): attaching fentry programs then crashed the QEMU lab's 6.12 (--rxe-fentry forces them)", list)
	}
	return nil
}

// attachRXEFentry attaches p's counter as an fentry program (the function's
// type from rdma_rxe's BTF, found by cilium/ebpf).
func (t *Tracer) attachRXEFentry(p rxePlan) error {
	insns, err := rxeProgFor(p, true)
	if err != nil {
		return err
	}
	prog, err := loadSpec(&ebpf.ProgramSpec{Name: "rdmatrace_rxe", Type: ebpf.Tracing,
		AttachType: ebpf.AttachTraceFEntry, AttachTo: p.Func}, insns, t.maps)
	if err != nil {
		return err
	}
	l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceFEntry})
	if err != nil {
		prog.Close()
		return fmt.Errorf("attach fentry %s: %w", p.Func, err)
	}
	t.progs = append(t.progs, prog)
	t.links = append(t.links, l)
	return nil
}

// Probes reports every attach point New tried.
func (t *Tracer) Probes() []Probe { return slices.Clone(t.probes) }

// Read waits for the next event until ctx is done. The record is read into
// a buffer the Tracer reuses (DecodeEvent copies what it keeps), so the
// event loop allocates no ring-buffer record per event. Read is for one
// goroutine at a time.
func (t *Tracer) Read(ctx context.Context) (Event, error) {
	if err := t.readInto(ctx, &t.rec); err != nil {
		return Event{}, err
	}
	return DecodeEvent(t.rec.RawSample)
}

// Drain hands use the events already in the ring buffer, without waiting
// for more (at most a ring's worth, so that a busy producer cannot keep it
// going): what a reader whose context ended still owes its output, since
// the programs wake the reader only every quarter ring (and it polls every
// 100 ms).
func (t *Tracer) Drain(use func(Event)) error {
	if t.closed || t.rd == nil {
		return fmt.Errorf("drain: %w", os.ErrClosed)
	}
	for n := t.rd.BufferSize()/recSize + 1; n > 0; n-- {
		t.rd.SetDeadline(time.Now())
		err := t.rd.ReadInto(&t.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read ring buffer: %w", err)
		}
		e, err := DecodeEvent(t.rec.RawSample)
		if err != nil {
			return err
		}
		use(e)
	}
	return nil
}

// ReadRecord waits for the next raw record (what DecodeEvent decodes) until
// ctx is done. The caller owns the returned bytes.
func (t *Tracer) ReadRecord(ctx context.Context) ([]byte, error) {
	var rec ringbuf.Record
	if err := t.readInto(ctx, &rec); err != nil {
		return nil, err
	}
	return rec.RawSample, nil
}

// readInto waits for the next record and reads it into rec.
func (t *Tracer) readInto(ctx context.Context, rec *ringbuf.Record) error {
	if t.closed || t.rd == nil {
		return fmt.Errorf("read: %w", os.ErrClosed)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		t.rd.SetDeadline(time.Now().Add(100 * time.Millisecond))
		err := t.rd.ReadInto(rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read ring buffer: %w", err)
		}
		return nil
	}
}

// Lost returns the events dropped because the ring buffer was full and the
// calls not recorded because the in-flight table was full.
func (t *Tracer) Lost() (ringFull, inflightFull uint64, err error) {
	m := t.maps[mapStats]
	if m == nil {
		return 0, 0, os.ErrClosed
	}
	if err := m.Lookup(uint32(statDrops), &ringFull); err != nil {
		return 0, 0, fmt.Errorf("read stats: %w", err)
	}
	if err := m.Lookup(uint32(statInflightFull), &inflightFull); err != nil {
		return 0, 0, fmt.Errorf("read stats: %w", err)
	}
	return ringFull, inflightFull, nil
}

// Dropped returns, per kind of call, the events dropped because the ring
// buffer was full (Formatter.LostOps names them). The counts add up to
// Lost's ringFull.
func (t *Tracer) Dropped() ([]Dropped, error) {
	m := t.maps[mapDrops]
	if m == nil {
		return nil, os.ErrClosed
	}
	var out []Dropped
	var key [dropKeySize]byte
	var n uint64
	it := m.Iterate()
	for it.Next(&key, &n) {
		d := Dropped{
			Kind:  Kind(key[dropKeyKind]),
			Data:  key[dropKeyFlags]&(flagData|flagDataShort) != 0,
			Extra: binary.NativeEndian.Uint32(key[dropKeyExtra:]),
			Count: n,
		}
		copy(d.Head[:], key[dropKeyHead:])
		out = append(out, d)
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read drops: %w", err)
	}
	return out, nil
}

// RXECounts returns the rxe hit counts so far, sorted by function then QPN.
func (t *Tracer) RXECounts() ([]RXECount, error) {
	m := t.maps[mapRXECounts]
	if m == nil {
		return nil, os.ErrClosed
	}
	var out []RXECount
	var key [2]uint32
	var val uint64
	it := m.Iterate()
	for it.Next(&key, &val) {
		id := key[0] &^ rxeErrorBit
		if int(id) >= len(t.rxe) {
			continue
		}
		out = append(out, RXECount{Func: t.rxe[id].Func, QPN: key[1], Error: key[0]&rxeErrorBit != 0, Count: val})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read rxe counts: %w", err)
	}
	slices.SortFunc(out, func(a, b RXECount) int {
		if a.Func != b.Func {
			return strings.Compare(a.Func, b.Func)
		}
		if a.QPN != b.QPN {
			return int(int64(a.QPN) - int64(b.QPN))
		}
		if a.Error == b.Error {
			return 0
		}
		if a.Error {
			return 1
		}
		return -1
	})
	return out, nil
}

// Close detaches every probe and frees the programs and maps. It is
// idempotent.
func (t *Tracer) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	for i := len(t.links) - 1; i >= 0; i-- {
		errs = append(errs, t.links[i].Close())
	}
	t.links = nil
	if t.rd != nil {
		errs = append(errs, t.rd.Close())
	}
	for _, p := range t.progs {
		errs = append(errs, p.Close())
	}
	t.progs = nil
	for _, m := range t.maps {
		errs = append(errs, m.Close())
	}
	t.maps = map[string]*ebpf.Map{}
	if t.tracefsMounted != "" {
		if err := unix.Unmount(t.tracefsMounted, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount the tracefs New mounted at %s: %w", t.tracefsMounted, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, the clock of the events'
// time stamps (bpf_ktime_get_ns); 0 if it cannot be read.
func monotonicNow() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}
