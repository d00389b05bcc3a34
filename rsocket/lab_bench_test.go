// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// The rstream comparison: rstream's custom test (run_test: a sync, then
// COUNT transfers of SIZE bytes from the client and COUNT back, ITERS
// times) between every pair of peers, alternating, in one lab node (rxe
// loops back to the node's own address) or across two (server on node 0,
// client on node 1, RoCEv2 over the emulated wire between the VMs).
// rstream runs with -T b (blocking calls; its default spins on
// MSG_DONTWAIT) and sets SO_SNDBUF and SO_RCVBUF to 512 KiB, which
// rsockets double: the Go rsockets get 1 MiB rings to match, Go's TCP
// sockets 512 KiB buffers. Blocking rsockets in C poll the CQ for 10 µs
// (polling_time) before they sleep; Go's poll only when Options.PollTime
// asks, which the "poll" peers set to the same 10 µs.
const (
	benchSockBuf   = 512 << 10
	benchLatSize   = 64
	benchRunLimit  = 3 * time.Minute // one run, either side: a peer gone on the other node ends the wait
	benchServerEnv = "RSOCKET_BENCH_SERVER"
	benchClientEnv = "RSOCKET_BENCH_CLIENT"
)

// benchCase is one of a round's runs of a pair: a bandwidth case moves
// count transfers of size bytes each way once (iters 1), the latency case
// makes iters round trips of benchLatSize bytes (count 1).
type benchCase struct {
	name               string
	size, count, iters int
	lat                bool
}

// benchCases: bandwidth in 64 KiB and in 1 MiB transfers, bw bytes each
// way, and lat round trips of 64 B. Across two VMs a run moves half as
// much: each VM has one vCPU there, and a round of 10 pairs is then about
// 50 s on 6.1 (7 rounds: 6 minutes with the boot); one VM's round of 12
// pairs about 60 s.
func benchCases(twoNodes bool) []benchCase {
	// 1,000 round trips: with 200 a Go end's first ones (up to twice as
	// slow for its first 20, read as its code being paged in from the
	// lab's shared directory) weighed on the figure
	// (docs/performance.md).
	bw, lat := 32<<20, 1000 // one VM: 64 MiB moved per bandwidth run
	if twoNodes {
		bw = 16 << 20
	}
	return []benchCase{
		{"64 KiB", 64 << 10, bw / (64 << 10), 1, false},
		{"1 MiB", 1 << 20, bw / (1 << 20), 1, false},
		{"64 B round trip", benchLatSize, 1, lat, true},
	}
}

func benchOptions(p benchPeer) Options {
	o := Options{SendBuffer: 2 * benchSockBuf, RecvBuffer: 2 * benchSockBuf}
	if p.poll {
		o.PollTime = 10 * time.Microsecond
	}
	return o
}

// benchPeer is one end of a pair: rstream (C) or Go, over rsockets or TCP.
type benchPeer struct {
	c     bool // rstream
	tcp   bool // sockets (rstream -T s; package net)
	poll  bool // Go: Options.PollTime 10 µs
	sleep bool // C: polling_time 0 (rsockets' config file): sleep at once, as Go's do by default
	proc  bool // Go server, one node: in a process of its own (this test binary run again), as rstream's are
}

func (p benchPeer) String() string {
	s := map[bool]string{true: "C rstream", false: "Go"}[p.c]
	var how []string
	switch {
	case p.tcp:
		return s + " TCP"
	case p.poll:
		how = append(how, "poll 10 µs")
	case p.sleep:
		how = append(how, "polling_time 0")
	}
	if p.proc {
		how = append(how, "own process")
	}
	if len(how) > 0 {
		s += " (" + strings.Join(how, ", ") + ")"
	}
	return s
}

type benchPair struct{ server, client benchPeer }

func (p benchPair) String() string { return p.client.String() + " → " + p.server.String() }

// benchPairs: C rsockets with themselves, Go's with themselves, each way
// between them (Go without and with polling), TCP on the same netdev, C
// and Go, C rsockets that sleep at once (polling_time 0), which is what
// Go's do by default, and (one node only) Go to Go with the server in a
// second process, as C to C always is.
var benchPairs = []benchPair{
	{benchPeer{c: true}, benchPeer{c: true}},
	{benchPeer{}, benchPeer{}},
	{benchPeer{c: true}, benchPeer{}},
	{benchPeer{}, benchPeer{c: true}},
	{benchPeer{poll: true}, benchPeer{poll: true}},
	{benchPeer{c: true}, benchPeer{poll: true}},
	{benchPeer{poll: true}, benchPeer{c: true}},
	{benchPeer{c: true, tcp: true}, benchPeer{c: true, tcp: true}},
	{benchPeer{tcp: true}, benchPeer{tcp: true}},
	{benchPeer{c: true, sleep: true}, benchPeer{c: true, sleep: true}},
	{benchPeer{proc: true}, benchPeer{}},
	{benchPeer{poll: true, proc: true}, benchPeer{poll: true}},
}

// benchLikePairs are the like-against-like comparisons the table ends
// with: Go's rsockets against C's waiting the same way.
var benchLikePairs = []struct{ goPair, cPair benchPair }{
	{benchPairs[1], benchPairs[9]},  // both sleep at once
	{benchPairs[10], benchPairs[9]}, // the same, Go in two processes
	{benchPairs[4], benchPairs[0]},  // both poll 10 µs
	{benchPairs[11], benchPairs[0]}, // the same, Go in two processes
}

// rsocketsConf is where librdmacm reads its settings (RS_CONF_DIR: the
// Debian package's sysconfdir), each once per process.
const rsocketsConf = "/etc/rdma/rsocket"

// setPollingTime writes librdmacm's polling_time (µs) for the rstream
// processes started next, where they read it, and returns the function
// that undoes it. In the lab rstream runs chrooted in the host's root
// (labtest.HostTool), read-only there: the file goes on a tmpfs mounted
// over that root's /etc/rdma for the while (writing it in the test's own
// root, as this did at first, changed nothing for rstream). The file is
// then read back through the tool's root, so a setting rstream cannot see
// fails the bench.
func setPollingTime(b *testing.B, ctx context.Context, us int) (restore func() error, err error) {
	// Commands run where rstream does: its root, environment and
	// directory (the tools named by path inside that root).
	probe := cTool(b, ctx, false, "rstream")
	inRoot := func(path string, args ...string) *exec.Cmd {
		c := exec.CommandContext(ctx, path, args...)
		c.SysProcAttr, c.Dir, c.Env = probe.SysProcAttr, probe.Dir, probe.Env
		return c
	}
	root := "/" // rstream's root as the test sees it
	if _, err := os.Stat(probe.Path); err != nil {
		root = "/host" // not in the test's root: labtest.HostTool chroots into the host's
	}
	var undo []func() error
	restore = func() error {
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, undo[i]())
		}
		return errors.Join(errs...)
	}
	if root != "/" {
		etcRDMA := filepath.Dir(rsocketsConf)
		if out, err := inRoot("/bin/mount", "-t", "tmpfs", "rsocket-bench", etcRDMA).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("mount a tmpfs over %s in rstream's root: %v: %s", etcRDMA, err, out)
		}
		undo = append(undo, func() error {
			if out, err := inRoot("/bin/umount", etcRDMA).CombinedOutput(); err != nil {
				return fmt.Errorf("umount %s in rstream's root: %v: %s", etcRDMA, err, out)
			}
			return nil
		})
	}
	name := filepath.Join(root, rsocketsConf, "polling_time")
	old, rerr := os.ReadFile(name)
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return nil, errors.Join(err, restore())
	}
	if err := os.WriteFile(name, []byte(strconv.Itoa(us)+"\n"), 0o644); err != nil {
		return nil, errors.Join(err, restore())
	}
	undo = append(undo, func() error {
		if rerr == nil {
			return os.WriteFile(name, old, 0o644)
		}
		return os.Remove(name)
	})
	got, err := inRoot("/bin/cat", filepath.Join(rsocketsConf, "polling_time")).Output()
	if err != nil || strings.TrimSpace(string(got)) != strconv.Itoa(us) {
		return nil, errors.Join(fmt.Errorf("rstream's root does not see polling_time %d (it reads %q: %v)", us, got, err), restore())
	}
	return restore, nil
}

// rstreamTime reads the client's figure from rstream's output (its
// show_perf line: name size xfers iters total time Gb/sec usec/xfer) as
// the total time: usec/xfer × 2 × count × iters (the time column has
// only 10 ms resolution).
func rstreamTime(out []byte, count, iters int) (time.Duration, error) {
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 8 || f[0] != "custom" {
			continue
		}
		us, err := strconv.ParseFloat(f[7], 64)
		if err != nil {
			break
		}
		return time.Duration(us * float64(2*count*iters) * float64(time.Microsecond)), nil
	}
	return 0, fmt.Errorf("no result line in rstream's output:\n%s", out)
}

// benchRun runs case bc of pair p on port: with one node both sides here,
// with two only this node's (node 0 serves, node 1 is the client), the
// client dialing again while nothing listens yet. It returns the client's
// time (0 on the serving node of two).
func benchRun(b *testing.B, ctx context.Context, e labtest.Env, p benchPair, port string, bc benchCase) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, benchRunLimit)
	defer cancel()
	serves, measures := !e.TwoNodes || e.Server(), !e.TwoNodes || !e.Server()
	args := []string{"-S", strconv.Itoa(bc.size), "-C", strconv.Itoa(bc.count), "-I", strconv.Itoa(bc.iters), "-T", "b", "-p", port}
	if p.server.tcp {
		args = append(args, "-T", "s")
	}
	// Each node sets polling_time for the rstream it runs.
	if (serves && p.server.sleep) || (measures && p.client.sleep) {
		restore, err := setPollingTime(b, ctx, 0)
		if err != nil {
			return 0, fmt.Errorf("set librdmacm's polling_time: %w", err)
		}
		defer restore()
	}
	// The server side, started first; done gives its error.
	done := make(chan error, 1)
	var sout bytes.Buffer
	switch {
	case !serves:
		done <- nil
	case p.server.c || p.server.proc:
		var cmd *exec.Cmd
		if p.server.c {
			cmd = cTool(b, ctx, false, "rstream", append(args, "-b", e.Addr)...)
		} else {
			self, err := os.Executable()
			if err != nil {
				return 0, err
			}
			cmd = exec.CommandContext(ctx, self)
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %d %t %t", benchServerEnv,
				e.Addr+":"+port, bc.size, bc.count, bc.iters, p.server.poll, p.server.tcp))
		}
		cmd.Stdout, cmd.Stderr = &sout, &sout
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		go func() {
			err := cmd.Wait()
			if p.server.proc && err == nil {
				b.Logf("%v, %s: the Go server %s", p, bc.name, strings.TrimSpace(sout.String()))
			}
			done <- err
		}()
	default:
		go func() {
			st, err := benchServe(ctx, p.server, e.Addr+":"+port, bc)
			if st != nil {
				b.Logf("%v, %s: the Go server %s", p, bc.name, benchStats(*st, bc))
			}
			done <- err
		}()
	}
	var d time.Duration
	var cerr error
	addr := e.Peer + ":" + port
	switch {
	case !measures:
	case p.client.c:
		var out []byte
		out, cerr = labtest.Retry(ctx, func(err error) bool { return strings.Contains(err.Error(), "Connection refused") },
			func() ([]byte, error) {
				out, err := cTool(b, ctx, false, "rstream", append(args, "-s", e.Peer)...).CombinedOutput()
				if err != nil {
					err = fmt.Errorf("rstream client: %v:\n%s", err, out)
				}
				return out, err
			})
		if cerr == nil {
			d, cerr = rstreamTime(out, bc.count, bc.iters)
		}
	default:
		var c net.Conn
		if p.client.tcp {
			c, cerr = labtest.Retry(ctx, func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) },
				func() (net.Conn, error) { var d net.Dialer; return d.DialContext(ctx, "tcp", addr) })
		} else {
			c, cerr = dialRetry(ctx, &Dialer{Options: benchOptions(p.client)}, addr)
		}
		if cerr == nil {
			setTCPBuffers(c)
			if dl, ok := ctx.Deadline(); ok {
				c.SetDeadline(dl)
			}
			d, cerr = rstreamTest(c, true, bc.size, bc.count, bc.iters, false)
			if rc, ok := c.(*Conn); ok && cerr == nil {
				// How often the client slept in the completion channel.
				b.Logf("%v, %s: the Go client %s", p, bc.name, benchStats(rc.Stats(), bc))
			}
			c.Close()
		}
	}
	var serr error
	select {
	case serr = <-done:
	case <-ctx.Done():
		serr = ctx.Err()
	}
	if serr != nil {
		serr = fmt.Errorf("server (%v): %v\n%s", p.server, serr, sout.Bytes())
	}
	return d, errors.Join(cerr, serr)
}

// benchServe is a Go server of the bench: it accepts one connection on
// addr and runs rstream's test as its server. For an rsocket it returns
// the connection's Stats after the test.
func benchServe(ctx context.Context, p benchPeer, addr string, bc benchCase) (*Stats, error) {
	var l net.Listener
	var err error
	if p.tcp {
		l, err = net.Listen("tcp", addr)
	} else {
		lc := ListenConfig{Options: benchOptions(p)}
		l, err = lc.Listen(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	defer l.Close()
	stop := context.AfterFunc(ctx, func() { l.Close() }) // a client that never comes
	defer stop()
	c, err := l.Accept()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	setTCPBuffers(c)
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := rstreamTest(c, false, bc.size, bc.count, bc.iters, false); err != nil {
		return nil, err
	}
	if rc, ok := c.(*Conn); ok {
		st := rc.Stats()
		return &st, nil
	}
	return nil, nil
}

// benchServerMain is the bench's Go server in a process of its own (an
// "own process" peer: benchRun starts this test binary again with
// RSOCKET_BENCH_SERVER set to spec, "ADDR SIZE COUNT ITERS POLL TCP";
// TestMain calls it): it serves one run, prints the connection's Stats and
// returns the process's exit status.
func benchServerMain(spec string) int {
	return benchProcMain(benchServerEnv, spec, func(ctx context.Context, p benchPeer, addr string, bc benchCase) (*Stats, error) {
		return benchServe(ctx, p, addr, bc)
	})
}

// benchClientMain is the bench's Go client alone in a process
// (RSOCKET_BENCH_CLIENT, the same spec; for investigations that watch one
// process, e.g. under strace): it dials ADDR until something listens,
// runs rstream's test as the client and prints rstream's result line
// ("custom" and usec/xfer last, which rstreamTime reads) and the Stats.
func benchClientMain(spec string) int {
	return benchProcMain(benchClientEnv, spec, func(ctx context.Context, p benchPeer, addr string, bc benchCase) (*Stats, error) {
		if p.tcp {
			return nil, errors.New("the client mode speaks rsockets only")
		}
		c, err := dialRetry(ctx, &Dialer{Options: benchOptions(p)}, addr)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		if dl, ok := ctx.Deadline(); ok {
			c.SetDeadline(dl)
		}
		d, err := rstreamTest(c, true, bc.size, bc.count, bc.iters, false)
		if err != nil {
			return nil, err
		}
		n := 2 * bc.count * bc.iters
		fmt.Printf("custom %d %d %d %d %.2fs %.2f %.2f\n", bc.size, bc.count, bc.iters, n*bc.size,
			d.Seconds(), float64(8*n*bc.size)/d.Seconds()/1e9, d.Seconds()*1e6/float64(n))
		st := c.Stats()
		return &st, nil
	})
}

// benchProcMain parses spec ("ADDR SIZE COUNT ITERS POLL TCP", from the
// environment variable env), runs one end of one bench run, prints its
// Stats and returns the process's exit status.
func benchProcMain(env, spec string, run func(context.Context, benchPeer, string, benchCase) (*Stats, error)) int {
	var p benchPeer
	var addr string
	var bc benchCase
	_, err := fmt.Sscan(spec, &addr, &bc.size, &bc.count, &bc.iters, &p.poll, &p.tcp)
	if err != nil {
		err = fmt.Errorf("%s=%q: %w (want ADDR SIZE COUNT ITERS POLL TCP)", env, spec, err)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), benchRunLimit)
		stopTrace := benchTrace()
		var st *Stats
		st, err = run(ctx, p, addr, bc)
		stopTrace()
		cancel()
		if st != nil {
			fmt.Println(benchStats(*st, bc))
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", env, err)
		return 1
	}
	return 0
}

// benchTrace starts the Go runtime's execution tracer when
// RSOCKET_BENCH_TRACE names a file (for investigations: the scheduler's
// wake-ups, system calls and thread hand-offs of one bench process), and
// its CPU profiler when RSOCKET_BENCH_CPUPROFILE does (where the process's
// own time goes), and returns what stops them.
func benchTrace() (stop func()) {
	stopTrace := benchProfile("RSOCKET_BENCH_TRACE", trace.Start, trace.Stop)
	stopCPU := benchProfile("RSOCKET_BENCH_CPUPROFILE", pprof.StartCPUProfile, pprof.StopCPUProfile)
	return func() { stopCPU(); stopTrace() }
}

// benchProfile runs start on the file the environment variable env names,
// if any, and returns what stops it and closes the file.
func benchProfile(env string, start func(io.Writer) error, stop func()) func() {
	name := os.Getenv(env)
	if name == "" {
		return func() {}
	}
	f, err := os.Create(name)
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", env, err)
		return func() {}
	}
	return func() { stop(); f.Close() }
}

// benchStats says how often a Go end slept in the completion channel and
// how many completions it handled, in all and per transfer (a message of
// the latency case, a transfer of the bandwidth cases; both directions).
func benchStats(st Stats, bc benchCase) string {
	n := float64(2 * bc.count * bc.iters)
	return fmt.Sprintf("woke %d times for %d completions (%.2f and %.2f per transfer)",
		st.Wakeups, st.Completions, float64(st.Wakeups)/n, float64(st.Completions)/n)
}

// setTCPBuffers gives a TCP connection rstream's SO_SNDBUF and SO_RCVBUF.
func setTCPBuffers(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(benchSockBuf)
		tc.SetWriteBuffer(benchSockBuf)
	}
}

// median and the range of v (sorted in place).
func medianRange(v []float64) (med, lo, hi float64) {
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return 0, 0, 0
	}
	med = v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return med, v[0], v[n-1]
}

// BenchmarkLabRstream compares this package with rdma-core's rstream
// (librdmacm's rsockets in C) and with TCP on the same netdev. With one
// lab node both ends run in that node (rxe loops back to its address);
// with two the server runs on node 0 and the client on node 1, over the
// emulated wire between the VMs, and node 1 measures. Each b.Loop
// iteration is one round running every pair of benchPairs once (the
// order rotated each round) for each of benchCases: bandwidth in 64 KiB
// and in 1 MiB transfers (rstream -S 65536 / 1048576, -C to move 32 MiB
// each way on one node, 16 MiB on two) and latency (1,000 round trips of
// 64 B: -S 64 -C 1 -I 1000), always timed by the
// client. It asserts only that every transfer completed with every byte;
// the measuring node logs each figure and, at the end, the medians over
// the rounds with their ranges, each median's ratio to C rsockets'
// (rstream to rstream) and Go's ratios to C waiting the same way. Under
// emulation only those ratios mean something. Run it with
// scripts/rsocket-bench.sh.
func BenchmarkLabRstream(b *testing.B) {
	e := labtest.Require(b)
	ctx := labtest.Context(b, 60*time.Minute)
	measures := !e.TwoNodes || !e.Server()
	pairs, topo := benchPairs, "one VM: both ends in one lab node, rxe looping back to its own address"
	if e.TwoNodes {
		// Across two nodes every pair is two processes already.
		pairs = slices.DeleteFunc(slices.Clone(benchPairs), func(p benchPair) bool { return p.server.proc })
		topo = "two VMs: server on node 0, client on node 1, over the emulated wire between them"
	}
	cases := benchCases(e.TwoNodes)
	fig := make([]map[benchPair][]float64, len(cases)) // per case: MiB/s, or µs per round trip
	for i := range fig {
		fig[i] = map[benchPair][]float64{}
	}
	port, round := 200, 0
	for b.Loop() {
		for k := range pairs {
			p := pairs[(k+round)%len(pairs)]
			var line strings.Builder
			for i, bc := range cases {
				port++
				d, err := benchRun(b, ctx, e, p, labPort(port), bc)
				if err != nil {
					b.Fatalf("%v, %s: %v", p, bc.name, err)
				}
				if !measures {
					continue
				}
				if bc.lat {
					us := d.Seconds() * 1e6 / float64(bc.iters)
					fig[i][p] = append(fig[i][p], us)
					fmt.Fprintf(&line, "  %8.1f µs round trip", us)
				} else {
					mbs := float64(2*bc.size*bc.count) / (1 << 20) / d.Seconds()
					fig[i][p] = append(fig[i][p], mbs)
					fmt.Fprintf(&line, "  %8.2f MiB/s (%s)", mbs, bc.name)
				}
			}
			if measures {
				b.Logf("round %d: %-45v%s", round+1, p, line.String())
			} else {
				b.Logf("round %d: %v served", round+1, p)
			}
		}
		round++
	}
	if !measures {
		b.Logf("%s; node 1 measures and prints the table", topo)
		return
	}
	// Ratios: of the medians, and the range of each round's ratio to the
	// reference's figure in the same round.
	ratio := func(f map[benchPair][]float64, p, ref benchPair) string {
		m, _, _ := medianRange(slices.Clone(f[p]))
		rm, _, _ := medianRange(slices.Clone(f[ref]))
		var per []float64
		for r := range f[p] {
			per = append(per, f[p][r]/f[ref][r])
		}
		_, lo, hi := medianRange(per)
		return fmt.Sprintf("%.2f [%.2f–%.2f]", m/rm, lo, hi)
	}
	ref := pairs[0]
	var t strings.Builder
	fmt.Fprintf(&t, "%s; %d rounds; medians [range]; × C: ratio of the medians to %v's [range of the rounds' ratios]\n", topo, round, ref)
	fmt.Fprintf(&t, "| client → server |")
	for _, bc := range cases {
		unit := "MiB/s"
		if bc.lat {
			unit = "µs"
		}
		fmt.Fprintf(&t, " %s, %s | × C |", bc.name, unit)
	}
	fmt.Fprintf(&t, "\n|---|%s\n", strings.Repeat("---|---|", len(cases)))
	for _, p := range pairs {
		fmt.Fprintf(&t, "| %v |", p)
		for i, bc := range cases {
			m, lo, hi := medianRange(slices.Clone(fig[i][p]))
			if bc.lat {
				fmt.Fprintf(&t, " %.0f [%.0f–%.0f] | %s |", m, lo, hi, ratio(fig[i], p, ref))
			} else {
				fmt.Fprintf(&t, " %.1f [%.1f–%.1f] | %s |", m, lo, hi, ratio(fig[i], p, ref))
			}
		}
		t.WriteString("\n")
	}
	t.WriteString("\nLike against like (Go ÷ C waiting the same way: ratio of the medians [range of the rounds' ratios]):\n")
	for _, l := range benchLikePairs {
		if !slices.Contains(pairs, l.goPair) {
			continue
		}
		fmt.Fprintf(&t, "- %v ÷ %v:", l.goPair, l.cPair)
		for i, bc := range cases {
			fmt.Fprintf(&t, " %s %s;", bc.name, ratio(fig[i], l.goPair, l.cPair))
		}
		t.WriteString("\n")
	}
	b.Log("\n" + t.String())
}
