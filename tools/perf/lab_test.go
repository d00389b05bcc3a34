// Copyright 2026 The rdmago Authors.

package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
)

// Lab tests: rdmaperf's client and server against each other on the lab's
// rxe device, in one process over loopback (one node) or across the wire
// (two nodes: node 0 serves, node 1 is the client). They check that the
// figures are sane and the counters consistent, never how fast anything is.
//
//	go run ./cmd/rdmalab test ./tools/perf
//	go run ./cmd/rdmalab test --nodes 2 ./tools/perf

// rdmaperfEnv makes the test binary run rdmaperf with the arguments it holds
// (see TestMain): client and server run as processes of their own, as
// rdmaperf does, so the per-process counters see only their own loop.
const rdmaperfEnv = "RDMAPERF_TEST_ARGS"

func TestMain(m *testing.M) {
	if a := os.Getenv(rdmaperfEnv); a != "" {
		os.Exit(rdmaperfMain(strings.Split(a, "\x1f")))
	}
	os.Exit(m.Run())
}

func rdmaperfMain(args []string) int {
	cfg, err := ParseArgs(args, os.Stderr)
	if err == nil {
		err = Run(context.Background(), cfg, os.Stdout, os.Stderr)
	}
	if err != nil {
		os.Stderr.WriteString("rdmaperf: " + err.Error() + "\n")
		if notListening(err) {
			return 75 // the client came before the server: try again
		}
		return 1
	}
	return 0
}

// rdmaperf runs one rdmaperf process and returns its stdout.
func rdmaperf(ctx context.Context, args []string) ([]byte, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self)
	// With RDMAPERF_ALLOCTRACE=1 in the environment a loop that allocates
	// says where on stderr, which the test passes on.
	cmd.Env = append(os.Environ(), rdmaperfEnv+"="+strings.Join(args, "\x1f"))
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	if strings.Contains(stderr.String(), "during the measured loop") {
		os.Stderr.Write(stderr.Bytes())
	}
	if err != nil {
		return out.Bytes(), &procError{err: err, stderr: stderr.String()}
	}
	return out.Bytes(), nil
}

type procError struct {
	err    error
	stderr string
}

func (e *procError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.stderr) }

// retryable reports a client that found no server listening yet.
func retryable(err error) bool {
	var pe *procError
	var ee *exec.ExitError
	return errors.As(err, &pe) && errors.As(pe.err, &ee) && ee.ExitCode() == 75
}

// pairRun runs args as server and client and returns their reports. With two
// nodes, node 0 serves (and gets no client report) and node 1 is the client.
func pairRun(t *testing.T, e labtest.Env, port int, args ...string) (client, server *Report) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args = append(args, "--json", "-p", strconv.Itoa(port), "--timeout", "150s")
	two := os.Getenv("RDMALAB_NODES") == "2"
	type res struct {
		out []byte
		err error
	}
	srv := make(chan res, 1)
	if !two || e.Node == "0" {
		go func() {
			out, err := rdmaperf(ctx, args)
			srv <- res{out, err}
		}()
	}
	if !two || e.Node != "0" {
		var out []byte
		var err error
		for try := 0; ; try++ {
			out, err = rdmaperf(ctx, append(args, e.Peer))
			if err == nil || try == 60 || !retryable(err) {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		client = decodeReport(t, out)
	}
	if !two || e.Node == "0" {
		r := <-srv
		if r.err != nil {
			t.Fatalf("server: %v", r.err)
		}
		server = decodeReport(t, r.out)
	}
	return client, server
}

// notListening reports a client that came before its server.
func notListening(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, cm.ErrNoListener) || errors.Is(err, cm.ErrRejected)
}

func decodeReport(t *testing.T, b []byte) *Report {
	t.Helper()
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("--json output: %v\n%s", err, b)
	}
	if os.Getenv("GOMAXPROCS") == "" && r.Procs != 1 {
		t.Errorf("%s %s ran with GOMAXPROCS %d, want 1 (loopProcs)", r.Test, r.Role, r.Procs)
	}
	return &r
}

// background is how many allocations and read/write-class system calls of
// the process's other goroutines a loop may see: the counters are per
// process, and the Go runtime's finalizers, timers and the control
// channel's reader occasionally run during a loop. Anything per operation
// would be hundreds here (the loops run 100 to 400 operations).
const background = 16

// checkCounters: one doorbell per post, no allocation and no read-class
// system call per operation (polling is a memory read), and no write but
// the doorbells.
func checkCounters(t *testing.T, r *SizeResult, wantBells uint64) {
	t.Helper()
	if r.Doorbells != wantBells {
		t.Errorf("%d bytes: %d doorbells, want %d (one per post)", r.Bytes(), r.Doorbells, wantBells)
	}
	checkLoopCounters(t, r)
}

func checkLoopCounters(t *testing.T, r *SizeResult) {
	t.Helper()
	c := r.Counters
	if c == nil {
		t.Fatalf("%d bytes: no counters", r.Bytes())
	}
	if c.Mallocs > background {
		t.Errorf("%d bytes: %d heap allocations in a loop of %d operations: the data path allocates (RDMAPERF_ALLOCTRACE=1 says where)", r.Bytes(), c.Mallocs, r.Ops)
	}
	if c.WriteCalls < r.Doorbells || c.WriteCalls > r.Doorbells+background {
		t.Errorf("%d bytes: %d write(2)-class calls for %d doorbells", r.Bytes(), c.WriteCalls, r.Doorbells)
	}
	if c.ReadCalls > background {
		t.Errorf("%d bytes: %d read(2)-class calls in the loop (%d polls): polling must not make system calls", r.Bytes(), c.ReadCalls, r.Polls)
	}
}

// Bytes is the size, for messages.
func (r *SizeResult) Bytes() int { return r.Size }

func TestLabWriteBW(t *testing.T) {
	e := labtest.Require(t)
	const n = 400
	c, s := pairRun(t, e, 18610, "write_bw", "-s", "4096", "-n", strconv.Itoa(n))
	if c == nil {
		return // node 0 of two served
	}
	if c.Test != "write_bw" || c.Role != "client" || c.Transport != "tcp" || len(c.Results) != 1 {
		t.Fatalf("report %+v", c)
	}
	r := c.Results[0]
	bw := r.BW
	if bw == nil || bw.Size != 4096 || bw.Iters != n || r.Ops != n || r.Posts != n {
		t.Fatalf("result %+v, bw %+v", r, bw)
	}
	if !(bw.Average > 0) || bw.Peak < bw.Average || !(bw.MsgRate > 0) {
		t.Errorf("figures: peak %v avg %v MB/s, %v Mpps", bw.Peak, bw.Average, bw.MsgRate)
	}
	// MB/s and Mpps describe the same run.
	if got := bw.MsgRate * 4096 * 1e6 / mbFactor; !near2(got, bw.Average) {
		t.Errorf("msg rate %v Mpps x 4 KiB = %v MB/s, average says %v", bw.MsgRate, got, bw.Average)
	}
	if r.Polls == 0 {
		t.Error("no polls counted")
	}
	checkCounters(t, r, n)
	if s != nil && (len(s.Peer) != 1 || s.Peer[0].BW == nil || s.Peer[0].BW.Average != bw.Average) {
		t.Errorf("the server should have printed the client's result: %+v", s.Peer)
	}
}

func near2(a, b float64) bool { return a > 0 && b > 0 && a/b > 0.999 && a/b < 1.001 }

func TestLabWriteLat(t *testing.T) {
	e := labtest.Require(t)
	const n = 300
	c, s := pairRun(t, e, 18620, "write_lat", "-n", strconv.Itoa(n))
	if c == nil {
		return
	}
	if len(c.Results) != 1 || c.Results[0].Lat == nil {
		t.Fatalf("report %+v", c)
	}
	r := c.Results[0]
	l := r.Lat
	if l.Size != 2 || l.Iters != n || r.Ops != n {
		t.Errorf("%d bytes, %d iterations, %d ops; want 2 bytes, %d", l.Size, l.Iters, r.Ops, n)
	}
	if !(l.Min > 0) || l.Typical < l.Min || l.Max < l.Typical || l.Avg < l.Min || l.P99 < l.Typical || l.P999 < l.P99 || l.Stdev < 0 {
		t.Errorf("inconsistent latency figures %+v", l)
	}
	checkCounters(t, r, n)
	if s != nil {
		// The server ping-pongs too and measures its own side.
		if len(s.Results) != 1 || s.Results[0].Lat == nil || s.Results[0].Lat.Iters != n || s.Results[0].Ops != n {
			t.Errorf("server report %+v", s.Results)
		}
	}
}

func TestLabPostList(t *testing.T) {
	e := labtest.Require(t)
	c, _ := pairRun(t, e, 18630, "write_bw", "-s", "64", "-n", "400", "-l", "8", "-t", "64")
	if c == nil {
		return
	}
	r := c.Results[0]
	if r.Ops != 400 || r.Posts != 50 {
		t.Errorf("%d requests in %d posts, want 400 in 50 lists of 8", r.Ops, r.Posts)
	}
	checkCounters(t, r, 50) // one doorbell per list
}

func TestLabOtherTests(t *testing.T) {
	e := labtest.Require(t)
	for i, tc := range []struct {
		args []string
		lat  bool
	}{
		{args: []string{"send_bw", "-s", "1024", "-n", "200"}},
		{args: []string{"read_bw", "-s", "8192", "-n", "100", "-q", "2"}},
		{args: []string{"write_bw", "-s", "4096", "-n", "100", "-R", "-q", "2"}},
		{args: []string{"send_lat", "-n", "100"}, lat: true},
		{args: []string{"read_lat", "-s", "64", "-n", "100"}, lat: true},
		{args: []string{"atomic_lat", "-n", "100", "-A", "CMP_AND_SWAP", "-R"}, lat: true},
		{args: []string{"atomic_bw", "-n", "100"}},
		// -D latency runs: the client's "done" may reach the server while
		// it waits for the completion of its last write (a race once seen
		// in CI with two nodes); the server must end cleanly.
		{args: []string{"write_lat", "-D", "1"}, lat: true},
		{args: []string{"send_lat", "-D", "1"}, lat: true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			c, _ := pairRun(t, e, 18640+i, tc.args...)
			if c == nil {
				return
			}
			if len(c.Results) != 1 {
				t.Fatalf("%d results", len(c.Results))
			}
			r := c.Results[0]
			if tc.lat {
				if r.Lat == nil || !(r.Lat.Avg > 0) || r.Lat.Iters == 0 {
					t.Errorf("latency %+v", r.Lat)
				}
			} else if r.BW == nil || !(r.BW.Average > 0) || r.BW.Iters == 0 {
				t.Errorf("bandwidth %+v", r.BW)
			}
			if r.Doorbells != r.Posts {
				t.Errorf("%d doorbells for %d posts", r.Doorbells, r.Posts)
			}
			checkLoopCounters(t, r)
		})
	}
}

func TestLabConnTime(t *testing.T) {
	e := labtest.Require(t)
	c, _ := pairRun(t, e, 18660, "conn_time", "-n", "4")
	if c == nil {
		return
	}
	if len(c.Results) != 1 || c.Results[0].Conn == nil {
		t.Fatalf("report %+v", c)
	}
	s := c.Results[0].Conn
	if s.N != 4 || !(s.Min > 0) || s.Max < s.Median || s.Median < s.Min {
		t.Errorf("connection setup times %+v", s)
	}
}
