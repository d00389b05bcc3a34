// Copyright 2026 The rdmago Authors.

package trace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoldenReports runs TestLabStraceAgrees' checks of what a program
// reports (reportProblems) on the recorded traces of the pingpong examples
// and rping (-n 5 / -C 2): they must pass on the runs as recorded and
// fail once the output or the expectation is changed.
func TestGoldenReports(t *testing.T) {
	cases := map[string]straceCase{
		"ibv_rc_pingpong":  {posts: two(5, 5), qps: two(1, 1), mrLen: 4096, ppSize: 4096},
		"ibv_uc_pingpong":  {posts: two(5, 5), qps: two(1, 1), mrLen: 4096, ppSize: 4096},
		"ibv_ud_pingpong":  {posts: two(5, 5), qps: two(1, 1), mrLen: 512 + 40, ppSize: 512},
		"ibv_srq_pingpong": {posts: two(5, 5), qps: two(2, 2), mrLen: 4096, ppSize: 4096},
		"rping":            {posts: two(8, 4), qps: two(1, 1)},
	}
	recs, _ := filepath.Glob("testdata/golden/*.rec")
	checked := 0
	for _, rec := range recs {
		name := strings.TrimSuffix(filepath.Base(rec), ".rec")
		prog, _, _ := strings.Cut(name, "-")
		tc, ok := cases[prog]
		if !ok {
			continue
		}
		checked++
		t.Run(name, func(t *testing.T) {
			evs, err := readGoldenRecords(rec)
			if err != nil {
				t.Fatal(err)
			}
			out, err := os.ReadFile(strings.TrimSuffix(rec, ".rec") + ".out")
			if err != nil {
				t.Fatal(err)
			}
			tc.name, tc.server = name, []string{}
			run := cToolRun{evs: evs, out: string(out)}
			if p := reportProblems(tc, run); len(p) != 0 {
				t.Errorf("on the recorded run: %q", p)
			}
			more := tc
			more.posts = two(tc.posts[0], tc.posts[1]+1)
			if p := reportProblems(more, run); len(p) != 1 || !strings.Contains(p[0], "POST_SEND doorbells traced") {
				t.Errorf("expecting one POST_SEND more of the client: %q, want one problem with the doorbells", p)
			}
			if tc.ppSize == 0 {
				return
			}
			bigger := tc
			bigger.mrLen++
			if p := reportProblems(bigger, run); len(p) != 2 { // one per process
				t.Errorf("expecting %d-byte MRs: %q, want two problems", bigger.mrLen, p)
			}
			told := run
			told.out = strings.Replace(run.out, "\n5 iters in", "\n6 iters in", 1)
			if p := reportProblems(tc, told); len(p) != 2 || !strings.Contains(p[0], "6 iterations") {
				t.Errorf("with a server reporting 6 iterations: %q, want its iterations and bytes wrong", p)
			}
		})
	}
	if checked < 2*len(cases) {
		t.Errorf("%d recorded traces checked, want each of %d programs on both kernels", checked, len(cases))
	}
}
