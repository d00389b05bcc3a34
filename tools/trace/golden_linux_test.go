// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Golden traces of rdma-core's C programs, recorded in the lab by
// TestLabCTools with -rdmatrace.golden=testdata/golden (rdmalab test ...
// -args -rdmatrace.golden=testdata/golden): for each program and kernel,
//
//	NAME.rec  the raw records, each after its length (u32, little endian)
//	NAME.out  what the program printed
//	NAME.txt  the records as Formatter lines (times from the first record)
//
// TestGoldenTraces decodes the records again on any host.
var goldenUpdate = flag.Bool("rdmatrace.update", false, "rewrite testdata/golden/*.txt from the .rec files (then review the diff)")

var goldenDir = flag.String("rdmatrace.golden", "", "lab: write the C programs' raw traces into `DIR` (testdata/golden)")

// writeGoldenRecords writes records as a .rec file.
func writeGoldenRecords(path string, recs [][]byte) error {
	var b bytes.Buffer
	for _, r := range recs {
		binary.Write(&b, binary.LittleEndian, uint32(len(r)))
		b.Write(r)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

func readGoldenRecords(path string) ([]Event, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var evs []Event
	for len(b) > 0 {
		if len(b) < 4 || int(binary.LittleEndian.Uint32(b)) > len(b)-4 {
			return nil, fmt.Errorf("%s: truncated at record %d", path, len(evs))
		}
		n := binary.LittleEndian.Uint32(b)
		e, err := DecodeEvent(b[4 : 4+n])
		if err != nil {
			return nil, fmt.Errorf("%s: record %d: %w", path, len(evs), err)
		}
		evs = append(evs, e)
		b = b[4+n:]
	}
	return evs, nil
}

// goldenLines formats evs as NAME.txt holds them.
func goldenLines(evs []Event) []string {
	f := &Formatter{Names: ABINames{}}
	if len(evs) > 0 {
		f.Start = evs[0].TS
	}
	var lines []string
	for _, e := range evs {
		lines = append(lines, f.Line(e))
	}
	return lines
}

var pingpongQPN = regexp.MustCompile(`(local|remote) address: .*QPN 0x([0-9a-f]+)`)

// pingpongQPNs parses the local and remote QPNs ibv_*_pingpong print, one
// pair per QP.
func pingpongQPNs(out string) (local, remote []uint64, err error) {
	for _, m := range pingpongQPN.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseUint(m[2], 16, 32)
		if err != nil {
			return nil, nil, err
		}
		if m[1] == "local" {
			local = append(local, v)
		} else {
			remote = append(remote, v)
		}
	}
	if len(local) == 0 || len(local) != len(remote) {
		return nil, nil, fmt.Errorf("local QPNs %v and remote QPNs %v in %q", local, remote, out)
	}
	return local, remote, nil
}

// qpView is what a trace shows of one process's QPs.
type qpView struct {
	created map[uint64]bool   // QPNs from creation responses
	rtr     map[uint64]uint64 // QPN (tied to the handle) -> dest_qpn of its move to RTR
	posts   map[uint64]int    // QPN (tied) -> POST_SEND doorbells
}

func qpViews(evs []Event) map[uint32]*qpView {
	f := &Formatter{Names: ABINames{}}
	views := map[uint32]*qpView{}
	for _, e := range evs {
		d := f.Describe(e)
		if d.Subsys != "uverbs" || d.Result != "ok" {
			continue
		}
		v := views[e.PID]
		if v == nil {
			v = &qpView{created: map[uint64]bool{}, rtr: map[uint64]uint64{}, posts: map[uint64]int{}}
			views[e.PID] = v
		}
		qpn, hasQPN := fieldVal(d.Args, "qpn").(uint64)
		switch {
		case fieldVal(d.Resp, "qpn") != nil && fieldVal(d.Resp, "qp") != nil:
			v.created[fieldVal(d.Resp, "qpn").(uint64)] = true
		case strings.HasPrefix(d.Op, "MODIFY_QP") && fieldVal(d.Args, "state") == "RTR" && hasQPN:
			v.rtr[qpn], _ = fieldVal(d.Args, "dest_qpn").(uint64)
		case d.Op == "POST_SEND" && hasQPN:
			v.posts[qpn]++
		}
	}
	return views
}

// checkNamed fails for events of the uverbs or ucma paths whose command or
// method has no name, and for ioctl records without their attributes.
func checkNamed(t *testing.T, name string, evs []Event) {
	t.Helper()
	f := &Formatter{Names: ABINames{}}
	for i, e := range evs {
		d := f.Describe(e)
		if strings.Contains(d.Op, "OBJ_") || strings.Contains(d.Op, "METHOD_") || strings.HasPrefix(d.Op, "CMD_") ||
			strings.HasPrefix(d.Op, "EX_CMD_") {
			t.Errorf("%s: event %d has no name: %s", name, i, f.Line(e))
		}
		if e.Kind == KindVerbsIoctl && e.IoctlAttrs == nil {
			t.Errorf("%s: ioctl event %d without its attributes: %s", name, i, f.Line(e))
		}
	}
}

// goldenCompare decodes the records of rec (NAME.rec) and compares their
// lines with NAME.txt (rewritten first with -rdmatrace.update).
func goldenCompare(t *testing.T, rec string) []Event {
	t.Helper()
	evs, err := readGoldenRecords(rec)
	if err != nil {
		t.Fatal(err)
	}
	txt := strings.TrimSuffix(rec, ".rec") + ".txt"
	got := strings.Join(goldenLines(evs), "\n") + "\n"
	if *goldenUpdate {
		if err := os.WriteFile(txt, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(txt)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("line %d:\n got %s\nwant %s", i+1, gl[i], wl[i])
				break
			}
		}
		t.Errorf("%d lines decoded, %d recorded, first difference above", len(gl), len(wl))
	}
	return evs
}

// TestGoldenTraces decodes the recorded traces of rdma-core's programs: the
// lines must be those recorded with them, every command named, and the QPNs
// the trace shows those the program printed (ibv_*_pingpong) or sent in
// CONNECT and ACCEPT (rping).
func TestGoldenTraces(t *testing.T) {
	recs, _ := filepath.Glob("testdata/golden/*.rec")
	if len(recs) == 0 {
		t.Fatal("no golden traces in testdata/golden (record them in the lab: see golden_linux_test.go)")
	}
	for _, rec := range recs {
		name := strings.TrimSuffix(filepath.Base(rec), ".rec")
		t.Run(name, func(t *testing.T) {
			evs := goldenCompare(t, rec)
			checkNamed(t, name, evs)
			out, err := os.ReadFile(strings.TrimSuffix(rec, ".rec") + ".out")
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case strings.HasPrefix(name, "ibv_"):
				checkPingpong(t, evs, string(out), !strings.HasPrefix(name, "ibv_ud_"))
			case strings.HasPrefix(name, "rping-"):
				checkRping(t, evs)
			default:
				t.Errorf("no check for the program of %s", name)
			}
		})
	}
}

// checkPingpong checks a trace of an ibv_*_pingpong server and client
// against their output (server's then client's, split at "--- client"):
// each process created exactly the QPs it printed as local, rang every one
// of them, and (connected QPs) moved each to RTR towards the remote QPN it
// printed next to it.
func checkPingpong(t *testing.T, evs []Event, out string, connected bool) {
	t.Helper()
	server, client, ok := strings.Cut(out, "--- client\n")
	if !ok {
		t.Fatalf("output without the client marker: %q", out)
	}
	views := qpViews(evs)
	if len(views) != 2 {
		t.Fatalf("%d processes traced, want the server and the client", len(views))
	}
	for _, o := range []string{server, client} {
		local, remote, err := pingpongQPNs(o)
		if err != nil {
			t.Fatal(err)
		}
		var v *qpView
		for _, x := range views {
			if x.created[local[0]] {
				v = x
			}
		}
		if v == nil {
			var created []map[uint64]bool
			for _, x := range views {
				created = append(created, x.created)
			}
			t.Errorf("no traced QP creation gave the QPN %#x the program printed as local; created: %v", local[0], created)
			continue
		}
		if len(v.created) != len(local) {
			t.Errorf("traced creations gave QPNs %v, the program printed %v", v.created, local)
		}
		for i, l := range local {
			if !v.created[l] {
				t.Errorf("QPN %#x printed, not among the traced creations %v", l, v.created)
			}
			if connected && v.rtr[l] != remote[i] {
				t.Errorf("QPN %#x moved to RTR towards %#x, the program printed remote QPN %#x (rtr %v)", l, v.rtr[l], remote[i], v.rtr)
			}
			if v.posts[l] == 0 {
				t.Errorf("no POST_SEND shown for QPN %#x: %v", l, v.posts)
			}
		}
	}
}

// checkRping checks a trace of an rping server and client: the QPNs of the
// QPs created are those CONNECT and ACCEPT send.
func checkRping(t *testing.T, evs []Event) {
	t.Helper()
	f := &Formatter{Names: ABINames{}}
	created := map[uint64]bool{}
	var sent []uint64
	for _, e := range evs {
		d := f.Describe(e)
		if qpn, ok := fieldVal(d.Resp, "qpn").(uint64); ok && fieldVal(d.Resp, "qp") != nil && d.Result == "ok" {
			created[qpn] = true
		}
		if d.Subsys == "ucma" && (d.Op == "CONNECT" || d.Op == "ACCEPT") && d.Result == "ok" {
			if qpn, ok := fieldVal(d.Args, "qp_num").(uint64); ok && qpn != 0 {
				sent = append(sent, qpn)
			}
		}
	}
	if len(sent) != 2 || len(created) != 2 {
		t.Fatalf("CONNECT/ACCEPT sent QPNs %v, QP creations gave %v; want two of each", sent, created)
	}
	for _, q := range sent {
		if !created[q] {
			t.Errorf("CONNECT/ACCEPT sent QPN %d, no traced QP creation gave it (created %v)", q, created)
		}
	}
}
