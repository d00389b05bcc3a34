// Copyright 2026 The rdmago Authors.

//go:build linux

package cm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/netlink"
	"github.com/rdmago/rdmago/uverbs"
	"golang.org/x/sys/unix"
)

// labEnv is the lab's view for a test (labtest.Env: this node, its peer,
// whether two nodes run) with the addresses parsed.
type labEnv struct {
	labtest.Env
	addr netip.Addr
	peer netip.Addr
}

func requireLab(t *testing.T) labEnv {
	t.Helper()
	le := labEnv{Env: labtest.Require(t)}
	e := le.Env
	var err error
	if le.addr, err = netip.ParseAddr(e.Addr); err != nil {
		t.Fatalf("RDMALAB_ADDR %q: %v", e.Addr, err)
	}
	if le.peer, err = netip.ParseAddr(e.Peer); err != nil {
		t.Fatalf("RDMALAB_PEER %q: %v", e.Peer, err)
	}
	return le
}

// testLogf logs CM/verbs narration when -v is given.
func testLogf(t *testing.T) func(string, ...any) {
	if !testing.Verbose() {
		return nil
	}
	return func(f string, a ...any) { t.Logf(f, a...) }
}

// dialRetry dials, retrying while nobody listens yet (the other node may
// still be starting).
func dialRetry(ctx context.Context, addr string, o *Options) (*Conn, error) {
	return labtest.Retry(ctx, noListener, func() (*Conn, error) { return Dial(ctx, addr, o) })
}

func noListener(err error) bool { return errors.Is(err, ErrNoListener) }

// msgBuf is a registered buffer for one message.
type msgBuf struct {
	mr  *uverbs.MR
	buf []byte
}

func newMsgBuf(t *testing.T, c *Conn, n int) msgBuf {
	t.Helper()
	buf := make([]byte, n)
	mr, err := c.RegMR(buf, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite|uverbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	return msgBuf{mr: mr, buf: buf}
}

// waitWC polls the CQ for one completion, failing on error status.
func waitWC(ctx context.Context, cq *uverbs.CQ) (uverbs.WC, error) {
	var wcs [1]uverbs.WC
	if _, err := cq.PollN(ctx, wcs[:], 1); err != nil {
		return wcs[0], err
	}
	return wcs[0], wcs[0].Err()
}

// echoServer accepts n connections; each receives one message and sends it
// back reversed, then waits for the peer to disconnect and closes.
func echoServer(ctx context.Context, t *testing.T, l *Listener, n int) chan error {
	errs := make(chan error, n)
	go func() {
		for range n {
			var rb msgBuf
			o := l.o
			o.Setup = func(c *Conn) error {
				rb = newMsgBuf(t, c, 64)
				return c.QP().PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{rb.mr.SGE(0, 64)}})
			}
			req, err := l.AcceptRequest(ctx)
			if err != nil {
				errs <- err
				return
			}
			go func() {
				c, err := req.Accept(ctx, &o)
				if err != nil {
					errs <- fmt.Errorf("accept: %w", err)
					return
				}
				defer c.Close()
				wc, err := waitWC(ctx, c.RecvCQ())
				if err != nil {
					errs <- fmt.Errorf("server recv: %w", err)
					return
				}
				msg := rb.buf[:wc.ByteLen]
				rev := make([]byte, len(msg))
				for i := range msg {
					rev[len(msg)-1-i] = msg[i]
				}
				copy(rb.buf, rev)
				if err := c.QP().PostSend(uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{rb.mr.SGE(0, len(rev))}}); err != nil {
					errs <- err
					return
				}
				// The echo is this connection's last message: the client
				// disconnects as soon as it has it, and under load the
				// disconnect can move this QP to the error state before
				// the client's ACK is processed here, flushing a send the
				// client did receive. The client checks the echo's bytes;
				// here a flush counts only if the peer then disconnected.
				flushed := false
				if wc, err := waitWC(ctx, c.SendCQ()); err != nil {
					if !wc.IsFlush() {
						errs <- fmt.Errorf("server send: %w", err)
						return
					}
					flushed = true
				}
				select {
				case <-c.Done():
				case <-ctx.Done():
					errs <- fmt.Errorf("server: peer never disconnected: %w", ctx.Err())
					return
				}
				if !errors.Is(c.Err(), ErrDisconnected) {
					if flushed {
						errs <- fmt.Errorf("server send flushed, then the connection ended with %v, not the peer's disconnect", c.Err())
						return
					}
					errs <- fmt.Errorf("server: connection ended with %v, want ErrDisconnected", c.Err())
					return
				}
				errs <- c.Close()
			}()
		}
	}()
	return errs
}

// echoClient dials, sends msg, expects it reversed, and closes.
func echoClient(ctx context.Context, t *testing.T, addr string, msg string, o *Options) error {
	var rb, sb msgBuf
	oo := *o
	oo.Setup = func(c *Conn) error {
		rb = newMsgBuf(t, c, 64)
		sb = newMsgBuf(t, c, 64)
		return c.QP().PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{rb.mr.SGE(0, 64)}})
	}
	c, err := dialRetry(ctx, addr, &oo)
	if err != nil {
		return err
	}
	defer c.Close()
	n := copy(sb.buf, msg)
	if err := c.QP().PostSend(uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{sb.mr.SGE(0, n)}}); err != nil {
		return err
	}
	if _, err := waitWC(ctx, c.SendCQ()); err != nil {
		return fmt.Errorf("client send: %w", err)
	}
	wc, err := waitWC(ctx, c.RecvCQ())
	if err != nil {
		return fmt.Errorf("client recv: %w", err)
	}
	got := rb.buf[:wc.ByteLen]
	want := []byte(msg)
	for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
		want[i], want[j] = want[j], want[i]
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("client got %q, want %q", got, want)
	}
	return c.Close()
}

const labPortBase = 19000

func TestLabConnectSendClose(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 60*time.Second)
	port := labPortBase + 1
	addr := netip.AddrPortFrom(e.peer, uint16(port)).String()
	o := &Options{Logf: testLogf(t)}
	if !e.TwoNodes || e.Server() {
		l, err := Listen(ctx, netip.AddrPortFrom(e.addr, uint16(port)).String(), o)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if l.Addr().Port() != uint16(port) {
			t.Fatalf("listener on %v", l.Addr())
		}
		errs := echoServer(ctx, t, l, 1)
		if !e.TwoNodes {
			if err := echoClient(ctx, t, addr, "hello, rdma", o); err != nil {
				t.Fatal(err)
			}
		}
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := echoClient(ctx, t, addr, "hello, rdma from node "+e.Node, o); err != nil {
		t.Fatal(err)
	}
}

func labPort(n int) string { return strconv.Itoa(labPortBase + n) }

// resources counts this node's kernel RDMA objects (`rdma resource show`:
// RDMA_NLDEV_CMD_RES_GET's summary, summed over devices) and this
// process's file descriptors.
func resources(t *testing.T) map[string]uint64 {
	t.Helper()
	c, err := netlink.Dial(unix.NETLINK_RDMA)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msgs, err := c.Execute(abi.RDMA_NL_GET_TYPE(abi.RDMA_NL_NLDEV, abi.RDMA_NLDEV_CMD_RES_GET), netlink.NLM_F_DUMP, nil)
	if err != nil {
		t.Fatalf("rdma resource summary: %v", err)
	}
	out := map[string]uint64{}
	for _, m := range msgs {
		attrs, err := netlink.ParseAttrs(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range attrs {
			if a.Type&0x3fff != abi.RDMA_NLDEV_ATTR_RES_SUMMARY {
				continue
			}
			entries, _ := netlink.ParseAttrs(a.Data)
			for _, e := range entries {
				fields, _ := netlink.ParseAttrs(e.Data)
				var name string
				var cur uint64
				for _, f := range fields {
					switch f.Type & 0x3fff {
					case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME:
						name = f.String()
					case abi.RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR:
						cur = f.Uint64()
					}
				}
				out[name] += cur
			}
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	out["fds"] = uint64(len(fds))
	return out
}

// checkNoLeaks compares resource counts with a baseline, allowing the
// kernel a moment to finish tearing down.
func checkNoLeaks(t *testing.T, base map[string]uint64) {
	t.Helper()
	var now map[string]uint64
	for range 50 {
		now = resources(t)
		same := true
		for k, v := range base {
			if now[k] != v {
				same = false
			}
		}
		if same {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("resources leaked: before %v, after %v", base, now)
}
