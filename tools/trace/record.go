// Copyright 2026 The rdmago Authors.

package trace

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/tools/trace/capture"
	"github.com/rdmago/rdmago/tools/trace/ibpkt"
)

// RecordFormat names the file format `rdmatrace record` writes: JSON lines,
// a RecordHeader first, then one RecordEntry per line.
const RecordFormat = "rdmatrace-record/1"

// RecordHeader is the first line of a recording: which node it is and the
// clock its time stamps are on.
type RecordHeader struct {
	Format string `json:"format"` // RecordFormat
	Node   string `json:"node"`   // the node's name (hostname unless set)
	Kernel string `json:"kernel,omitempty"`
	Iface  string `json:"iface,omitempty"` // the interface packets were captured on
	// Addrs are Iface's addresses: a packet from one of them was sent here.
	Addrs []string `json:"addrs,omitempty"`
	PID   int      `json:"pid,omitempty"`  // the -p filter
	Comm  string   `json:"comm,omitempty"` // the -c filter
	// Every TS in the recording is CLOCK_MONOTONIC in ns. MonoNS and RealNS
	// are one reading of CLOCK_MONOTONIC and CLOCK_REALTIME (ns since the
	// epoch) taken together, so that TS+RealNS-MonoNS is wall-clock time.
	MonoNS uint64 `json:"mono_ns"`
	RealNS int64  `json:"real_ns"`
}

// Entry types of a RecordEntry.
const (
	EntryCall   = "call"   // a uverbs or rdma_cm call of a traced process
	EntryEvent  = "event"  // a CM event, delivered in the kernel
	EntryPacket = "packet" // a RoCEv2 packet captured on Iface
	// EntryCompletion is a completion rxe posted to a user CQ; PID and Comm
	// are the QP's owner when known, else the task rxe posted it in.
	EntryCompletion = "completion"
	EntryRXE        = "rxe"  // the rxe data-path hit counts at the end
	EntryLost       = "lost" // events the tracer or the capture lost
)

// KV is one decoded field, written as a two-element JSON array so that the
// order of the fields is kept.
type KV [2]string

// RecordEntry is one line of a recording after the header.
type RecordEntry struct {
	Type string `json:"type"` // Entry*
	TS   uint64 `json:"ts"`   // CLOCK_MONOTONIC ns (calls: at entry)

	// call, event
	PID    uint32 `json:"pid,omitempty"`
	TID    uint32 `json:"tid,omitempty"`
	Comm   string `json:"comm,omitempty"`
	Subsys string `json:"subsys,omitempty"` // "uverbs", "ucma", "cm"
	Op     string `json:"op,omitempty"`
	Dev    string `json:"dev,omitempty"`
	Args   []KV   `json:"args,omitempty"`
	Result string `json:"result,omitempty"` // "ok" or an errno name; "" for events
	Ret    int64  `json:"ret,omitempty"`
	Dur    uint64 `json:"dur,omitempty"` // ns the call took
	Resp   []KV   `json:"resp,omitempty"`

	Packet *RecordPacket `json:"packet,omitempty"`
	RXE    []RXECount    `json:"rxe,omitempty"`
	Lost   string        `json:"lost,omitempty"`
}

// RecordPacket is a captured RoCEv2 packet as ibpkt decodes it.
type RecordPacket struct {
	Out     bool   `json:"out"` // sent by this node
	Src     string `json:"src"` // ip:port
	Dst     string `json:"dst"`
	OpCode  uint8  `json:"opcode"`
	Op      string `json:"op"` // "RC RDMA WRITE Only", ...
	QPN     uint32 `json:"qpn"`
	PSN     uint32 `json:"psn"`
	AckReq  bool   `json:"ackreq,omitempty"`
	Len     int    `json:"len"` // payload bytes
	WireLen int    `json:"wirelen"`
	// RETH, AtomicETH
	VA     uint64 `json:"va,omitempty"`
	RKey   uint32 `json:"rkey,omitempty"`
	DMALen uint32 `json:"dmalen,omitempty"`
	HasKey bool   `json:"haskey,omitempty"` // a RETH or AtomicETH was present
	// AETH
	HasAETH  bool   `json:"hasaeth,omitempty"`
	Syndrome uint8  `json:"syndrome,omitempty"`
	MSN      uint32 `json:"msn,omitempty"`
	AETH     string `json:"aeth,omitempty"` // "ACK credits=..", "NAK remote access error msn=.."
	NAK      bool   `json:"nak,omitempty"`  // NAK or RNR NAK
	Imm      string `json:"imm,omitempty"`
	IETH     string `json:"ieth,omitempty"`
	SrcQP    uint32 `json:"srcqp,omitempty"` // DETH
	// Head is the first payload bytes in hex (where an rkey in a SEND is).
	Head    string `json:"head,omitempty"`
	Summary string `json:"summary"`
	Err     string `json:"err,omitempty"` // why the frame did not decode
}

// recordHeadLen is how many payload bytes RecordPacket.Head keeps.
const recordHeadLen = 64

// PacketRecord decodes an Ethernet frame into a RecordPacket.
func PacketRecord(data []byte, origLen int, outgoing bool) *RecordPacket {
	rp := &RecordPacket{Out: outgoing, WireLen: origLen}
	f, err := ibpkt.DecodeFrame(data)
	if err != nil {
		rp.Err = err.Error()
		rp.Summary = fmt.Sprintf("(%d bytes, not decoded: %v)", len(data), err)
		return rp
	}
	p := f.Packet
	rp.Src = net.JoinHostPort(f.Src.String(), fmt.Sprint(f.SrcPort))
	rp.Dst = net.JoinHostPort(f.Dst.String(), fmt.Sprint(f.DstPort))
	rp.OpCode, rp.Op = uint8(p.BTH.OpCode), p.BTH.OpCode.String()
	rp.QPN, rp.PSN, rp.AckReq, rp.Len = p.BTH.DestQP, p.BTH.PSN, p.BTH.AckReq, len(p.Payload)
	switch {
	case p.HasRETH:
		rp.HasKey, rp.VA, rp.RKey, rp.DMALen = true, p.RETH.VA, p.RETH.RKey, p.RETH.DMALen
	case p.HasAtomicETH:
		rp.HasKey, rp.VA, rp.RKey, rp.DMALen = true, p.AtomicETH.VA, p.AtomicETH.RKey, 8
	}
	if p.HasAETH {
		rp.HasAETH, rp.Syndrome, rp.MSN, rp.AETH = true, p.AETH.Syndrome, p.AETH.MSN, p.AETH.String()
		rp.NAK = p.AETH.Kind() == ibpkt.AETHNak || p.AETH.Kind() == ibpkt.AETHRNRNak
	}
	if p.HasImmDt {
		rp.Imm = fmt.Sprintf("%#x", p.ImmDt)
	}
	if p.HasIETH {
		rp.IETH = fmt.Sprintf("%#x", p.IETH)
	}
	if p.HasDETH {
		rp.SrcQP = p.DETH.SrcQP
	}
	if len(p.Payload) > 0 {
		rp.Head = hex.EncodeToString(p.Payload[:min(len(p.Payload), recordHeadLen)])
	}
	rp.Summary = f.Summary()
	return rp
}

func kvs(fs []Field) []KV {
	if len(fs) == 0 {
		return nil
	}
	out := make([]KV, len(fs))
	for i, x := range fs {
		out[i] = KV{x.Key, fmt.Sprint(x.Val)}
	}
	return out
}

// EntryOf describes a traced event as a recording entry.
func (f *Formatter) EntryOf(e Event) RecordEntry {
	e = f.attribute(e)
	d := f.Describe(e)
	r := RecordEntry{
		Type: EntryCall, TS: e.TS, PID: e.PID, TID: e.TID, Comm: e.Comm,
		Subsys: d.Subsys, Op: d.Op, Dev: d.Dev, Args: kvs(d.Args), Resp: kvs(d.Resp), Result: d.Result,
	}
	switch e.Kind {
	case KindCMEvent:
		r.Type = EntryEvent
	case KindCompletion:
		r.Type = EntryCompletion
	}
	if e.Returned {
		r.Ret, r.Dur = e.Ret, e.Dur
	}
	return r
}

// RecordOptions configure Record.
type RecordOptions struct {
	WatchOptions        // the filters (PID, Comm, Dev, NoRXE); the output options are ignored
	File         string // the recording to write
	Iface        string // also capture RoCEv2 packets on this interface; "" captures none
	Node         string // the node's name in the header; "" is the hostname
	// Ready, when set, is called once the probes (and the capture) are
	// attached: everything after it is recorded.
	Ready func()
}

// clockPair reads CLOCK_MONOTONIC and CLOCK_REALTIME together: the monotonic
// reading between two realtime ones, the realtime one their midpoint.
func clockPair() (mono uint64, real int64) {
	a := time.Now().UnixNano()
	mono = monotonicNow()
	b := time.Now().UnixNano()
	return mono, a + (b-a)/2
}

// Record is `rdmatrace record`: it attaches the probes (New) and, with
// o.Iface, a RoCEv2 capture (capture.Open), and writes every call, CM event
// and packet to o.File until ctx is done, all stamped with CLOCK_MONOTONIC
// (packets are stamped by the kernel in CLOCK_REALTIME and moved onto it by
// the header's clock pair), then the rxe data-path counts. Progress goes to
// stderr. It needs what New needs, and CAP_NET_RAW with Iface.
func Record(ctx context.Context, o RecordOptions, stderr io.Writer) error {
	if o.File == "" {
		return errors.New("record needs -o FILE")
	}
	if err := o.Check(); err != nil {
		return err
	}
	hdr := RecordHeader{Format: RecordFormat, Node: o.Node, Iface: o.Iface, PID: o.PID, Comm: o.Comm}
	if hdr.Node == "" {
		hdr.Node, _ = os.Hostname()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		hdr.Kernel = strings.TrimSpace(string(b))
	}
	var h *capture.Handle
	if o.Iface != "" {
		ifi, err := net.InterfaceByName(o.Iface)
		if err != nil {
			return fmt.Errorf("-i %s: %w (see `ip link` for names)", o.Iface, err)
		}
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				hdr.Addrs = append(hdr.Addrs, ipn.IP.String())
			}
		}
		if h, err = capture.Open(o.Iface, 0); err != nil {
			return err
		}
		defer h.Close()
	}
	if o.RingBytes == 0 {
		o.RingBytes = lineRingBytes
	}
	t, err := o.attach(stderr)
	if err != nil {
		return err
	}
	defer t.Close()
	file, err := os.Create(o.File)
	if err != nil {
		return fmt.Errorf("create %s: %w", o.File, err)
	}
	defer file.Close()
	out := bufio.NewWriterSize(file, 1<<20)
	enc := json.NewEncoder(out)
	hdr.MonoNS, hdr.RealNS = clockPair()
	if err := enc.Encode(hdr); err != nil {
		return fmt.Errorf("write %s: %w", o.File, err)
	}
	realToMono := hdr.RealNS - int64(hdr.MonoNS)

	f := &Formatter{Names: ABINames{}, Devices: UverbsDevices(sysfs.ClassVerbs), PageSize: os.Getpagesize()}
	if !o.NoRXE {
		if err := f.LearnQPOwners(); err != nil {
			fmt.Fprintf(stderr, "rdmatrace: %v (the rxe counts of QPs created before recording are not attributed)\n", err)
		}
	}
	entries := make(chan RecordEntry, 1024)
	errs := make(chan error, 2)
	done := make(chan struct{}, 2)
	go func() {
		defer func() { done <- struct{}{} }()
		err := readEvents(ctx, t, func(e Event) {
			if e.Kind == KindCMEvent || o.keep(e, f) {
				entries <- f.EntryOf(e)
			}
		})
		if err != nil {
			errs <- err
		}
	}()
	readers := 1
	if h != nil {
		readers++
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				p, err := h.ReadPacket(ctx)
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
				ts := p.Time.UnixNano() - realToMono
				entries <- RecordEntry{Type: EntryPacket, TS: uint64(max(ts, 0)), Packet: PacketRecord(p.Data, p.OrigLen, p.Outgoing)}
			}
		}()
	}
	go func() {
		for range readers {
			<-done
		}
		close(entries)
	}()
	fmt.Fprintf(stderr, "rdmatrace: recording to %s; Ctrl-C to stop\n", o.File)
	if o.Ready != nil {
		o.Ready()
	}
	n := 0
	for e := range entries {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("write %s: %w", o.File, err)
		}
		n++
	}
	var readErr error
	select {
	case readErr = <-errs:
	default:
	}
	if counts, err := t.RXECounts(); err == nil && len(counts) > 0 {
		if err := f.LearnQPOwners(); err != nil {
			fmt.Fprintln(stderr, "rdmatrace:", err)
		}
		if counts, _ = f.OwnedRXE(counts, o.Options); len(counts) > 0 {
			enc.Encode(RecordEntry{Type: EntryRXE, TS: monotonicNow(), RXE: counts})
		}
	}
	var lost []string
	if s := lostReport(t, f); s != "" {
		lost = append(lost, "tracer "+s)
	}
	if h != nil {
		if _, drops, err := h.Stats(); err == nil && drops > 0 {
			lost = append(lost, fmt.Sprintf("capture dropped %d packets", drops))
		}
	}
	if len(lost) > 0 {
		enc.Encode(RecordEntry{Type: EntryLost, TS: monotonicNow(), Lost: strings.Join(lost, "; ")})
		fmt.Fprintln(stderr, "rdmatrace:", strings.Join(lost, "; "))
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", o.File, err)
	}
	if err := file.Close(); err != nil {
		return fmt.Errorf("write %s: %w", o.File, err)
	}
	fmt.Fprintf(stderr, "rdmatrace: %d entries recorded in %s\n", n, o.File)
	if readErr != nil {
		return readErr
	}
	return t.Close()
}

// ReadRecording reads a file `rdmatrace record` wrote.
func ReadRecording(r io.Reader) (RecordHeader, []RecordEntry, error) {
	var hdr RecordHeader
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return hdr, nil, err
		}
		return hdr, nil, errors.New("empty recording (want a header line)")
	}
	if err := json.Unmarshal(sc.Bytes(), &hdr); err != nil || hdr.Format != RecordFormat {
		return hdr, nil, fmt.Errorf("not an rdmatrace recording (first line is not a %s header; make one with `rdmatrace record -o FILE`)", RecordFormat)
	}
	var es []RecordEntry
	for line := 2; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var e RecordEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return hdr, nil, fmt.Errorf("line %d: %w", line, err)
		}
		es = append(es, e)
	}
	return hdr, es, sc.Err()
}

// ReadRecordingFile is ReadRecording of the file name.
func ReadRecordingFile(name string) (RecordHeader, []RecordEntry, error) {
	f, err := os.Open(name)
	if err != nil {
		return RecordHeader{}, nil, err
	}
	defer f.Close()
	h, es, err := ReadRecording(f)
	if err != nil {
		return h, nil, fmt.Errorf("%s: %w", name, err)
	}
	return h, es, nil
}
