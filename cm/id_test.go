// Copyright 2026 The rdmago Authors.

package cm

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/abi"
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestDemuxRoutesEventsToTheirIDs(t *testing.T) {
	ch, f := newFakeChannel(t)
	ctx := testCtx(t)
	var ids []*ID
	for range 3 {
		id, err := ch.CreateID(PortSpaceTCP)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Interleave events of the three IDs; each must see its own, in order.
	seq := []EventType{EventAddrResolved, EventRouteResolved, EventEstablished}
	for _, typ := range seq {
		for i := len(ids) - 1; i >= 0; i-- {
			f.queue(ids[i].Handle(), typ, int32(i), nil)
		}
	}
	for i, id := range ids {
		for _, want := range seq {
			ev, err := id.WaitEvent(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type != want || ev.Status != int32(i) || ev.ID != id {
				t.Fatalf("id %d got %v (status %d, id %p), want %v status %d", i, ev.Type, ev.Status, ev.ID, want, i)
			}
		}
	}
	for _, id := range ids {
		if err := id.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	if s := ch.Stats(); s.IDs != 0 || s.Events != 9 || s.Mismatches != 0 || s.Orphans != 0 {
		t.Fatalf("stats %+v", s)
	}
	if n := f.live(); n != 0 {
		t.Fatalf("%d kernel ids left", n)
	}
}

func TestConnectRequestCreatesChildID(t *testing.T) {
	ch, f := newFakeChannel(t)
	ctx := testCtx(t)
	l, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Bind(mustAddr("10.0.0.1:7174")); err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(8); err != nil {
		t.Fatal(err)
	}
	var p abi.UCMConnParam
	p.SetData([]byte("hello"))
	p.InitiatorDepth, p.ResponderResources, p.QPNum = 3, 4, 0x11
	kid := f.connRequest(l.Handle(), &p)
	ev, err := l.GetRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	child := ev.ID
	if child == nil || child == l || ev.Listener != l || child.Handle() != kid {
		t.Fatalf("request: id %v listener %v kid %d", child, ev.Listener, kid)
	}
	if !bytes.Equal(ev.Param.PrivateData, []byte("hello")) || ev.Param.InitiatorDepth != 3 || ev.Param.ResponderResources != 4 {
		t.Fatalf("param %+v", ev.Param)
	}
	if child.Remote().QPNum != 0x11 {
		t.Fatalf("child remote %+v", child.Remote())
	}
	// The child's own events go to the child.
	if err := child.Accept(ConnParam{QPNum: 0x22, ResponderResources: 1, InitiatorDepth: 1}); err != nil {
		t.Fatal(err)
	}
	acc := f.commands(abi.RDMA_USER_CM_CMD_ACCEPT)
	if len(acc) != 1 {
		t.Fatalf("accepts: %v", acc)
	}
	a := acc[0].Body.(*abi.UCMAccept)
	if a.ID != kid || a.UID == 0 || a.ConnParam.Valid != 1 || a.ConnParam.QPNum != 0x22 {
		t.Fatalf("accept body %+v", a)
	}
	// The kernel takes the uid from ACCEPT; mimic it.
	f.mu.Lock()
	f.ctxs[kid].uid = a.UID
	f.mu.Unlock()
	f.queue(kid, EventEstablished, 0, nil)
	if ev, err := child.WaitEvent(ctx); err != nil || ev.Type != EventEstablished {
		t.Fatalf("child event %v, %v", ev, err)
	}
	if l.pending() != 0 {
		t.Fatal("listener got the child's event")
	}
	if err := child.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err) // events_reported counts the CONNECT_REQUEST on the listener
	}
}

func TestDestroyReconcilesEventsReported(t *testing.T) {
	ch, f := newFakeChannel(t)
	id, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	f.queue(id.Handle(), EventAddrResolved, 0, nil)
	f.queue(id.Handle(), EventRouteResolved, 0, nil)
	waitFor(t, func() bool { return id.pending() == 2 })
	f.mu.Lock()
	f.extraEv = 1 // the kernel claims one more event than was read
	f.mu.Unlock()
	err = id.Close()
	if err == nil || !strings.Contains(err.Error(), "reported 3 events, 2 were delivered") {
		t.Fatalf("close: %v", err)
	}
	if s := ch.Stats(); s.Mismatches != 1 {
		t.Fatalf("stats %+v", s)
	}
	if err := id.Close(); err == nil {
		t.Fatal("second Close lost the error") // idempotent: same result
	}
}

func TestReusedKernelIDGetsNoStaleEvents(t *testing.T) {
	ch, f := newFakeChannel(t)
	ctx := testCtx(t)
	old, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	kid := old.Handle()
	// An unread event of the old id is discarded by DESTROY_ID.
	f.mu.Lock()
	f.queueLocked(kid, EventDisconnected, 0, nil)
	f.mu.Unlock()
	if err := old.Close(); err != nil && !strings.Contains(err.Error(), "reported") {
		t.Fatal(err)
	}
	nu, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	if nu.Handle() != kid {
		t.Fatalf("fake kernel did not reuse id %d (got %d)", kid, nu.Handle())
	}
	f.queue(kid, EventAddrResolved, 0, nil)
	ev, err := nu.WaitEvent(ctx)
	if err != nil || ev.Type != EventAddrResolved {
		t.Fatalf("new id got %v, %v", ev, err)
	}
	if _, err := old.WaitEvent(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("old id: %v", err)
	}
	nu.Close()
}

// An event the channel goroutine delivered before Close (the ordering the
// flaky TestReusedKernelIDGetsNoStaleEvents hit about once in 1,000 runs)
// is discarded: WaitEvent after Close is ErrClosed, never that event.
func TestWaitEventAfterCloseIsErrClosed(t *testing.T) {
	ch, f := newFakeChannel(t)
	ctx := testCtx(t)
	id, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	f.queue(id.Handle(), EventDisconnected, 0, nil)
	waitFor(t, func() bool { return id.pending() == 1 })
	if err := id.Close(); err != nil {
		t.Fatal(err) // the event was delivered: events_reported matches
	}
	if ev, err := id.WaitEvent(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitEvent after Close: %v, %v; want ErrClosed", ev.Type, err)
	}
	if n := id.pending(); n != 0 {
		t.Fatalf("%d events still queued after Close", n)
	}
}

// Closing a listener rejects and destroys the requests it had queued.
func TestCloseRejectsQueuedRequests(t *testing.T) {
	ch, f := newFakeChannel(t)
	l, err := ch.CreateID(PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Listen(8); err != nil {
		t.Fatal(err)
	}
	kids := []uint32{f.connRequest(l.Handle(), nil), f.connRequest(l.Handle(), nil)}
	waitFor(t, func() bool { return l.pending() == 2 })
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var rejected []uint32
	for _, c := range f.commands(abi.RDMA_USER_CM_CMD_REJECT) {
		rejected = append(rejected, c.Body.(*abi.UCMReject).ID)
	}
	if len(rejected) != 2 || rejected[0] != kids[0] || rejected[1] != kids[1] {
		t.Fatalf("rejected %v, want %v", rejected, kids)
	}
	if n := f.live(); n != 0 {
		t.Fatalf("%d kernel ids left", n)
	}
	if s := ch.Stats(); s.IDs != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// A listener that sees ADDR_CHANGE (or a TIMEWAIT_EXIT) keeps serving: the
// next Accept returns the next request; DEVICE_REMOVAL still ends it.
func TestListenerSkipsAddrChange(t *testing.T) {
	ch, f := newFakeChannel(t)
	ctx := testCtx(t)
	l, err := Listen(ctx, "10.0.0.1:7174", &Options{Channel: ch})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lk := l.ID().Handle()
	f.queue(lk, EventAddrChange, 0, nil)
	f.queue(lk, EventTimewaitExit, 0, nil)
	kid := f.connRequest(lk, nil)
	r, err := l.AcceptRequest(ctx)
	if err != nil {
		t.Fatalf("accept after ADDR_CHANGE: %v", err)
	}
	if r.ID.Handle() != kid {
		t.Fatalf("request for id %d, want %d", r.ID.Handle(), kid)
	}
	if err := r.Reject(nil); err != nil {
		t.Fatal(err)
	}
	f.queue(lk, EventDeviceRemoval, 0, nil)
	if _, err := l.AcceptRequest(ctx); !errors.Is(err, ErrDeviceRemoved) {
		t.Fatalf("accept after DEVICE_REMOVAL: %v, want ErrDeviceRemoved", err)
	}
}

func TestOrphanConnectRequestIsDestroyed(t *testing.T) {
	ch, f := newFakeChannel(t)
	l, _ := ch.CreateID(PortSpaceTCP)
	l.Listen(0)
	// Make the channel forget the listener while the kernel still has it:
	// the request must not leak a kernel id.
	ch.mu.Lock()
	delete(ch.byUID, l.uid)
	ch.mu.Unlock()
	child := f.connRequest(l.Handle(), nil)
	waitFor(t, func() bool { return ch.Stats().Orphans == 1 })
	waitFor(t, func() bool {
		for _, c := range f.commands(abi.RDMA_USER_CM_CMD_DESTROY_ID) {
			if c.Body.(*abi.UCMDestroyID).ID == child {
				return true
			}
		}
		return false
	})
}

func TestResolveErrorsNameTheEvent(t *testing.T) {
	for _, tc := range []struct {
		typ    EventType
		status int32
		is     []error
		text   []string
	}{
		{EventAddrError, -int32(syscall.ETIMEDOUT), []error{ErrAddrResolution, syscall.ETIMEDOUT},
			[]string{"RDMA_CM_EVENT_ADDR_ERROR", "status -110", "no neighbour answered"}},
		{EventAddrError, -int32(syscall.ENODEV), []error{ErrAddrResolution, syscall.ENODEV},
			[]string{"has no RDMA device"}},
		{EventDeviceRemoval, 0, []error{ErrDeviceRemoved}, []string{"RDMA_CM_EVENT_DEVICE_REMOVAL", "device was removed"}},
	} {
		ch, f := newFakeChannel(t)
		id, _ := ch.CreateID(PortSpaceTCP)
		f.script = func(f *fakeKernel, c fakeCmd) error {
			if c.Cmd == abi.RDMA_USER_CM_CMD_RESOLVE_ADDR {
				f.queueLocked(id.Handle(), tc.typ, tc.status, nil)
			}
			return nil
		}
		err := id.ResolveAddr(testCtx(t), mustAddr("0.0.0.0:0"), mustAddr("10.9.9.9:7174"), time.Second)
		var ee *EventError
		if !errors.As(err, &ee) || ee.Event != tc.typ {
			t.Fatalf("%v: err %v", tc.typ, err)
		}
		for _, want := range tc.is {
			if !errors.Is(err, want) {
				t.Errorf("%v: %v is not %v", tc.typ, err, want)
			}
		}
		for _, s := range tc.text {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%q lacks %q", err, s)
			}
		}
		rs := f.commands(abi.RDMA_USER_CM_CMD_RESOLVE_ADDR)
		r := rs[0].Body.(*abi.UCMResolveAddr)
		if r.TimeoutMS != 1000 || r.DstSize != abi.SizeofSockaddrIn || r.SrcSize != 0 {
			t.Errorf("resolve body %+v", r)
		}
		if dst, _ := r.DstAddr.AddrPort(); dst != mustAddr("10.9.9.9:7174") {
			t.Errorf("dst %v", dst)
		}
	}
}

func TestRejectedErrorCarriesReasonAndPrivateData(t *testing.T) {
	ev := Event{Type: EventRejected, Status: int32(RejInvalidServiceID)}
	err := eventError("connect", "10.77.0.2:9999", ev)
	want := "rdma_cm connect 10.77.0.2:9999: RDMA_CM_EVENT_REJECTED, reason 8 (IB_CM_REJ_INVALID_SERVICE_ID: nothing listens on that port)"
	if err.Error() != want {
		t.Fatalf("got  %q\nwant %q", err, want)
	}
	if !errors.Is(err, ErrNoListener) || !errors.Is(err, ErrRejected) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("%v does not match its sentinels", err)
	}
	ev = Event{Type: EventRejected, Status: int32(RejConsumerDefined), Param: ConnParam{PrivateData: []byte("go away")}}
	err = eventError("connect", "", ev)
	var ee *EventError
	if !errors.As(err, &ee) || string(ee.PrivateData) != "go away" || errors.Is(err, ErrNoListener) {
		t.Fatalf("%v: %+v", err, ee)
	}
	if r, ok := ee.RejectReason(); !ok || r != RejConsumerDefined {
		t.Fatalf("reason %v %v", r, ok)
	}
	un := eventError("connect", "", Event{Type: EventUnreachable, Status: -int32(syscall.ETIMEDOUT)})
	if !errors.Is(un, ErrUnreachable) || !errors.Is(un, syscall.ETIMEDOUT) || !strings.Contains(un.Error(), "did not answer") || errors.Is(un, ErrNoListener) {
		t.Fatalf("unreachable: %v", un)
	}
	// A SIDR reply of IB_SIDR_UNSUPPORTED: nobody listens on the port.
	sidr := eventError("resolve", "10.77.0.2:9999", Event{Type: EventUnreachable, Status: 1})
	want = "rdma_cm resolve 10.77.0.2:9999: RDMA_CM_EVENT_UNREACHABLE, status 1: the peer's CM answered the SIDR request: nothing listens on that port (IB_SIDR_UNSUPPORTED)"
	if sidr.Error() != want || !errors.Is(sidr, ErrNoListener) || !errors.Is(sidr, ErrUnreachable) {
		t.Fatalf("SIDR without a listener: %v\nwant %s, matching ErrNoListener and ErrUnreachable", sidr, want)
	}
	if other := eventError("resolve", "", Event{Type: EventUnreachable, Status: 2}); errors.Is(other, ErrNoListener) {
		t.Fatalf("a SIDR reject matches ErrNoListener: %v", other)
	}
}

func TestPrivateDataLimits(t *testing.T) {
	ch, f := newFakeChannel(t)
	tcp, _ := ch.CreateID(PortSpaceTCP)
	udp, _ := ch.CreateID(PortSpaceUDP)
	for _, tc := range []struct {
		name string
		id   *ID
		op   func(*ID, []byte) error
		max  int
		cmd  uint32
	}{
		{"tcp connect", tcp, func(id *ID, b []byte) error { return id.Connect(ConnParam{PrivateData: b}) }, 56, abi.RDMA_USER_CM_CMD_CONNECT},
		{"tcp accept", tcp, func(id *ID, b []byte) error { return id.Accept(ConnParam{PrivateData: b}) }, 196, abi.RDMA_USER_CM_CMD_ACCEPT},
		{"reject", tcp, func(id *ID, b []byte) error { return id.Reject(b, 0) }, 148, abi.RDMA_USER_CM_CMD_REJECT},
		{"udp connect", udp, func(id *ID, b []byte) error { return id.Connect(ConnParam{PrivateData: b}) }, 180, abi.RDMA_USER_CM_CMD_CONNECT},
		{"udp accept", udp, func(id *ID, b []byte) error { return id.Accept(ConnParam{PrivateData: b}) }, 136, abi.RDMA_USER_CM_CMD_ACCEPT},
	} {
		before := len(f.commands(tc.cmd))
		data := bytes.Repeat([]byte{0xa5}, tc.max+1)
		err := tc.op(tc.id, data)
		if !errors.Is(err, ErrPrivateDataTooLong) || !strings.Contains(err.Error(), "at most") {
			t.Errorf("%s with %d bytes: %v", tc.name, len(data), err)
		}
		if got := len(f.commands(tc.cmd)); got != before {
			t.Errorf("%s: an oversize command reached the kernel", tc.name)
		}
		data[0], data[tc.max-1] = 1, 2
		if err := tc.op(tc.id, data[:tc.max]); err != nil {
			t.Errorf("%s with %d bytes: %v", tc.name, tc.max, err)
			continue
		}
		cmds := f.commands(tc.cmd)
		var got []byte
		switch b := cmds[len(cmds)-1].Body.(type) {
		case *abi.UCMConnect:
			got = b.ConnParam.Data()
		case *abi.UCMAccept:
			got = b.ConnParam.Data()
		case *abi.UCMReject:
			got = b.PrivateData[:b.PrivateDataLen]
		}
		if !bytes.Equal(got, data[:tc.max]) {
			t.Errorf("%s: the kernel got %d bytes of private data, not the %d sent", tc.name, len(got), tc.max)
		}
		if MaxPrivateData(strings.Fields(tc.name)[len(strings.Fields(tc.name))-1], tc.id.PortSpace()) != tc.max {
			t.Errorf("MaxPrivateData for %s", tc.name)
		}
	}
	if err := tcp.Reject(nil, RejStaleConn); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("reject with reason %v: %v", RejStaleConn, err)
	}
}

func TestSetOptionPassesTheValue(t *testing.T) {
	ch, f := newFakeChannel(t)
	id, _ := ch.CreateID(PortSpaceTCP)
	if err := id.SetTOS(0x20); err != nil {
		t.Fatal(err)
	}
	if err := id.SetReuseAddr(true); err != nil {
		t.Fatal(err)
	}
	if err := id.SetAckTimeout(14); err != nil {
		t.Fatal(err)
	}
	cmds := f.commands(abi.RDMA_USER_CM_CMD_SET_OPTION)
	if len(cmds) != 3 {
		t.Fatalf("%d set options", len(cmds))
	}
	for i, want := range []struct {
		name uint32
		val  []byte
	}{{abi.RDMA_OPTION_ID_TOS, []byte{0x20}}, {abi.RDMA_OPTION_ID_REUSEADDR, boolInt(true)}, {abi.RDMA_OPTION_ID_ACK_TIMEOUT, []byte{14}}} {
		b := cmds[i].Body.(*abi.UCMSetOption)
		if b.Level != abi.RDMA_OPTION_ID || b.OptName != want.name || int(b.OptLen) != len(want.val) || !bytes.Equal(cmds[i].Buf, want.val) {
			t.Errorf("option %d: %+v value %x, want name %d value %x", i, b, cmds[i].Buf, want.name, want.val)
		}
		if cmds[i].Out != 0 {
			t.Errorf("option %d: out %d, want 0", i, cmds[i].Out)
		}
	}
}

func TestWaitEventHonoursContextAndClose(t *testing.T) {
	ch, _ := newFakeChannel(t)
	id, _ := ch.CreateID(PortSpaceTCP)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := id.WaitEvent(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var werr error
	go func() {
		defer wg.Done()
		_, werr = id.WaitEvent(context.Background())
	}()
	time.Sleep(10 * time.Millisecond)
	id.Close()
	wg.Wait()
	if !errors.Is(werr, ErrClosed) {
		t.Fatalf("waiter after Close: %v", werr)
	}
	if _, err := ch.CreateID(PortSpace(abi.RDMA_PS_IB)); err == nil {
		t.Fatal("CreateID accepted an unsupported port space")
	}
}

func TestChannelCloseEndsEverything(t *testing.T) {
	ch, f := newFakeChannel(t)
	id, _ := ch.CreateID(PortSpaceTCP)
	done := make(chan error, 1)
	go func() {
		_, err := id.WaitEvent(context.Background())
		done <- err
	}()
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("waiter not woken by Channel.Close")
	}
	if err := id.Close(); err != nil {
		t.Fatalf("closing an ID of a closed channel: %v", err)
	}
	if _, err := ch.CreateID(PortSpaceTCP); !errors.Is(err, ErrClosed) {
		t.Fatalf("create after close: %v", err)
	}
	if err := ch.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.commands(abi.RDMA_USER_CM_CMD_DESTROY_ID)) != 0 {
		t.Fatal("ids were destroyed one by one after the descriptor closed")
	}
}

func TestManyIDsConcurrently(t *testing.T) {
	ch, f := newFakeChannel(t)
	ctx := testCtx(t)
	f.script = func(f *fakeKernel, c fakeCmd) error {
		switch b := c.Body.(type) {
		case *abi.UCMResolveAddr:
			f.queueLocked(b.ID, EventAddrResolved, 0, nil)
		case *abi.UCMResolveRoute:
			f.queueLocked(b.ID, EventRouteResolved, 0, nil)
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				id, err := ch.CreateID(PortSpaceTCP)
				if err != nil {
					errs <- err
					return
				}
				if err := id.ResolveAddr(ctx, mustAddr("0.0.0.0:0"), mustAddr("10.0.0.2:1"), 0); err != nil {
					errs <- err
				}
				if err := id.ResolveRoute(ctx, 0); err != nil {
					errs <- err
				}
				if err := id.Close(); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if s := ch.Stats(); s.IDs != 0 || s.Events != 64*5*2 || s.Mismatches != 0 || s.Orphans != 0 {
		t.Fatalf("stats %+v", s)
	}
	if f.live() != 0 {
		t.Fatal("kernel ids leaked")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestConnEventStateMachine drives an established connection's reaction to
// CM events with the fake kernel: the peer's disconnect ends it, is
// answered at once (DISCONNECT → DREP) and closes Done; a device removal
// that follows replaces the reason; Close then destroys the id without a
// second disconnect wait.
func TestConnEventStateMachine(t *testing.T) {
	ch, f := newFakeChannel(t)
	id, _ := ch.CreateID(PortSpaceTCP)
	released := 0
	c := newConn(id, (&Options{}).withDefaults(), func() { released++ }, PortSpaceTCP)
	c.established()
	if c.Err() != nil {
		t.Fatalf("fresh connection: %v", c.Err())
	}
	f.queue(id.Handle(), EventDisconnected, 0, nil)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("DISCONNECTED did not close Done")
	}
	if !errors.Is(c.Err(), ErrDisconnected) {
		t.Fatalf("err %v", c.Err())
	}
	waitFor(t, func() bool { return len(f.commands(abi.RDMA_USER_CM_CMD_DISCONNECT)) == 1 })
	f.queue(id.Handle(), EventDeviceRemoval, 0, nil)
	waitFor(t, func() bool { return errors.Is(c.Err(), ErrDeviceRemoved) })
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := len(f.commands(abi.RDMA_USER_CM_CMD_DISCONNECT)); n != 1 {
		t.Fatalf("%d DISCONNECTs; after a removal Close must not disconnect again", n)
	}
	if len(f.commands(abi.RDMA_USER_CM_CMD_DESTROY_ID)) != 1 || released != 1 {
		t.Fatal("Close did not destroy the id and release the channel once")
	}
	if err := c.Close(); err != nil || released != 1 {
		t.Fatal("second Close is not a no-op")
	}
}

// TestConnCloseWaitsForDisconnected: closing an established connection
// disconnects and waits for DISCONNECTED; without it, Close gives up after
// CloseTimeout with an error naming the event.
func TestConnCloseWaitsForDisconnected(t *testing.T) {
	ch, f := newFakeChannel(t)
	f.script = func(f *fakeKernel, c fakeCmd) error {
		if b, ok := c.Body.(*abi.UCMDisconnect); ok {
			f.queueLocked(b.ID, EventDisconnected, 0, nil) // the peer's DREP
		}
		return nil
	}
	id, _ := ch.CreateID(PortSpaceTCP)
	c := newConn(id, (&Options{}).withDefaults(), func() {}, PortSpaceTCP)
	c.established()
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("err after Close: %v", c.Err())
	}
	f.script = nil
	id2, _ := ch.CreateID(PortSpaceTCP)
	c2 := newConn(id2, (&Options{CloseTimeout: 50 * time.Millisecond}).withDefaults(), func() {}, PortSpaceTCP)
	c2.established()
	err := c2.Close()
	if err == nil || !strings.Contains(err.Error(), "no DISCONNECTED within") || !errors.Is(err, ErrCloseTimeout) {
		t.Fatalf("close without an answer: %v (want ErrCloseTimeout)", err)
	}
	if len(f.commands(abi.RDMA_USER_CM_CMD_DESTROY_ID)) != 2 {
		t.Fatal("the id was not destroyed after the timeout")
	}
}

// TestConnErrBeforeRemovedCloses: a reader that sees ID.Removed (or
// Disconnected) closed sees Conn.Err report it. The test holds the Conn's
// state lock while the event arrives, so the hook cannot record it: the
// channel must not close meanwhile (it used to close first, and the lab's
// TestLabZZDeviceRemoval once saw "connection ended with <nil>").
func TestConnErrBeforeRemovedCloses(t *testing.T) {
	for _, tc := range []struct {
		typ  EventType
		want error
		done func(*ID) <-chan struct{}
	}{
		{EventDeviceRemoval, ErrDeviceRemoved, (*ID).Removed},
		{EventDisconnected, ErrDisconnected, (*ID).Disconnected},
	} {
		t.Run(tc.typ.String(), func(t *testing.T) {
			ch, f := newFakeChannel(t)
			id, _ := ch.CreateID(PortSpaceTCP)
			c := newConn(id, (&Options{CloseTimeout: 50 * time.Millisecond}).withDefaults(), func() {}, PortSpaceTCP)
			c.established()
			defer c.Close()
			c.stateMu.Lock()
			f.queue(id.Handle(), tc.typ, 0, nil)
			select {
			case <-tc.done(id):
				c.stateMu.Unlock()
				t.Fatalf("%v: the ID's channel closed before the Conn recorded the event (Err was nil)", tc.typ)
			case <-time.After(100 * time.Millisecond):
			}
			c.stateMu.Unlock()
			<-tc.done(id)
			if err := c.Err(); !errors.Is(err, tc.want) {
				t.Fatalf("Err after %v: %v, want %v", tc.typ, err, tc.want)
			}
		})
	}
}

// An event that came before the Conn was established is handed to it by
// established, exactly once.
func TestConnSeesEventBeforeEstablished(t *testing.T) {
	ch, f := newFakeChannel(t)
	id, _ := ch.CreateID(PortSpaceTCP)
	f.queue(id.Handle(), EventDeviceRemoval, 0, nil)
	<-id.Removed()
	c := newConn(id, (&Options{CloseTimeout: 50 * time.Millisecond}).withDefaults(), func() {}, PortSpaceTCP)
	c.established()
	defer c.Close()
	if !errors.Is(c.Err(), ErrDeviceRemoved) {
		t.Fatalf("Err: %v, want ErrDeviceRemoved", c.Err())
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done not closed")
	}
}

// TestListenBacklogRejectsExcess: the channel reads every event, so the
// kernel's backlog count never fills; requests beyond the listener's
// backlog are rejected at once with BacklogFullData and their kernel ids
// destroyed, and taking a request frees a place.
func TestListenBacklogRejectsExcess(t *testing.T) {
	ch, f := newFakeChannel(t)
	ctx := testCtx(t)
	l, err := Listen(ctx, "10.0.0.1:7174", &Options{Channel: ch, Backlog: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lk := l.ID().Handle()
	var kids []uint32
	for range 5 {
		kids = append(kids, f.connRequest(lk, nil))
	}
	waitFor(t, func() bool { return ch.Stats().Events == 5 })
	rejects := func() (ids []uint32) {
		for _, c := range f.commands(abi.RDMA_USER_CM_CMD_REJECT) {
			b := c.Body.(*abi.UCMReject)
			if !bytes.Equal(b.PrivateData[:b.PrivateDataLen], []byte(BacklogFullData)) || b.Reason != 0 {
				t.Errorf("reject of %d: reason %d, data %q", b.ID, b.Reason, b.PrivateData[:b.PrivateDataLen])
			}
			ids = append(ids, b.ID)
		}
		return ids
	}
	if got := rejects(); len(got) != 3 || got[0] != kids[2] || got[2] != kids[4] {
		t.Fatalf("rejected %v, want the last 3 of %v", got, kids)
	}
	if s := ch.Stats(); s.Overflows != 3 || s.IDs != 3 {
		t.Fatalf("stats %+v, want 3 overflows and 3 ids (listener + backlog of 2)", s)
	}
	if n := f.live(); n != 3 {
		t.Fatalf("%d kernel ids live, want 3", n)
	}
	r, err := l.AcceptRequest(ctx)
	if err != nil || r.ID.Handle() != kids[0] {
		t.Fatalf("accept: %v (%v)", err, r)
	}
	defer r.Reject(nil)
	// One place is free now: the next request is queued, the one after is not.
	k6, k7 := f.connRequest(lk, nil), f.connRequest(lk, nil)
	waitFor(t, func() bool { return ch.Stats().Events == 7 })
	if got := rejects(); len(got) != 4 || got[3] != k7 {
		t.Fatalf("rejected %v, want %d added", got, k7)
	}
	if n := l.ID().pending(); n != 2 {
		t.Fatalf("%d requests queued, want 2 (%d and %d)", n, kids[1], k6)
	}
	// Closing the listener destroys the queued requests: events_reported
	// on the listener still matches (rejected requests were delivered).
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Reject(nil); err != nil {
		t.Fatal(err)
	}
	if n := f.live(); n != 0 {
		t.Fatalf("%d kernel ids left", n)
	}
}
