// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// tcpNet runs rdmacat's logic over loopback TCP (host tests have no RDMA).
type tcpNet struct{ addrs chan net.Addr }

func (n tcpNet) dial(ctx context.Context, addr string) (conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

func (n tcpNet) accept(ctx context.Context, addr string, listening func(net.Addr)) (conn, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	listening(l.Addr())
	if n.addrs != nil {
		n.addrs <- l.Addr()
	}
	c, err := l.Accept()
	if err != nil {
		return nil, err
	}
	return c.(*net.TCPConn), nil
}

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "want one address"},
		{[]string{"a:1", "b:2"}, 2, "want one address"},
		{[]string{"nohost"}, 2, "want HOST:PORT"},
		{[]string{"-l", "10.0.0.1:"}, 2, "with a port"},
		{[]string{"-bogus", "a:1"}, 2, "flag provided but not defined"},
		{[]string{"-h"}, 0, "usage:"},
	} {
		var stderr bytes.Buffer
		code := runNet(context.Background(), tc.args, tcpNet{}, strings.NewReader(""), io.Discard, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("rdmacat %q: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
	}
}

// TestBothWays: a listener and a connector swap their stdins; both exit 0
// and --json reports the byte counts.
func TestBothWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nw := tcpNet{addrs: make(chan net.Addr, 1)}
	up, down := bytes.Repeat([]byte("to the server "), 100000), bytes.Repeat([]byte("to the client "), 50000)
	var sOut, sErr bytes.Buffer
	codes := make(chan int, 1)
	go func() {
		codes <- runNet(ctx, []string{"-l", "--json", "127.0.0.1:0"}, nw, bytes.NewReader(down), &sOut, &sErr)
	}()
	addr := (<-nw.addrs).String()
	var cOut, cErr bytes.Buffer
	if code := runNet(ctx, []string{"-q", addr}, nw, bytes.NewReader(up), &cOut, &cErr); code != 0 {
		t.Fatalf("connector exit %d: %s", code, cErr.String())
	}
	if cErr.Len() != 0 {
		t.Errorf("-q printed %q", cErr.String())
	}
	if code := <-codes; code != 0 {
		t.Fatalf("listener exit %d: %s", code, sErr.String())
	}
	if !bytes.Equal(sOut.Bytes(), up) || !bytes.Equal(cOut.Bytes(), down) {
		t.Fatalf("data mixed up: server got %d bytes, client %d", sOut.Len(), cOut.Len())
	}
	lines := strings.Split(strings.TrimSpace(sErr.String()), "\n")
	var s summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("--json: %v in %q", err, sErr.String())
	}
	if !s.OK || s.Mode != "listen" || s.ReceivedBytes != int64(len(up)) || s.SentBytes != int64(len(down)) || s.Seconds <= 0 {
		t.Fatalf("summary %+v", s)
	}
}

// TestPeerReset: a connection that fails mid-stream exits 1.
func TestPeerReset(t *testing.T) {
	ctx, l := loopback(t)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		c.Write([]byte("partial"))
		time.Sleep(100 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0)
		c.Close() // RST
	}()
	before := runtime.NumGoroutine()
	var out, errb bytes.Buffer
	// stdin ends only long after the failure (as a terminal's would not).
	code := runNet(ctx, []string{"--json", l.Addr().String()}, tcpNet{}, lateEOF(time.Second), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), `"ok":false`) {
		t.Fatalf("exit %d, stderr %q; want 1 and a failed summary", code, errb.String())
	}
	// The sending goroutine outlived runNet, blocked on stdin: let it end
	// while the test runs, so that -race sees whether it touches what
	// runNet reported.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// readFromConn is a connection that notes whether its ReadFrom was used.
type readFromConn struct {
	*net.TCPConn
	used chan struct{}
}

func (c readFromConn) ReadFrom(r io.Reader) (int64, error) {
	select {
	case c.used <- struct{}{}:
	default:
	}
	return c.TCPConn.ReadFrom(r)
}

// TestSendUsesReadFrom: the sending side hands stdin to the connection's
// io.ReaderFrom (rsocket's reads into the registered send ring, without
// io.Copy's buffer), and still counts what it sent.
func TestSendUsesReadFrom(t *testing.T) {
	ctx, l := loopback(t)
	got := make(chan []byte, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		got <- b
	}()
	d, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := readFromConn{d.(*net.TCPConn), make(chan struct{}, 1)}
	defer c.Close()
	data := bytes.Repeat([]byte("sent with ReadFrom "), 10000)
	var sum summary
	sendErr, recvErr := pump(ctx, c, bytes.NewReader(data), io.Discard, &sum, 0)
	if sendErr != nil || recvErr != nil {
		t.Fatalf("pump: send %v, receive %v", sendErr, recvErr)
	}
	select {
	case <-c.used:
	default:
		t.Error("stdin was copied with Write, not the connection's ReadFrom")
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Errorf("peer got %d bytes, want the %d sent", len(b), len(data))
	}
	if sum.SentBytes != int64(len(data)) {
		t.Errorf("summary says %d bytes sent, want %d", sum.SentBytes, len(data))
	}
}

// loopback gives a test 20 s and a TCP listener on loopback, both ended
// by its cleanup.
func loopback(t *testing.T) (context.Context, net.Listener) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return ctx, l
}

// lateEOF is a reader that ends, with nothing, after a while.
type lateEOF time.Duration

func (d lateEOF) Read([]byte) (int, error) {
	time.Sleep(time.Duration(d))
	return 0, io.EOF
}

// TestIdleTimeout: a peer that stops reading (and sends nothing) ends the
// connection after --idle with an error saying so, instead of blocking
// rdmacat's write for ever; a peer that keeps the data moving does not.
func TestIdleTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			held <- c // never read, never written
		}
	}()
	defer func() {
		select {
		case c := <-held:
			c.Close()
		default:
		}
	}()
	// Far more than the sockets' buffers hold.
	stdin := io.LimitReader(zeros{}, 1<<30)
	var stderr bytes.Buffer
	begin := time.Now()
	code := runNet(ctx, []string{"--idle", "300ms", l.Addr().String()}, tcpNet{}, stdin, io.Discard, &stderr)
	took := time.Since(begin)
	if code != 1 || !strings.Contains(stderr.String(), "no data moved for 300ms") {
		t.Errorf("exit %d, stderr %q; want 1 and the idle timeout", code, stderr.String())
	}
	if took > 10*time.Second {
		t.Errorf("took %v to notice 300ms without progress", took)
	}
	t.Logf("ended after %v: %s", took.Round(time.Millisecond), stderr.String())

	// Data that keeps moving, slower than --idle in total, is not idle.
	nw := tcpNet{addrs: make(chan net.Addr, 1)}
	codes := make(chan int, 1)
	var sOut, sErr bytes.Buffer
	go func() {
		codes <- runNet(ctx, []string{"-l", "-q", "--idle", "300ms", "127.0.0.1:0"}, nw, strings.NewReader(""), &sOut, &sErr)
	}()
	var addr string
	select {
	case a := <-nw.addrs:
		addr = a.String()
	case code := <-codes:
		t.Fatalf("listener: exit %d, stderr %q", code, sErr.String())
	}
	var cErr bytes.Buffer
	if code := runNet(ctx, []string{"-q", "--idle", "300ms", addr}, tcpNet{}, &slowReader{n: 8, every: 100 * time.Millisecond}, io.Discard, &cErr); code != 0 {
		t.Errorf("slow sender: exit %d, stderr %q", code, cErr.String())
	}
	if code := <-codes; code != 0 || sOut.String() != "xxxxxxxx" {
		t.Errorf("listener: exit %d, received %q, stderr %q", code, sOut.String(), sErr.String())
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// slowReader yields n bytes "x", one every so often, then EOF.
type slowReader struct {
	n     int
	every time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(r.every)
	r.n--
	p[0] = 'x'
	return 1, nil
}
