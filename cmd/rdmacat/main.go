// Copyright 2026 The rdmago Authors.

// Command rdmacat is netcat over rsockets (package rsocket): it talks to
// Go programs using rsocket, to librdmacm's rsockets in C and to any
// socket program run under LD_PRELOAD=librspreload.so.
//
//	rdmacat [flags] HOST:PORT          connect; stdin → peer, peer → stdout
//	rdmacat [flags] -l [ADDR:]PORT     serve one connection the same way
//
// When stdin ends, rdmacat closes its sending side (the peer reads EOF)
// and keeps reading until the peer does the same. The exit status is 0
// only when both directions ended cleanly.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/internal/cliflag"
	"github.com/rdmago/rdmago/rsocket"
)

const usage = `usage:
  rdmacat [flags] HOST:PORT          connect: stdin to the peer, the peer to stdout
  rdmacat [flags] -l [ADDR:]PORT     serve one connection the same way
flags:
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// conn is what rdmacat needs of a connection (an *rsocket.Conn; host
// tests use TCP).
type conn interface {
	net.Conn
	CloseWrite() error
}

// network dials and listens; rsocketNet is the real one.
type network interface {
	dial(ctx context.Context, addr string) (conn, error)
	accept(ctx context.Context, addr string, listening func(net.Addr)) (conn, error)
}

type rsocketNet struct{ o rsocket.Options }

func (n rsocketNet) dial(ctx context.Context, addr string) (conn, error) {
	d := rsocket.Dialer{Options: n.o}
	return d.DialRSocket(ctx, "tcp", addr)
}

func (n rsocketNet) accept(ctx context.Context, addr string, listening func(net.Addr)) (conn, error) {
	lc := rsocket.ListenConfig{Options: n.o, Backlog: 1}
	l, err := lc.ListenRSocket(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	listening(l.Addr())
	return l.AcceptRSocket(ctx)
}

// summary is the --json output (on stderr: stdout carries the data).
type summary struct {
	Mode          string  `json:"mode"` // "connect" or "listen"
	Local         string  `json:"local,omitempty"`
	Remote        string  `json:"remote,omitempty"`
	SentBytes     int64   `json:"sent_bytes"`
	ReceivedBytes int64   `json:"received_bytes"`
	Seconds       float64 `json:"seconds"`
	SendMBps      float64 `json:"send_mb_per_s"` // MB = 10^6 bytes
	RecvMBps      float64 `json:"recv_mb_per_s"`
	OK            bool    `json:"ok"`
	SendError     string  `json:"send_error,omitempty"`
	RecvError     string  `json:"recv_error,omitempty"`
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runNet(ctx, args, nil, stdin, stdout, stderr)
}

func runNet(ctx context.Context, args []string, nw network, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmacat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	listen := fs.Bool("l", false, "listen on [ADDR:]PORT and serve one connection")
	quiet := fs.Bool("q", false, "print nothing but errors on stderr")
	jsonOut := fs.Bool("json", false, "print a JSON summary (bytes, seconds, throughput) on stderr at the end")
	sndbuf := fs.Int("sndbuf", 0, "send ring size in bytes (0: librdmacm's 128 KiB)")
	rcvbuf := fs.Int("rcvbuf", 0, "receive ring size in bytes (0: librdmacm's 128 KiB)")
	inline := fs.Int("inline", 0, "inline size in bytes (0: librdmacm's 64; -1: none)")
	keepalive := fs.Duration("keepalive", 0, "keepalive interval (0: off, as librdmacm)")
	timeout := fs.Duration("w", 0, "give up connecting after this long (0: no limit)")
	idle := fs.Duration("idle", 0, "end the connection, with an error, when no data has moved either way for this long (0: no limit)")
	rest, err := cliflag.ParseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	if len(rest) != 1 {
		fmt.Fprintf(stderr, "rdmacat: want one address, got %d arguments\n", len(rest))
		fs.Usage()
		return 2
	}
	addr := rest[0]
	if *listen {
		if !strings.Contains(addr, ":") {
			addr = ":" + addr // a bare port: every RDMA device
		}
	} else if _, _, err := net.SplitHostPort(addr); err != nil {
		fmt.Fprintf(stderr, "rdmacat: %q: want HOST:PORT (or -l [ADDR:]PORT to listen)\n", addr)
		return 2
	}
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
		fmt.Fprintf(stderr, "rdmacat: %q: want [ADDR:]PORT with a port\n", addr)
		return 2
	}
	if nw == nil {
		inl := *inline
		if inl < 0 {
			inl = rsocket.NoInline
		}
		nw = rsocketNet{o: rsocket.Options{SendBuffer: *sndbuf, RecvBuffer: *rcvbuf, Inline: inl, KeepAlive: *keepalive}}
	}
	logf := func(format string, a ...any) {
		if !*quiet {
			fmt.Fprintf(stderr, "rdmacat: "+format+"\n", a...)
		}
	}

	var c conn
	sum := summary{Mode: "connect"}
	if *listen {
		sum.Mode = "listen"
		c, err = nw.accept(ctx, addr, func(a net.Addr) { logf("listening on %v", a) })
	} else {
		dctx := ctx
		if *timeout > 0 {
			var cancel context.CancelFunc
			dctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		c, err = nw.dial(dctx, addr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdmacat: %v\n", err)
		return 1
	}
	sum.Local, sum.Remote = c.LocalAddr().String(), c.RemoteAddr().String()
	logf("connected %v -> %v", c.LocalAddr(), c.RemoteAddr())

	start := time.Now()
	sendErr, recvErr := pump(ctx, c, stdin, stdout, &sum, *idle)
	sum.Seconds = time.Since(start).Seconds()
	cerr := c.Close()
	if sendErr == nil && recvErr == nil && cerr != nil {
		sendErr = cerr
	}
	if sum.Seconds > 0 {
		sum.SendMBps = float64(sum.SentBytes) / sum.Seconds / 1e6
		sum.RecvMBps = float64(sum.ReceivedBytes) / sum.Seconds / 1e6
	}
	sum.OK = sendErr == nil && recvErr == nil
	var idled idleError
	switch {
	case errors.As(sendErr, &idled) && errors.As(recvErr, &idled):
		sum.SendError, sum.RecvError = idled.Error(), idled.Error()
		fmt.Fprintf(stderr, "rdmacat: %v\n", idled)
	default:
		if sendErr != nil {
			sum.SendError = sendErr.Error()
			fmt.Fprintf(stderr, "rdmacat: sending: %v\n", sendErr)
		}
		if recvErr != nil {
			sum.RecvError = recvErr.Error()
			fmt.Fprintf(stderr, "rdmacat: receiving: %v\n", recvErr)
		}
	}
	if *jsonOut {
		enc := json.NewEncoder(stderr)
		enc.Encode(sum)
	} else {
		logf("sent %d bytes, received %d bytes in %.3f s (%.2f MB/s out, %.2f MB/s in)",
			sum.SentBytes, sum.ReceivedBytes, sum.Seconds, sum.SendMBps, sum.RecvMBps)
	}
	if !sum.OK {
		return 1
	}
	return 0
}

// pump copies stdin to c (then CloseWrite) and c to stdout (until EOF), at
// once; ctx's end closes c, which stops both, and so does idle (when
// positive) without data moving either way: then both errors are
// idleError.
//
// The sending goroutine may outlive pump (stdin blocks, the connection
// failed), so it counts what it sent in an atomic, never in sum.
func pump(ctx context.Context, c conn, stdin io.Reader, stdout io.Writer, sum *summary, idle time.Duration) (sendErr, recvErr error) {
	sent := make(chan error, 1)
	var sentBytes, recvBytes atomic.Int64
	defer func() { sum.SentBytes = sentBytes.Load() }()
	var idled atomic.Bool
	if idle > 0 {
		stdout = countWriter{stdout, &recvBytes}
		defer func() {
			if idled.Load() {
				err := idleError{idle}
				sendErr, recvErr = err, err
			}
		}()
		stop := watchIdle(idle, func() int64 { return sentBytes.Load() + recvBytes.Load() }, func() {
			idled.Store(true)
			c.Close()
		})
		defer stop() // before the check above
	}
	go func() {
		// Counted on the way in, so that io.Copy still finds c's
		// io.ReaderFrom (rsocket's reads stdin straight into the
		// registered send ring); io.Copy's count is the exact one.
		n, err := io.Copy(c, countReader{stdin, &sentBytes})
		sentBytes.Store(n)
		if err == nil {
			err = c.CloseWrite()
		}
		sent <- err
	}()
	stopOnCancel := context.AfterFunc(ctx, func() { c.Close() })
	defer stopOnCancel()
	n, err := io.Copy(stdout, c)
	sum.ReceivedBytes = n
	recvErr = err
	if ctx.Err() != nil && recvErr == nil {
		recvErr = ctx.Err()
	}
	if recvErr != nil {
		// The connection failed: stdin may never end (a terminal), so
		// do not wait for it long.
		c.Close()
		select {
		case sendErr = <-sent:
		case <-time.After(200 * time.Millisecond):
			sendErr = errors.New("stopped before the end of stdin: the connection failed")
		}
		return sendErr, recvErr
	}
	// The peer finished sending; our side ends when stdin does (or the
	// connection fails).
	sendErr = <-sent
	if ctx.Err() != nil && sendErr == nil {
		sendErr = ctx.Err()
	}
	return sendErr, recvErr
}

// idleError is the end of a connection that moved no data for --idle.
type idleError struct{ d time.Duration }

func (e idleError) Error() string {
	return fmt.Sprintf("no data moved for %v either way (--idle): ended the connection", e.d)
}

// watchIdle calls expire once progress has not changed for d, checking
// every d/4 (at least every 10 ms); stop ends the watch.
func watchIdle(d time.Duration, progress func() int64, expire func()) (stop func()) {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTicker(max(d/4, 10*time.Millisecond))
		defer t.Stop()
		last, since := progress(), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				if p := progress(); p != last {
					last, since = p, now
				} else if now.Sub(since) >= d {
					expire()
					return
				}
			}
		}
	}()
	return func() { close(done); <-exited }
}

// countWriter adds what it writes to n.
type countWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (cw countWriter) Write(p []byte) (int, error) {
	k, err := cw.w.Write(p)
	cw.n.Add(int64(k))
	return k, err
}

// countReader adds what it reads to n. It has no WriteTo, on purpose: with
// it as the source, io.Copy uses the destination's ReadFrom.
type countReader struct {
	r io.Reader
	n *atomic.Int64
}

func (cr countReader) Read(p []byte) (int, error) {
	k, err := cr.r.Read(p)
	cr.n.Add(int64(k))
	return k, err
}
