// Copyright 2026 The rdmago Authors.

package perf

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update once to create it)", err)
	}
	if d := lineDiff(string(want), string(got)); d != "" {
		t.Errorf("%s differs: %s", name, d)
	}
}

// lineDiff describes the first line where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n want %q\n got  %q", i+1, a, b)
		}
	}
	return ""
}

func TestBWTableGolden(t *testing.T) {
	var b bytes.Buffer
	WriteBWHeader(&b, false)
	WriteBWLine(&b, BWStats{Size: 2, Iters: 5000, Peak: 1.234, Average: 0.987654, MsgRate: 0.517812})
	WriteBWLine(&b, BWStats{Size: 65536, Iters: 5000, Peak: 16.4, Average: 15.955, MsgRate: 0.000255})
	WriteBWLine(&b, BWStats{Size: 8388608, Iters: 1000000, Peak: 12345.678, Average: 12000, MsgRate: 0.0015})
	WriteEnd(&b)
	WriteBWHeader(&b, true)
	WriteBWLine(&b, BWStats{Size: 4096, Iters: 100, Peak: 0.13, Average: 0.05, MsgRate: 0.0015, Gbits: true}) // below 0.1: six decimals
	WriteBWLine(&b, BWStats{Size: 4096, Iters: 100, Peak: 1.3, Average: 0.5, MsgRate: 0.015, Gbits: true})
	golden(t, "bw_table.golden", b.Bytes())

	// What rdmaperf prints, ParseTable reads back.
	tab, err := ParseTable(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.BW) != 5 || tab.BW[1].Size != 65536 || tab.BW[1].Iters != 5000 || tab.BW[1].Peak != 16.4 || tab.BW[1].Average != 15.95 && tab.BW[1].Average != 15.96 || tab.BW[1].MsgRate != 0.000255 {
		t.Errorf("parsed back %+v", tab.BW)
	}
}

func TestLatTableGolden(t *testing.T) {
	var b bytes.Buffer
	WriteLatHeader(&b, false)
	WriteLatLine(&b, LatStats{Size: 2, Iters: 1000, Min: 12.71, Max: 44465.68, Typical: 14.68, Avg: 554.08, Stdev: 2550.38, P99: 29924.91, P999: 44465.68}, false)
	WriteLatLine(&b, LatStats{Size: 4096, Iters: 100, Min: 1, Max: 2, Typical: 1.5, Avg: 1.5, Stdev: 0.25, P99: 2, P999: 2}, false)
	WriteEnd(&b)
	WriteLatHeader(&b, true)
	WriteLatLine(&b, LatStats{Size: 2, Iters: 83021, Avg: 24.09, TPS: 41510.5}, true)
	WriteEnd(&b)
	WriteConnHeader(&b)
	WriteConnLine(&b, Summary{N: 20, Min: 1500.5, Max: 9000, Median: 2100.25, Mean: 2500, Stdev: 800.125})
	WriteEnd(&b)
	golden(t, "lat_table.golden", b.Bytes())

	tab, err := ParseTable(b.String())
	if err != nil {
		t.Fatal(err)
	}
	want := []LatStats{
		{Size: 2, Iters: 1000, Min: 12.71, Max: 44465.68, Typical: 14.68, Avg: 554.08, Stdev: 2550.38, P99: 29924.91, P999: 44465.68},
		{Size: 4096, Iters: 100, Min: 1, Max: 2, Typical: 1.5, Avg: 1.5, Stdev: 0.25, P99: 2, P999: 2},
		{Size: 2, Iters: 83021, Avg: 24.09, TPS: 41510.5},
	}
	if !reflect.DeepEqual(want, tab.Lat) {
		t.Errorf("parsed back\n got  %+v\n want %+v", tab.Lat, want)
	}
}

// perftest's own output (ib_write_bw and ib_write_lat 4.5-0.17 on rxe in the
// lab, captured verbatim) parses.
func TestParsePerftestOutput(t *testing.T) {
	for _, tc := range []struct {
		file   string
		bw     []BWStats
		lat    []LatStats
		warned bool
	}{
		{file: "ib_write_bw.txt", bw: []BWStats{{Size: 4096, Iters: 200}}},
		{file: "ib_write_lat.txt", lat: []LatStats{{Size: 2, Iters: 200}}},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		tab, err := ParseTable(string(b))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if len(tab.BW) != len(tc.bw) || len(tab.Lat) != len(tc.lat) {
			t.Fatalf("%s: got %d BW and %d latency lines", tc.file, len(tab.BW), len(tab.Lat))
		}
		for i, w := range tc.bw {
			g := tab.BW[i]
			if g.Size != w.Size || g.Iters != w.Iters || g.Average <= 0 || g.Peak < g.Average || g.MsgRate <= 0 {
				t.Errorf("%s: line %d: %+v", tc.file, i, g)
			}
		}
		for i, w := range tc.lat {
			g := tab.Lat[i]
			if g.Size != w.Size || g.Iters != w.Iters || g.Min <= 0 || g.Typical < g.Min || g.Max < g.Typical || g.P999 < g.P99 {
				t.Errorf("%s: line %d: %+v", tc.file, i, g)
			}
		}
	}
}

func TestParseTableRejectsGarbage(t *testing.T) {
	in := resultLine + resultFmt + " 4096  100  1.0  x.y  0.1\n" + resultLine
	if _, err := ParseTable(in); err == nil {
		t.Error("a non-numeric result field was accepted")
	}
	in = resultLine + resultFmtLat + " 2 100 1.0 2.0\n" + resultLine
	if _, err := ParseTable(in); err == nil {
		t.Error("a short latency line was accepted")
	}
	tab, err := ParseTable("Conflicting CPU frequency values detected: 2597.551000 != 1200.000000. CPU Frequency is not max.\n")
	if err != nil || len(tab.Warnings) != 1 {
		t.Errorf("warning: %v %v", tab.Warnings, err)
	}
}
