// Copyright 2026 The rdmago Authors.

package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
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
	tr := openTracer(t, Options{Comm: comm, NoRXE: true, NoCM: true})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	srv := server(ctx)
	var sout strings.Builder
	srv.Stdout, srv.Stderr = &sout, &sout
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	var cout []byte
	var err error
	for try := 0; ; try++ {
		time.Sleep(2 * time.Second) // the server needs time to listen under TCG
		cout, err = client(ctx).CombinedOutput()
		if err == nil || try == 4 {
			break
		}
		t.Logf("%s client try %d: %v: %s", comm, try, err, cout)
	}
	if err != nil {
		t.Fatalf("%s client: %v\n%s", comm, err, cout)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("%s server: %v\n%s", comm, err, sout.String())
	}

	run := cToolRun{out: sout.String() + "--- client\n" + string(cout)}
	// Both programs have exited, so every record of theirs is in the ring
	// (a process's last calls, closing its files, end before its parent
	// sees it exit): read until the ring has been empty for a second.
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), time.Second)
		rec, err := tr.ReadRecord(rctx)
		rcancel()
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
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
	t.Logf("%s: %d events:\n  %s", comm, len(run.evs), strings.Join(lines, "\n  "))
	t.Logf("%s printed:\n%s", comm, run.out)
	return run
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
