// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"context"
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/uverbs/internal/rxe"
	"golang.org/x/sys/unix"
)

// fakeObjects are one object of each kind on a pipe Context (testContext),
// with in-memory rings where the real ones are mapped. Each is tracked like a
// created object, so Context.Close sees it.
type fakeObjects struct {
	pd   *PD
	mr   *MR
	cq   *CQ
	srq  *SRQ
	qp   *QP // RC, on cq
	ud   *QP // UD, on cq; stays open in TestClosedObjectsReachNoKernel
	ah   *AH
	ch   *CompChannel
	evfd int // the channel's fd
}

func newFakeObjects(t *testing.T, c *Context) *fakeObjects {
	t.Helper()
	o := &fakeObjects{}
	track := func(kind int, obj object) uint64 {
		uh, err := c.track(kind, obj)
		if err != nil {
			t.Fatal(err)
		}
		return uh
	}
	o.pd = &PD{ctx: c, handle: 1}
	o.pd.uh = track(kindPD, o.pd)
	o.mr = &MR{pd: o.pd, handle: 2, buf: make([]byte, 64), lkey: 0x100, rkey: 0x100, pin: new(runtime.Pinner)}
	o.mr.pin.Pin(&o.mr.buf[0])
	c.res.addPin(o.mr.pin)
	o.mr.uh = track(kindMR, o.mr)
	o.cq = fakeCQ(16)
	o.cq.ctx, o.cq.handle = c, 3
	o.cq.uh = track(kindCQ, o.cq)
	o.srq = &SRQ{ctx: c, pd: o.pd, handle: 4, maxWR: 4, maxSGE: 1}
	o.srq.rq = rxe.RecvQueue{Q: rxe.NewMemQueue(4, rxe.RecvWQEHeader+16), MaxSGE: 1}
	o.srq.uh = track(kindSRQ, o.srq)
	o.qp = fakeQP(QPTypeRC, 8, 8, 1, 0)
	o.qp.ctx, o.qp.pd, o.qp.handle, o.qp.sendCQ, o.qp.recvCQ = c, o.pd, 5, o.cq, o.cq
	o.qp.uh = track(kindQP, o.qp)
	o.ud = fakeQP(QPTypeUD, 8, 8, 1, 0)
	o.ud.ctx, o.ud.pd, o.ud.handle, o.ud.sendCQ, o.ud.recvCQ = c, o.pd, 6, o.cq, o.cq
	o.ud.uh = track(kindQP, o.ud)
	o.ah = &AH{pd: o.pd, handle: 7, num: 1}
	o.ah.uh = track(kindAH, o.ah)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[1]) })
	ev, err := newEventFile(p[0], "test channel")
	if err != nil {
		t.Fatal(err)
	}
	o.ch = &CompChannel{ctx: c, fd: p[0], ev: ev}
	o.ch.uh = track(kindChannel, o.ch)
	o.evfd = p[0]
	return o
}

// closedCall is a method called on a closed object; it must fail with
// ErrClosed without writing anything to the kernel.
type closedCall struct {
	name string
	call func() error
}

func (o *fakeObjects) closedCalls(t *testing.T, c *Context, udOpen bool) []closedCall {
	ctx := labtest.Context(t, 5*time.Second)
	sge := []SGE{{Addr: 0x1000, Length: 8, LKey: 1}}
	openCQ := fakeCQ(4)
	openCQ.ctx = c
	openPD := &PD{ctx: c}
	calls := []closedCall{
		{"QP.Modify", func() error { return o.qp.Modify(&QPAttr{State: QPSRTS}, QPAttrState) }},
		{"QP.Modify without state", func() error { return o.qp.Modify(&QPAttr{QKey: 1}, QPAttrQKey) }},
		{"QP.Query", func() error { _, err := o.qp.Query(); return err }},
		{"QP.ModifyToInit", func() error { return o.qp.ModifyToInit(1, AccessLocalWrite, 0) }},
		{"QP.Connect", func() error { return o.qp.Connect(Dest{QPN: 9, GID: GID{15: 1}}, 1, nil) }},
		{"QP.ModifyToErr", o.qp.ModifyToErr},
		{"QP.ModifyToReset", o.qp.ModifyToReset},
		{"QP.Drain", func() error { _, err := o.qp.Drain(ctx); return err }},
		{"QP.PostSend", func() error { return o.qp.PostSend(SendWR{Opcode: WRSend, SGL: sge}) }},
		{"QP.PostRecv", func() error { return o.qp.PostRecv(RecvWR{SGL: sge}) }},
		{"CQ.Arm", func() error { return o.cq.Arm(false) }},
		{"CQ.Resize", func() error { return o.cq.Resize(64) }},
		{"CQ.PollN", func() error { _, err := o.cq.PollN(ctx, make([]WC, 1), 1); return err }},
		{"SRQ.PostRecv", func() error { return o.srq.PostRecv(RecvWR{SGL: sge}) }},
		{"SRQ.SetLimit", func() error { return o.srq.SetLimit(2) }},
		{"SRQ.Resize", func() error { return o.srq.Resize(8) }},
		{"SRQ.Query", func() error { _, _, _, err := o.srq.Query(); return err }},
		{"PD.RegMR", func() error { _, err := o.pd.RegMR(make([]byte, 64), AccessLocalWrite); return err }},
		{"PD.CreateQP", func() error {
			_, err := o.pd.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: openCQ, RecvCQ: openCQ, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
			return err
		}},
		{"PD.CreateSRQ", func() error { _, err := o.pd.CreateSRQ(SRQOptions{MaxWR: 4, MaxSGE: 1}); return err }},
		{"PD.CreateAH", func() error { _, err := o.pd.CreateAH(AHAttr{IsGlobal: true}); return err }},
		{"CreateQP on a closed CQ", func() error {
			_, err := openPD.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: openCQ, RecvCQ: o.cq, Cap: QPCap{MaxSendWR: 1, MaxRecvWR: 1}})
			return err
		}},
		{"CreateQP on a closed SRQ", func() error {
			_, err := openPD.CreateQP(QPInitAttr{Type: QPTypeRC, SendCQ: openCQ, RecvCQ: openCQ, SRQ: o.srq, Cap: QPCap{MaxSendWR: 1}})
			return err
		}},
		{"CreateCQ with a closed channel", func() error { _, err := c.CreateCQ(4, &CQOptions{Channel: o.ch}); return err }},
		{"CompChannel.Wait", func() error { _, err := o.ch.Wait(ctx); return err }},
	}
	if udOpen {
		calls = append(calls, closedCall{"PostSend to a closed AH", func() error {
			return o.ud.PostSend(SendWR{Opcode: WRSend, SGL: sge, AH: o.ah, RemoteQPN: 1, RemoteQKey: 1})
		}})
	} else {
		calls = append(calls, closedCall{"UD QP.PostSend", func() error {
			return o.ud.PostSend(SendWR{Opcode: WRSend, SGL: sge, AH: o.ah, RemoteQPN: 1, RemoteQKey: 1})
		}})
	}
	return calls
}

// pipeEmpty fails the test if a command reached the pipe.
func pipeEmpty(t *testing.T, r int, after string) {
	t.Helper()
	b := make([]byte, 256)
	if n, err := unix.Read(r, b); n > 0 || err != unix.EAGAIN {
		t.Errorf("%s: the kernel got a command: % x (%v)", after, b[:max(n, 0)], err)
	}
}

// Every method of an object closed on its own fails with ErrClosed and sends
// nothing: the kernel hands a destroyed object's handle to the next one.
func TestClosedObjectsReachNoKernel(t *testing.T) {
	c, r := testContext(t)
	o := newFakeObjects(t, c)
	le := binary.LittleEndian
	for _, x := range []struct {
		obj     object
		command uint32
		handle  uint32
	}{
		{o.qp, abi.IB_USER_VERBS_CMD_DESTROY_QP, 5},
		{o.srq, abi.IB_USER_VERBS_CMD_DESTROY_SRQ, 4},
		{o.ah, abi.IB_USER_VERBS_CMD_DESTROY_AH, 7},
		{o.mr, abi.IB_USER_VERBS_CMD_DEREG_MR, 2},
		{o.cq, abi.IB_USER_VERBS_CMD_DESTROY_CQ, 3},
		{o.pd, abi.IB_USER_VERBS_CMD_DEALLOC_PD, 1},
	} {
		if err := x.obj.Close(); err != nil {
			t.Fatalf("%T.Close: %v", x.obj, err)
		}
		cmd := readCmd(t, r)
		// The handle follows the response pointer where there is one.
		off := 8
		if x.command == abi.IB_USER_VERBS_CMD_DESTROY_QP || x.command == abi.IB_USER_VERBS_CMD_DESTROY_SRQ || x.command == abi.IB_USER_VERBS_CMD_DESTROY_CQ {
			off = 16
		}
		if le.Uint32(cmd) != x.command || le.Uint32(cmd[off:]) != x.handle {
			t.Fatalf("%T.Close wrote % x", x.obj, cmd)
		}
	}
	if err := o.ch.Close(); err != nil {
		t.Fatal(err)
	}
	for _, cl := range o.closedCalls(t, c, true) {
		err := cl.call()
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed object: %v, want ErrClosed", cl.name, err)
		} else {
			t.Logf("%s: %v", cl.name, err)
		}
		pipeEmpty(t, r, cl.name)
	}
	if o.qp.Doorbells() != 0 || o.ud.Doorbells() != 0 {
		t.Errorf("doorbells rung: closed QP %d, UD QP with a closed AH %d", o.qp.Doorbells(), o.ud.Doorbells())
	}
	if o.cq.Poll(make([]WC, 1)) != 0 {
		t.Error("Poll on a closed CQ found a completion")
	}
	for _, obj := range []object{o.qp, o.ud, o.srq, o.ah, o.mr, o.cq, o.pd, o.ch} {
		if obj == o.ud {
			continue // still open
		}
		if err := obj.Close(); err != nil {
			t.Errorf("second %T.Close: %v", obj, err)
		}
	}
	pipeEmpty(t, r, "second Close")
}

// Objects closed by Context.Close — destroyed one by one, or abandoned when
// their destroy fails — behave as if closed themselves.
func TestContextCloseClosesObjects(t *testing.T) {
	for _, destroyFails := range []bool{false, true} {
		name := map[bool]string{false: "destroyed", true: "abandoned"}[destroyFails]
		t.Run(name, func(t *testing.T) {
			c, r := testContext(t)
			o := newFakeObjects(t, c)
			if destroyFails {
				c.fd = -1 // every command fails with EBADF; res.fd still closes the pipe
			}
			err := c.Close()
			if destroyFails != (err != nil) {
				t.Fatalf("Context.Close: %v", err)
			}
			for {
				b := make([]byte, 4096)
				if n, _ := unix.Read(r, b); n <= 0 {
					break
				}
			}
			calls := o.closedCalls(t, c, false)
			calls = append(calls,
				closedCall{"Context.AllocPD", func() error { _, err := c.AllocPD(); return err }},
				closedCall{"Context.CreateCQ", func() error { _, err := c.CreateCQ(4, nil); return err }},
				closedCall{"Context.CreateCompChannel", func() error { _, err := c.CreateCompChannel(); return err }},
				closedCall{"Context.QueryDevice", func() error { _, err := c.QueryDevice(); return err }},
				closedCall{"Context.QueryDeviceEx", func() error { _, err := c.QueryDeviceEx(); return err }},
				closedCall{"Context.QueryPort", func() error { _, err := c.QueryPort(1); return err }},
				closedCall{"Context.GIDTable", func() error { _, err := c.GIDTable(1); return err }},
				closedCall{"Context.GIDForIP", func() error { _, err := c.GIDForIP(1, mustAddr("10.0.0.1")); return err }},
				closedCall{"Context.WaitAsyncEvent", func() error { _, err := c.WaitAsyncEvent(context.Background()); return err }},
			)
			for _, cl := range calls {
				if err := cl.call(); !errors.Is(err, ErrClosed) {
					t.Errorf("%s after Context.Close: %v, want ErrClosed", cl.name, err)
				}
			}
			for _, obj := range []object{o.qp, o.ud, o.srq, o.ah, o.mr, o.cq, o.pd, o.ch, c} {
				if err := obj.Close(); err != nil {
					t.Errorf("%T.Close after Context.Close: %v", obj, err)
				}
			}
			if len(c.res.pins) != 0 {
				t.Errorf("%d pins left", len(c.res.pins))
			}
		})
	}
}

// Close racing with commands on the same object: once the destroy command
// has been written, no command naming the handle may follow it.
func TestCloseRacesCommands(t *testing.T) {
	c, r := testContext(t)
	qp := fakeQP(QPTypeRC, 4, 4, 1, 0)
	qp.ctx, qp.handle = c, 5
	cq := fakeCQ(4)
	cq.ctx, cq.handle = c, 3
	srq := &SRQ{ctx: c, handle: 4}
	srq.rq = rxe.RecvQueue{Q: rxe.NewMemQueue(4, rxe.RecvWQEHeader+16), MaxSGE: 1}

	// The reader plays the kernel: it records every command in order.
	var (
		mu   sync.Mutex
		cmds []uint32
	)
	seen := func() []uint32 {
		mu.Lock()
		defer mu.Unlock()
		return append([]uint32(nil), cmds...)
	}
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, 4096)
		for {
			n, err := unix.Read(r, buf[:8])
			if err == unix.EAGAIN {
				select {
				case <-stop:
					return
				default:
				}
				unix.Poll([]unix.PollFd{{Fd: int32(r), Events: unix.POLLIN}}, 10)
				continue
			}
			if err != nil || n != 8 {
				t.Errorf("read command header: %d %v", n, err)
				return
			}
			cmd, words := binary.LittleEndian.Uint32(buf), int(binary.LittleEndian.Uint16(buf[4:]))
			// Each command is one write(2) below PIPE_BUF: its body is there.
			if n, err := unix.Read(r, buf[8:words*4]); err != nil || n != words*4-8 {
				t.Errorf("read command %d body: %d %v", cmd, n, err)
				return
			}
			mu.Lock()
			cmds = append(cmds, cmd)
			mu.Unlock()
		}
	}()

	workers := []func() error{
		qp.ModifyToErr,
		func() error { _, err := qp.Query(); return err },
		func() error { return cq.Arm(false) },
		func() error { _, _, _, err := srq.Query(); return err },
	}
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(10 * time.Second)
			for i := 0; i < 1e7 && time.Now().Before(deadline); i++ {
				if err := w(); errors.Is(err, ErrClosed) {
					return
				}
				// Other errors (EAGAIN from a full pipe) just mean retry.
			}
			t.Error("a worker never saw ErrClosed")
		}()
	}
	// Close once every worker is under way.
	running := func() bool {
		n := map[uint32]int{}
		for _, c := range seen() {
			n[c]++
		}
		return n[abi.IB_USER_VERBS_CMD_MODIFY_QP] > 20 && n[abi.IB_USER_VERBS_CMD_QUERY_QP] > 20 &&
			n[abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ] > 20 && n[abi.IB_USER_VERBS_CMD_QUERY_SRQ] > 20
	}
	for deadline := time.Now().Add(5 * time.Second); !running() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	for _, o := range []object{qp, cq, srq} {
		for {
			err := o.Close()
			if err == nil {
				break
			}
			if !errors.Is(err, unix.EAGAIN) {
				t.Fatalf("%T.Close: %v", o, err)
			}
		}
	}
	wg.Wait()
	close(stop)
	<-readerDone

	after := map[uint32]uint32{ // command -> the destroy that ends it
		abi.IB_USER_VERBS_CMD_MODIFY_QP:     abi.IB_USER_VERBS_CMD_DESTROY_QP,
		abi.IB_USER_VERBS_CMD_QUERY_QP:      abi.IB_USER_VERBS_CMD_DESTROY_QP,
		abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ: abi.IB_USER_VERBS_CMD_DESTROY_CQ,
		abi.IB_USER_VERBS_CMD_QUERY_SRQ:     abi.IB_USER_VERBS_CMD_DESTROY_SRQ,
	}
	all := seen()
	destroyed := map[uint32]bool{}
	count := map[uint32]int{}
	for i, cmd := range all {
		count[cmd]++
		if d, ok := after[cmd]; ok && destroyed[d] {
			t.Errorf("command %d (%d) follows its object's destroy (%d)", i, cmd, d)
		}
		destroyed[cmd] = true
	}
	for cmd := range after {
		if count[cmd] == 0 {
			t.Errorf("no command %d before Close: the race was not exercised", cmd)
		}
	}
	t.Logf("%d commands, by number: %v", len(all), count)
}
