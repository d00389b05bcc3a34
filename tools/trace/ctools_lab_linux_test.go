// Copyright 2026 The rdmago Authors.

package trace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/tools/perf"
)

// cToolRun is a traced run of a C program's server and client.
type cToolRun struct {
	recs [][]byte
	evs  []Event
	out  string // server output, "--- client\n", client output
}

// traceCTool runs server, then (after the server had time to listen,
// retrying) client, both named comm, under a tracer filtered on comm, and
// returns every record of theirs with their outputs.
func traceCTool(t *testing.T, comm string, server, client func(ctx context.Context) *exec.Cmd) cToolRun {
	t.Helper()
	return cTool{comm: comm, server: server, client: client}.trace(t)
}

// cTool is a C program run for traceCTool: a server and a client, or a
// client alone.
type cTool struct {
	comm           string // both processes' command name, the tracer's filter
	server, client func(ctx context.Context) *exec.Cmd
	// stays: the server serves until stopped (rcopy, cmtime); a second
	// after the client is done it is stopped (SIGTERM, see stop), and its
	// exit status is not checked.
	stays bool
	// timeout bounds one run of server and client (3 minutes when 0).
	timeout time.Duration
	// reset, if set, discards what a failed run left outside the trace
	// (the strace output files) before trace runs again.
	reset func()
	// rxe also attaches the rxe probes: the data path's WQEs and
	// completions (those of every user CQ: rxe_cq_post has no filter).
	rxe bool
}

// trace runs c.server (if any), then (after the server had time to
// listen, retrying) c.client, under a tracer filtered on c.comm, and
// returns every record of theirs with their outputs. A run whose client
// fails is discarded whole (its tracer closed, c.reset called, the
// server's process group killed) and run again with a fresh server:
// a server a failed client left midway through its protocol (perftest's
// -R exchange) would hang the next client. It fails after 3 runs.
func (c cTool) trace(t *testing.T) cToolRun {
	t.Helper()
	const runs = 3
	for n := 1; ; n++ {
		run, err := c.traceOnce(t)
		if err == nil {
			return run
		}
		if n == runs {
			t.Fatalf("%s: %d runs failed, the last: %v", c.comm, runs, err)
		}
		t.Logf("%s run %d of %d: %v; running server and client again", c.comm, n, runs, err)
		if c.reset != nil {
			c.reset()
		}
	}
}

// ownGroup makes cmd the leader of a process group that a cancelled
// context kills whole: killing strace alone would leave the program it
// runs detached and running, holding its QPs into the next test.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Cancel = func() error { return killGroup(cmd) }
}

// killGroup kills the process group cmd leads (ownGroup).
func killGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// traceOnce is one run of trace. It fails the test for what a new run
// would not change (the tracer, a server that fails after a good client)
// and returns the client's error for trace to run again.
func (c cTool) traceOnce(t *testing.T) (cToolRun, error) {
	t.Helper()
	comm := c.comm
	// A ring that holds a whole run's records even if the reader below
	// never got the CPU: perftest's programs make some 8,400 calls, most
	// of them ioctls of up to 2.5 KiB a record (21 MiB). With the default
	// 1 MiB, a reader that fell behind for a moment (under TCG, the
	// host's two cores busy) lost 370 of ib_write_lat's (make test,
	// 2026-11-29).
	tr := openTracer(t, Options{Comm: comm, NoRXE: !c.rxe, NoCM: true, RingBytes: 32 << 20})
	defer tr.Close() // closed again, idempotently, by openTracer's cleanup
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(c.timeout, 3*time.Minute))
	defer cancel()
	// Read while the programs run (perftest makes thousands of calls, more
	// than the ring holds): once both have exited every record of theirs
	// is in the ring (a process's last calls, closing its files, end
	// before its parent sees it exit), so the reader stops when the ring
	// has then been empty for a second.
	exited := make(chan struct{})
	type readResult struct {
		recs [][]byte
		err  error
	}
	read := make(chan readResult, 1)
	go func() {
		var r readResult
		for {
			rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
			rec, err := tr.ReadRecord(rctx)
			rcancel()
			if errors.Is(err, context.DeadlineExceeded) {
				select {
				case <-exited:
					read <- r
					return
				default:
					continue
				}
			}
			if err != nil {
				r.err = err
				read <- r
				return
			}
			r.recs = append(r.recs, rec)
		}
	}()
	stopReader := func() readResult {
		close(exited)
		return <-read
	}

	var srv *exec.Cmd
	var sout strings.Builder
	if c.server != nil {
		srv = c.server(ctx)
		srv.Stdout, srv.Stderr = &sout, &sout
		srv.WaitDelay = 5 * time.Second // a killed strace leaves its tracee holding the output
		ownGroup(srv)
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		defer killGroup(srv)
	}
	var cout []byte
	var err error
	glitched := false // the client failed perftest's timing check only
	for try := 0; ; try++ {
		if srv != nil {
			time.Sleep(2 * time.Second) // the server needs time to listen under TCG
		}
		cl := c.client(ctx)
		cl.WaitDelay = 5 * time.Second
		ownGroup(cl)
		cout, err = cl.CombinedOutput()
		glitched = err != nil && perf.PerftestGlitch(string(cout)) != ""
		err = glitchedRun(t, comm+" client", err, string(cout))
		if err == nil || try == 1 || ctx.Err() != nil { // then a new run, with a new server
			break
		}
		t.Logf("%s client try %d: %v: %s", comm, try, err, cout)
	}
	if err != nil {
		if srv != nil {
			killGroup(srv)
			srv.Wait()
		}
		stopReader()
		return cToolRun{}, fmt.Errorf("client: %w\n%s\n--- server\n%s", err, cout, sout.String())
	}
	if srv != nil {
		if c.stays {
			time.Sleep(time.Second) // its part of the client's disconnection
			stop(t, srv.Process.Pid)
			err := srv.Wait()
			t.Logf("%s server stopped: %v", comm, err)
		} else if err := glitchedRun(t, comm+" server", srv.Wait(), sout.String()); err != nil && glitched {
			// The client gave up before the exchange that ends the
			// run ("Failed to exchange data between server and
			// clients"): the server's calls were made all the same.
			t.Logf("%s server: %v after its client failed its timing check; its calls are checked as made", comm, err)
		} else if err != nil {
			t.Fatalf("%s server: %v\n%s", comm, err, sout.String())
		}
	}

	run := cToolRun{out: sout.String() + "--- client\n" + string(cout)}
	r := stopReader()
	if r.err != nil {
		t.Fatal(r.err)
	}
	for _, rec := range r.recs {
		e, err := DecodeEvent(rec)
		if err != nil {
			t.Fatal(err)
		}
		run.recs = append(run.recs, rec)
		run.evs = append(run.evs, e)
	}
	if ring, infl, err := tr.Lost(); err != nil || ring+infl != 0 {
		t.Errorf("lost %d+%d events, %v", ring, infl, err)
	}
	lines := goldenLines(run.evs)
	if len(lines) > 400 { // perftest's thousands of queries
		lines = append(lines[:400:400], fmt.Sprintf("... %d more", len(lines)-400))
	}
	t.Logf("%s: %d events:\n  %s", comm, len(run.evs), strings.Join(lines, "\n  "))
	t.Logf("%s printed:\n%s", comm, run.out)
	return run, nil
}

// stop sends SIGTERM to the children of process pid, the program strace
// runs, or to pid itself when it has none. Stopping strace instead would
// leave the program running detached, its call blocked in the kernel
// (rdma_get_cm_event's write) shown by strace as unfinished and never
// returning for the tracer to see.
func stop(t *testing.T, pid int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		t.Fatal(err)
	}
	kids := strings.Fields(string(b))
	if len(kids) == 0 {
		kids = []string{fmt.Sprint(pid)}
	}
	for _, k := range kids {
		n, err := strconv.Atoi(k)
		if err != nil {
			t.Fatalf("pid %d's children %q: %v", pid, b, err)
		}
		if err := syscall.Kill(n, syscall.SIGTERM); err != nil {
			t.Errorf("stop pid %d: %v", n, err)
		}
	}
}

// glitchedRun returns nil for a perftest program that failed only its own
// timing check when it reported (perf.PerftestGlitch): its run happened and
// its calls were made and traced; only its figures are lost (retrying the
// client would find its server gone). Any other error is returned as is.
func glitchedRun(t testing.TB, who string, err error, out string) error {
	if err != nil {
		if g := perf.PerftestGlitch(out); g != "" {
			t.Logf("%s: %v after its run: %q, perftest's own timing check (a known glitch under TCG); its calls are checked as made", who, err, g)
			return nil
		}
	}
	return err
}

// saveGolden writes the run into -rdmatrace.golden's directory as
// NAME-<kernel major.minor>.{rec,out,txt}.
func saveGolden(t *testing.T, name string, run cToolRun) {
	t.Helper()
	if *goldenDir == "" {
		return
	}
	rel := strings.SplitN(kernelRelease(), ".", 3)
	base := filepath.Join(*goldenDir, fmt.Sprintf("%s-%s.%s", name, rel[0], rel[1]))
	if err := os.MkdirAll(*goldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeGoldenRecords(base+".rec", run.recs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".out", []byte(run.out), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".txt", []byte(strings.Join(goldenLines(run.evs), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s.{rec,out,txt}", base)
}

// TestLabPingpong traces rdma-core's ibv_*_pingpong programs (server and
// client on this node): the QPs the trace shows created, moved to RTR and
// rung must be those the programs print.
func TestLabPingpong(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "server and client on this node's address")
	for i, tc := range []struct {
		prog string
		args []string
	}{
		{"ibv_rc_pingpong", nil},
		{"ibv_uc_pingpong", nil},
		{"ibv_ud_pingpong", []string{"-s", "512"}},
		{"ibv_srq_pingpong", []string{"-q", "2"}},
	} {
		t.Run(tc.prog, func(t *testing.T) {
			port := fmt.Sprint(18515 + os.Getpid()%1000 + 10*i)
			args := append([]string{"-d", env.Dev, "-g", "1", "-p", port, "-n", "5"}, tc.args...)
			comm := tc.prog[:min(len(tc.prog), commLen-1)] // the kernel keeps 15 bytes
			run := traceCTool(t, comm,
				func(ctx context.Context) *exec.Cmd { return labtest.HostTool(t, ctx, tc.prog, args...) },
				func(ctx context.Context) *exec.Cmd {
					return labtest.HostTool(t, ctx, tc.prog, append(args, env.Addr)...)
				})
			checkNamed(t, tc.prog, run.evs)
			checkPingpong(t, run.evs, run.out, tc.prog != "ibv_ud_pingpong")
			saveGolden(t, tc.prog, run)
		})
	}
}

// TestLabRpingDecoded traces rdma-core's rping: the QPs created must be
// those CONNECT and ACCEPT carry.
func TestLabRpingDecoded(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "server and client on this node's address")
	port := fmt.Sprint(20000 + os.Getpid()%20000)
	run := traceCTool(t, "rping",
		func(ctx context.Context) *exec.Cmd {
			return labtest.HostTool(t, ctx, "rping", "-s", "-a", env.Addr, "-p", port, "-C", "2")
		},
		func(ctx context.Context) *exec.Cmd {
			return labtest.HostTool(t, ctx, "rping", "-c", "-a", env.Addr, "-p", port, "-C", "2", "-v")
		})
	checkNamed(t, "rping", run.evs)
	checkRping(t, run.evs)
	saveGolden(t, "rping", run)
}
