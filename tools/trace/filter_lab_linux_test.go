// Copyright 2026 The rdmago Authors.

package trace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// waitFor polls until cond holds or d passes; it reports whether cond held.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// watchRun is Watch running in a goroutine.
type watchRun struct {
	stdout, stderr labtest.Buffer
	cancel         context.CancelFunc
	done           chan error
}

// startWatch starts Watch(o) and waits until its probes are attached.
func startWatch(t *testing.T, o WatchOptions) *watchRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &watchRun{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- Watch(ctx, o, &w.stdout, &w.stderr) }()
	t.Cleanup(func() { w.stop(t) })
	if !waitFor(2*time.Minute, func() bool { return strings.Contains(w.stderr.String(), "rdmatrace: tracing") }) {
		t.Fatalf("Watch did not start:\n%s", w.stderr.String())
	}
	return w
}

// stop ends Watch and returns what it wrote to stdout.
func (w *watchRun) stop(t *testing.T) string {
	t.Helper()
	if w.cancel != nil {
		w.cancel()
		w.cancel = nil
		if err := <-w.done; err != nil {
			t.Errorf("Watch: %v\n%s", err, w.stderr.String())
		}
		t.Logf("rdmatrace stderr:\n%s", w.stderr.String())
	}
	return w.stdout.String()
}

// rxeLine is a line of the section; the owner column is optional (it
// was not there before the counts were tied to processes).
var rxeLine = regexp.MustCompile(`(?m)^  (rxe_\w+(?: \(error status\))?)\s+qpn (\d+|\?)\s+(?:(\S+)\s+)?(\d+)$`)

// rxeSection parses the "rxe data path" lines Watch wrote: hits per QPN
// (QPNUnknown for "qpn ?") and the owner shown for each.
func rxeSection(t *testing.T, out string) (hits map[uint32]uint64, owners map[uint32]string) {
	t.Helper()
	_, sec, ok := strings.Cut(out, "rxe data path (probe hits):\n")
	if !ok {
		t.Fatalf("no rxe data path section in:\n%s", out)
	}
	hits, owners = map[uint32]uint64{}, map[uint32]string{}
	for _, m := range rxeLine.FindAllStringSubmatch(sec, -1) {
		qpn := uint32(QPNUnknown)
		if m[2] != "?" {
			n, _ := strconv.ParseUint(m[2], 10, 32)
			qpn = uint32(n)
		}
		n, _ := strconv.ParseUint(m[4], 10, 64)
		hits[qpn] += n
		owners[qpn] = m[3]
	}
	return hits, owners
}

// pingpongProc is one ibv_*_pingpong process with its output.
type pingpongProc struct {
	cmd    *exec.Cmd
	out    labtest.Buffer
	exited chan struct{} // closed when it has exited; then err is its status
	err    error
}

// state says whether p still runs.
func (p *pingpongProc) state() string {
	select {
	case <-p.exited:
		return fmt.Sprintf("exited: %v", p.err)
	default:
		return "running"
	}
}

// kill ends p and waits for it.
func (p *pingpongProc) kill() {
	p.cmd.Process.Kill()
	<-p.exited
}

// startPingpong starts prog's server and client (ports port, this node's
// address), iters round trips each, waiting for completions (-e) rather
// than spinning; they are killed when the test ends.
func startPingpong(t *testing.T, env labtest.Env, prog string, port, iters int) (server, client *pingpongProc) {
	t.Helper()
	args := []string{"-d", env.Dev, "-g", "1", "-p", fmt.Sprint(port), "-n", fmt.Sprint(iters), "-e"}
	start := func(args ...string) *pingpongProc {
		// Line-buffered: the QPNs are printed before the program ends.
		p := &pingpongProc{cmd: labtest.HostTool(t, context.Background(), "stdbuf", append([]string{"-oL", prog}, args...)...), exited: make(chan struct{})}
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatalf("%s: %v", prog, err)
		}
		go func() { p.err = p.cmd.Wait(); close(p.exited) }()
		t.Cleanup(p.kill)
		return p
	}
	server = start(args...)
	time.Sleep(time.Second) // the server listens for the client's TCP exchange
	for try := 0; ; try++ {
		client = start(append(args, env.Addr)...)
		if waitFor(20*time.Second, func() bool { return strings.Contains(client.out.String(), "remote address") }) {
			break
		}
		client.kill()
		if try == 4 {
			t.Fatalf("%s client did not connect:\n%s\nserver (%s):\n%s", prog, client.out.String(), server.state(), server.out.String())
		}
	}
	if !waitFor(30*time.Second, func() bool { return strings.Contains(server.out.String(), "remote address") }) {
		t.Fatalf("%s server (%s) did not connect:\n%s", prog, server.state(), server.out.String())
	}
	return server, client
}

// localQPN is the QPN p printed as its own.
func (p *pingpongProc) localQPN(t *testing.T) uint32 {
	t.Helper()
	local, _, err := pingpongQPNs(p.out.String())
	if err != nil {
		t.Fatal(err)
	}
	return uint32(local[0])
}

// TestLabRXEFilter runs two ibv_*_pingpong pairs at once and traces with a
// -p or -c filter: the rxe data-path section must count the QPs of the
// filtered processes (the QPNs they print) and none of the others'. Once
// with every QP created before tracing starts (their owners come from RDMA
// netlink), once with them created while tracing (from the create events).
func TestLabRXEFilter(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "both pingpong pairs on this node's address")
	port := 18515 + os.Getpid()%1000

	check := func(t *testing.T, out string, want, notWant map[string]uint32) {
		t.Helper()
		hits, owners := rxeSection(t, out)
		t.Logf("rxe hits per QPN %v, owners %v", hits, owners)
		for who, qpn := range want {
			if hits[qpn] == 0 {
				t.Errorf("no rxe hits counted for QPN %d (%s, filtered in)", qpn, who)
			}
		}
		for who, qpn := range notWant {
			if hits[qpn] != 0 {
				t.Errorf("%d rxe hits counted for QPN %d (%s, filtered out) under owner %s", hits[qpn], qpn, who, owners[qpn])
			}
		}
		if hits[QPNUnknown] != 0 {
			t.Errorf("%d hits of unknown QPN counted under a filter", hits[QPNUnknown])
		}
	}

	t.Run("created before tracing, -p", func(t *testing.T) {
		// The probes are patched into the kernel's text before the traffic
		// starts, by a tracer that records nothing and outlives the pairs:
		// Watch's own probes then join them without patching. Attaching
		// the first probes while rxe was busy crashed the TCG lab's 6.1
		// once (a NULL call from rxe_post_send) and, with fentry, 6.12.
		// Watch finds the QPs moving and takes kprobes (not fentry), so
		// the keeper takes kprobes too.
		keep, err := New(Options{Comm: "rdmatrace-keep", RXEKprobes: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { keep.Close() })
		sa, ca := startPingpong(t, env, "ibv_rc_pingpong", port, 1_000_000)
		sb, cb := startPingpong(t, env, "ibv_rc_pingpong", port+1, 1_000_000)
		w := startWatch(t, WatchOptions{Options: Options{PID: sa.cmd.Process.Pid}, Summary: true, Quiet: true})
		time.Sleep(4 * time.Second)
		out := w.stop(t)
		t.Logf("rdmatrace -p %d --summary:\n%s", sa.cmd.Process.Pid, out)
		check(t, out, map[string]uint32{"server A": sa.localQPN(t)}, map[string]uint32{
			"client A": ca.localQPN(t), "server B": sb.localQPN(t), "client B": cb.localQPN(t),
		})
		if !strings.Contains(out, "of other processes") {
			t.Errorf("no note of the other processes' hits left out")
		}
	})

	t.Run("created while tracing, -c", func(t *testing.T) {
		w := startWatch(t, WatchOptions{Options: Options{Comm: "ibv_uc_pingpong"}, Summary: true, Quiet: true})
		sa, ca := startPingpong(t, env, "ibv_uc_pingpong", port+2, 1_000_000)
		sb, cb := startPingpong(t, env, "ibv_rc_pingpong", port+3, 1_000_000)
		time.Sleep(3 * time.Second)
		// Gone before the counts are read: the owners come from the create events.
		for _, p := range []*pingpongProc{sa, ca, sb, cb} {
			p.kill()
		}
		out := w.stop(t)
		t.Logf("rdmatrace -c ibv_uc_pingpong --summary:\n%s", out)
		check(t, out, map[string]uint32{"server A": sa.localQPN(t), "client A": ca.localQPN(t)},
			map[string]uint32{"server B": sb.localQPN(t), "client B": cb.localQPN(t)})
	})
}

var (
	postSendLine = regexp.MustCompile(`(?m)^\S+ ibv_rc_pingpong\[(\d+)\] uverbs\S* POST_SEND `)
	lostPostSend = regexp.MustCompile(`rdmatrace: lost (\d+) events \(ring buffer full[^)]*?uverbs POST_SEND (\d+)`)
)

// TestLabLineModeLoss traces an ibv_rc_pingpong pair doing 20,000 round
// trips each (20,000 POST_SEND doorbells per process) in line mode: the
// POST_SEND lines printed plus the POST_SEND events the tracer says it lost
// must be exactly the 40,000 posts.
func TestLabLineModeLoss(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "server and client on this node's address")
	const iters = 20_000
	w := startWatch(t, WatchOptions{Options: Options{Comm: "ibv_rc_pingpong"}, Quiet: true})
	s, c := startPingpong(t, env, "ibv_rc_pingpong", 18515+os.Getpid()%1000+7, iters)
	for _, p := range []*pingpongProc{s, c} {
		select {
		case <-p.exited:
		case <-time.After(5 * time.Minute):
			t.Fatalf("ibv_rc_pingpong did not finish %d iterations in 5 minutes:\n%s", iters, p.out.String())
		}
		if p.err != nil || !strings.Contains(p.out.String(), fmt.Sprintf("%d iters in", iters)) {
			t.Fatalf("ibv_rc_pingpong: %v\n%s", p.err, p.out.String())
		}
	}
	out := w.stop(t)
	perPID := map[string]int{}
	for _, m := range postSendLine.FindAllStringSubmatch(out, -1) {
		perPID[m[1]]++
	}
	received := perPID[fmt.Sprint(s.cmd.Process.Pid)] + perPID[fmt.Sprint(c.cmd.Process.Pid)]
	lost := 0
	if m := lostPostSend.FindStringSubmatch(w.stderr.String()); m != nil {
		lost, _ = strconv.Atoi(m[2])
	} else if strings.Contains(w.stderr.String(), "rdmatrace: lost") {
		t.Errorf("a loss reported without its POST_SEND count:\n%s", w.stderr.String())
	}
	t.Logf("POST_SEND lines per pid %v (server %d, client %d); %d reported lost; %d lines in all",
		perPID, s.cmd.Process.Pid, c.cmd.Process.Pid, lost, strings.Count(out, "\n"))
	if received+lost != 2*iters {
		t.Errorf("%d POST_SEND lines + %d reported lost = %d, want the %d posts", received, lost, received+lost, 2*iters)
	}
}
