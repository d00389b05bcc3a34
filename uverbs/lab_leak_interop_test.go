// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// procCounts are the process resources a leak would show in.
type procCounts struct {
	fds        int
	uverbsMaps int
	vmPinKB    int
}

func readProcCounts(t *testing.T) procCounts {
	t.Helper()
	var p procCounts
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	p.fds = len(ents)
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	p.uverbsMaps = strings.Count(string(maps), "/dev/infiniband/uverbs")
	if p.vmPinKB, err = labtest.StatusKB("VmPin"); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLabLeak creates every kind of object many times, closing sometimes
// each object in order and sometimes only the Context, and checks that file
// descriptors, queue mappings and pinned memory return to where they were.
func TestLabLeak(t *testing.T) {
	e := requireLab(t)
	labtest.OneNode(t, "it counts this process's own descriptors, mappings and pins; no QP is connected")
	cycle := func(i int) {
		c, err := Open(e.Dev)
		if err != nil {
			t.Fatal(err)
		}
		ch, err := c.CreateCompChannel()
		if err != nil {
			t.Fatal(err)
		}
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(64, &CQOptions{Channel: ch})
		if err != nil {
			t.Fatal(err)
		}
		buf, err := AllocBuffer(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		mr1, err := pd.RegMR(buf.Bytes(), AccessLocalWrite|AccessRemoteWrite)
		if err != nil {
			t.Fatal(err)
		}
		mr2, err := pd.RegMR(make([]byte, 100000), AccessLocalWrite) // Go memory, pinned
		if err != nil {
			t.Fatal(err)
		}
		if mid := readProcCounts(t); mid.vmPinKB < 1024 || mid.uverbsMaps == 0 {
			t.Fatalf("with MRs and a CQ: %+v: the counters would not see a leak", mid)
		}
		srq, err := pd.CreateSRQ(SRQOptions{MaxWR: 16, MaxSGE: 1})
		if err != nil {
			t.Fatal(err)
		}
		qp1, err := pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: cq, RecvCQ: cq, SRQ: srq, Cap: QPCap{MaxSendWR: 16, MaxSendSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		qp2, err := pd.CreateQP(QPInitAttr{Type: QPTypeUD, SendCQ: cq, RecvCQ: cq, Cap: QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		g, err := c.GIDForIP(1, e.addr)
		if err != nil {
			t.Fatal(err)
		}
		ah, err := pd.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: g.GID, SGIDIndex: uint8(g.Index), HopLimit: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			for _, o := range []interface{ Close() error }{qp1, qp2, srq, ah, cq, mr1, mr2, pd, ch} {
				if err := o.Close(); err != nil {
					t.Fatalf("%T.Close: %v", o, err)
				}
				if err := o.Close(); err != nil {
					t.Fatalf("second %T.Close: %v", o, err)
				}
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatalf("second Context.Close: %v", err)
		}
		if err := buf.Close(); err != nil {
			t.Fatal(err)
		}
		if len(c.res.pins) != 0 || len(c.res.maps) != 0 {
			t.Fatalf("context released with %d pins and %d maps left", len(c.res.pins), len(c.res.maps))
		}
	}
	cycle(0) // warm up: the Go runtime opens its netpoller once
	runtime.GC()
	base := readProcCounts(t)
	const n = 20
	for i := 0; i < n; i++ {
		cycle(i)
	}
	runtime.GC()
	after := readProcCounts(t)
	t.Logf("after %d cycles: before %+v, after %+v", n, base, after)
	if after != base || after.uverbsMaps != 0 {
		t.Errorf("resources leaked: before %+v, after %+v", base, after)
	}
}

// readIO reads the calling thread's own syscall counters. Callers lock the
// goroutine to its thread, so other goroutines and the Go runtime's own
// threads (GC, netpoller) cannot add to the count.
func readIO(t *testing.T) (syscr, syscw int) {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == "syscr:" {
			syscr, _ = strconv.Atoi(f[1])
		}
		if len(f) == 2 && f[0] == "syscw:" {
			syscw, _ = strconv.Atoi(f[1])
		}
	}
	return
}

// TestLabSyscalls counts system calls on the data path with the kernel's own
// counters (/proc/thread-self/io, with the test locked to its thread):
// PostSend of a list costs one write(2), PostRecv and Poll none.
func TestLabSyscalls(t *testing.T) {
	e := requireLab(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := openLab(t, e)
	a, b := rcPair(t, c, e, epOpts{})
	const lists, per = 200, 4
	wrs := make([]SendWR, per)
	for i := range wrs {
		wrs[i] = SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(i*64, 64)}, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
	}
	wcs := make([]WC, per)
	ctx := labtest.Context(t, 60*time.Second)
	runtime.GC()
	db0 := a.qp.Doorbells()
	// Only the PostSend calls are inside the measured windows: waiting for
	// completions may make the Go runtime itself read and write (its
	// netpoller's eventfd), which is not the data path's doing.
	writes := 0
	for i := 0; i < lists; i++ {
		_, w0 := readIO(t)
		if err := a.qp.PostSend(wrs...); err != nil {
			t.Fatal(err)
		}
		_, w1 := readIO(t)
		writes += w1 - w0
		if n, err := a.cq.PollN(ctx, wcs, per); err != nil || n != per {
			t.Fatalf("list %d: %d completions, %v", i, n, err)
		}
	}
	doorbells := a.qp.Doorbells() - db0
	t.Logf("%d PostSend calls of %d WRs: %d doorbells, %d write(2) syscalls (%.3f per call, %.3f per WR)",
		lists, per, doorbells, writes, float64(writes)/lists, float64(writes)/(lists*per))
	if doorbells != lists {
		t.Errorf("%d doorbells for %d PostSend calls", doorbells, lists)
	}
	if writes != lists {
		t.Errorf("%d write syscalls for %d PostSend calls, want one each", writes, lists)
	}
	// Receives and polling: no read or write at all.
	r0, w0 := readIO(t)
	for i := 0; i < 100; i++ {
		if err := b.qp.PostRecv(RecvWR{ID: uint64(i), SGL: []SGE{b.mr.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
	}
	polls := 0
	for i := 0; i < 100000; i++ {
		polls += a.cq.Poll(wcs)
	}
	r1, w1 := readIO(t)
	t.Logf("100 PostRecv and 100000 empty Polls: %d write(2), %d read(2) syscalls", w1-w0, r1-r0)
	if polls != 0 || w1-w0 != 0 || r1-r0 > 2 {
		t.Errorf("receives and polls made %d writes, %d reads (polled %d)", w1-w0, r1-r0, polls)
	}
}

// pingpong runs ibv_rc_pingpong's protocol on ep (rc_pingpong.c: receives of
// size bytes kept posted, the client sends first, each side sends again once
// its previous send and a receive have completed).
func pingpong(t *testing.T, ep *endpoint, client bool, iters, size, rxDepth int) error {
	const recvID, sendID = 1, 2
	post := func(n int) error {
		for i := 0; i < n; i++ {
			if err := ep.qp.PostRecv(RecvWR{ID: recvID, SGL: []SGE{ep.mr.SGE(0, size)}}); err != nil {
				return err
			}
		}
		return nil
	}
	send := func() error {
		return ep.qp.PostSend(SendWR{ID: sendID, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{ep.mr.SGE(0, size)}})
	}
	routs := rxDepth
	pending := recvID
	if client {
		if err := send(); err != nil {
			return err
		}
		pending |= sendID
	}
	ctx := labtest.Context(t, 120*time.Second)
	wcs := make([]WC, 2)
	rcnt, scnt := 0, 0
	for rcnt < iters || scnt < iters {
		n := ep.cq.Poll(wcs)
		if n == 0 {
			if ctx.Err() != nil {
				return fmt.Errorf("pingpong stalled at %d sent, %d received: %w", scnt, rcnt, ctx.Err())
			}
			runtime.Gosched()
			continue
		}
		for _, wc := range wcs[:n] {
			if err := wc.Err(); err != nil {
				return err
			}
			switch wc.WRID {
			case sendID:
				scnt++
			case recvID:
				if wc.ByteLen != uint32(size) {
					return fmt.Errorf("received %d bytes, want %d", wc.ByteLen, size)
				}
				routs--
				if routs <= 1 {
					if err := post(rxDepth - routs); err != nil {
						return err
					}
					routs = rxDepth
				}
				rcnt++
			}
			pending &^= int(wc.WRID)
			if scnt < iters && pending == 0 {
				if err := send(); err != nil {
					return err
				}
				pending = recvID | sendID
			}
		}
	}
	return nil
}

// hostTool runs a program of the host's root (rdma-core's C tools) inside the
// lab guest, chrooted into the host root the lab mounts at /host.
func hostTool(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: "/host"}
	cmd.Dir = "/"
	return cmd
}

func TestLabPingpongInterop(t *testing.T) {
	e := requireLab(t)
	if e.TwoNodes {
		t.Skip("runs with one node (the two-node run has TestLabTwoNodes)")
	}
	if _, err := os.Stat("/host/usr/bin/ibv_rc_pingpong"); err != nil {
		labtest.Missing(t, "rdma-core's ibv_rc_pingpong is not installed on the host: %v", err)
	}
	const iters, size, rxDepth = 200, 4096, 100
	c := openLab(t, e)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cap := QPCap{MaxSendWR: 1, MaxRecvWR: rxDepth, MaxSendSGE: 1, MaxRecvSGE: 1}
	ctx := labtest.Context(t, 180*time.Second)

	for _, goRole := range []string{"client", "server"} {
		t.Run("go "+goRole, func(t *testing.T) {
			ep := newEndpoint(t, c, pd, e, epOpts{size: size, access: AccessLocalWrite, cap: cap})
			for i := 0; i < rxDepth; i++ {
				if err := ep.qp.PostRecv(RecvWR{ID: 1, SGL: []SGE{ep.mr.SGE(0, size)}}); err != nil {
					t.Fatal(err)
				}
			}
			local := ep.dest(uint32(time.Now().UnixNano()) & 0xffffff)
			port := 18515 + len(goRole)
			args := []string{"-d", e.Dev, "-g", strconv.Itoa(ep.gid.Index), "-p", strconv.Itoa(port),
				"-n", strconv.Itoa(iters), "-s", strconv.Itoa(size), "-r", strconv.Itoa(rxDepth)}
			var ln net.Listener
			if goRole == "server" {
				if ln, err = net.Listen("tcp", fmt.Sprintf(":%d", port)); err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				args = append(args, e.Addr)
			}
			var out bytes.Buffer
			cmd := hostTool(ctx, "/usr/bin/ibv_rc_pingpong", args...)
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var remote Dest
			if goRole == "client" {
				for start := time.Now(); ; {
					remote, err = OOBClient(ctx, net.JoinHostPort(e.Addr, strconv.Itoa(port)), local)
					if err == nil || time.Since(start) > 60*time.Second {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if err == nil {
					err = ep.qp.Connect(remote, local.PSN, ep.connectOpts())
				}
			} else {
				remote, err = OOBServer(ctx, ln, local, func(r Dest) error { return ep.qp.Connect(r, local.PSN, ep.connectOpts()) })
			}
			if err == nil {
				t.Logf("go %s: local %+v, remote %+v", goRole, local, remote)
				err = pingpong(t, ep, goRole == "client", iters, size, rxDepth)
			}
			werr := cmd.Wait()
			outs := out.String()
			sc := bufio.NewScanner(&out)
			for sc.Scan() {
				t.Logf("ibv_rc_pingpong: %s", sc.Text())
			}
			if err != nil {
				t.Fatal(err)
			}
			if werr != nil {
				t.Fatalf("ibv_rc_pingpong: %v", werr)
			}
			if !strings.Contains(outs, fmt.Sprintf("%d iters in", iters)) {
				t.Error("ibv_rc_pingpong did not report its iterations")
			}
		})
	}
}

// TestLabTwoNodes moves data between two lab VMs over a real RoCEv2 wire:
// node 0 serves, node 1 connects; QP addresses go over TCP in ibv_rc_pingpong's
// format, the client's buffer address and rkey in a SEND.
func TestLabTwoNodes(t *testing.T) {
	e := requireLab(t)
	if !e.TwoNodes {
		t.Skip("needs two lab nodes (rdmalab test --nodes 2)")
	}
	c := openLab(t, e)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	ep := newEndpoint(t, c, pd, e, epOpts{})
	ctx := labtest.Context(t, 120*time.Second)
	local := ep.dest(uint32(7 + len(e.Node)*1000))
	const port = 18600
	ne := binary.NativeEndian
	switch e.Node {
	case "0": // server
		if err := ep.qp.PostRecv(RecvWR{ID: 1, SGL: []SGE{ep.mr.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(e.Addr, strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		remote, err := OOBServer(ctx, ln, local, func(r Dest) error { return ep.qp.Connect(r, local.PSN, ep.connectOpts()) })
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("server: local %+v, remote %+v", local, remote)
		wc := ep.wait(t, 1)[0]
		if wc.ByteLen != 16 {
			t.Fatalf("first message %+v", wc)
		}
		raddr, rkey := ne.Uint64(ep.buf[0:]), ne.Uint32(ep.buf[8:])
		// READ the client's pattern, WRITE ours, FETCH_ADD its counter, then
		// tell it with a SEND_WITH_IMM.
		fill(ep.buf[16384:20480], 2)
		if err := ep.qp.PostSend(
			SendWR{ID: 2, Opcode: WRRDMARead, Flags: SendSignaled, SGL: []SGE{ep.mr.SGE(4096, 4096)}, RemoteAddr: raddr + 4096, RKey: rkey},
			SendWR{ID: 3, Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{ep.mr.SGE(16384, 4096)}, RemoteAddr: raddr, RKey: rkey},
			SendWR{ID: 4, Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, SGL: []SGE{ep.mr.SGE(32768, 8)}, RemoteAddr: raddr + 8192, RKey: rkey, CompareAdd: 5},
		); err != nil {
			t.Fatal(err)
		}
		ep.wait(t, 3)
		want := make([]byte, 4096)
		fill(want, 1)
		if !bytes.Equal(ep.buf[4096:8192], want) {
			t.Error("RDMA READ across nodes: bytes differ")
		}
		if old := ne.Uint64(ep.buf[32768:]); old != 40 {
			t.Errorf("fetch-add across nodes returned %d, want 40", old)
		}
		if err := ep.qp.PostSend(SendWR{ID: 5, Opcode: WRSendWithImm, Flags: SendSignaled, Imm: 0x600d, SGL: []SGE{ep.mr.SGE(0, 1)}}); err != nil {
			t.Fatal(err)
		}
		ep.wait(t, 1)
	case "1": // client
		fill(ep.buf[4096:8192], 1)
		ne.PutUint64(ep.buf[8192:], 40)
		if err := ep.qp.PostRecv(RecvWR{ID: 9, SGL: []SGE{ep.mr.SGE(12288, 64)}}); err != nil {
			t.Fatal(err)
		}
		var remote Dest
		for start := time.Now(); ; {
			remote, err = OOBClient(ctx, net.JoinHostPort(e.Peer, strconv.Itoa(port)), local)
			if err == nil || time.Since(start) > 60*time.Second || errors.Is(err, context.DeadlineExceeded) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("client: local %+v, remote %+v", local, remote)
		if err := ep.qp.Connect(remote, local.PSN, ep.connectOpts()); err != nil {
			t.Fatal(err)
		}
		ne.PutUint64(ep.buf[0:], ep.mr.Addr())
		ne.PutUint32(ep.buf[8:], ep.mr.RKey())
		if err := ep.qp.PostSend(SendWR{ID: 8, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{ep.mr.SGE(0, 16)}}); err != nil {
			t.Fatal(err)
		}
		ep.wait(t, 1)
		wc := ep.wait(t, 1)[0]
		if wc.WRID != 9 || wc.Imm != 0x600d {
			t.Errorf("final message %+v", wc)
		}
		want := make([]byte, 4096)
		fill(want, 2)
		if !bytes.Equal(ep.buf[0:4096], want) {
			t.Error("RDMA WRITE across nodes: bytes differ")
		}
		if now := ne.Uint64(ep.buf[8192:]); now != 45 {
			t.Errorf("counter after the peer's fetch-add: %d, want 45", now)
		}
	}
}

// TestLabPingpongTwoNodes runs ibv_rc_pingpong against rdmago across the wire
// in both roles: first a Go server on node 0 with the C client on node 1,
// then a C server on node 1 with a Go client on node 0.
func TestLabPingpongTwoNodes(t *testing.T) {
	e := requireLab(t)
	if !e.TwoNodes {
		t.Skip("needs two lab nodes (rdmalab test --nodes 2)")
	}
	if _, err := os.Stat("/host/usr/bin/ibv_rc_pingpong"); err != nil {
		labtest.Missing(t, "rdma-core's ibv_rc_pingpong is not installed on the host: %v", err)
	}
	const iters, size, rxDepth = 100, 4096, 100
	const port1, port2 = 18531, 18532
	ctx := labtest.Context(t, 180*time.Second)
	runC := func(args ...string) {
		t.Helper()
		g, err := func() (GIDEntry, error) {
			c, err := Open(e.Dev)
			if err != nil {
				return GIDEntry{}, err
			}
			defer c.Close()
			return c.GIDForIP(1, e.addr)
		}()
		if err != nil {
			t.Fatal(err)
		}
		base := []string{"-d", e.Dev, "-g", strconv.Itoa(g.Index), "-n", strconv.Itoa(iters), "-s", strconv.Itoa(size), "-r", strconv.Itoa(rxDepth)}
		for attempt := 0; ; attempt++ {
			out, err := hostTool(ctx, "/usr/bin/ibv_rc_pingpong", append(base, args...)...).CombinedOutput()
			t.Logf("ibv_rc_pingpong %v (attempt %d): %v\n%s", args, attempt, err, out)
			if err == nil {
				if !strings.Contains(string(out), fmt.Sprintf("%d iters in", iters)) {
					t.Error("ibv_rc_pingpong did not report its iterations")
				}
				return
			}
			// The client may start before the server listens.
			if !strings.Contains(string(out), "Couldn't connect") || attempt > 100 || ctx.Err() != nil {
				t.Fatalf("ibv_rc_pingpong: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	runGo := func(server bool, port int) {
		t.Helper()
		c := openLab(t, e)
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		ep := newEndpoint(t, c, pd, e, epOpts{size: size, access: AccessLocalWrite,
			cap: QPCap{MaxSendWR: 1, MaxRecvWR: rxDepth, MaxSendSGE: 1, MaxRecvSGE: 1}})
		for i := 0; i < rxDepth; i++ {
			if err := ep.qp.PostRecv(RecvWR{ID: 1, SGL: []SGE{ep.mr.SGE(0, size)}}); err != nil {
				t.Fatal(err)
			}
		}
		local := ep.dest(0x123456)
		if server {
			ln, err := net.Listen("tcp", net.JoinHostPort(e.Addr, strconv.Itoa(port)))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if _, err := OOBServer(ctx, ln, local, func(r Dest) error { return ep.qp.Connect(r, local.PSN, ep.connectOpts()) }); err != nil {
				t.Fatal(err)
			}
		} else {
			var remote Dest
			for {
				remote, err = OOBClient(ctx, net.JoinHostPort(e.Peer, strconv.Itoa(port)), local)
				if err == nil || ctx.Err() != nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := ep.qp.Connect(remote, local.PSN, ep.connectOpts()); err != nil {
				t.Fatal(err)
			}
		}
		if err := pingpong(t, ep, !server, iters, size, rxDepth); err != nil {
			t.Fatal(err)
		}
		t.Logf("go %s: %d iterations of %d bytes done", map[bool]string{true: "server", false: "client"}[server], iters, size)
	}
	switch e.Node {
	case "0":
		runGo(true, port1)
		runGo(false, port2)
	case "1":
		runC(e.Peer, "-p", strconv.Itoa(port1))
		runC("-p", strconv.Itoa(port2))
	}
}
