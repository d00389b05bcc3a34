// Copyright 2026 The rdmago Authors.

package perf

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/tools/perf/ptwire"
)

// Host tests of an rdmaperf without --perftest meeting perftest's exchange
// on its control channel: a fake perftest peer (package ptwire) over
// loopback TCP. With no RDMA device the server's run ends where it opens
// its device; the lab's TestLabPerftestMismatch runs the whole test.

// freePort returns a TCP port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// syncBuffer is a bytes.Buffer for a writer in another goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// runServerAgainstPt starts an rdmaperf server with args and connects a
// fake perftest client to it, which exchanges versions; it returns the
// client's result of that exchange, the server's stderr and its error.
func runServerAgainstPt(t *testing.T, args ...string) (peerVersion, stderr string, verr, serr error) {
	t.Helper()
	port := freePort(t)
	cfg, err := ParseArgs(append(args, "-p", port, "--timeout", "20s"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, io.Discard, &errOut) }()
	var c net.Conn
	for {
		var d net.Dialer
		if c, err = d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port)); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server did not listen: %v", err)
		case err := <-done:
			t.Fatalf("the server ended before the client came: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	defer c.Close()
	pc := ptwire.NewConn(c, true, 10*time.Second)
	peerVersion, verr = pc.Versions()
	c.Close()
	select {
	case serr = <-done:
	case <-ctx.Done():
		t.Fatal("the server did not end after its client left")
	}
	return peerVersion, errOut.String(), verr, serr
}

// An rdmaperf server without --perftest whose client is perftest speaks
// perftest's exchange on the same connection and says so.
func TestServerAdaptsToPtClient(t *testing.T) {
	v, stderr, verr, serr := runServerAgainstPt(t, "write_bw")
	if verr != nil || v != ptwire.Version {
		t.Errorf("the fake perftest client's version exchange: %q, %v; want the server's %q", v, verr, ptwire.Version)
	}
	var pp *perftestPeer
	if errors.As(serr, &pp) || strings.Contains(errString(serr), "add --perftest") {
		t.Errorf("the server stopped at perftest's version: %v", serr)
	}
	want := "rdmaperf: the peer is perftest " + ptwire.Version + " (ib_write_bw): speaking its exchange, as with --perftest"
	if !strings.Contains(stderr, want) {
		t.Errorf("the server's stderr %q does not say %q", stderr, want)
	}
	t.Logf("the server, once its fake client left: %v", serr)
}

// Flags that perftest cannot follow fail the adapted server with the flag
// to change.
func TestServerPtClientFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"write_bw", "-a"}, "give -s instead of -a"},
		{[]string{"write_bw", "-D", "2"}, "-D is not implemented against perftest"},
		{[]string{"write_bw", "-l", "4", "-n", "40"}, "-l is not implemented against perftest"},
	} {
		_, stderr, _, serr := runServerAgainstPt(t, tc.args...)
		if serr == nil || !strings.Contains(serr.Error(), "the client is perftest "+ptwire.Version) || !strings.Contains(serr.Error(), tc.want) {
			t.Errorf("%q: %v; want an error naming perftest and saying %q", tc.args, serr, tc.want)
		}
		if strings.Contains(stderr, "speaking its exchange") {
			t.Errorf("%q: the server says it speaks perftest's exchange: %s", tc.args, stderr)
		}
	}
}

// An rdmaperf client without --perftest whose server is perftest cannot
// go on: it says which flag to add.
func TestClientFacesPtServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	served := make(chan struct{})
	go func() {
		defer close(served)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// perftest's server reads the client's "version" (rdmaperf's
		// hello), answers with its own, and finds the peer's wanting.
		pc := ptwire.NewConn(c, false, 10*time.Second)
		if _, err := pc.Versions(); err == nil {
			t.Errorf("the fake perftest server took rdmaperf's hello for a version")
		}
		io.Copy(io.Discard, c) // until the client closes
	}()
	cfg, err := ParseArgs([]string{"write_bw", "-p", port, "--timeout", "20s", "127.0.0.1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), cfg, io.Discard, io.Discard)
	if want := "the server is perftest " + ptwire.Version + ": run this client with --perftest"; errString(err) != want {
		t.Errorf("rdmaperf client facing perftest's server: %v; want %q", err, want)
	}
	<-served
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
