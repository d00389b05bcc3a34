// Copyright 2026 The rdmago Authors.

// Package timeline turns recordings made by `rdmatrace record` (one per
// node) into one picture: a sequence diagram with a lane per process and per
// node's kernel and the wire between the nodes, each call, CM event and
// RoCEv2 packet placed in time, the nodes' clocks aligned from the packets
// both captured. Build makes the layout model; WriteHTML draws it as a
// self-contained page (inline SVG and script, nothing fetched).
package timeline

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmago/rdmago/tools/trace"
)

// Recording is one node's recording.
type Recording struct {
	Header  trace.RecordHeader
	Entries []trace.RecordEntry
}

// Load reads the recordings files and builds their model.
func Load(files []string) (*Model, error) {
	var recs []Recording
	for _, name := range files {
		h, es, err := trace.ReadRecordingFile(name)
		if err != nil {
			return nil, err
		}
		recs = append(recs, Recording{h, es})
	}
	return Build(recs)
}

// Lane kinds.
const (
	LaneProcess = "process"
	LaneKernel  = "kernel"
	LaneWire    = "wire"
)

// Lane is one column of the diagram.
type Lane struct {
	ID    string  `json:"id"` // "n0.p812", "n0.k", "wire"
	Kind  string  `json:"kind"`
	Node  int     `json:"node"` // index of the recording; -1 for the wire
	Title string  `json:"title"`
	X     float64 `json:"x"` // centre of the column
}

// Item kinds.
const (
	ItemCall   = "call"   // a uverbs or rdma_cm call (in its process's lane)
	ItemEvent  = "event"  // a CM event (in the node's kernel lane)
	ItemPacket = "packet" // a packet: an arrow from the sender's kernel lane to the receiver's
	ItemRun    = "run"    // Count packets of one opcode in a row, summarised
	ItemError  = "error"  // an error completion inferred from a NAK, in the lane of the QP's process
	ItemNote   = "note"   // the rxe counters or lost events at the end of a recording
	// ItemCompletion is a completion rxe posted to a CQ, in the lane of the
	// QP's process (the node's kernel lane when it is not known).
	ItemCompletion = "completion"
)

// spanMin is how long a call that waits (rdma_cm's GET_EVENT) must take to
// be drawn as a span from its start to its return, labelled at the return.
const spanMin = 1_000_000

// Item is one thing drawn.
type Item struct {
	Kind string `json:"kind"`
	Lane string `json:"lane"`         // where it is (a packet: its sender's kernel lane)
	To   string `json:"to,omitempty"` // a packet's receiver's kernel lane
	T    int64  `json:"t"`            // ns since the start, on node 0's clock (a packet: sent)
	T2   int64  `json:"t2,omitempty"` // a packet: received; a run: its last packet
	// T0 is when a call drawn as a span (it waited: GET_EVENT) started; T
	// is then its return, where its label and result are.
	T0 int64 `json:"t0,omitempty"`
	// Seen says where a packet was captured: "both", "sender" or "receiver".
	Seen  string   `json:"seen,omitempty"`
	Count int      `json:"count,omitempty"` // packets in a run
	Label string   `json:"label"`
	Class []string `json:"class,omitempty"` // "err", "nak", "mr", "qpstate", "rkey"
	RKey  string   `json:"rkey,omitempty"`  // the MR key it registers or carries
	// Fields are every decoded detail (shown on hover and click).
	Fields []trace.KV `json:"fields"`
	Y      float64    `json:"y"`            // layout: row
	Y2     float64    `json:"y2,omitempty"` // layout: receive row of a packet, last row of a run
	Y0     float64    `json:"y0,omitempty"` // layout: the row of T0`
}

// Model is the layout of a set of recordings.
type Model struct {
	Title  string  `json:"title"`
	Lanes  []Lane  `json:"lanes"`
	Items  []Item  `json:"items"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Clock  string  `json:"clock"` // how the nodes' clocks were aligned, with the uncertainty
	// Align is the same per node after node 0, in numbers.
	Align   []Alignment `json:"align,omitempty"`
	Notes   []string    `json:"notes,omitempty"`
	Start   int64       `json:"start"` // node 0's CLOCK_MONOTONIC ns shown as 0
	Packets int         `json:"packets"`
	Calls   int         `json:"calls"` // calls and CM events
}

// Layout constants (px).
const (
	laneWidth = 240.0
	wireWidth = 200.0
	topMargin = 70.0
	leftAxis  = 110.0
	rowHeight = 22.0
	runMin    = 4 // packets of one kind in a row from which they are summarised
)

// nodePacket is a packet of one recording, with its node's index.
type nodePacket struct {
	node int
	ts   int64 // the node's own clock
	p    *trace.RecordPacket
}

// wirePkt is a packet on the wire, as one or both ends captured it.
type wirePkt struct {
	from, to   int    // node indexes; -1 unknown
	send, recv int64  // a packet only one side captured has both at that side's time
	seen       string // "both", "sender" or "receiver"
	p          *trace.RecordPacket
}

func (np nodePacket) key() string {
	p := np.p
	return fmt.Sprintf("%s>%s/%d/%d/%d/%d", p.Src, p.Dst, p.OpCode, p.QPN, p.PSN, p.Len)
}

// Build lays out recs (node 0 first: its clock is the reference).
func Build(recs []Recording) (*Model, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("timeline: no recordings")
	}
	m := &Model{}
	var names []string
	for _, r := range recs {
		names = append(names, r.Header.Node)
	}
	m.Title = "RDMA exchange: " + strings.Join(names, ", ")

	// Which node owns which address.
	addrNode := map[string]int{}
	for i, r := range recs {
		for _, a := range r.Header.Addrs {
			addrNode[a] = i
		}
	}
	nodeOf := func(hostport string) (int, bool) {
		h, _, err := net.SplitHostPort(hostport)
		if err != nil {
			return 0, false
		}
		n, ok := addrNode[h]
		return n, ok
	}

	// Packets: match the copies both ends captured (times on each
	// capturing node's own clock until the clocks are aligned).
	var pkts []nodePacket
	for i, r := range recs {
		for _, e := range r.Entries {
			if e.Type == trace.EntryPacket && e.Packet != nil && e.Packet.Err == "" {
				pkts = append(pkts, nodePacket{i, int64(e.TS), e.Packet})
			}
		}
	}
	incoming := map[string][]int{} // key -> indexes into pkts of incoming copies
	for j, np := range pkts {
		if !np.p.Out {
			incoming[np.key()] = append(incoming[np.key()], j)
		}
	}
	used := make([]bool, len(pkts))
	var wire []wirePkt
	for _, np := range pkts {
		if !np.p.Out {
			continue
		}
		w := wirePkt{from: np.node, to: -1, send: np.ts, recv: np.ts, seen: "sender", p: np.p}
		if n, ok := nodeOf(np.p.Dst); ok {
			w.to = n
		}
		q := incoming[np.key()]
		for len(q) > 0 && pkts[q[0]].node == np.node {
			q = q[1:]
		}
		if len(q) > 0 {
			k := q[0]
			incoming[np.key()] = q[1:]
			used[k] = true
			w.to, w.recv, w.seen = pkts[k].node, pkts[k].ts, "both"
		}
		wire = append(wire, w)
	}
	for j, np := range pkts {
		if np.p.Out || used[j] {
			continue
		}
		w := wirePkt{from: -1, to: np.node, send: np.ts, recv: np.ts, seen: "receiver", p: np.p}
		if n, ok := nodeOf(np.p.Src); ok && n != np.node {
			w.from = n
		}
		wire = append(wire, w)
	}
	offsets := align(recs, wire, m) // ns to subtract from node i's clock
	ref := func(node int, ts uint64) int64 { return int64(ts) - offsets[node] }

	// The start: the earliest entry of any node.
	m.Start = math.MaxInt64
	for i, r := range recs {
		for _, e := range r.Entries {
			if e.Type != trace.EntryRXE && e.Type != trace.EntryLost {
				m.Start = min(m.Start, ref(i, e.TS))
			}
		}
	}
	if m.Start == math.MaxInt64 {
		m.Start = 0
	}
	rel := func(node int, ts uint64) int64 { return ref(node, ts) - m.Start }
	for i := range wire {
		w := &wire[i]
		sendOn, recvOn := w.from, w.to
		switch w.seen {
		case "sender":
			recvOn = w.from
		case "receiver":
			sendOn = w.to
		}
		w.send, w.recv = rel(sendOn, uint64(w.send)), rel(recvOn, uint64(w.recv))
	}

	// Lanes: node 0's processes and kernel, the wire, node 1's kernel and
	// processes (mirrored), then further nodes like node 1.
	type procKey struct {
		node int
		pid  uint32
	}
	procFirst := map[procKey]int64{}
	procComm := map[procKey]string{}
	for i, r := range recs {
		for _, e := range r.Entries {
			if e.Type == trace.EntryCall {
				k := procKey{i, e.PID}
				if _, ok := procFirst[k]; !ok {
					procFirst[k] = rel(i, e.TS)
					procComm[k] = e.Comm
				}
			}
		}
	}
	procLanes := func(node int) []Lane {
		var ls []Lane
		for k := range procFirst {
			if k.node == node {
				ls = append(ls, Lane{ID: procLane(node, k.pid), Kind: LaneProcess, Node: node,
					Title: fmt.Sprintf("%s: %s[%d]", recs[node].Header.Node, procComm[k], k.pid)})
			}
		}
		slices.SortFunc(ls, func(a, b Lane) int { return strings.Compare(a.ID, b.ID) })
		return ls
	}
	kernel := func(node int) Lane {
		t := recs[node].Header.Node + ": kernel"
		if recs[node].Header.Iface != "" {
			t += " (" + recs[node].Header.Iface + ")"
		}
		return Lane{ID: kernelLane(node), Kind: LaneKernel, Node: node, Title: t}
	}
	m.Lanes = append(m.Lanes, procLanes(0)...)
	m.Lanes = append(m.Lanes, kernel(0), Lane{ID: "wire", Kind: LaneWire, Node: -1, Title: "wire (RoCEv2)"})
	for n := 1; n < len(recs); n++ {
		m.Lanes = append(m.Lanes, kernel(n))
		m.Lanes = append(m.Lanes, procLanes(n)...)
	}
	x := leftAxis
	for i := range m.Lanes {
		w := laneWidth
		if m.Lanes[i].Kind == LaneWire {
			w = wireWidth
		}
		m.Lanes[i].X = x + w/2
		x += w
	}
	m.Width = x + 230 // the last lane's labels are written to its right

	// MRs: rkey -> who registered it, on which node.
	mrs := map[uint32]string{}
	// QPNs: node, qpn -> process lane.
	type qpKey struct {
		node int
		qpn  uint64
	}
	qpOwner := map[qpKey]string{}

	// Calls and events.
	for i, r := range recs {
		flushed := 0 // flushed completions: not errors of their own (noteItem)
		for _, e := range r.Entries {
			switch e.Type {
			case trace.EntryCall, trace.EntryEvent:
			case trace.EntryCompletion:
				lane := procLane(i, e.PID)
				if _, ok := procFirst[procKey{i, e.PID}]; !ok {
					lane = kernelLane(i)
				}
				it := completionItem(e, lane, rel(i, e.TS))
				if slices.Contains(it.Class, "flush") {
					flushed++
				}
				m.Items = append(m.Items, it)
				continue
			case trace.EntryRXE, trace.EntryLost:
				m.Items = append(m.Items, noteItem(i, e, rel(i, e.TS), flushed))
				continue
			default:
				continue
			}
			m.Calls++
			it := callItem(i, e, rel(i, e.TS))
			if e.Type == trace.EntryCall {
				if q, ok := kvUint(e.Resp, "qpn"); ok {
					qpOwner[qpKey{i, q}] = it.Lane
				}
				if it.RKey != "" {
					k, _ := strconv.ParseUint(it.RKey, 0, 32)
					if k != 0 {
						mrs[uint32(k)] = fmt.Sprintf("%s by %s[%d] on %s", e.Op, e.Comm, e.PID, r.Header.Node)
					}
				}
			}
			m.Items = append(m.Items, it)
		}
	}

	slices.SortStableFunc(wire, func(a, b wirePkt) int { return cmp.Compare(a.send, b.send) })
	m.Packets = len(wire)

	laneOfNode := func(n int) string {
		if n < 0 {
			return "wire"
		}
		return kernelLane(n)
	}
	pktItem := func(w wirePkt) Item {
		p := w.p
		it := Item{Kind: ItemPacket, Lane: laneOfNode(w.from), To: laneOfNode(w.to), T: w.send, T2: w.recv, Seen: w.seen}
		it.Label = fmt.Sprintf("%s PSN %d QPN %#x", strings.TrimPrefix(p.Op, "RC "), p.PSN, p.QPN)
		if p.Len > 0 {
			it.Label += fmt.Sprintf(" %dB", p.Len)
		}
		it.Fields = []trace.KV{{"opcode", fmt.Sprintf("%s (%#02x)", p.Op, p.OpCode)}, {"src", p.Src}, {"dst", p.Dst},
			{"dest QPN", fmt.Sprintf("%#x (%d)", p.QPN, p.QPN)}, {"PSN", fmt.Sprint(p.PSN)},
			{"payload", fmt.Sprintf("%d bytes", p.Len)}, {"frame", fmt.Sprintf("%d bytes", p.WireLen)}}
		if p.QPN == 1 {
			if msg, tid, ok := cmMAD(p.Head); ok {
				it.Label = fmt.Sprintf("CM %s (MAD, %s to QP1)", msg, strings.TrimPrefix(p.Op, "UD "))
				it.Class = append(it.Class, "cm")
				it.Fields = append(it.Fields, trace.KV{"CM message", msg + " (" + cmMADText[msg] + ")"}, trace.KV{"transaction ID", tid})
			}
		}
		if p.AckReq {
			it.Fields = append(it.Fields, trace.KV{"ack request", "yes"})
		}
		if p.HasKey {
			it.Fields = append(it.Fields, trace.KV{"va", fmt.Sprintf("%#x", p.VA)}, trace.KV{"rkey", fmt.Sprintf("%#x", p.RKey)},
				trace.KV{"dma length", fmt.Sprint(p.DMALen)})
			it.Label += fmt.Sprintf(" rkey %#x", p.RKey)
			if mr, ok := mrs[p.RKey]; ok {
				it.RKey = fmt.Sprintf("%#x", p.RKey)
				it.Class = append(it.Class, "rkey")
				it.Fields = append(it.Fields, trace.KV{"rkey is", "MR " + mr})
			}
		}
		if p.HasAETH {
			it.Fields = append(it.Fields, trace.KV{"AETH", fmt.Sprintf("%s (syndrome %#02x)", p.AETH, p.Syndrome)})
			if p.NAK {
				it.Class = append(it.Class, "nak")
				it.Label = strings.Replace(it.Label, "Acknowledge", "NAK", 1) + " " + nakText(p.AETH)
			}
		}
		if p.Imm != "" {
			it.Fields = append(it.Fields, trace.KV{"immediate", p.Imm})
		}
		if p.IETH != "" {
			it.Fields = append(it.Fields, trace.KV{"invalidate rkey", p.IETH})
		}
		if p.SrcQP != 0 {
			it.Fields = append(it.Fields, trace.KV{"src QPN (DETH)", fmt.Sprintf("%#x", p.SrcQP)})
		}
		if k, off, ok := findKey(p.Head, mrs); ok {
			it.RKey = fmt.Sprintf("%#x", k)
			it.Class = append(it.Class, "rkey")
			it.Label += fmt.Sprintf(" carries rkey %#x", k)
			it.Fields = append(it.Fields, trace.KV{"payload carries", fmt.Sprintf("rkey %#x at byte %d: MR %s", k, off, mrs[k])})
		}
		if p.Head != "" {
			it.Fields = append(it.Fields, trace.KV{"payload head", p.Head})
		}
		it.Fields = append(it.Fields, trace.KV{"captured", w.seen}, trace.KV{"summary", p.Summary})
		return it
	}

	// Runs: packets of one opcode and QP in one direction, one after the
	// other (packets the other way may interleave), become one item.
	type runKey struct{ from, to int }
	open := map[runKey][]wirePkt{}
	flush := func(k runKey) {
		run := open[k]
		delete(open, k)
		if len(run) < runMin {
			for _, w := range run {
				m.Items = append(m.Items, pktItem(w))
			}
			return
		}
		first, last := pktItem(run[0]), run[len(run)-1]
		it := first
		it.Kind, it.Count, it.T2 = ItemRun, len(run), last.recv
		bytes := 0
		for _, w := range run {
			bytes += w.p.Len
		}
		op := strings.TrimPrefix(run[0].p.Op, "RC ")
		it.Label = fmt.Sprintf("%s ×%d PSN %d–%d QPN %#x %dB", op, len(run), run[0].p.PSN, last.p.PSN, last.p.QPN, bytes)
		it.Fields = append([]trace.KV{{"run", fmt.Sprintf("%d packets, %d payload bytes, PSN %d to %d", len(run), bytes, run[0].p.PSN, last.p.PSN)},
			{"last sent", fmt.Sprintf("%.6f ms", float64(last.send)/1e6)}}, it.Fields...)
		m.Items = append(m.Items, it)
	}
	// A run of acknowledgements going back ends with the run it answers:
	// the acknowledgements of one message are not drawn across the next.
	flushWithAcks := func(k runKey) {
		data := len(open[k]) > 0 && !open[k][0].p.HasAETH
		flush(k)
		back := runKey{k.to, k.from}
		if rev := open[back]; data && len(rev) > 0 && rev[0].p.HasAETH {
			flush(back)
		}
	}
	for _, w := range wire {
		k := runKey{w.from, w.to}
		cur := open[k]
		if len(cur) > 0 {
			c := cur[len(cur)-1].p
			if c.OpCode != w.p.OpCode || c.QPN != w.p.QPN || c.NAK || w.p.NAK || c.HasKey || w.p.HasKey {
				flushWithAcks(k)
			}
		}
		open[k] = append(open[k], w)
	}
	keys := make([]runKey, 0, len(open))
	for k := range open {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b runKey) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to)) })
	for _, k := range keys {
		flush(k)
	}

	// A NAK is an error completion for the QP it was sent to.
	for _, w := range wire {
		if !w.p.NAK || w.to < 0 {
			continue
		}
		owner, ok := qpOwner[qpKey{w.to, uint64(w.p.QPN)}]
		if !ok {
			m.Notes = append(m.Notes, fmt.Sprintf("a NAK to QPN %#x on %s, whose process was not recorded", w.p.QPN, recs[w.to].Header.Node))
			continue
		}
		status := wcStatus(w.p.Syndrome)
		m.Items = append(m.Items, Item{Kind: ItemError, Lane: owner, T: w.recv, Class: []string{"err"},
			Label: "error completion " + status,
			Fields: []trace.KV{{"completion", status}, {"why", "the peer answered " + w.p.AETH},
				{"QPN", fmt.Sprintf("%#x", w.p.QPN)}, {"PSN", fmt.Sprint(w.p.PSN)},
				{"note", "inferred from the NAK: the CQ is polled in user memory, which no probe sees; the QP then moves to the error state"}}})
	}

	slices.SortStableFunc(m.Items, func(a, b Item) int { return cmp.Compare(a.T, b.T) })
	layout(m)
	return m, nil
}

func procLane(node int, pid uint32) string { return fmt.Sprintf("n%d.p%d", node, pid) }
func kernelLane(node int) string           { return fmt.Sprintf("n%d.k", node) }

func kvGet(kv []trace.KV, k string) (string, bool) {
	for _, x := range kv {
		if x[0] == k {
			return x[1], true
		}
	}
	return "", false
}

func kvUint(kv []trace.KV, k string) (uint64, bool) {
	s, ok := kvGet(kv, k)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 0, 64)
	return v, err == nil
}

// callItem is a call or CM event.
func callItem(node int, e trace.RecordEntry, t int64) Item {
	it := Item{Kind: ItemCall, Lane: procLane(node, e.PID), T: t}
	if e.Type == trace.EntryEvent {
		it.Kind, it.Lane = ItemEvent, kernelLane(node)
	}
	op := e.Op
	var sb strings.Builder
	sb.WriteString(op)
	if st, ok := kvGet(e.Args, "state"); ok && strings.Contains(op, "MODIFY_QP") {
		it.Class = append(it.Class, "qpstate")
		if q, ok := kvGet(e.Args, "qpn"); ok {
			fmt.Fprintf(&sb, " QPN %s", q)
		}
		fmt.Fprintf(&sb, " → %s", st)
	}
	if rk, ok := kvGet(e.Resp, "rkey"); ok && e.Result == "ok" {
		it.Class = append(it.Class, "mr")
		if k, err := strconv.ParseUint(rk, 0, 32); err == nil && k == 0 {
			sb.WriteString(" local only (rkey 0)") // rxe gives no rkey without remote access
		} else {
			it.RKey = rk
			fmt.Fprintf(&sb, " rkey %s", rk)
		}
		if l, ok := kvGet(e.Args, "len"); ok {
			fmt.Fprintf(&sb, " len %s", l)
		}
	}
	if ev, ok := kvGet(e.Resp, "event"); ok {
		fmt.Fprintf(&sb, " %s", ev)
	}
	if q, ok := kvGet(e.Resp, "qpn"); ok && !strings.Contains(op, "MODIFY") {
		fmt.Fprintf(&sb, " QPN %s", q)
	}
	if wr, ok := kvGet(e.Args, "wr"); ok && op == "POST_SEND" {
		sb.WriteString(postedWR(e.Args, wr))
		if rk, ok := kvGet(e.Args, "rkey"); ok {
			it.RKey = rk
		}
	}
	if op == "GET_EVENT" && e.Dur >= spanMin {
		// It waited: drawn from its start to its return, where the event is.
		it.T0, it.T = t, t+int64(e.Dur)
	}
	switch {
	case e.Result == "EAGAIN" && op == "GET_EVENT":
		// A non-blocking rdma_get_cm_event with nothing queued.
		it.Class = append(it.Class, "idle")
		sb.WriteString(" → EAGAIN (no event yet)")
	case e.Result == "ERESTARTSYS" && op == "GET_EVENT":
		// A blocking rdma_get_cm_event still waiting when the program exits.
		it.Class = append(it.Class, "idle")
		sb.WriteString(" → ERESTARTSYS (interrupted: the program exited while waiting)")
	case e.Result == "ENOSPC" && strings.HasPrefix(op, "QUERY_DEVICE"):
		// libibverbs asks with a small response buffer first to learn the
		// size the kernel wants, then asks again.
		it.Class = append(it.Class, "idle")
		sb.WriteString(" → ENOSPC (libibverbs' size probe: it asks again)")
	case e.Result != "" && e.Result != "ok":
		it.Class = append(it.Class, "err")
		fmt.Fprintf(&sb, " → %s", e.Result)
	}
	it.Label = sb.String()
	it.Fields = []trace.KV{{"what", e.Subsys + " " + op}}
	if e.Type == trace.EntryCall {
		it.Fields = append(it.Fields, trace.KV{"process", fmt.Sprintf("%s[%d] thread %d", e.Comm, e.PID, e.TID)})
	}
	if e.Dev != "" {
		it.Fields = append(it.Fields, trace.KV{"device", e.Dev})
	}
	it.Fields = append(it.Fields, e.Args...)
	if e.Result != "" {
		r := e.Result
		if e.Ret < 0 {
			r += fmt.Sprintf(" (%d)", e.Ret)
		}
		it.Fields = append(it.Fields, trace.KV{"result", r}, trace.KV{"took", trace.FormatDuration(e.Dur)})
	}
	for _, x := range e.Resp {
		it.Fields = append(it.Fields, trace.KV{"→ " + x[0], x[1]})
	}
	return it
}

// noteItem is the rxe counts or the lost events at the end of a recording;
// flushed is how many of the completions recorded were flushed ones.
func noteItem(node int, e trace.RecordEntry, t int64, flushed int) Item {
	it := Item{Kind: ItemNote, Lane: kernelLane(node), T: t}
	if e.Type == trace.EntryLost {
		it.Class = []string{"err"}
		it.Label = "lost: " + e.Lost
		it.Fields = []trace.KV{{"lost", e.Lost}}
		return it
	}
	errs := 0
	for _, c := range e.RXE {
		q := fmt.Sprint(c.QPN)
		if c.QPN == trace.QPNUnknown {
			q = "?"
		}
		what := c.Func
		if c.Error {
			what += " (error status)"
			errs += int(c.Count)
		}
		it.Fields = append(it.Fields, trace.KV{what + " qpn " + q, fmt.Sprint(c.Count)})
	}
	it.Label = fmt.Sprintf("rxe data path: %d counters", len(e.RXE))
	switch {
	case errs > flushed:
		it.Label += fmt.Sprintf(", %d completions with an error status (flushed WRs count too)", errs)
		it.Class = []string{"err"}
	case errs > 0:
		it.Label += fmt.Sprintf(", %d flushed completions (teardown)", errs)
	}
	return it
}

// findKey looks for a registered rkey in a payload's first bytes (hex), at
// a 4-byte aligned offset, in either byte order.
func findKey(head string, mrs map[uint32]string) (uint32, int, bool) {
	b, err := hex.DecodeString(head)
	if err != nil {
		return 0, 0, false
	}
	for off := 0; off+4 <= len(b); off += 4 {
		for _, k := range []uint32{binary.LittleEndian.Uint32(b[off:]), binary.BigEndian.Uint32(b[off:])} {
			if _, ok := mrs[k]; ok && k != 0 {
				return k, off, true
			}
		}
	}
	return 0, 0, false
}

// nakText is the NAK's reason, from its AETH text.
func nakText(aeth string) string {
	s := strings.TrimPrefix(aeth, "NAK ")
	if i := strings.Index(s, " msn="); i >= 0 {
		s = s[:i]
	}
	return s
}

// wcStatus is the completion status a requester reports for a NAK syndrome
// (IBTA vol. 1 9.7.5.2.8, ibv_wc_status).
func wcStatus(syndrome uint8) string {
	switch syndrome >> 5 & 3 {
	case 1:
		return "IBV_WC_RNR_RETRY_EXC_ERR (once the RNR retries are spent)"
	case 3:
		switch syndrome & 0x1f {
		case 0:
			return "IBV_WC_RETRY_EXC_ERR (PSN sequence error, once retries are spent)"
		case 1:
			return "IBV_WC_REM_INV_REQ_ERR"
		case 2:
			return "IBV_WC_REM_ACCESS_ERR"
		case 3:
			return "IBV_WC_REM_OP_ERR"
		}
	}
	return "IBV_WC_GENERAL_ERR"
}

// cmMADText says what each CM message (IBTA vol. 1 12.6) does.
var cmMADText = map[string]string{
	"REQ":      "connect request: the active side's QPN, starting PSN and private data",
	"MRA":      "message receipt acknowledgement: wait, I am slow",
	"REJ":      "connection rejected",
	"REP":      "connect reply: the passive side's QPN, starting PSN and private data",
	"RTU":      "ready to use: the active side's QP is ready to send",
	"DREQ":     "disconnect request",
	"DREP":     "disconnect reply",
	"LAP":      "load alternate path",
	"APR":      "alternate path response",
	"SIDR_REQ": "service ID resolution request (UD)",
	"SIDR_REP": "service ID resolution reply (UD)",
}

// cmMAD reads the CM message in a MAD (the payload of a UD SEND to QP1)
// from its first bytes (hex): management class 0x07 (CM) and the attribute
// ID at byte 16 name it; the transaction ID is at byte 8.
func cmMAD(head string) (msg, tid string, ok bool) {
	b, err := hex.DecodeString(head)
	if err != nil || len(b) < 24 || b[1] != 0x07 {
		return "", "", false
	}
	names := map[uint16]string{0x10: "REQ", 0x11: "MRA", 0x12: "REJ", 0x13: "REP", 0x14: "RTU",
		0x15: "DREQ", 0x16: "DREP", 0x17: "SIDR_REQ", 0x18: "SIDR_REP", 0x19: "LAP", 0x1a: "APR"}
	msg, ok = names[binary.BigEndian.Uint16(b[16:])]
	return msg, fmt.Sprintf("%#x", binary.BigEndian.Uint64(b[8:])), ok
}

// postedWR is a POST_SEND's work request as the doorbell's WQE showed it:
// " RDMA_WRITE 64 B → va 0x7f00… rkey 0x857 (signaled)".
func postedWR(args []trace.KV, wr string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, " %s", wr)
	if l, ok := kvGet(args, "len"); ok {
		fmt.Fprintf(&sb, " %s B", l)
	}
	if q, ok := kvGet(args, "remote_qpn"); ok {
		fmt.Fprintf(&sb, " → QPN %s", q)
	}
	if va, ok := kvGet(args, "va"); ok {
		fmt.Fprintf(&sb, " → va %s", va)
	}
	if rk, ok := kvGet(args, "rkey"); ok {
		fmt.Fprintf(&sb, " rkey %s", rk)
	}
	if fl, ok := kvGet(args, "flags"); ok {
		fmt.Fprintf(&sb, " (%s)", strings.ReplaceAll(fl, ",", ", "))
	}
	if n, ok := kvGet(args, "posted"); ok {
		fmt.Fprintf(&sb, ", the last of %s WRs", n)
	}
	return sb.String()
}

// completionItem is a completion rxe posted, in lane: "completion
// RDMA_WRITE 64 B QPN 17". A flushed one (the QP went to the error state
// first, as every teardown does to its posted receives) is grey, any other
// error red.
func completionItem(e trace.RecordEntry, lane string, t int64) Item {
	it := Item{Kind: ItemCompletion, Lane: lane, T: t, Class: []string{"wc"}}
	op, _ := kvGet(e.Args, "opcode")
	st, _ := kvGet(e.Args, "status")
	var sb strings.Builder
	fmt.Fprintf(&sb, "completion %s", op)
	if l, ok := kvGet(e.Args, "len"); ok && st == "SUCCESS" {
		fmt.Fprintf(&sb, " %s B", l)
	}
	if q, ok := kvGet(e.Args, "qpn"); ok {
		fmt.Fprintf(&sb, " QPN %s", q)
	}
	switch st {
	case "SUCCESS":
	case trace.WCFlushed:
		it.Class = append(it.Class, "idle", "flush")
		sb.WriteString(" flushed")
	default:
		it.Class = append(it.Class, "err")
		fmt.Fprintf(&sb, " → %s", st)
	}
	it.Label = sb.String()
	it.Fields = []trace.KV{{"what", "a completion rxe posted to the CQ (what ibv_poll_cq returns)"},
		{"process", fmt.Sprintf("%s[%d] (the QP's owner)", e.Comm, e.PID)}}
	it.Fields = append(it.Fields, e.Args...)
	if st == trace.WCFlushed {
		it.Fields = append(it.Fields, trace.KV{"flushed", "the QP went to the error state before this request ran: normal at teardown, when the receives still posted are flushed"})
	}
	return it
}
