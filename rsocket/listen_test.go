// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
)

// fakeSource hands a Listener the requests a test queues.
type fakeSource struct {
	reqs chan request
	done chan struct{}
	once sync.Once
}

func newFakeSource() *fakeSource {
	return &fakeSource{reqs: make(chan request, 256), done: make(chan struct{})}
}

func (s *fakeSource) next(ctx context.Context) (request, error) {
	select {
	case r := <-s.reqs:
		return r, nil
	case <-s.done:
		return nil, fmt.Errorf("rdma_cm accept: %w", cm.ErrClosed)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *fakeSource) addr() netip.AddrPort { return fakeAddrA.AddrPort() }
func (s *fakeSource) close() error         { s.once.Do(func() { close(s.done) }); return nil }

// fakeRequest is a requester: honest ones are connected over a fake wire
// (peer is the requester's end); others hold the setup until release or
// the listener gives up on them, then fail with err.
type fakeRequest struct {
	t        testing.TB
	data     []byte
	from     string
	honest   bool
	err      error         // what accept fails with (not honest)
	release  chan struct{} // closed: the requester gives up now (nil: at once)
	rejected chan struct{}
	peer     chan *Conn   // the honest requester's end, once accepted
	gaveUp   chan error   // what the half-open requester's accept ended with
	remotes  atomic.Int32 // calls of remote (a system call for cm's)
}

func newFakeRequest(t testing.TB, from string, honest bool) *fakeRequest {
	var b [56]byte
	cfg := testConfig(t, Options{})
	d := ownConnData(&memory{}, &cfg)
	d.marshal(b[:])
	return &fakeRequest{t: t, data: b[:], from: from, honest: honest, rejected: make(chan struct{}),
		peer: make(chan *Conn, 1), gaveUp: make(chan error, 1)}
}

// halfOpen is a requester that never completes the connection (no RTU)
// until release is closed; then it rejects (the CM's reason 28 after its
// retries), as librdmacm's peer does when it gives up.
func halfOpen(t testing.TB, from string) *fakeRequest {
	r := newFakeRequest(t, from, false)
	r.release = make(chan struct{})
	r.err = fmt.Errorf("rdma_cm accept on %v: event REJECTED (status 28): %w", fakeAddrA, cm.ErrRejected)
	return r
}

func (r *fakeRequest) privateData() []byte { return r.data }
func (r *fakeRequest) remote() string      { r.remotes.Add(1); return r.from }
func (r *fakeRequest) reject()             { close(r.rejected) }

func (r *fakeRequest) accept(ctx context.Context, cfg config, o *Options, peer connData) (*Conn, error) {
	if r.honest {
		a, b, _ := fakePair(r.t, *o, Options{})
		r.peer <- b
		return a, nil
	}
	var err error
	if r.release == nil {
		err = r.err
	} else {
		select {
		case <-r.release:
			err = r.err
		case <-ctx.Done():
			err = fmt.Errorf("rdma_cm accept on %v: %w", fakeAddrA, ctx.Err())
		}
	}
	r.gaveUp <- err
	return nil, err
}

// acceptWithin calls AcceptRSocket, failing the test if it takes longer
// than d.
func acceptWithin(t *testing.T, l *Listener, d time.Duration) (*Conn, error) {
	t.Helper()
	type result struct {
		c   *Conn
		err error
	}
	ch := make(chan result, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		c, err := l.AcceptRSocket(ctx)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-time.After(d):
		cancel()
		<-ch
		t.Fatalf("Accept did not return within %v", d)
		return nil, nil
	}
}

func fakeListener(t *testing.T, lc ListenConfig) (*Listener, *fakeSource) {
	t.Helper()
	src := newFakeSource()
	l := lc.listen(src)
	t.Cleanup(func() { l.Close() })
	return l, src
}

// A half-open requester (CONNECT_RESPONSE, no RTU) does not hold up an
// honest one behind it, and its eventual reject does not come out of
// Accept.
func TestListenerHalfOpenDoesNotBlock(t *testing.T) {
	l, src := fakeListener(t, ListenConfig{})
	bad := halfOpen(t, "10.0.0.66:1")
	src.reqs <- bad
	good := newFakeRequest(t, "10.0.0.2:2", true)
	src.reqs <- good
	c, err := acceptWithin(t, l, time.Second)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	defer c.Close()
	close(bad.release)
	<-bad.gaveUp
	// The listener goes on: the next honest requester is served.
	good2 := newFakeRequest(t, "10.0.0.3:3", true)
	src.reqs <- good2
	c2, err := acceptWithin(t, l, time.Second)
	if err != nil {
		t.Fatalf("Accept after the half-open requester's reject: %v", err)
	}
	c2.Close()
	waitFor(t, "1 dropped, 2 accepted", func() bool { st := l.Stats(); return st.Dropped == 1 && st.Accepted == 2 })
}

// Every requester-side failure is the requester's: Accept skips it.
func TestListenerRequesterFailuresSkipped(t *testing.T) {
	for _, err := range []error{
		cm.ErrRejected, cm.ErrConnect, cm.ErrUnreachable, cm.ErrDisconnected, context.DeadlineExceeded,
	} {
		t.Run(err.Error(), func(t *testing.T) {
			var logged []string
			var mu sync.Mutex
			l, src := fakeListener(t, ListenConfig{Options: Options{Logf: func(f string, a ...any) {
				mu.Lock()
				logged = append(logged, fmt.Sprintf(f, a...))
				mu.Unlock()
			}}})
			bad := newFakeRequest(t, "10.0.0.66:1", false)
			bad.err = fmt.Errorf("rdma_cm accept: %w", err)
			src.reqs <- bad
			src.reqs <- newFakeRequest(t, "10.0.0.2:2", true)
			c, aerr := acceptWithin(t, l, time.Second)
			if aerr != nil {
				t.Fatalf("Accept: %v", aerr)
			}
			c.Close()
			// The setup counts the drop, then logs it: wait for both.
			named := func() bool {
				mu.Lock()
				defer mu.Unlock()
				return strings.Contains(strings.Join(logged, "\n"), "10.0.0.66:1")
			}
			waitFor(t, "the drop counted and logged", func() bool { return l.Stats().Dropped == 1 && named() })
		})
	}
}

// Bad connection data is refused (rejected, counted) and skipped.
func TestListenerRefusesBadData(t *testing.T) {
	l, src := fakeListener(t, ListenConfig{})
	bad := newFakeRequest(t, "10.0.0.66:1", true)
	bad.data = []byte("GET / HTTP/1.1\r\n")
	src.reqs <- bad
	src.reqs <- newFakeRequest(t, "10.0.0.2:2", true)
	c, err := acceptWithin(t, l, time.Second)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	c.Close()
	<-bad.rejected
	if st := l.Stats(); st.Refused != 1 || l.Refused() != 1 {
		t.Errorf("Stats = %+v, want 1 refused", st)
	}
}

// With no Options.Logf the Listener never asks a request for its address
// (for cm's a query, a system call each, which a storm of garbage or
// honest requests would multiply for a log line nobody reads).
func TestListenerNoLogNoRemote(t *testing.T) {
	l, src := fakeListener(t, ListenConfig{})
	bad := newFakeRequest(t, "10.0.0.66:1", true)
	bad.data = []byte("GET / HTTP/1.1\r\n")
	gone := newFakeRequest(t, "10.0.0.67:1", false)
	gone.err = fmt.Errorf("rdma_cm accept on %v: event REJECTED (status 28): %w", fakeAddrA, cm.ErrRejected)
	honest := newFakeRequest(t, "10.0.0.2:2", true)
	src.reqs <- bad
	src.reqs <- gone
	src.reqs <- honest
	c, err := acceptWithin(t, l, time.Second)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	c.Close()
	<-bad.rejected
	waitFor(t, "the drop counted", func() bool { return l.Stats().Dropped == 1 })
	for _, r := range []*fakeRequest{bad, gone, honest} {
		if n := r.remotes.Load(); n != 0 {
			t.Errorf("request from %s: remote called %d times with no Logf, want 0", r.from, n)
		}
	}
}

// http.Serve goes on serving past requesters that fail.
func TestListenerHTTPServeSurvives(t *testing.T) {
	l, src := fakeListener(t, ListenConfig{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		srv.Close()
		<-served
	}()
	for i := range 3 {
		bad := newFakeRequest(t, fmt.Sprintf("10.0.0.66:%d", i), false)
		bad.err = fmt.Errorf("rdma_cm accept: event REJECTED (status 28): %w", cm.ErrRejected)
		src.reqs <- bad
		good := newFakeRequest(t, "10.0.0.2:2", true)
		src.reqs <- good
		var peer *Conn
		select {
		case peer = <-good.peer:
		case err := <-served:
			t.Fatalf("http.Serve ended: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("the honest requester was not accepted")
		}
		peer.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprintf(peer, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(peer), nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		resp.Body.Close()
		peer.Close()
	}
}

// A requester that never completes is dropped after AcceptTimeout.
func TestListenerAcceptTimeout(t *testing.T) {
	l, src := fakeListener(t, ListenConfig{AcceptTimeout: 50 * time.Millisecond})
	bad := halfOpen(t, "10.0.0.66:1")
	src.reqs <- bad
	select {
	case err := <-bad.gaveUp:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the setup ended with %v, want the deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the half-open requester was not dropped")
	}
	waitFor(t, "the drop counted", func() bool { st := l.Stats(); return st.TimedOut == 1 && st.Dropped == 1 })
	if st := l.Stats(); st.Pending != 0 {
		t.Errorf("Stats = %+v, want nothing pending", st)
	}
}

// Past MaxPendingAccepts setups, the oldest is evicted; past that many
// connections waiting for Accept, requests are rejected.
func TestListenerEvictsOldest(t *testing.T) {
	const limit = 4
	l, src := fakeListener(t, ListenConfig{MaxPendingAccepts: limit, AcceptTimeout: time.Minute})
	var bad []*fakeRequest
	for i := range limit + 2 {
		r := halfOpen(t, fmt.Sprintf("10.0.0.66:%d", i))
		bad = append(bad, r)
		src.reqs <- r
	}
	for i := range 2 {
		select {
		case err := <-bad[i].gaveUp:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("evicted setup %d ended with %v", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("half-open requester %d was not evicted", i)
		}
	}
	good := newFakeRequest(t, "10.0.0.2:2", true)
	src.reqs <- good
	c, err := acceptWithin(t, l, time.Second)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	c.Close()
	waitFor(t, "the evictions counted", func() bool { return l.Stats().Evicted == 3 })
	for _, r := range bad[3:] {
		close(r.release)
	}
	waitFor(t, "the rejects counted", func() bool { st := l.Stats(); return st.Dropped == 6 && st.Pending == 0 })

	// Connections nobody accepts: the queue holds limit, then requests
	// are rejected.
	var goods []*fakeRequest
	for i := range limit + 1 {
		r := newFakeRequest(t, fmt.Sprintf("10.0.0.3:%d", i), true)
		goods = append(goods, r)
		src.reqs <- r
		if i < limit {
			waitFor(t, "the connection set up", func() bool { return l.Stats().Waiting == i+1 })
		}
	}
	select {
	case <-goods[limit].rejected:
	case <-time.After(5 * time.Second):
		t.Fatal("a request past the queue was not rejected")
	}
	if st := l.Stats(); st.Busy != 1 {
		t.Errorf("Stats = %+v, want 1 busy", st)
	}
}

// Close ends Accept with net.ErrClosed and drops setups under way.
func TestListenerCloseDuringSetup(t *testing.T) {
	l, src := fakeListener(t, ListenConfig{})
	bad := halfOpen(t, "10.0.0.66:1")
	src.reqs <- bad
	errc := make(chan error, 1)
	go func() { _, err := l.AcceptRSocket(context.Background()); errc <- err }()
	waitFor(t, "the setup started", func() bool { return l.Stats().Pending == 1 })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Accept did not return after Close")
	}
	<-bad.gaveUp
	if st := l.Stats(); st.Dropped != 0 {
		t.Errorf("Stats = %+v: the listener's own Close counted as a drop", st)
	}
}

// A setup that fails for want of a local resource (ENOMEM: RLIMIT_MEMLOCK)
// is the listener's own trouble: Accept returns it, as a temporary error
// (http.Serve waits and goes on), and then serves the next requester.
func TestListenerResourceErrorReported(t *testing.T) {
	l, src := fakeListener(t, ListenConfig{})
	bad := newFakeRequest(t, "10.0.0.2:1", false)
	bad.err = fmt.Errorf("rdma_cm accept: rsocket: register receive ring: %w", syscall.ENOMEM)
	src.reqs <- bad
	_, err := acceptWithin(t, l, time.Second)
	// http.Serve's test: a Temporary() error is waited out.
	var ne interface{ Temporary() bool }
	if !errors.Is(err, syscall.ENOMEM) || !errors.As(err, &ne) || !ne.Temporary() || os.IsTimeout(err) {
		t.Fatalf("Accept: %v; want a temporary error matching ENOMEM", err)
	}
	src.reqs <- newFakeRequest(t, "10.0.0.2:2", true)
	c, err := acceptWithin(t, l, time.Second)
	if err != nil {
		t.Fatalf("Accept after the failure: %v", err)
	}
	c.Close()
	if st := l.Stats(); st.Failed != 1 || st.Dropped != 0 {
		t.Errorf("Stats = %+v, want 1 failed, 0 dropped", st)
	}
}
