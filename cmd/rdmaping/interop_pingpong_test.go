// Copyright 2026 The rdmago Authors.

//go:build linux

package main

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/tools/ping"
)

// The ibv_*_pingpong family (libibverbs/examples, package ibverbs-utils)
// against rdmaping --tcp, in both roles:
//
//	go run ./cmd/rdmalab test --nodes 2 -run InteropPingpong -v ./cmd/rdmaping/

// pingpongDev is the RDMA device and the index of the RoCE v2 GID of addr,
// which the C programs need as -d and -g.
func pingpongDev(t *testing.T, addr string) (string, int) {
	t.Helper()
	a := netip.MustParseAddr(addr)
	ctx, err := openByIP(a)
	if err != nil {
		t.Fatalf("open the device of %v: %v", a, err)
	}
	defer ctx.Close()
	g, err := ctx.GIDForIP(1, a)
	if err != nil {
		t.Fatalf("GID of %v: %v", a, err)
	}
	return ctx.Device().Name, g.Index
}

func TestInteropPingpong(t *testing.T) {
	r := labRole(t)
	dev, gidx := pingpongDev(t, r.bind)
	// More messages than rdmaping's receive queue holds (ping.PingpongDepth,
	// 64 for the four QPs here), so every receive is posted again and its
	// slot reused; more only add time (with two nodes some 47 ms an
	// iteration of 4 KiB messages over the emulated wire).
	const iters = 100
	if iters <= ping.PingpongDepth(4) {
		t.Fatalf("%d iterations do not wrap rdmaping's %d receives", iters, ping.PingpongDepth(4))
	}
	for i, tc := range []struct {
		tool, size string
		go_        []string
	}{
		{"ibv_rc_pingpong", "4096", nil},
		{"ibv_uc_pingpong", "4096", []string{"--qp-type", "uc"}},
		{"ibv_ud_pingpong", "1024", []string{"--qp-type", "ud"}},
		{"ibv_srq_pingpong", "4096", []string{"--srq", "4"}},
	} {
		tool := cTool(t, tc.tool)
		cargs := []string{"-d", dev, "-g", fmt.Sprint(gidx), "-n", fmt.Sprint(iters)}
		if tc.tool == "ibv_srq_pingpong" {
			cargs = append(cargs, "-q", "4")
		}
		cWant := []string{fmt.Sprintf("%d iters in", iters)}
		goWant := []string{fmt.Sprintf("pingpong: %d messages of %s bytes each way with rdma-core's %s, fill checked", iters, tc.size, tc.tool)}
		goArgs := append([]string{"--tcp", "-C", fmt.Sprint(iters), "--timeout", "60s"}, tc.go_...)
		t.Run(tc.tool+"/GoServer_CClient", func(t *testing.T) {
			port := fmt.Sprint(18600 + 2*i)
			pair(t, r,
				append([]string{"-s", "-a", r.bind, "-p", port, "-v"}, goArgs...), true, goWant,
				append(append(append([]string{}, tool...), cargs...), "-p", port, r.addr), false, cWant)
		})
		t.Run(tc.tool+"/CServer_GoClient", func(t *testing.T) {
			port := fmt.Sprint(18601 + 2*i)
			pair(t, r,
				append(append(append([]string{}, tool...), cargs...), "-p", port), false, cWant,
				append([]string{"-c", "-a", r.addr, "-p", port, "-v"}, goArgs...), true, goWant)
		})
	}
}

// TestLabPingpongGo runs the pingpong exchange rdmaping to rdmaping, where
// every message is checked in full.
func TestLabPingpongGo(t *testing.T) {
	r := labRole(t)
	for i, extra := range [][]string{nil, {"--qp-type", "uc"}, {"--qp-type", "ud"}, {"--srq", "3"}} {
		want := []string{"each way with rdmaping, every message checked"}
		port := fmt.Sprint(18620 + i)
		args := append([]string{"--tcp", "-C", "50", "-S", "1000", "-p", port, "--timeout", "60s"}, extra...)
		t.Run(strings.Join(append([]string{"rc"}, extra...), " "), func(t *testing.T) {
			pair(t, r, append([]string{"-s", "-a", r.bind}, args...), true, want,
				append([]string{"-c", "-a", r.addr}, args...), true, want)
		})
	}
}

// TestInteropPingpongMismatch: rdmaping facing a pingpong program of
// another kind ends with an error that names it, well before its
// --timeout, instead of hanging (a peer whose packets never arrive within
// --peer-timeout, here 3 s). Both processes run on this node.
func TestInteropPingpongMismatch(t *testing.T) {
	r := labRole(t)
	dev, gidx := pingpongDev(t, r.bind)
	for i, tc := range []struct {
		name     string
		goArgs   []string
		tool     string
		toolArgs []string
		want     string
		goServer bool // only rdmaping as server: as a client it meets an echo and succeeds
	}{
		{"rc_vs_uc", nil, "ibv_uc_pingpong", nil, "ibv_uc_pingpong or ibv_ud_pingpong", false},
		{"uc_vs_rc", []string{"--qp-type", "uc"}, "ibv_rc_pingpong", nil, "ibv_rc_pingpong or ibv_ud_pingpong", false},
		{"ud_vs_rc", []string{"--qp-type", "ud", "-S", "1024"}, "ibv_rc_pingpong", []string{"-s", "1024"}, "ibv_rc_pingpong or ibv_uc_pingpong", false},
		{"rc_vs_srq", nil, "ibv_srq_pingpong", nil, "give --srq", false},
		{"srq_vs_rc", []string{"--srq", "4"}, "ibv_rc_pingpong", nil, "drop --srq", false},
		{"send_demo_vs_rc", []string{"--mode", "send", "-S", "4096"}, "ibv_rc_pingpong", nil, "run rdmaping --tcp without --mode", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			port := fmt.Sprint(18640 + i)
			tool := cTool(t, tc.tool)
			// rdmaping serves; the C client connects. Then the reverse roles
			// for the exchange-level mismatches, which differ by side.
			for _, goServer := range []bool{true, false} {
				if !goServer && tc.goServer {
					continue
				}
				var goArgv, cArgv []string
				base := append([]string{"--tcp", "-p", port, "-C", "20", "--timeout", "60s", "--peer-timeout", "3s"}, tc.goArgs...)
				cArgv = append(append(append([]string{}, tool...), "-d", dev, "-g", fmt.Sprint(gidx), "-n", "20", "-p", port), tc.toolArgs...)
				if goServer {
					goArgv = append([]string{"-s", "-a", r.bind}, base...)
					cArgv = append(cArgv, r.bind)
				} else {
					goArgv = append([]string{"-c", "-a", r.bind}, base...)
				}
				startAt := time.Now()
				var g, c *proc
				if goServer {
					g = start(ctx, t, goArgv, true)
					time.Sleep(300 * time.Millisecond)
					c = start(ctx, t, cArgv, false)
				} else {
					c = start(ctx, t, cArgv, false)
					time.Sleep(300 * time.Millisecond)
					g = start(ctx, t, goArgv, true)
				}
				err := g.wait()
				took := time.Since(startAt)
				c.cmd.Process.Kill()
				c.wait()
				out := g.out.String()
				t.Logf("rdmaping (server %v) %q after %v: %v\n%s\nC: %s", goServer, goArgv, took, err, out, c.out.String())
				if err == nil {
					t.Errorf("rdmaping succeeded against %s", tc.tool)
				}
				if !strings.Contains(out, tc.want) {
					t.Errorf("rdmaping's error lacks %q", tc.want)
				}
				if took > 45*time.Second {
					t.Errorf("rdmaping took %v to give up, near its --timeout", took)
				}
			}
		})
	}
}

// TestInteropPingpongAbort: when rdmaping's run fails (here its --timeout
// ends it in the middle of a long run), the C example, which waits for its
// next message with no timeout of its own, exits too instead of waiting
// for ever: rdmaping sends it a message longer than its receive buffers
// (ping.Pingpong.Abort), which fails its receive. Both processes run on
// this node.
func TestInteropPingpongAbort(t *testing.T) {
	r := labRole(t)
	dev, gidx := pingpongDev(t, r.bind)
	for i, tc := range []struct {
		tool          string
		goArgs, cArgs []string
	}{
		{"ibv_rc_pingpong", nil, nil},
		{"ibv_srq_pingpong", []string{"--srq", "4"}, []string{"-q", "4"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			port := fmt.Sprint(18660 + i)
			const iters = "1000000" // far more than fit in the timeout
			goArgv := append([]string{"-s", "-a", r.bind, "--tcp", "-p", port, "-C", iters, "--timeout", "8s", "-v"}, tc.goArgs...)
			cArgv := append(append(cTool(t, tc.tool), "-d", dev, "-g", fmt.Sprint(gidx), "-n", iters, "-p", port), append(tc.cArgs, r.bind)...)
			g := start(ctx, t, goArgv, true)
			time.Sleep(300 * time.Millisecond)
			c := start(ctx, t, cArgv, false)
			gerr := g.wait()
			const cWait = 20 * time.Second
			var cerr error
			select {
			case <-c.done:
				cerr = c.err
			case <-time.After(cWait):
				c.cmd.Process.Kill()
				cerr = c.wait()
				t.Errorf("%s still waited %v after rdmaping ended", tc.tool, cWait)
			}
			out := g.out.String()
			t.Logf("rdmaping %q: %v\n%s\nC %q: %v\n%s", goArgv, gerr, out, cArgv, cerr, c.out.String())
			if gerr == nil {
				t.Errorf("rdmaping succeeded; its --timeout should have ended the run")
			}
			if !strings.Contains(out, "an ibv_*_pingpong there exits") {
				t.Errorf("rdmaping does not say it ended the peer")
			}
			if !strings.Contains(c.out.String(), "Failed status") {
				t.Errorf("%s did not end on a failed completion", tc.tool)
			}
		})
	}
}
