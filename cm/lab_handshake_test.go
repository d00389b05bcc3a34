// Copyright 2026 The rdmago Authors.

//go:build linux

package cm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/uverbs"
)

// TestLabRejectWithPrivateData: the server reads the client's private data
// from the request and rejects it with its own; the client's Dial fails
// with REJECTED, the consumer-defined reason and the server's data.
func TestLabRejectWithPrivateData(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 60*time.Second)
	port := labPort(2)
	ask := []byte("may I connect? (node " + e.Node + ")")
	refusal := []byte("not today: the server is full")
	serve := func() error {
		l, err := Listen(ctx, e.Addr+":"+port, &Options{Logf: testLogf(t)})
		if err != nil {
			return err
		}
		defer l.Close()
		req, err := l.AcceptRequest(ctx)
		if err != nil {
			return err
		}
		if len(req.Param.PrivateData) != abi.MaxPrivateDataTCPConnect || !bytes.HasPrefix(req.Param.PrivateData, []byte("may I connect?")) {
			req.Reject(nil)
			return fmt.Errorf("request private data %q (%d bytes), want the client's, padded to %d", req.Param.PrivateData, len(req.Param.PrivateData), abi.MaxPrivateDataTCPConnect)
		}
		return req.Reject(refusal)
	}
	client := func() error {
		c, err := dialRetry(ctx, e.Peer+":"+port, &Options{PrivateData: ask, Logf: testLogf(t)})
		if err == nil {
			c.Close()
			return errors.New("dial succeeded; want REJECTED")
		}
		var ee *EventError
		if !errors.As(err, &ee) || !errors.Is(err, ErrRejected) || errors.Is(err, ErrNoListener) {
			return fmt.Errorf("dial: %v; want a consumer-defined REJECTED", err)
		}
		if r, _ := ee.RejectReason(); r != RejConsumerDefined {
			return fmt.Errorf("reject reason %v, want %v", r, RejConsumerDefined)
		}
		if !bytes.HasPrefix(ee.PrivateData, refusal) || len(ee.PrivateData) != abi.MaxPrivateDataReject {
			return fmt.Errorf("reject private data %q (%d bytes), want %q padded to %d", ee.PrivateData, len(ee.PrivateData), refusal, abi.MaxPrivateDataReject)
		}
		t.Logf("client: %v", err)
		return nil
	}
	e.RunRoles(t, serve, client)
}

// TestLabDeadPortAndNoHost: connecting where nobody listens fails fast with
// REJECTED / IB_CM_REJ_INVALID_SERVICE_ID (ErrNoListener); an address no
// host answers fails address resolution (ErrAddrResolution).
func TestLabDeadPortAndNoHost(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 60*time.Second)
	base := resources(t)
	c, err := Dial(ctx, e.Peer+":"+labPort(3), &Options{Logf: testLogf(t)})
	if err == nil {
		c.Close()
		t.Fatal("dial to a port without listener succeeded")
	}
	if !errors.Is(err, ErrNoListener) || !strings.Contains(err.Error(), "RDMA_CM_EVENT_REJECTED") || !strings.Contains(err.Error(), "nothing listens on that port") {
		t.Fatalf("dead port: %v", err)
	}
	t.Logf("dead port: %v", err)
	nohost := netip.AddrFrom4([4]byte{10, 77, 0, 213}).String() + ":" + labPort(3)
	c, err = Dial(ctx, nohost, &Options{ResolveTimeout: 500 * time.Millisecond})
	if err == nil {
		c.Close()
		t.Fatal("dial to an absent host succeeded")
	}
	if !errors.Is(err, ErrAddrResolution) && !errors.Is(err, ErrUnreachable) && !errors.Is(err, ErrRouteResolution) {
		t.Fatalf("absent host: %v", err)
	}
	t.Logf("absent host: %v", err)
	checkNoLeaks(t, base)
}

// TestLabManyConnections opens 64 connections at once on one listener,
// exchanges a message on each and closes them, three times over, then
// checks that no kernel object (cm_id, QP, CQ, PD, MR, context) or file
// descriptor was left behind.
func TestLabManyConnections(t *testing.T) {
	e := requireLab(t)
	const conns, rounds = 64, 3
	ctx := labtest.Context(t, 5*time.Minute)
	base := resources(t)
	goroutines := runtime.NumGoroutine()
	port := labPort(4)
	serve := func() error {
		l, err := Listen(ctx, e.Addr+":"+port, &Options{Backlog: conns, SendDepth: 4, RecvDepth: 4})
		if err != nil {
			return err
		}
		defer l.Close()
		errs := echoServer(ctx, t, l, conns*rounds)
		var all []error
		for range conns * rounds {
			if err := <-errs; err != nil {
				all = append(all, err)
			}
		}
		return errors.Join(all...)
	}
	client := func() error {
		var all []error
		for r := range rounds {
			var wg sync.WaitGroup
			errs := make(chan error, conns)
			for i := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs <- echoClient(ctx, t, e.Peer+":"+port, fmt.Sprintf("round %d connection %d", r, i), &Options{SendDepth: 4, RecvDepth: 4})
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					all = append(all, err)
				}
			}
			if len(all) > 0 {
				break
			}
			t.Logf("round %d: %d connections opened, used and closed", r, conns)
		}
		return errors.Join(all...)
	}
	e.RunRoles(t, serve, client)
	if t.Failed() {
		return
	}
	checkNoLeaks(t, base)
	for range 50 {
		if runtime.NumGoroutine() <= goroutines {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines before, %d after", goroutines, n)
	}
}

// TestLabPeerKilled: a peer process that is killed while connected (the
// helper below, run as a child) makes the server's connection end with
// DISCONNECTED — the dead process's kernel tears its id down and sends a
// DREQ — and the server's Close still succeeds.
func TestLabPeerKilled(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 90*time.Second)
	port := labPort(5)
	serve := func() error {
		l, err := Listen(ctx, e.Addr+":"+port, &Options{Logf: testLogf(t)})
		if err != nil {
			return err
		}
		defer l.Close()
		var rb msgBuf
		o := l.o
		o.Setup = func(c *Conn) error {
			rb = newMsgBuf(t, c, 64)
			return c.QP().PostRecv(uverbs.RecvWR{ID: 7, SGL: []uverbs.SGE{rb.mr.SGE(0, 64)}})
		}
		req, err := l.AcceptRequest(ctx)
		if err != nil {
			return err
		}
		c, err := req.Accept(ctx, &o)
		if err != nil {
			return err
		}
		defer c.Close()
		select {
		case <-c.Done():
		case <-ctx.Done():
			return fmt.Errorf("the killed peer's connection did not end: %w", ctx.Err())
		}
		if !errors.Is(c.Err(), ErrDisconnected) {
			return fmt.Errorf("connection ended with %v, want ErrDisconnected", c.Err())
		}
		t.Logf("server: %v", c.Err())
		// The posted receive is flushed: the QP went to the error state.
		wc, err := waitWC(ctx, c.RecvCQ())
		if !wc.IsFlush() || wc.WRID != 7 {
			return fmt.Errorf("receive after the peer died: %+v, %v; want a flush of WR 7", wc, err)
		}
		return c.Close()
	}
	client := func() error {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLabHelperDialAndHang$", "-test.v")
		cmd.Env = append(os.Environ(), "CM_HELPER_DIAL="+e.Peer+":"+port)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		sc := bufio.NewScanner(out)
		connected := false
		for sc.Scan() {
			if strings.Contains(sc.Text(), "HELPER CONNECTED") {
				connected = true
				break
			}
		}
		if !connected {
			cmd.Process.Kill()
			cmd.Wait()
			return errors.New("helper never connected")
		}
		time.Sleep(200 * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			return err
		}
		cmd.Wait()
		t.Log("client: helper process killed while connected")
		return nil
	}
	e.RunRoles(t, serve, client)
}

// TestLabHelperDialAndHang is the child process of TestLabPeerKilled: it
// connects, says so, and waits to be killed.
func TestLabHelperDialAndHang(t *testing.T) {
	addr := os.Getenv("CM_HELPER_DIAL")
	if addr == "" {
		t.Skip("helper process of TestLabPeerKilled")
	}
	ctx := labtest.Context(t, 60*time.Second)
	c, err := dialRetry(ctx, addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("HELPER CONNECTED")
	<-ctx.Done()
	c.Close()
}

// TestLabAcceptPrivateData: the private data of an accept reaches Dial.
func TestLabAcceptPrivateData(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 60*time.Second)
	port := labPort(6)
	welcome := bytes.Repeat([]byte("welcome!"), MaxPrivateData("accept", PortSpaceTCP)/8) // the full 192 of 196 bytes
	serve := func() error {
		l, err := Listen(ctx, e.Addr+":"+port, &Options{PrivateData: welcome, InitiatorDepth: 2, ResponderResources: 3})
		if err != nil {
			return err
		}
		defer l.Close()
		c, err := l.Accept(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if c.InitiatorDepth() != 2 || c.ResponderResources() != 3 {
			return fmt.Errorf("accepted with depths %d/%d, want 2/3", c.InitiatorDepth(), c.ResponderResources())
		}
		<-c.Done()
		return c.Close()
	}
	client := func() error {
		c, err := dialRetry(ctx, e.Peer+":"+port, &Options{InitiatorDepth: 4, ResponderResources: 5})
		if err != nil {
			return err
		}
		defer c.Close()
		p := c.Peer()
		if !bytes.HasPrefix(p.PrivateData, welcome) {
			return fmt.Errorf("accept private data %q, want %q", p.PrivateData, welcome)
		}
		// The kernel reports the depths from the receiver's side: the
		// server serves 3 of our requests and issues 2 to us.
		if p.InitiatorDepth != 3 || p.ResponderResources != 2 {
			return fmt.Errorf("accept's depths as seen here %d/%d, want 3/2", p.InitiatorDepth, p.ResponderResources)
		}
		a, err := c.QP().Query()
		if err != nil {
			return err
		}
		if a.State != uverbs.QPSRTS || a.DestQPN != p.QPNum {
			return fmt.Errorf("QP %v dest %#x, want RTS to %#x", a.State, a.DestQPN, p.QPNum)
		}
		return c.Close()
	}
	e.RunRoles(t, serve, client)
}

// TestLabUD: SIDR resolution with DialUD/ListenUD, then a datagram each
// way: the client sends with the AH and remote QPN/QKey the CM resolved, the
// server answers to the sender's QPN with an AH made from its id.
func TestLabUD(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 60*time.Second)
	port := labPort(7)
	const grh = 40
	serve := func() error {
		var rb msgBuf
		l, err := ListenUD(ctx, e.Addr+":"+port, &Options{Logf: testLogf(t), Setup: func(c *Conn) error {
			rb = newMsgBuf(t, c, 256)
			return c.QP().PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{rb.mr.SGE(0, 256)}})
		}})
		if err != nil {
			return err
		}
		defer l.Close()
		req, err := l.AcceptRequest(ctx)
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(req.UD.PrivateData, []byte("ud hello")) {
			req.Reject(nil)
			return fmt.Errorf("UD request private data %q", req.UD.PrivateData)
		}
		c, err := req.Accept(ctx, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		wc, err := waitWC(ctx, c.RecvCQ())
		if err != nil {
			return err
		}
		if got := rb.buf[grh:wc.ByteLen]; string(got) != "datagram to server" {
			return fmt.Errorf("server got %q", got)
		}
		ah, err := c.NewAH()
		if err != nil {
			return err
		}
		defer ah.Close()
		n := copy(rb.buf, "datagram to client")
		if err := c.QP().PostSend(uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{rb.mr.SGE(0, n)}, AH: ah, RemoteQPN: wc.SrcQP, RemoteQKey: UDPQKey}); err != nil {
			return err
		}
		if _, err := waitWC(ctx, c.SendCQ()); err != nil {
			return err
		}
		return ah.Close()
	}
	client := func() error {
		var rb, sb msgBuf
		var c *Conn
		var err error
		o := &Options{PrivateData: []byte("ud hello"), Logf: testLogf(t), Setup: func(c *Conn) error {
			rb = newMsgBuf(t, c, 256)
			sb = newMsgBuf(t, c, 256)
			return c.QP().PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{rb.mr.SGE(0, 256)}})
		}}
		for {
			c, err = DialUD(ctx, e.Peer+":"+port, o)
			// SIDR to a port nobody listens on yet: the peer's CM answers
			// with a rejection or a SIDR reply of status 1, which rdma_cm
			// reports as UNREACHABLE and cm as ErrNoListener too (6.1,
			// one node: make test of 866b2dc failed on it).
			if err == nil || !errors.Is(err, ErrRejected) && !errors.Is(err, ErrNoListener) || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return err
		}
		defer c.Close()
		if c.AH() == nil || c.RemoteQPN() == 0 || c.RemoteQKey() != UDPQKey {
			return fmt.Errorf("resolved UD peer: ah %v qpn %#x qkey %#x", c.AH(), c.RemoteQPN(), c.RemoteQKey())
		}
		n := copy(sb.buf, "datagram to server")
		if err := c.QP().PostSend(uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{sb.mr.SGE(0, n)}, AH: c.AH(), RemoteQPN: c.RemoteQPN(), RemoteQKey: c.RemoteQKey()}); err != nil {
			return err
		}
		if _, err := waitWC(ctx, c.SendCQ()); err != nil {
			return err
		}
		wc, err := waitWC(ctx, c.RecvCQ())
		if err != nil {
			return err
		}
		if got := rb.buf[grh:wc.ByteLen]; string(got) != "datagram to client" {
			return fmt.Errorf("client got %q", got)
		}
		return c.Close()
	}
	e.RunRoles(t, serve, client)
}

// TestLabContextCancelDuringConnect: cancelling Dial while it waits leaves
// nothing behind.
func TestLabContextCancelDuringConnect(t *testing.T) {
	e := requireLab(t)
	base := resources(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	time.Sleep(2 * time.Millisecond)
	if c, err := Dial(ctx, e.Peer+":"+labPort(8), nil); err == nil {
		c.Close()
		t.Fatal("dial with an expired context succeeded")
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial: %v", err)
	}
	checkNoLeaks(t, base)
}

// TestLabPrivateDataFunc: Options.PrivateDataFunc runs after Setup, with the
// connection's PD and QP there, so the accept can advertise memory Setup
// registered: the client reads it with RDMA READ at the address and rkey
// the accept carried. The connect's private data is computed the same way,
// and a result over the limit fails the accept and rejects the peer.
func TestLabPrivateDataFunc(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 90*time.Second)
	port := labPort(21)
	secret := []byte("registered after the PD existed")
	serve := func() error {
		var mb msgBuf
		setupRan := false
		o := &Options{
			Logf: testLogf(t), ReuseAddr: true,
			Setup: func(c *Conn) error {
				setupRan = true
				mb = newMsgBuf(t, c, 64)
				copy(mb.buf, secret)
				return nil
			},
			PrivateDataFunc: func(c *Conn) ([]byte, error) {
				if !setupRan || c.PD() == nil || c.QP() == nil || c.QP().State() != uverbs.QPSInit {
					return nil, fmt.Errorf("PrivateDataFunc ran before Setup or without the QP in INIT")
				}
				return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, mb.mr.Addr()), mb.mr.RKey()), nil
			},
		}
		l, err := Listen(ctx, e.Addr+":"+port, o)
		if err != nil {
			return err
		}
		defer l.Close()
		// The first request gets private data over the limit: its accept
		// fails, the peer is rejected.
		req, err := l.AcceptRequest(ctx)
		if err != nil {
			return err
		}
		big := *o
		big.PrivateDataFunc = func(*Conn) ([]byte, error) { return make([]byte, MaxPrivateData("accept", PortSpaceTCP)+1), nil }
		if c, err := req.Accept(ctx, &big); !errors.Is(err, ErrPrivateDataTooLong) {
			if c != nil {
				c.Close()
			}
			return fmt.Errorf("accept with oversize private data from PrivateDataFunc: %v, want ErrPrivateDataTooLong", err)
		}
		c, err := l.Accept(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		if got := c.Peer().PrivateData; !bytes.HasPrefix(got, []byte("client qp ")) {
			return fmt.Errorf("connect private data %q, want the client's computed one", got)
		}
		<-c.Done()
		return c.Close()
	}
	client := func() error {
		o := &Options{
			Logf: testLogf(t), InitiatorDepth: 1,
			PrivateDataFunc: func(c *Conn) ([]byte, error) { return fmt.Appendf(nil, "client qp %#x", c.QP().Num()), nil },
		}
		if c, err := dialRetry(ctx, e.Peer+":"+port, o); !errors.Is(err, ErrRejected) {
			if c != nil {
				c.Close()
			}
			return fmt.Errorf("dial answered by an accept that failed: %v, want ErrRejected", err)
		}
		c, err := dialRetry(ctx, e.Peer+":"+port, o)
		if err != nil {
			return err
		}
		defer c.Close()
		p := c.Peer().PrivateData
		addr, rkey := binary.BigEndian.Uint64(p), binary.BigEndian.Uint32(p[8:])
		dst := newMsgBuf(t, c, 64)
		if err := c.QP().PostSend(uverbs.SendWR{ID: 1, Opcode: uverbs.WRRDMARead, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{dst.mr.SGE(0, len(secret))}, RemoteAddr: addr, RKey: rkey}); err != nil {
			return err
		}
		var wcs [1]uverbs.WC
		if _, _, err := c.Wait(ctx, wcs[:], c.SendCQ()); err != nil {
			return err
		}
		if err := wcs[0].Err(); err != nil {
			return fmt.Errorf("RDMA READ of the advertised memory: %w", err)
		}
		if !bytes.Equal(dst.buf[:len(secret)], secret) {
			return fmt.Errorf("read %q from the advertised memory, want %q", dst.buf[:len(secret)], secret)
		}
		return c.Close()
	}
	e.RunRoles(t, serve, client)
}
