// Copyright 2026 The rdmago Authors.

package timeline

import (
	"bytes"
	"flag"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmago/rdmago/tools/trace"
)

var update = flag.Bool("update", false, "rewrite testdata (recordings and golden layouts)")

// dumpModel is the layout as text, one line per lane and item.
func dumpModel(m *Model) string {
	var b strings.Builder
	fmt.Fprintf(&b, "title %s\nclock %s\nsize %.0fx%.0f packets %d calls %d\n", m.Title, m.Clock, m.Width, m.Height, m.Packets, m.Calls)
	for _, n := range m.Notes {
		fmt.Fprintf(&b, "note %s\n", n)
	}
	for _, l := range m.Lanes {
		fmt.Fprintf(&b, "lane %-8s x=%-5.0f %-7s %s\n", l.ID, l.X, l.Kind, l.Title)
	}
	for _, it := range m.Items {
		fmt.Fprintf(&b, "y=%-6.0f t=%-11d %-6s %s", it.Y, it.T, it.Kind, it.Lane)
		if it.To != "" {
			fmt.Fprintf(&b, "->%s y2=%.0f t2=%d seen=%s", it.To, it.Y2, it.T2, it.Seen)
		}
		if it.Count > 0 {
			fmt.Fprintf(&b, " count=%d", it.Count)
		}
		if len(it.Class) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(it.Class, " "))
		}
		if it.RKey != "" {
			fmt.Fprintf(&b, " rkey=%s", it.RKey)
		}
		fmt.Fprintf(&b, " %q\n", it.Label)
	}
	return b.String()
}

func TestGoldenLayout(t *testing.T) {
	dir := "testdata"
	if !*update {
		dir = t.TempDir()
	}
	files := writeSynthetic(t, dir)
	if !*update {
		// The committed recordings are the ones the generator makes.
		for _, f := range files {
			want, err := os.ReadFile(filepath.Join("testdata", filepath.Base(f)))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(f)
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from what synthetic() makes: run go test -update", filepath.Base(f))
			}
		}
	}
	m, err := Load(files)
	if err != nil {
		t.Fatal(err)
	}
	got := dumpModel(m)
	golden := filepath.Join("testdata", "synthetic.layout")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("layout differs from %s (-want +got; go test -update rewrites it):\n%s", golden, d)
	}
}

// TestModelFacts checks what the golden file shows, so that a wrong golden
// file cannot pass: the clocks aligned within the wire delay, the packets
// matched on both sides, the run of Write Middle, the rkey's journey and
// the NAK's error completion in node 1's process.
func TestModelFacts(t *testing.T) {
	files := writeSynthetic(t, t.TempDir())
	m, err := Load(files)
	if err != nil {
		t.Fatal(err)
	}
	// Every packet is both sent and received: 12 packets, the middles in one run.
	if m.Packets != 13 {
		t.Errorf("%d packets, want 13", m.Packets)
	}
	if !strings.Contains(m.Clock, "offset 5s ± 30µs") {
		t.Errorf("clock %q: want offset 5s ± 30µs (5 s apart, 30 µs each way)", m.Clock)
	}
	for _, want := range []string{"CM REQ (MAD, SEND Only to QP1)", "CM REP (MAD, SEND Only to QP1)"} {
		i := slices.IndexFunc(m.Items, func(it Item) bool { return it.Label == want })
		if i < 0 {
			t.Errorf("no packet labelled %q", want)
			continue
		}
		// Its details name the CM message and its transaction ID.
		msg := strings.Fields(want)[1]
		for _, kv := range []trace.KV{{"CM message", msg + " (" + cmMADText[msg] + ")"}, {"transaction ID", "0xabcdef01"}} {
			if !slices.Contains(m.Items[i].Fields, kv) {
				t.Errorf("%s: no field %q in %q", want, kv, m.Items[i].Fields)
			}
		}
	}
	if want := []Alignment{{Node: "node1", Method: AlignPackets, OffsetNS: 5e9, UncertaintyNS: 30e3, Pairs: 13}}; !slices.Equal(m.Align, want) {
		t.Errorf("alignment %+v, want %+v", m.Align, want)
	}
	var runs, naks, errs, rkeys, mrs, states int
	lastT := int64(-1)
	for _, it := range m.Items {
		if it.T < lastT {
			t.Errorf("item %q at %d before the one at %d", it.Label, it.T, lastT)
		}
		lastT = it.T
		cls := strings.Join(it.Class, " ")
		switch {
		case it.Kind == ItemRun:
			runs++
			if it.Count != 4 || !strings.Contains(it.Label, "Middle") {
				t.Errorf("run %q count %d, want the 4 Write Middle", it.Label, it.Count)
			}
		case it.Kind == ItemPacket:
			if it.Seen != "both" || it.T2-it.T != synDelay {
				t.Errorf("packet %q seen %s, %d ns on the wire; want both, %d", it.Label, it.Seen, it.T2-it.T, synDelay)
			}
			if strings.Contains(cls, "nak") {
				naks++
				if it.Lane != "n0.k" || it.To != "n1.k" || !strings.Contains(it.Label, "remote access error") {
					t.Errorf("NAK %q from %s to %s", it.Label, it.Lane, it.To)
				}
			}
			if it.RKey == "0x1234" {
				rkeys++
			}
		case it.Kind == ItemError:
			errs++
			if it.Lane != "n1.p200" || !strings.Contains(it.Label, "IBV_WC_REM_ACCESS_ERR") {
				t.Errorf("error completion %q in %s, want IBV_WC_REM_ACCESS_ERR in n1.p200", it.Label, it.Lane)
			}
		}
		if strings.Contains(cls, "mr") {
			mrs++
		}
		if strings.Contains(cls, "qpstate") {
			states++
		}
	}
	// The rkey travels in the SEND and comes back in the first RETH.
	if runs != 1 || naks != 1 || errs != 1 || rkeys != 2 || mrs != 1 || states != 6 {
		t.Errorf("runs %d naks %d error completions %d packets with the rkey %d MRs %d QP state changes %d; want 1 1 1 2 1 6",
			runs, naks, errs, rkeys, mrs, states)
	}
	// The 1 s pause is longer on the page than a 100 µs step but not 10000 times.
	if g1, g2 := gapPixels(1e9), gapPixels(1e5); g1 <= g2 || g1 > 100 {
		t.Errorf("gaps: 1 s %v px, 100 µs %v px", g1, g2)
	}
}

var externalRef = regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?\s*(https?:)?//`)

// TestPageSelfContained: the page is well-formed, references nothing
// outside itself, and has every item.
func TestPageSelfContained(t *testing.T) {
	files := writeSynthetic(t, t.TempDir())
	m, err := Load(files)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, m); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if loc := externalRef.FindStringIndex(page); loc != nil {
		t.Errorf("external reference: %q", page[loc[0]:min(len(page), loc[1]+40)])
	}
	for _, bad := range []string{"http://", "https://", "@import", "url(http"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if err := checkWellFormed(page); err != nil {
		t.Error(err)
	}
	if n := strings.Count(page, `<g class="item `); n != len(m.Items) {
		t.Errorf("%d items drawn, model has %d", n, len(m.Items))
	}
}

// TestAckRunsEndWithTheirMessage: the acknowledgements coming back during
// a long RDMA Write are one run that ends with the write, not one band
// drawn across the next write too.
func TestAckRunsEndWithTheirMessage(t *testing.T) {
	hdr := func(n, addr string) trace.RecordHeader {
		return trace.RecordHeader{Format: trace.RecordFormat, Node: n, Iface: "v0", Addrs: []string{addr}}
	}
	recs := []Recording{{Header: hdr("node0", "10.0.0.1")}, {Header: hdr("node1", "10.0.0.2")}}
	ts := uint64(1e9)
	send := func(from int, op string, code uint8, psn uint32, aeth bool) {
		src, dst := "10.0.0.2:1", "10.0.0.1:4791"
		if from == 0 {
			src, dst = dst, src
		}
		p := trace.RecordPacket{Src: src, Dst: dst, OpCode: code, Op: op, QPN: 0x12, PSN: psn, Len: 1024, HasAETH: aeth}
		if aeth {
			p.Len, p.AETH = 0, "ACK credits=31 msn=1"
		}
		out, in := p, p
		out.Out = true
		recs[from].Entries = append(recs[from].Entries, trace.RecordEntry{Type: trace.EntryPacket, TS: ts, Packet: &out})
		recs[1-from].Entries = append(recs[1-from].Entries, trace.RecordEntry{Type: trace.EntryPacket, TS: ts + 30_000, Packet: &in})
		ts += 100_000
	}
	psn := uint32(0)
	for msg := 0; msg < 2; msg++ {
		send(1, "RC RDMA WRITE First", 0x06, psn, false)
		psn++
		for i := 0; i < 20; i++ {
			send(1, "RC RDMA WRITE Middle", 0x07, psn, false)
			if i%4 == 3 {
				send(0, "RC Acknowledge", 0x11, psn, true)
			}
			psn++
		}
		send(1, "RC RDMA WRITE Last", 0x08, psn, false)
		send(0, "RC Acknowledge", 0x11, psn, true)
		psn++
	}
	m, err := Build(recs)
	if err != nil {
		t.Fatal(err)
	}
	var middles, acks []Item
	for _, it := range m.Items {
		if it.Kind != ItemRun {
			continue
		}
		if strings.HasPrefix(it.Label, "RDMA WRITE Middle") {
			middles = append(middles, it)
		} else if strings.HasPrefix(it.Label, "Acknowledge") {
			acks = append(acks, it)
		}
	}
	if len(middles) != 2 || len(acks) != 2 {
		t.Fatalf("%d runs of Middle and %d of Acknowledge, want 2 and 2 (one per write)", len(middles), len(acks))
	}
	for i := range acks {
		if acks[i].Count != 5 || acks[i].T < middles[i].T {
			t.Errorf("write %d: acknowledgements %q from %d, want 5 from its Middle run on (%d)", i, acks[i].Label, acks[i].T, middles[i].T)
		}
	}
	if acks[0].T2 > middles[1].T {
		t.Errorf("the first write's acknowledgements run to %d, into the second write (from %d)", acks[0].T2, middles[1].T)
	}
}

var pageTitle = regexp.MustCompile(`<title>([^<]*)</title>`)

// TestDocsPages checks the example pages docs/rdmatrace.md links, one per
// rdmaping mode: each is byte for byte what its recordings, kept in
// testdata/examples, draw today with the title it has
// (scripts/timeline-examples.sh records them, --redraw draws them again);
// well-formed and self-contained; its clocks aligned from packets; and it
// shows its mode's own packets (and, but in send mode, the rkey leaving in
// a SEND).
func TestDocsPages(t *testing.T) {
	ops := map[string][]string{
		"send":   {"SEND Only"},
		"write":  {"RDMA WRITE Only"},
		"read":   {"RDMA READ Request", "RDMA READ Response"},
		"atomic": {"FetchAdd", "CmpSwap", "ATOMIC Acknowledge"},
	}
	for _, mode := range []string{"send", "write", "read", "atomic"} {
		name := filepath.Join("..", "..", "docs", "timeline-"+mode+".html")
		b, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%v (scripts/timeline-examples.sh makes it)", err)
			continue
		}
		page := string(b)
		if loc := externalRef.FindStringIndex(page); loc != nil {
			t.Errorf("%s: external reference %q", name, page[loc[0]:min(len(page), loc[1]+40)])
		}
		if err := checkWellFormed(page); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		m, err := Load([]string{filepath.Join("testdata", "examples", mode+".node0.rec"), filepath.Join("testdata", "examples", mode+".node1.rec")})
		if err != nil {
			t.Errorf("%s: %v (scripts/timeline-examples.sh records it)", name, err)
			continue
		}
		title := pageTitle.FindStringSubmatch(page)
		if title == nil || !strings.Contains(title[1], "--mode "+mode+" ") {
			t.Errorf("%s: title %q does not name rdmaping --mode %s", name, title, mode)
			continue
		}
		m.Title = html.UnescapeString(title[1])
		var want bytes.Buffer
		if err := WriteHTML(&want, m); err != nil {
			t.Fatal(err)
		}
		if want.String() != page {
			t.Errorf("%s is not what testdata/examples/%s.node*.rec draw today: run scripts/timeline-examples.sh --redraw", name, mode)
		}
		if len(m.Align) != 1 || m.Align[0].Method != AlignPackets || !strings.Contains(page, "seen on both sides: offset") {
			t.Errorf("%s: clocks aligned %+v, want from packets both ways", name, m.Align)
		}
		for _, op := range ops[mode] {
			if !slices.ContainsFunc(m.Items, func(it Item) bool {
				return (it.Kind == ItemPacket || it.Kind == ItemRun) && strings.HasPrefix(it.Label, op)
			}) {
				t.Errorf("%s: no %s packet", name, op)
			}
		}
		sendsKey := slices.ContainsFunc(m.Items, func(it Item) bool {
			return it.Kind == ItemPacket && strings.HasPrefix(it.Label, "SEND") && strings.Contains(it.Label, "carries rkey")
		})
		if sendsKey != (mode != "send") {
			t.Errorf("%s: a SEND carries an rkey: %v, want %v", name, sendsKey, mode != "send")
		}
	}
}
