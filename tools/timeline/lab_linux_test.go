// Copyright 2026 The rdmago Authors.

//go:build linux

package timeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/tools/trace"
	"github.com/rdmago/rdmago/uverbs"
)

// labDir is where the two lab nodes leave their recordings and the page:
// the package directory is in the repository, which the lab shares
// writable with both guests (.gitignore keeps it out of git).
var labDir = filepath.Join("testdata", "lab")

const (
	labPort     = "18630"
	labBigWrite = 16 << 10 // several MTU-sized packets: First, Middle..., Last
	labSmall    = 100      // one packet: RDMA Write Only
)

// TestLabTimeline records a small RDMA exchange between the two lab nodes
// with trace.Record (this process's calls, the CM events and, on the lab
// netdev, the RoCEv2 packets), on both nodes: node 0 listens, registers a
// buffer for remote writes and SENDs its address and rkey; node 1 RDMA
// Writes 100 bytes and 16 KiB into it, SENDs "done", then writes with a
// wrong rkey and gets the NAK and IBV_WC_REM_ACCESS_ERR. Node 0 then draws
// both recordings: every call and packet must be in its lane in time order,
// the clocks aligned from the packets with a stated uncertainty, the rkey
// seen leaving in the SEND and coming back in the RETH, the NAK and the
// error completion in node 1's process; and headless Chromium (the host's,
// chrooted) must draw every item of the page.
func TestLabTimeline(t *testing.T) {
	env := labtest.Require(t)
	if os.Getenv("RDMALAB_NODES") != "2" {
		t.Skip("needs two nodes (rdmalab test --nodes 2): with one node rxe loops back without touching the netdev")
	}
	if env.Netdev == "" {
		labtest.Missing(t, "RDMALAB_NETDEV is not set: the lab names the netdev under the rxe device")
	}
	if err := os.MkdirAll(labDir, 0o755); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(labDir, "node"+env.Node+".rec")
	other := filepath.Join(labDir, "node1.rec")
	page := filepath.Join(labDir, "page.html")
	os.Remove(mine)
	if env.Node == "0" {
		// Node 1 writes its recording only after the exchange, which
		// needs node 0's listener: removed before, it cannot be stale.
		os.Remove(other)
		os.Remove(page)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	// Record this process (its calls), the CM events and the wire.
	recCtx, stopRec := context.WithCancel(ctx)
	defer stopRec()
	ready := make(chan struct{})
	recErr := make(chan error, 1)
	tmp := mine + ".part"
	go func() {
		recErr <- trace.Record(recCtx, trace.RecordOptions{
			WatchOptions: trace.WatchOptions{Options: trace.Options{PID: os.Getpid()}, Quiet: true},
			File:         tmp, Iface: env.Netdev, Node: "node" + env.Node,
			Ready: func() { close(ready) },
		}, io.Discard)
	}()
	select {
	case <-ready:
	case err := <-recErr:
		t.Fatalf("record: %v", err)
	case <-ctx.Done():
		t.Fatal("record did not attach in time")
	}

	var nakStatus uverbs.WCStatus
	if env.Node == "0" {
		labServe(t, ctx, env)
	} else {
		nakStatus = labClient(t, ctx, env)
	}
	time.Sleep(time.Second) // the last acknowledgements and CM events
	stopRec()
	if err := <-recErr; err != nil {
		t.Fatalf("record: %v", err)
	}
	if err := os.Rename(tmp, mine); err != nil {
		t.Fatal(err)
	}
	if env.Node == "1" {
		if nakStatus != uverbs.WCRemAccessErr {
			t.Errorf("the write with a wrong rkey completed with %v, want %v", nakStatus, uverbs.WCRemAccessErr)
		}
		return
	}

	// Node 0: wait for node 1's recording and draw both.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(other); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 1's recording %s did not appear", other)
		}
		time.Sleep(200 * time.Millisecond)
	}
	files := []string{mine, other}
	m, err := Load(files)
	if err != nil {
		t.Fatal(err)
	}
	checkLabModel(t, m, files)
	if err := WriteFile(page, m); err != nil {
		t.Fatal(err)
	}
	t.Logf("page %s: %d lanes, %d items, %d packets, %d calls; %s", page, len(m.Lanes), len(m.Items), m.Packets, m.Calls, m.Clock)
	checkInBrowser(t, chromium(t), page, m)
}

// labServe is node 0: it accepts node 1's connection, SENDs the address
// and rkey of a buffer registered for remote writes, waits for node 1's
// "done" SEND and checks what the writes left, and waits for the
// disconnect.
func labServe(t *testing.T, ctx context.Context, env labtest.Env) {
	l, err := cm.Listen(ctx, net.JoinHostPort(env.Addr, labPort), nil)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	req, err := l.AcceptRequest(ctx)
	if err != nil {
		t.Fatalf("accept request: %v", err)
	}
	var buf, msg []byte
	var mr, msgMR *uverbs.MR
	c, err := req.Accept(ctx, &cm.Options{SeparateCQs: true, Setup: func(c *cm.Conn) error {
		buf, msg = make([]byte, labBigWrite), make([]byte, 64)
		var err error
		if mr, err = c.RegMR(buf, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite); err != nil {
			return err
		}
		if msgMR, err = c.RegMR(msg, uverbs.AccessLocalWrite); err != nil {
			return err
		}
		return c.QP().PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{msgMR.SGE(32, 32)}})
	}})
	if err != nil {
		t.Fatalf("accept: %v", err)
	}
	defer c.Close()
	binary.LittleEndian.PutUint64(msg[0:], mr.Addr())
	binary.LittleEndian.PutUint32(msg[8:], mr.RKey())
	wc := labPost(t, ctx, c, uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{msgMR.SGE(0, 12)}})
	if err := wc.Err(); err != nil {
		t.Fatalf("send the rkey: %v", err)
	}
	var wcs [1]uverbs.WC
	if _, err := c.RecvCQ().PollN(ctx, wcs[:], 1); err != nil {
		t.Fatalf("receive done: %v", err)
	}
	if err := wcs[0].Err(); err != nil {
		t.Fatalf("receive done: %v", err)
	}
	if got := string(msg[32:36]); got != "done" {
		t.Errorf("received %q, want done", got)
	}
	if !bytes.Equal(buf, labPattern(labBigWrite)) {
		t.Errorf("the 16 KiB RDMA Write left other bytes")
	}
	select {
	case <-c.Done():
	case <-ctx.Done():
		t.Fatal("node 1 never disconnected")
	}
}

// labClient is node 1: it connects, receives node 0's address and rkey,
// RDMA Writes a small and a large message there, SENDs "done", and writes
// once more with a wrong rkey, returning that write's completion status.
func labClient(t *testing.T, ctx context.Context, env labtest.Env) uverbs.WCStatus {
	var src, msg []byte
	var srcMR, msgMR *uverbs.MR
	var c *cm.Conn
	var err error
	for {
		c, err = cm.Dial(ctx, net.JoinHostPort(env.Peer, labPort), &cm.Options{SeparateCQs: true, Setup: func(c *cm.Conn) error {
			src, msg = labPattern(labBigWrite), make([]byte, 64)
			var err error
			if srcMR, err = c.RegMR(src, uverbs.AccessLocalWrite); err != nil {
				return err
			}
			if msgMR, err = c.RegMR(msg, uverbs.AccessLocalWrite); err != nil {
				return err
			}
			return c.QP().PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{msgMR.SGE(0, 32)}})
		}})
		if err == nil || !errors.Is(err, cm.ErrNoListener) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	var wcs [1]uverbs.WC
	if _, err := c.RecvCQ().PollN(ctx, wcs[:], 1); err != nil {
		t.Fatalf("receive the rkey: %v", err)
	}
	if err := wcs[0].Err(); err != nil {
		t.Fatalf("receive the rkey: %v", err)
	}
	addr, rkey := binary.LittleEndian.Uint64(msg[0:]), binary.LittleEndian.Uint32(msg[8:])
	copy(msg[32:], "done")
	for _, wr := range []uverbs.SendWR{
		{ID: 2, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{srcMR.SGE(0, labSmall)}, RemoteAddr: addr, RKey: rkey},
		{ID: 3, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{srcMR.SGE(0, labBigWrite)}, RemoteAddr: addr, RKey: rkey},
		{ID: 4, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{msgMR.SGE(32, 4)}},
	} {
		wc := labPost(t, ctx, c, wr)
		if err := wc.Err(); err != nil {
			t.Fatalf("%v: %v", wr.Opcode, err)
		}
	}
	wc := labPost(t, ctx, c, uverbs.SendWR{ID: 5, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{srcMR.SGE(0, labSmall)}, RemoteAddr: addr, RKey: rkey ^ 0xff})
	return wc.Status
}

// labPost posts wr and waits for its completion.
func labPost(t *testing.T, ctx context.Context, c *cm.Conn, wr uverbs.SendWR) uverbs.WC {
	t.Helper()
	if err := c.QP().PostSend(wr); err != nil {
		t.Fatalf("post %v: %v", wr.Opcode, err)
	}
	var wcs [1]uverbs.WC
	if _, err := c.SendCQ().PollN(ctx, wcs[:], 1); err != nil {
		t.Fatalf("poll %v: %v", wr.Opcode, err)
	}
	return wcs[0]
}

func labPattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// checkLabModel checks the model of the lab recordings against the files.
func checkLabModel(t *testing.T, m *Model, files []string) {
	t.Helper()
	// Every call and CM event and every decoded packet of the recordings.
	calls, copies, both := 0, 0, 0
	for _, f := range files {
		_, es, err := trace.ReadRecordingFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			switch {
			case e.Type == trace.EntryCall || e.Type == trace.EntryEvent:
				calls++
			case e.Type == trace.EntryPacket && e.Packet != nil && e.Packet.Err == "":
				copies++
			}
		}
	}
	if m.Calls != calls {
		t.Errorf("model has %d calls and events, the recordings %d", m.Calls, calls)
	}
	lanes := map[string]Lane{}
	for _, l := range m.Lanes {
		lanes[l.ID] = l
	}
	var drawn int
	var lastT int64 = -1
	lastY := -1.0
	var sawBig, sawOnly, sawSendKey, sawRETHKey, sawNAK, sawErr, sawAck, sawMR bool
	for _, it := range m.Items {
		l, ok := lanes[it.Lane]
		if !ok {
			t.Errorf("%s %q in unknown lane %q", it.Kind, it.Label, it.Lane)
			continue
		}
		if it.T < lastT || it.Y < lastY {
			t.Errorf("%s %q at t=%d y=%.0f comes after t=%d y=%.0f", it.Kind, it.Label, it.T, it.Y, lastT, lastY)
		}
		lastT, lastY = it.T, it.Y
		switch it.Kind {
		case ItemCall, ItemError:
			if l.Kind != LaneProcess {
				t.Errorf("%s %q in a %s lane", it.Kind, it.Label, l.Kind)
			}
		case ItemEvent:
			if l.Kind != LaneKernel {
				t.Errorf("CM event %q in a %s lane", it.Label, l.Kind)
			}
		case ItemPacket, ItemRun:
			to, ok := lanes[it.To]
			if l.Kind != LaneKernel || !ok || to.Kind != LaneKernel || to.Node == l.Node {
				t.Errorf("packet %q from %q to %q: want from one node's kernel to the other's", it.Label, it.Lane, it.To)
			}
			if it.T2 < it.T {
				t.Errorf("packet %q received at %d before it was sent at %d", it.Label, it.T2, it.T)
			}
			n := 1
			if it.Kind == ItemRun {
				n = it.Count
			}
			drawn += n
			if it.Seen == "both" {
				both += n
			}
		}
		hasClass := func(c string) bool { return strings.Contains(" "+strings.Join(it.Class, " ")+" ", " "+c+" ") }
		switch {
		case strings.Contains(it.Label, "RDMA WRITE Only") && it.Lane == "n1.k":
			sawOnly = true
			sawRETHKey = sawRETHKey || hasClass("rkey")
		case strings.Contains(it.Label, "RDMA WRITE Middle") || strings.Contains(it.Label, "RDMA WRITE Last"):
			sawBig = true
		case strings.Contains(it.Label, "SEND Only") && strings.Contains(it.Label, "carries rkey") && it.Lane == "n0.k":
			sawSendKey = true
		case hasClass("nak") && it.Lane == "n0.k" && strings.Contains(it.Label, "remote access"):
			sawNAK = true
		case it.Kind == ItemError && strings.HasPrefix(it.Lane, "n1.p") && strings.Contains(it.Label, "IBV_WC_REM_ACCESS_ERR"):
			sawErr = true
		case it.Kind == ItemPacket && strings.Contains(it.Label, "Acknowledge"):
			sawAck = true
		case hasClass("mr") && strings.HasPrefix(it.Lane, "n0.p"):
			sawMR = true
		}
	}
	if drawn != m.Packets {
		t.Errorf("the items show %d packets, the model counts %d", drawn, m.Packets)
	}
	// Each packet was captured by its sender and its receiver, or once.
	if m.Packets < copies/2 || m.Packets > copies {
		t.Errorf("%d packets from %d captured copies", m.Packets, copies)
	}
	if both*2 < m.Packets {
		t.Errorf("only %d of %d packets were matched on both nodes", both, m.Packets)
	}
	for what, ok := range map[string]bool{
		"RDMA Write Only from node 1": sawOnly, "the 16 KiB write's Middle/Last packets": sawBig,
		"a SEND from node 0 carrying the rkey": sawSendKey, "the rkey coming back in a RETH": sawRETHKey,
		"the NAK (remote access error) from node 0": sawNAK, "the error completion in node 1's process": sawErr,
		"an Acknowledge": sawAck, "the MR registration on node 0": sawMR,
	} {
		if !ok {
			t.Errorf("the timeline shows no %s", what)
		}
	}
	// The clocks: aligned from packets both ways, the uncertainty stated.
	if len(m.Align) != 1 {
		t.Fatalf("alignment %+v: want one, node 1's", m.Align)
	}
	a := m.Align[0]
	if a.Method != AlignPackets || a.UncertaintyNS < 0 || a.Pairs < 4 {
		t.Errorf("node 1 aligned %+v: want from packets both ways, with an uncertainty", a)
	}
	if unc := fmt.Sprint(time.Duration(a.UncertaintyNS)); !strings.Contains(m.Clock, "± "+unc) {
		t.Errorf("the page's clock note %q does not state the uncertainty ± %s", m.Clock, unc)
	}
	if a.UncertaintyNS > int64(50*time.Millisecond) {
		t.Errorf("clock uncertainty %v: the tightest request/response pair should bound it far better", time.Duration(a.UncertaintyNS))
	}
}
