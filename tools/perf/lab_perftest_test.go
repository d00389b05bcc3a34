// Copyright 2026 The rdmago Authors.

package perf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/tools/perf/ptwire"
)

// Lab tests of rdmaperf --perftest against perftest's own programs (the
// host's, Debian 12's perftest): rdmaperf as client of each ib_* server and
// as server for each ib_* client. With two nodes node 0 serves and node 1
// is the client.
//
//	go run ./cmd/rdmalab test -run Perftest ./tools/perf

// ptPairs are the pairs, with small sizes and few iterations.
var ptPairs = []struct {
	test string
	args []string
}{
	{"write_bw", []string{"-s", "4096", "-n", "200"}},
	{"send_bw", []string{"-s", "1024", "-n", "200"}},
	{"read_bw", []string{"-s", "4096", "-n", "100"}},
	{"atomic_bw", []string{"-n", "100"}},
	{"write_lat", []string{"-s", "2", "-n", "100"}},
	{"send_lat", []string{"-s", "2", "-n", "100"}},
	{"read_lat", []string{"-s", "64", "-n", "100"}},
	{"atomic_lat", []string{"-n", "100"}},
}

// perftestTool runs one of perftest's programs to the end, retrying a
// client whose server is not listening yet.
func perftestTool(t *testing.T, ctx context.Context, name string, args ...string) (string, error) {
	attempt := 0
	for {
		cmd := labtest.HostTool(t, ctx, name, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		// A client that came before its server: TCP ("Couldn't connect
		// to") or rdma_cm ("Unable to init the socket connection").
		if err != nil && ctx.Err() == nil && (strings.Contains(out.String(), "Couldn't connect to") || strings.Contains(out.String(), "Unable to init the socket connection")) {
			if attempt++; attempt%20 == 1 {
				t.Logf("%s %s: %v, trying again: %s", name, strings.Join(args, " "), err, out.String())
			}
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if err != nil {
			return out.String(), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out.String())
		}
		return out.String(), nil
	}
}

// checkPerftestOutput checks a perftest program's table: its result line
// starts with the size.
func checkPerftestOutput(t *testing.T, name, out, size string) {
	t.Helper()
	if !strings.Contains(out, "#bytes") {
		t.Errorf("%s printed no result table:\n%s", name, out)
		return
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == size {
			return
		}
	}
	t.Errorf("%s printed no result line for %s bytes:\n%s", name, size, out)
}

func ptSize(test string, args []string) string {
	for i, a := range args {
		if a == "-s" {
			return args[i+1]
		}
	}
	if strings.HasPrefix(test, "atomic") {
		return "8"
	}
	return "65536"
}

// checkPtReport checks rdmaperf's report of a pair.
func checkPtReport(t *testing.T, test string, server bool, out []byte) {
	t.Helper()
	r := decodeReport(t, out)
	lat := strings.HasSuffix(test, "_lat")
	passive := server && (test == "write_bw" || test == "read_bw" || test == "atomic_bw" || test == "read_lat" || test == "atomic_lat")
	switch {
	case passive && (test == "read_lat" || test == "atomic_lat"):
		if len(r.Results) != 0 || len(r.Peer) != 0 {
			t.Errorf("passive latency server reported %+v / %+v", r.Results, r.Peer)
		}
	case passive:
		if len(r.Peer) != 1 || r.Peer[0].BW == nil || !(r.Peer[0].BW.Average > 0) || r.Peer[0].BW.Iters == 0 {
			t.Errorf("the server should print the client's figures: %+v", r.Peer)
		}
	case lat:
		if len(r.Results) != 1 || r.Results[0].Lat == nil || !(r.Results[0].Lat.Avg > 0) || r.Results[0].Lat.Iters == 0 {
			t.Errorf("latency results %+v", r.Results)
		}
	default:
		if len(r.Results) != 1 || r.Results[0].BW == nil || !(r.Results[0].BW.Average > 0) || r.Results[0].BW.Iters == 0 {
			t.Errorf("bandwidth results %+v", r.Results)
		}
	}
}

// ptPeerLeft reports whether rdmaperf failed only because its perftest peer
// went away (reset, end of stream, or on rdma_cm a receive flushed by the
// disconnection: ptwire.ErrPeerClosed) at the exchange's step: a perftest
// program that fails its timing check when it reports (PerftestGlitch)
// exits right after its measured run, before the "end of the run" (or, in
// the latency tests, the "closing") exchange. With two nodes the other
// side cannot see the perftest program's output; that side's own check
// fails the test unless the program failed only its timing check.
func ptPeerLeft(err error, step string) bool {
	s := err.Error()
	return strings.Contains(s, "perftest exchange") && strings.Contains(s, ", "+step+":") &&
		(strings.Contains(s, "connection reset by peer") || strings.Contains(s, "EOF") || strings.Contains(s, ptwire.ErrPeerClosed.Error()))
}

func TestLabPerftestInterop(t *testing.T) {
	ptInterop(t, ptPairs, nil, 18700)
}

// With -R both sides use perftest's rdma_cm exchange and rdma_cm connects
// the QPs.
func TestLabPerftestRDMACM(t *testing.T) {
	ptInterop(t, ptPairs, []string{"-R"}, 18720)
}

// Two QPs in each exchange, TCP and rdma_cm.
func TestLabPerftestQPs(t *testing.T) {
	pairs := ptPairs[:2] // write_bw, send_bw
	t.Run("tcp", func(t *testing.T) { ptInterop(t, pairs, []string{"-q", "2"}, 18740) })
	t.Run("rdma_cm", func(t *testing.T) { ptInterop(t, pairs, []string{"-q", "2", "-R"}, 18750) })
}

// ptInterop runs each pair with extra flags on both sides, rdmaperf as
// client and as server, on ports from base.
func ptInterop(t *testing.T, pairs []struct {
	test string
	args []string
}, extra []string, base int) {
	e := labtest.Require(t)
	rdmacm := slices.Contains(extra, "-R")
	qps := 1
	if i := slices.Index(extra, "-q"); i >= 0 {
		qps, _ = strconv.Atoi(extra[i+1])
	}
	for i, p := range pairs {
		for role := 0; role < 2; role++ {
			name := p.test + "/rdmaperf-client"
			if role == 1 {
				name = p.test + "/rdmaperf-server"
			}
			t.Run(name, func(t *testing.T) {
				port := strconv.Itoa(base + 2*i + role)
				ctx := labtest.Context(t, 2*time.Minute)
				tool := "ib_" + p.test
				cargs := append(append([]string{}, p.args...), extra...)
				cargs = append(cargs, "-p", port)
				rargs := append([]string{p.test, "--perftest", "--json", "--timeout", "90s"}, cargs...)
				size := ptSize(p.test, p.args)
				checkC := func(who, out string) {
					t.Helper()
					checkPerftestOutput(t, who, out, size)
					checkPtSettings(t, who, out, rdmacm, qps)
				}
				checkR := func(server bool, out []byte) {
					t.Helper()
					checkPtReport(t, p.test, server, out)
					r := decodeReport(t, out)
					if want := map[bool]string{false: "tcp", true: "rdma_cm"}[rdmacm]; r.Transport != want || r.QPs != qps {
						t.Errorf("rdmaperf reports transport %q with %d QPs, want %q with %d", r.Transport, r.QPs, want, qps)
					}
				}
				if role == 0 {
					// perftest serves, rdmaperf is the client.
					e.RunRoles(t, func() error {
						out, err := perftestTool(t, ctx, tool, cargs...)
						switch {
						case err != nil && PerftestGlitch(out) != "":
							t.Logf("%s (server) failed its own timing check (a known perftest glitch under TCG), after the exchange and the run: %v", tool, err)
							checkPtSettings(t, tool+" (server)", out, rdmacm, qps)
							err = nil
						case err != nil:
						case p.test == "read_lat" || p.test == "atomic_lat":
							// A passive server: it prints the addresses and
							// waits for the client's end, without a table.
							if !strings.Contains(out, "remote address:") {
								t.Errorf("%s (server) did not connect:\n%s", tool, out)
							}
							checkPtSettings(t, tool+" (server)", out, rdmacm, qps)
						default:
							checkC(tool+" (server)", out)
						}
						return err
					}, func() error {
						out, err := labtest.Retry(ctx, retryable, func() ([]byte, error) {
							return rdmaperf(ctx, append(rargs, e.Peer))
						})
						if err != nil && ptPeerLeft(err, "closing") {
							// The server's side above fails the test unless
							// the server failed only its timing check.
							t.Logf("rdmaperf client: %v: the perftest server left before the closing barrier, as it does when it fails its own timing check while reporting", err)
							return nil
						}
						if err != nil {
							return fmt.Errorf("rdmaperf client: %w", err)
						}
						checkR(false, out)
						return nil
					})
					return
				}
				// rdmaperf serves, perftest is the client.
				e.RunRoles(t, func() error {
					out, err := rdmaperf(ctx, rargs)
					if err != nil && (ptPeerLeft(err, "end of the run") || ptPeerLeft(err, "closing")) {
						// The client's side below fails the test unless
						// the client failed only its timing check.
						t.Logf("rdmaperf server: %v: the perftest client left after its run, as it does when it fails its own timing check while reporting", err)
						return nil
					}
					if err != nil {
						return fmt.Errorf("rdmaperf server: %w", err)
					}
					checkR(true, out)
					return nil
				}, func() error {
					out, err := perftestTool(t, ctx, tool, append(cargs, e.Peer)...)
					switch {
					case err == nil:
						checkC(tool+" (client)", out)
					case PerftestGlitch(out) != "":
						// The run itself happened: check what it says it ran.
						t.Logf("%s (client) failed its own timing check (a known perftest glitch under TCG), after the exchange and the run: %v", tool, err)
						checkPtSettings(t, tool+" (client)", out, rdmacm, qps)
						err = nil
					}
					return err
				})
			})
		}
	}
}

// checkPtSettings checks what a perftest program says it ran: its exchange
// and its number of QPs.
func checkPtSettings(t *testing.T, who, out string, rdmacm bool, qps int) {
	t.Helper()
	method := "Ethernet"
	if rdmacm {
		method = "rdma_cm"
	}
	if !strings.Contains(out, "Data ex. method : "+method) {
		t.Errorf("%s did not use the %s exchange:\n%s", who, method, out)
	}
	if !strings.Contains(out, fmt.Sprintf("Number of qps   : %d", qps)) {
		t.Errorf("%s did not run %d QPs:\n%s", who, qps, out)
	}
	if n := strings.Count(out, "remote address:"); n != qps {
		t.Errorf("%s printed %d remote addresses, want %d:\n%s", who, n, qps, out)
	}
}

// A perftest program facing rdmaperf without --perftest, and the other way
// round: rdmaperf's server adapts to a perftest client (TCP and -R), its
// client names what to add, quickly.
func TestLabPerftestMismatch(t *testing.T) {
	e := labtest.Require(t)
	labtest.OneNode(t, "both ends on this node")
	ctx := labtest.Context(t, 4*time.Minute)
	srv := make(chan error, 1)
	// rdmaperf's own server, perftest's client: the server speaks
	// perftest's exchange and takes the client's size (it has no -s).
	for i, extra := range [][]string{nil, {"-R"}} {
		port := strconv.Itoa(18783 + i)
		t.Run("rdmaperf-server/ib_write_bw-client"+strings.Join(extra, ""), func(t *testing.T) {
			var sout []byte
			go func() {
				var err error
				sout, err = rdmaperf(ctx, append([]string{"write_bw", "--json", "-p", port, "--timeout", "90s"}, extra...))
				srv <- err
			}()
			out, cerr := perftestTool(t, ctx, "ib_write_bw", append([]string{"-s", "4096", "-n", "50", "-p", port, e.Peer}, extra...)...)
			serr := <-srv
			glitch := cerr != nil && PerftestGlitch(out) != ""
			switch {
			case glitch:
				t.Logf("ib_write_bw (client) failed its own timing check (a known perftest glitch under TCG), after the exchange and the run: %v", cerr)
				checkPtSettings(t, "ib_write_bw (client)", out, len(extra) > 0, 1)
			case cerr != nil:
				t.Errorf("ib_write_bw facing rdmaperf's server without --perftest: %v", cerr)
			default:
				checkPerftestOutput(t, "ib_write_bw (client)", out, "4096")
			}
			switch {
			case serr != nil && glitch && (ptPeerLeft(serr, "end of the run") || ptPeerLeft(serr, "closing")):
				t.Logf("rdmaperf server: %v: the perftest client left after its run", serr)
			case serr != nil:
				t.Errorf("rdmaperf's server facing ib_write_bw should adapt: %v", serr)
			default:
				checkPtReport(t, "write_bw", true, sout)
				if r := decodeReport(t, sout); len(r.Peer) == 1 && r.Peer[0].Size != 4096 {
					t.Errorf("rdmaperf's server reports the client's %d bytes, want 4096", r.Peer[0].Size)
				}
			}
		})
	}
	// rdmaperf --perftest facing rdmaperf's own server: the server adapts
	// as to perftest (it is given the client's size).
	go func() {
		_, err := rdmaperf(ctx, []string{"write_bw", "-s", "4096", "-n", "50", "-p", "18781", "--timeout", "90s"})
		srv <- err
	}()
	cout, err := labtest.Retry(ctx, retryable, func() ([]byte, error) {
		return rdmaperf(ctx, []string{"write_bw", "--perftest", "--json", "-s", "4096", "-n", "50", "-p", "18781", "--timeout", "90s", e.Peer})
	})
	if err != nil {
		t.Errorf("rdmaperf --perftest facing rdmaperf's server: %v", err)
	} else {
		checkPtReport(t, "write_bw", false, cout)
	}
	if serr := <-srv; serr != nil {
		t.Errorf("rdmaperf's server facing rdmaperf --perftest: %v", serr)
	}
	// rdmaperf's own client facing perftest's server cannot adapt: it
	// says what to add.
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	go func() {
		_, err := perftestTool(t, pctx, "ib_write_bw", "-s", "4096", "-n", "50", "-p", "18780")
		srv <- err
	}()
	t0 := time.Now()
	_, err = labtest.Retry(ctx, retryable, func() ([]byte, error) {
		return rdmaperf(ctx, []string{"write_bw", "-s", "4096", "-n", "50", "-p", "18780", "--timeout", "30s", e.Peer})
	})
	if want := "the server is perftest 6.06: run this client with --perftest"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("rdmaperf client facing ib_write_bw's server: %v; want an error saying %q", err, want)
	}
	t.Logf("rdmaperf client facing ib_write_bw's server, after %v: %v", time.Since(t0), err)
	pcancel()
	t.Logf("ib_write_bw's server: %v", <-srv)
	// The same with -R: perftest's one 56-byte receive rejects the hello.
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	go func() {
		_, err := perftestTool(t, rctx, "ib_write_bw", "-R", "-s", "4096", "-n", "50", "-p", "18785")
		srv <- err
	}()
	t0 = time.Now()
	_, err = labtest.Retry(ctx, retryable, func() ([]byte, error) {
		return rdmaperf(ctx, []string{"write_bw", "-R", "-s", "4096", "-n", "50", "-p", "18785", "--timeout", "30s", e.Peer})
	})
	if want := "run this client with --perftest"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("rdmaperf -R client facing ib_write_bw -R's server: %v; want an error saying %q", err, want)
	}
	t.Logf("rdmaperf -R client facing ib_write_bw -R's server, after %v: %v", time.Since(t0), err)
	rcancel()
	t.Logf("ib_write_bw -R's server: %v", <-srv)
	// A perftest server of another test: the wait for the peer's part ends
	// at --timeout with a question, never a hang.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, err := perftestTool(t, cctx, "ib_send_bw", "-s", "2", "-n", "50", "-p", "18782")
		srv <- err
	}()
	t0 = time.Now()
	_, err = labtest.Retry(ctx, retryable, func() ([]byte, error) {
		return rdmaperf(ctx, []string{"write_lat", "--perftest", "-s", "2", "-n", "50", "-p", "18782", "--timeout", "5s", e.Peer})
	})
	if err == nil || !strings.Contains(err.Error(), "is it running write_lat with the same -s, -n and -q?") {
		t.Errorf("rdmaperf write_lat facing ib_send_bw: %v", err)
	}
	t.Logf("rdmaperf write_lat facing ib_send_bw after %v: %v", time.Since(t0), err)
	cancel()
	<-srv
}

// One side with -R, the other without: each rdmaperf names what the peer
// runs, well within its --timeout, whichever side it is.
func TestLabPerftestExchangeMismatch(t *testing.T) {
	e := labtest.Require(t)
	labtest.OneNode(t, "both ends on this node")
	for i, tc := range []struct {
		name   string
		server bool     // rdmaperf's role
		rargs  []string // rdmaperf's extra flags
		cargs  []string // perftest's
		want   string
	}{
		{"rdmaperf-R-client/ib_write_bw-server", false, []string{"-R"}, nil, "the peer runs perftest's TCP exchange (no -R)"},
		{"rdmaperf-client/ib_write_bw-R-server", false, nil, []string{"-R"}, "the peer runs perftest's rdma_cm exchange (-R)"},
		{"rdmaperf-R-server/ib_write_bw-client", true, []string{"-R"}, nil, "it runs perftest's TCP exchange (no -R)"},
		{"rdmaperf-server/ib_write_bw-R-client", true, nil, []string{"-R"}, "it runs perftest's rdma_cm exchange (-R)"},
	} {
		port := strconv.Itoa(18792 + i)
		t.Run(tc.name, func(t *testing.T) {
			ctx := labtest.Context(t, time.Minute)
			cargs := append([]string{"-s", "4096", "-n", "50", "-p", port}, tc.cargs...)
			rargs := append([]string{"write_bw", "--perftest", "-s", "4096", "-n", "50", "-p", port, "--timeout", "20s"}, tc.rargs...)
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			peer := make(chan error, 1)
			var err error
			t0 := time.Now()
			if tc.server {
				// rdmaperf's trace tells what its listeners saw.
				t.Setenv("RDMAPERF_TRACE", "1")
				go func() {
					out, err := perftestTool(t, cctx, "ib_write_bw", append(cargs, e.Peer)...)
					if err == nil {
						err = fmt.Errorf("ib_write_bw's client did not fail:\n%s", out)
					}
					peer <- err
				}()
				_, err = rdmaperf(ctx, rargs)
			} else {
				go func() {
					_, err := perftestTool(t, cctx, "ib_write_bw", cargs...)
					peer <- err
				}()
				_, err = labtest.Retry(ctx, retryable, func() ([]byte, error) {
					return rdmaperf(ctx, append(rargs, e.Peer))
				})
			}
			d := time.Since(t0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("rdmaperf %v: %v; want an error saying %q", rargs, err, tc.want)
			}
			if d > 15*time.Second {
				t.Errorf("rdmaperf took %v to tell", d)
			}
			t.Logf("after %v: %v", d, err)
			cancel()
			t.Logf("ib_write_bw: %v", <-peer)
		})
	}
}

// TestLabPerftestCapture relays ib_write_bw's client and server through this
// process and logs what each sent, quoted: the source of testdata/ptwire_*
// (copied from the -v log).
func TestLabPerftestCapture(t *testing.T) {
	e := labtest.Require(t)
	labtest.OneNode(t, "both ends on this node")
	ctx := labtest.Context(t, time.Minute)
	ln, err := net.Listen("tcp", ":18790")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var c2s, s2c bytes.Buffer
	relayed := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			relayed <- err
			return
		}
		defer c.Close()
		var s net.Conn
		for try := 0; ; try++ {
			if s, err = net.Dial("tcp", net.JoinHostPort(e.Peer, "18791")); err == nil || try == 100 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			relayed <- err
			return
		}
		defer s.Close()
		done := make(chan struct{})
		go func() { io.Copy(io.MultiWriter(s, &c2s), c); close(done) }()
		io.Copy(io.MultiWriter(c, &s2c), s)
		<-done
		relayed <- nil
	}()
	srv := make(chan error, 1)
	go func() {
		_, err := perftestTool(t, ctx, "ib_write_bw", "-s", "4096", "-n", "50", "-p", "18791")
		srv <- err
	}()
	if _, err := perftestTool(t, ctx, "ib_write_bw", "-s", "4096", "-n", "50", "-p", "18790", e.Peer); err != nil {
		t.Error(err)
	}
	if err := <-srv; err != nil {
		t.Error(err)
	}
	ln.Close()
	if err := <-relayed; err != nil {
		t.Error(err)
	}
	t.Logf("client to server (%d bytes): %q", c2s.Len(), c2s.Bytes())
	t.Logf("server to client (%d bytes): %q", s2c.Len(), s2c.Bytes())
	if c2s.Len() == 0 || s2c.Len() == 0 {
		t.Error("nothing relayed")
	}
}
