// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
	"golang.org/x/net/nettest"
)

// Lab tests: real rxe in the rdmalab guests. With one node both ends run
// here (rxe loops back); with two, node 0 serves and node 1 connects.

const labPortBase = 18500

func labPort(n int) string { return strconv.Itoa(labPortBase + n) }

type labEnv struct {
	labtest.Env
	serves bool // this process runs the serving side: one node, or node 0 of two
}

func requireLab(t *testing.T) labEnv {
	t.Helper()
	e := labtest.Require(t)
	return labEnv{Env: e, serves: !e.TwoNodes || e.Node == "0"}
}

func labCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// dialRetry dials, retrying while nobody listens yet (WaitForListener).
func dialRetry(ctx context.Context, d *Dialer, addr string) (*Conn, error) {
	w := *d
	w.WaitForListener = true
	return w.DialRSocket(ctx, "tcp", addr)
}

// runRefused runs the C client mk makes (a new command each time), again
// while its failure is a refusal (refusedBy: rsockets' ECONNREFUSED, no
// listener on the port yet), pausing 100 ms, until it succeeds, fails
// otherwise or ctx ends; each run's output goes to the test log, and the
// error carries the last run's.
func runRefused(ctx context.Context, t testing.TB, refusedBy func(out []byte, err error) bool, mk func() *exec.Cmd) error {
	refused := errors.New("connection refused")
	_, err := labtest.Retry(ctx, func(err error) bool { return errors.Is(err, refused) }, func() ([]byte, error) {
		cmd := mk()
		out, err := cmd.CombinedOutput()
		t.Logf("%s %s:\n%s", filepath.Base(cmd.Args[0]), strings.Join(cmd.Args[1:], " "), out)
		switch {
		case err == nil:
			return out, nil
		case ctx.Err() == nil && refusedBy(out, err):
			return out, fmt.Errorf("%s: %w: %v: %s", filepath.Base(cmd.Args[0]), refused, err, out)
		}
		return out, fmt.Errorf("%s: %v: %s", filepath.Base(cmd.Args[0]), err, out)
	})
	return err
}

// rstreamRefused: rstream's perror after rconnect failed with ECONNREFUSED.
func rstreamRefused(out []byte, _ error) bool {
	return bytes.Contains(out, []byte("Connection refused"))
}

// curlRefused: curl's exit status 7, "Failed to connect" (curl 7.88 no
// longer prints the errno's text).
func curlRefused(_ []byte, err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 7
}

func listenLab(t *testing.T, ctx context.Context, e labEnv, port string, o Options) *Listener {
	t.Helper()
	lc := ListenConfig{Options: o}
	l, err := lc.ListenRSocket(ctx, "tcp", e.Addr+":"+port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestLabStream: Go to Go over real RDMA, both directions at once, through
// the default rings and through small ones, with Write and Read, and (the
// last two) with io.Copy both ways: ReadFrom, whose source reads into the
// registered send ring, then CloseWrite, and WriteTo, which hands its
// writer the receive ring, until the peer's end of stream.
func TestLabStream(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 120*time.Second)
	small := Options{SendBuffer: 8192, RecvBuffer: 8192, SendQueue: 16, RecvQueue: 16, Inline: NoInline}
	for i, o := range []Options{{}, small, {}, small} {
		viaCopy := i >= 2
		port := labPort(1 + i)
		var l *Listener
		if e.serves {
			l = listenLab(t, ctx, e, port, o)
		}
		e.RunRoles(t, func() error {
			c, err := l.AcceptRSocket(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			return echoCheckVia(c, 1<<20, viaCopy)
		}, func() error {
			c, err := dialRetry(ctx, &Dialer{Options: o}, e.Peer+":"+port)
			if err != nil {
				return err
			}
			defer c.Close()
			return echoCheckVia(c, 1<<20, viaCopy)
		})
	}
}

// echoCheck sends n random bytes while reading n from the other side,
// which does the same; both digests must be the sender's.
func echoCheck(c net.Conn, n int) error { return echoCheckVia(c, n, false) }

// echoCheckVia is echoCheck through io.Copy if viaCopy: sending with
// c's io.ReaderFrom from a reader that is nothing else, then CloseWrite;
// receiving with c's io.WriterTo into a writer that is nothing else, until
// the peer's CloseWrite.
func echoCheckVia(c net.Conn, n int, viaCopy bool) error {
	src := randomBytes(n, 7)
	rf, okRF := c.(io.ReaderFrom)
	wt, okWT := c.(io.WriterTo)
	cw, okCW := c.(interface{ CloseWrite() error })
	if viaCopy && !(okRF && okWT && okCW) {
		return fmt.Errorf("%T lacks io.ReaderFrom, io.WriterTo or CloseWrite", c)
	}
	werr := make(chan error, 1)
	go func() {
		if !viaCopy {
			_, err := c.Write(src)
			werr <- err
			return
		}
		k, err := rf.ReadFrom(struct{ io.Reader }{bytes.NewReader(src)})
		if err == nil && k != int64(n) {
			err = fmt.Errorf("ReadFrom sent %d bytes, want %d", k, n)
		}
		if err == nil {
			err = cw.CloseWrite()
		}
		werr <- err
	}()
	var got []byte
	if viaCopy {
		var b bytes.Buffer
		if _, err := wt.WriteTo(struct{ io.Writer }{&b}); err != nil {
			return fmt.Errorf("WriteTo: %w", err)
		}
		got = b.Bytes()
	} else {
		got = make([]byte, n)
		if _, err := io.ReadFull(c, got); err != nil {
			return fmt.Errorf("read: %w", err)
		}
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if !bytes.Equal(got, src) {
		return fmt.Errorf("data corrupted (%d bytes received, %d sent)", len(got), n)
	}
	return nil
}

// TestLabNettest runs x/net/nettest's net.Conn conformance suite over
// pairs of real rsocket connections (one node: rxe loops back).
func TestLabNettest(t *testing.T) {
	e := requireLab(t)
	if e.TwoNodes {
		t.Skip("runs on one node (both ends of each pair in this process); the two-node runs cover the wire")
	}
	ctx := labCtx(t, 300*time.Second)
	l := listenLab(t, ctx, e, labPort(10), Options{})
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		acc := make(chan net.Conn, 1)
		go func() {
			c, err := l.AcceptRSocket(ctx)
			if err != nil {
				t.Error(err)
				acc <- nil
				return
			}
			acc <- c
		}()
		a, err := Dial(ctx, "tcp", e.Addr+":"+labPort(10))
		if err != nil {
			return nil, nil, nil, err
		}
		b := <-acc
		if b == nil {
			a.Close()
			return nil, nil, nil, errors.New("accept failed")
		}
		return a, b, func() { a.Close(); b.Close() }, nil
	})
}

// cTool starts a C tool (in the host's root), optionally under
// librspreload, with its output in the test log.
func cTool(t testing.TB, ctx context.Context, preload bool, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := labtest.HostTool(t, ctx, name, args...)
	if preload {
		labtest.Preload(t, cmd, "rsocket/librspreload.so")
	}
	return cmd
}

// rstreamPeer speaks rstream's custom test (-S size -C count, -T v):
// 16-byte sync each way, then count transfers from the client, then count
// back, every byte the running counter of common.c's format_buf.
func rstreamPeer(c net.Conn, client bool, size, count int) error {
	_, err := rstreamTest(c, client, size, count, 1, true)
	return err
}

// rstreamTest is rstream's run_test (-S size -C count -I iters): a 16-byte
// sync each way (the client's first), then iters times count transfers of
// size bytes (one Write or ReadFull each) from the client and count back.
// With verify every byte is the running counter of common.c's format_buf
// and is checked; without, only the byte counts are. It returns the time
// from the end of the sync to the last transfer, as rstream measures it.
func rstreamTest(c net.Conn, client bool, size, count, iters int, verify bool) (time.Duration, error) {
	var out, in byte
	b := make([]byte, max(size, 16))
	send := func(n int) error {
		if verify {
			for i := range b[:n] {
				b[i] = out
				out++
			}
		}
		_, err := c.Write(b[:n])
		return err
	}
	recv := func(n int) error {
		if _, err := io.ReadFull(c, b[:n]); err != nil {
			return err
		}
		if verify {
			for i := range b[:n] {
				if b[i] != in {
					return fmt.Errorf("byte %d is %d, want %d", i, b[i], in)
				}
				in++
			}
		}
		return nil
	}
	first, second := send, recv
	if !client {
		first, second = recv, send
	}
	if err := first(16); err != nil {
		return 0, fmt.Errorf("sync: %w", err)
	}
	if err := second(16); err != nil {
		return 0, fmt.Errorf("sync: %w", err)
	}
	start := time.Now()
	for it := range iters {
		for _, f := range []func(int) error{first, second} {
			for x := range count {
				if err := f(size); err != nil {
					return 0, fmt.Errorf("iteration %d, transfer %d: %w", it, x, err)
				}
			}
		}
	}
	return time.Since(start), nil
}

// TestLabRstream: rdma-core's rstream (librdmacm's rsockets in C) against
// this package, rstream as server and as client, at a few sizes, with its
// data verification on; the Go side checks the bytes too.
func TestLabRstream(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 240*time.Second)
	for i, sz := range []struct{ size, count int }{{100, 50}, {65536, 20}, {1 << 20, 4}} {
		for j, cServer := range []bool{true, false} {
			port := labPort(20 + 2*i + j)
			args := []string{"-S", strconv.Itoa(sz.size), "-C", strconv.Itoa(sz.count), "-T", "v", "-p", port}
			name := fmt.Sprintf("%d×%d/C-%s", sz.count, sz.size, map[bool]string{true: "server", false: "client"}[cServer])
			t.Run(name, func(t *testing.T) {
				runC := func(extra ...string) error {
					return runRefused(ctx, t, rstreamRefused, func() *exec.Cmd { return cTool(t, ctx, false, "rstream", append(args, extra...)...) })
				}
				goServer := func() error {
					l := listenLab(t, ctx, e, port, Options{})
					c, err := l.AcceptRSocket(ctx)
					if err != nil {
						return err
					}
					defer c.Close()
					return rstreamPeer(c, false, sz.size, sz.count)
				}
				goClient := func() error {
					c, err := dialRetry(ctx, &Dialer{}, e.Peer+":"+port)
					if err != nil {
						return err
					}
					defer c.Close()
					return rstreamPeer(c, true, sz.size, sz.count)
				}
				if cServer {
					e.RunRoles(t, func() error { return runC("-b", e.Addr) }, goClient)
				} else {
					// rstream connects again while the Go server is
					// not yet listening (with two nodes it may still be
					// on an earlier test).
					e.RunRoles(t, goServer, func() error { return runC("-s", e.Peer) })
				}
			})
		}
	}
}

// TestLabCurlHTTP: a Go net/http server on rsocket.Listen, fetched by an
// unmodified curl under LD_PRELOAD=librspreload.so; the SHA-256 of what
// curl saved must be the file's.
func TestLabCurlHTTP(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 120*time.Second)
	port := labPort(40)
	body := randomBytes(3<<20, 11)
	want := sha256.Sum256(body)
	var l *Listener
	if e.serves {
		l = listenLab(t, ctx, e, port, Options{})
	}
	done := make(chan struct{})
	e.RunRoles(t, func() error {
		// The server stops once curl has hung up on a connection it sent a
		// request on (with two nodes the client's done is on the other
		// node), or with one node once the client is done.
		var mu sync.Mutex
		asked := map[net.Conn]bool{}
		hungUp := make(chan struct{})
		var once sync.Once
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				w.Write(body)
			}),
			ConnState: func(c net.Conn, s http.ConnState) {
				mu.Lock()
				defer mu.Unlock()
				switch {
				case s == http.StateActive:
					asked[c] = true
				case s == http.StateClosed && asked[c]:
					once.Do(func() { close(hungUp) })
				}
			},
		}
		go func() {
			select {
			case <-hungUp:
			case <-done:
			case <-ctx.Done():
				time.Sleep(time.Second) // let the last response drain
			}
			srv.Close()
		}()
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	}, func() error {
		defer close(done)
		out := filepath.Join("/tmp", "rsocket-curl-"+e.Node)
		// With two nodes the server may still be on an earlier test: curl
		// connects again while nothing listens.
		if err := runRefused(ctx, t, curlRefused, func() *exec.Cmd {
			return cTool(t, ctx, true, "curl", "-sS", "--fail", "--max-time", "60", "-o", out, "http://"+e.Peer+":"+port+"/file")
		}); err != nil {
			return fmt.Errorf("curl under librspreload: %v", err)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			return err
		}
		os.Remove(out)
		if sha256.Sum256(got) != want {
			return fmt.Errorf("curl saved %d bytes with SHA-256 %x, want %d bytes with %x", len(got), sha256.Sum256(got), len(body), want)
		}
		t.Logf("curl under librspreload fetched %d bytes over rsockets, SHA-256 %x", len(got), want)
		return nil
	})
}

// TestLabPeerKilled: the peer process is killed mid-stream (SIGKILL: no
// DISCONNECT message; its kernel destroys the rdma_cm id); this end's Read
// fails with ECONNRESET within seconds.
func TestLabPeerKilled(t *testing.T) {
	e := requireLab(t)
	if e.TwoNodes {
		t.Skip("one node: the killed peer is a child process")
	}
	ctx := labCtx(t, 60*time.Second)
	l := listenLab(t, ctx, e, labPort(50), Options{})
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), "RSOCKET_HELPER_DIAL="+e.Addr+":"+labPort(50))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c, err := l.AcceptRSocket(ctx)
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 1<<20)
	total := 0
	for total < 4<<20 {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("read before the kill: %v", err)
		}
		total += n
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		_, err = c.Read(buf)
		if err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after the peer was killed: %v, want ECONNRESET", err)
	}
	t.Logf("read failed %v after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
	if d := time.Since(killed); d > 10*time.Second {
		t.Fatalf("the failure took %v", d)
	}
}

// TestMain runs this test binary's child processes when asked: the bench's
// Go server in a process of its own (benchServerMain), and
// TestLabPeerKilled's child, which dials and writes until it is killed.
func TestMain(m *testing.M) {
	if spec := os.Getenv(benchServerEnv); spec != "" {
		os.Exit(benchServerMain(spec))
	}
	if spec := os.Getenv(benchClientEnv); spec != "" {
		os.Exit(benchClientMain(spec))
	}
	if addr := os.Getenv("RSOCKET_HELPER_DIAL"); addr != "" {
		c, err := Dial(context.Background(), "tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		b := make([]byte, 1<<16)
		for {
			if _, err := c.Write(b); err != nil {
				fmt.Fprintln(os.Stderr, "helper:", err)
				os.Exit(2)
			}
		}
	}
	os.Exit(m.Run())
}

// TestLabManyConnections: 1,000 connections opened, used and closed, four
// at a time (one after another in each of four streams: with two nodes
// each connection's handshakes cross the emulated wire, whose latency
// would otherwise add up), leave the process's kernel objects (cm_ids,
// QPs, CQs, MRs, PDs), the device's totals, descriptors, pinned memory
// and goroutines where they were (readKernelState; TestLabKernelObjects
// proves those counters see an open connection).
func TestLabManyConnections(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 240*time.Second)
	const n, streams = 1000, 4
	port := labPort(60)
	// The baseline counts the listener's cm_id, so it is read after
	// Listen, once an earlier test's objects are gone (an object still
	// going would raise the baseline and hide a leak of as many).
	settledKernelState(t, e.Dev)
	var l *Listener
	if e.serves {
		l = listenLab(t, ctx, e, port, Options{})
	}
	base, err := readKernelState(e.Dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("before: %v", base)
	begin := time.Now()
	e.RunRoles(t, func() error {
		errs := make(chan error, n)
		for range n {
			c, err := l.AcceptRSocket(ctx)
			if err != nil {
				return err
			}
			go func() {
				defer c.Close()
				b := make([]byte, 5)
				if _, err := io.ReadFull(c, b); err != nil {
					errs <- err
					return
				}
				_, err := c.Write(b)
				errs <- err
			}()
		}
		var first error
		for range n {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	}, func() error {
		errs := make(chan error, streams)
		for s := range streams {
			go func() {
				for i := s; i < n; i += streams {
					c, err := dialRetry(ctx, &Dialer{}, e.Peer+":"+port)
					if err != nil {
						errs <- fmt.Errorf("connection %d: %w", i, err)
						return
					}
					c.Write([]byte("hello"))
					b := make([]byte, 5)
					_, err = io.ReadFull(c, b)
					c.Close()
					if err != nil || string(b) != "hello" {
						errs <- fmt.Errorf("connection %d: %q, %v", i, b, err)
						return
					}
				}
				errs <- nil
			}()
		}
		var first error
		for range streams {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	})
	if t.Failed() {
		return
	}
	t.Logf("%d connections, %d at a time, in %v", n, streams, time.Since(begin).Round(time.Millisecond))
	base.awaitNoLeak(t, e.Dev, fmt.Sprintf("after %d connections", n))
}

// TestLabRefusesNonRsocket: a connection request whose private data is not
// rs_conn_data is rejected by the listener (the dialer sees REJECTED),
// counted by Refused, and Accept goes on waiting for the next request.
func TestLabRefusesNonRsocket(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 60*time.Second)
	port := labPort(70)
	var l *Listener
	if e.serves {
		l = listenLab(t, ctx, e, port, Options{})
	}
	e.RunRoles(t, func() error {
		actx, cancel := context.WithCancel(ctx)
		defer cancel()
		accepted := make(chan error, 1)
		go func() {
			c, err := l.AcceptRSocket(actx)
			if err == nil {
				c.Close()
				err = errors.New("accepted a request that is not an rsocket")
			}
			accepted <- err
		}()
		for l.Refused() == 0 {
			select {
			case err := <-accepted:
				return fmt.Errorf("accept returned before refusing: %v", err)
			case <-ctx.Done():
				return errors.New("no request was refused")
			case <-time.After(20 * time.Millisecond):
			}
		}
		select {
		case err := <-accepted:
			return fmt.Errorf("accept returned after the refusal instead of waiting: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if n := l.Refused(); n != 1 {
			return fmt.Errorf("Refused() = %d, want 1", n)
		}
		return nil
	}, func() error {
		o := &cm.Options{PrivateData: []byte("GET / HTTP/1.0 (not an rsocket)")}
		c, err := labtest.Retry(ctx, func(err error) bool { return errors.Is(err, cm.ErrNoListener) },
			func() (*cm.Conn, error) { return cm.Dial(ctx, e.Peer+":"+port, o) })
		if err == nil {
			c.Close()
			return errors.New("an rsocket listener accepted a connection that is not an rsocket")
		}
		if !errors.Is(err, cm.ErrRejected) {
			return fmt.Errorf("dial: %v, want REJECTED", err)
		}
		return nil
	})
}

// TestLabCloseWhileRingLent: Close while ReadFrom's reader (blocked, as on
// a socket) holds a slice of the registered send ring, and while WriteTo's
// writer holds one of the receive ring; the reader then fills its buffer
// and the writer reads its slice after Close returned. Before the rings
// stayed mapped for them, that was a write into memory Close had unmapped:
// the test process died of the fault. Both calls fail with net.ErrClosed.
func TestLabCloseWhileRingLent(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 60*time.Second)
	port := labPort(90)
	var l *Listener
	if e.serves {
		l = listenLab(t, ctx, e, port, Options{})
	}
	e.RunRoles(t, func() error {
		// The peer of the dialer's two calls: data for its WriteTo,
		// then reading until the dialer's Close ends the stream.
		c, err := l.AcceptRSocket(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("data for WriteTo")); err != nil {
			return err
		}
		io.Copy(io.Discard, struct{ io.Reader }{c})
		return nil
	}, func() error {
		c, err := dialRetry(ctx, &Dialer{}, e.Peer+":"+port)
		if err != nil {
			return err
		}
		r := &blockingReader{entered: make(chan struct{}), release: make(chan struct{})}
		w := &blockingWriter{entered: make(chan struct{}), release: make(chan struct{})}
		errs := make(chan error, 2)
		go func() {
			_, err := c.ReadFrom(r)
			errs <- fmt.Errorf("ReadFrom: %w", err)
		}()
		go func() {
			_, err := c.WriteTo(w)
			errs <- fmt.Errorf("WriteTo: %w", err)
		}()
		for _, ch := range []chan struct{}{r.entered, w.entered} {
			select {
			case <-ch:
			case <-ctx.Done():
				c.Close()
				return errors.New("ReadFrom's reader and WriteTo's writer did not both get a ring")
			}
		}
		if err := c.Close(); err != nil {
			return fmt.Errorf("close: %w", err)
		}
		close(r.release) // it fills the send ring's slice now
		close(w.release) // it reads the receive ring's
		for range 2 {
			select {
			case err := <-errs:
				if !errors.Is(err, net.ErrClosed) {
					return fmt.Errorf("%v, want net.ErrClosed", err)
				}
			case <-ctx.Done():
				return errors.New("ReadFrom or WriteTo did not return after Close")
			}
		}
		if string(w.got) != "data for WriteTo" || !w.same {
			return fmt.Errorf("WriteTo's writer got %q (unchanged: %v)", w.got, w.same)
		}
		return nil
	})
}
