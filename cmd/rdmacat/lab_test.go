// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/rsocket"
)

// labNet is rsocketNet that reports the listening address, retries a
// dial while nobody listens yet (the C peer may still be starting) and
// keeps the connection for the test's watch (see stats).
type labNet struct {
	rsocketNet
	addrs chan net.Addr
	conn  *atomic.Pointer[rsocket.Conn]
}

func newLabNet() labNet {
	return labNet{addrs: make(chan net.Addr, 1), conn: new(atomic.Pointer[rsocket.Conn])}
}

func (n labNet) keep(c conn, err error) (conn, error) {
	if rc, ok := c.(*rsocket.Conn); ok {
		n.conn.Store(rc)
	}
	return c, err
}

func (n labNet) dial(ctx context.Context, addr string) (conn, error) {
	return n.keep(labtest.Retry(ctx, func(err error) bool { return errors.Is(err, cm.ErrNoListener) },
		func() (conn, error) { return n.rsocketNet.dial(ctx, addr) }))
}

func (n labNet) accept(ctx context.Context, addr string, listening func(net.Addr)) (conn, error) {
	return n.keep(n.rsocketNet.accept(ctx, addr, func(a net.Addr) {
		listening(a)
		n.addrs <- a
	}))
}

// stats describes rdmacat's connection's flow control, for labtest.Watch.
func (n labNet) stats() string {
	if c := n.conn.Load(); c != nil {
		return "rdmacat's connection: " + c.Stats().String()
	}
	return "rdmacat has no connection on this node"
}

func random(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestLabNetcat: rdmacat against the traditional nc run under
// LD_PRELOAD=librspreload.so (so nc's TCP socket is an rsocket), in both
// roles; rdmacat's stdin must arrive whole at nc's stdout (checked by
// SHA-256), rdmacat must read nc's empty stream to its end, and both must
// exit 0. With two nodes node 0 runs the listening side and node 1 the
// connecting one.
func TestLabNetcat(t *testing.T) {
	e := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	// The traditional netcat, named itself (nc is an alternatives symlink,
	// absolute, which does not resolve under /host). OpenBSD's nc cannot
	// be an rsocket: it listens only with SO_REUSEPORT, which rsockets
	// refuse, and it creates its sockets with SOCK_NONBLOCK, which
	// librspreload does not take for an rsocket (it falls back to TCP).
	// The traditional nc stops sending when the peer's data ends, so it
	// only receives here: rdmacat's stdin must arrive whole at nc, and
	// both must end cleanly. Look it and librspreload up here, in the
	// test's goroutine (Missing fails the test inside the lab).
	const ncTool = "nc.traditional"
	labtest.Preload(t, labtest.HostTool(t, ctx, ncTool), "rsocket/librspreload.so")
	toNC := random(2<<20+123, 1)
	for i, ncListens := range []bool{true, false} {
		port := strconv.Itoa(18700 + i)
		name := map[bool]string{true: "nc-listens", false: "rdmacat-listens"}[ncListens]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 80*time.Second)
			defer cancel()
			// runNC runs nc; the connecting one again while it is
			// refused (across two nodes nothing says when rdmacat
			// listens: a fixed wait of 3 s was once too short, and the
			// listening rdmacat then waited out the deadline).
			runNC := func(args ...string) error {
				var out, errb bytes.Buffer
				_, err := labtest.Retry(ctx, func(err error) bool {
					return ctx.Err() == nil && strings.Contains(errb.String(), "Connection refused")
				}, func() (struct{}, error) {
					cmd := labtest.HostTool(t, ctx, ncTool, args...)
					labtest.Preload(t, cmd, "rsocket/librspreload.so")
					cmd.Stdin = bytes.NewReader(nil)
					out.Reset()
					errb.Reset()
					cmd.Stdout, cmd.Stderr = &out, &errb
					return struct{}{}, cmd.Run()
				})
				if err != nil {
					return fmt.Errorf("nc %q under librspreload: %v: %s", args, err, errb.String())
				}
				if sha256.Sum256(out.Bytes()) != sha256.Sum256(toNC) {
					return fmt.Errorf("nc received %d bytes, want rdmacat's %d (SHA-256 differs)", out.Len(), len(toNC))
				}
				return nil
			}
			runCat := func(nw labNet, args ...string) error {
				var out, errb bytes.Buffer
				code := runNet(ctx, append([]string{"--json"}, args...), nw, bytes.NewReader(toNC), &out, &errb)
				t.Logf("rdmacat %q: %s", args, errb.String())
				if code != 0 {
					return fmt.Errorf("rdmacat %q exited %d", args, code)
				}
				var want []byte // nc sends nothing
				if sha256.Sum256(out.Bytes()) != sha256.Sum256(want) {
					return fmt.Errorf("rdmacat received %d bytes, want nc's %d (SHA-256 differs)", out.Len(), len(want))
				}
				return nil
			}
			nw := newLabNet()
			// A stall would otherwise end only in the deadline: say
			// what each side's kernel and rdmacat's flow control hold.
			e.Watch(t, 60*time.Second, nw.stats)
			connect := e.Peer + ":" + port
			var lfn, cfn func() error
			if ncListens {
				lfn = func() error { return runNC("-l", "-s", e.Addr, "-p", port) }
				cfn = func() error {
					if !e.TwoNodes {
						time.Sleep(500 * time.Millisecond) // let nc listen
					}
					return runCat(nw, connect)
				}
			} else {
				lfn = func() error { return runCat(nw, "-l", e.Addr+":"+port) }
				cfn = func() error {
					if !e.TwoNodes {
						select {
						case <-nw.addrs:
						case <-ctx.Done():
							return ctx.Err()
						}
					}
					return runNC(e.Peer, port)
				}
			}
			e.RunRoles(t, func() (err error) {
				err = errors.New("the listening side stopped early")
				defer func() {
					if err != nil {
						cancel() // the connecting side would wait for nothing
					}
				}()
				return lfn()
			}, cfn)
		})
	}
}

// TestLabIdleTimeout: a peer that accepts and never reads holds rdmacat's
// write once the rings are full; --idle ends the connection with an error
// saying so, instead of blocking for ever.
func TestLabIdleTimeout(t *testing.T) {
	e := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	port := "18710"
	listening, clientDone := make(chan struct{}), make(chan struct{})
	e.RunRoles(t, func() error {
		l, err := rsocket.Listen(ctx, "tcp", e.Addr+":"+port)
		if err != nil {
			return err
		}
		defer l.Close()
		close(listening)
		c, err := l.AcceptRSocket(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		// Never read: hold the connection until rdmacat gave up (one
		// node), or for longer than it should take (two).
		select {
		case <-clientDone:
		case <-time.After(15 * time.Second):
		case <-ctx.Done():
		}
		return nil
	}, func() error {
		defer close(clientDone)
		if !e.TwoNodes {
			select {
			case <-listening:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var errb bytes.Buffer
		begin := time.Now()
		code := runNet(ctx, []string{"--idle", "1s", e.Peer + ":" + port}, newLabNet(), zeroReader(1<<30), io.Discard, &errb)
		took := time.Since(begin)
		t.Logf("rdmacat --idle 1s, exit %d after %v: %s", code, took.Round(time.Millisecond), errb.String())
		if code != 1 || !strings.Contains(errb.String(), "no data moved for 1s") {
			return fmt.Errorf("rdmacat exited %d: %s; want 1 and the idle timeout", code, errb.String())
		}
		if took > 20*time.Second {
			return fmt.Errorf("rdmacat took %v to end an idle connection (--idle 1s)", took)
		}
		return nil
	})
}

func zeroReader(n int64) io.Reader { return io.LimitReader(zeros{}, n) }
