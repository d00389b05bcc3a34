// Copyright 2026 The rdmago Authors.

package cm

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"syscall"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
)

// fakeKernel is the rdma_cm character device in memory. It decodes every
// command from its bytes, as the kernel does, keeps the kernel's
// bookkeeping (ids, the event list, events_reported per id) and lets tests
// queue events. Commands other than the bookkeeping ones are recorded and
// passed to an optional script.
type fakeKernel struct {
	t *testing.T

	mu      sync.Mutex
	cond    *sync.Cond
	gen     uint64
	closed  bool
	nextID  uint32
	reuse   []uint32 // freed ids, handed out again first (the kernel's xarray reuses them)
	ctxs    map[uint32]*fakeCtx
	events  []fakeEvent
	cmds    []fakeCmd
	script  func(f *fakeKernel, c fakeCmd) error // runs with mu held
	addr    abi.UCMQueryAddrResp
	qpAttr  abi.QPAttr
	extraEv uint32 // added to events_reported, to provoke a mismatch
}

type fakeCtx struct {
	uid      uint64
	ps       uint16
	reported uint32
	listen   bool
}

type fakeEvent struct {
	owner uint32 // the ctx whose events_reported counts it
	resp  abi.UCMEventResp
}

// fakeCmd is one decoded command.
type fakeCmd struct {
	Cmd  uint32
	In   uint16
	Out  uint16
	Body any
	Buf  []byte // the pointed-to buffer (response or option value)
}

func newFakeKernel(t *testing.T) *fakeKernel {
	f := &fakeKernel{t: t, ctxs: map[uint32]*fakeCtx{}, nextID: 100}
	f.cond = sync.NewCond(&f.mu)
	return f
}

func newFakeChannel(t *testing.T) (*Channel, *fakeKernel) {
	t.Helper()
	f := newFakeKernel(t)
	ch, err := newChannel(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	return ch, f
}

var fakeBodies = map[uint32]func() any{
	abi.RDMA_USER_CM_CMD_CREATE_ID:     func() any { return new(abi.UCMCreateID) },
	abi.RDMA_USER_CM_CMD_DESTROY_ID:    func() any { return new(abi.UCMDestroyID) },
	abi.RDMA_USER_CM_CMD_BIND:          func() any { return new(abi.UCMBind) },
	abi.RDMA_USER_CM_CMD_RESOLVE_ADDR:  func() any { return new(abi.UCMResolveAddr) },
	abi.RDMA_USER_CM_CMD_RESOLVE_ROUTE: func() any { return new(abi.UCMResolveRoute) },
	abi.RDMA_USER_CM_CMD_QUERY:         func() any { return new(abi.UCMQuery) },
	abi.RDMA_USER_CM_CMD_QUERY_ROUTE:   func() any { return new(abi.UCMQuery) },
	abi.RDMA_USER_CM_CMD_CONNECT:       func() any { return new(abi.UCMConnect) },
	abi.RDMA_USER_CM_CMD_LISTEN:        func() any { return new(abi.UCMListen) },
	abi.RDMA_USER_CM_CMD_ACCEPT:        func() any { return new(abi.UCMAccept) },
	abi.RDMA_USER_CM_CMD_REJECT:        func() any { return new(abi.UCMReject) },
	abi.RDMA_USER_CM_CMD_DISCONNECT:    func() any { return new(abi.UCMDisconnect) },
	abi.RDMA_USER_CM_CMD_INIT_QP_ATTR:  func() any { return new(abi.UCMInitQPAttr) },
	abi.RDMA_USER_CM_CMD_GET_EVENT:     func() any { return new(abi.UCMGetEvent) },
	abi.RDMA_USER_CM_CMD_SET_OPTION:    func() any { return new(abi.UCMSetOption) },
	abi.RDMA_USER_CM_CMD_NOTIFY:        func() any { return new(abi.UCMNotify) },
}

func (f *fakeKernel) write(b, buf []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if len(b) < 8 {
		return syscall.EINVAL
	}
	c := fakeCmd{
		Cmd: binary.NativeEndian.Uint32(b), In: binary.NativeEndian.Uint16(b[4:]),
		Out: binary.NativeEndian.Uint16(b[6:]), Buf: buf,
	}
	if int(c.In) != len(b)-8 {
		f.t.Errorf("%s: header says %d bytes in, write has %d", abi.UCMCmdString(c.Cmd), c.In, len(b)-8)
		return syscall.EINVAL
	}
	mk, ok := fakeBodies[c.Cmd]
	if !ok {
		return syscall.ENOSYS
	}
	c.Body = mk()
	if n, err := binary.Decode(b[8:], binary.NativeEndian, c.Body); err != nil || n != len(b)-8 {
		f.t.Errorf("%s: decode %d bytes: n=%d err=%v", abi.UCMCmdString(c.Cmd), len(b)-8, n, err)
		return syscall.EINVAL
	}
	if c.Out != 0 && int(c.Out) > len(buf) {
		f.t.Errorf("%s: out %d but the buffer has %d bytes", abi.UCMCmdString(c.Cmd), c.Out, len(buf))
		return syscall.EFAULT
	}
	if ptr := fakePointer(c.Body); ptr != 0 && ptr != addrOf(buf) {
		f.t.Errorf("%s: pointer %#x does not address the buffer (%#x)", abi.UCMCmdString(c.Cmd), ptr, addrOf(buf))
		return syscall.EFAULT
	}
	if c.Cmd != abi.RDMA_USER_CM_CMD_GET_EVENT {
		f.cmds = append(f.cmds, c)
	}
	switch body := c.Body.(type) {
	case *abi.UCMCreateID:
		id := f.alloc()
		f.ctxs[id] = &fakeCtx{uid: body.UID, ps: body.PS}
		binary.NativeEndian.PutUint32(buf, id)
		return nil
	case *abi.UCMDestroyID:
		ctx, ok := f.ctxs[body.ID]
		if !ok {
			return syscall.ENOENT
		}
		delete(f.ctxs, body.ID)
		f.reuse = append(f.reuse, body.ID)
		kept := f.events[:0]
		for _, e := range f.events {
			if e.owner != body.ID {
				kept = append(kept, e)
			}
		}
		f.events = kept
		binary.NativeEndian.PutUint32(buf, ctx.reported+f.extraEv)
		return nil
	case *abi.UCMGetEvent:
		if len(f.events) == 0 {
			return syscall.EAGAIN
		}
		e := f.events[0]
		f.events = f.events[1:]
		if ctx, ok := f.ctxs[e.owner]; ok {
			ctx.reported++
		}
		if _, err := binary.Encode(buf[:c.Out], binary.NativeEndian, &e.resp); err != nil {
			f.t.Errorf("encode event: %v", err)
		}
		return nil
	case *abi.UCMListen:
		if ctx, ok := f.ctxs[body.ID]; ok {
			ctx.listen = true
		}
	case *abi.UCMQuery:
		if c.Cmd == abi.RDMA_USER_CM_CMD_QUERY && body.Option == abi.RDMA_USER_CM_QUERY_ADDR {
			binary.Encode(buf, binary.NativeEndian, &f.addr)
		}
	case *abi.UCMInitQPAttr:
		a := f.qpAttr
		a.QPState = body.QPState
		binary.Encode(buf, binary.NativeEndian, &a)
	}
	if f.script != nil {
		return f.script(f, c)
	}
	return nil
}

func fakePointer(body any) uint64 {
	switch b := body.(type) {
	case *abi.UCMCreateID:
		return b.Response
	case *abi.UCMDestroyID:
		return b.Response
	case *abi.UCMQuery:
		return b.Response
	case *abi.UCMInitQPAttr:
		return b.Response
	case *abi.UCMGetEvent:
		return b.Response
	case *abi.UCMSetOption:
		return b.OptVal
	}
	return 0
}

func (f *fakeKernel) alloc() uint32 {
	if n := len(f.reuse); n > 0 {
		id := f.reuse[0]
		f.reuse = f.reuse[1:]
		return id
	}
	f.nextID++
	return f.nextID
}

func (f *fakeKernel) poll(fn func() bool) error {
	for {
		f.mu.Lock()
		gen, closed := f.gen, f.closed
		f.mu.Unlock()
		if closed {
			return ErrClosed
		}
		if fn() {
			return nil
		}
		f.mu.Lock()
		for f.gen == gen && !f.closed {
			f.cond.Wait()
		}
		f.mu.Unlock()
	}
}

func (f *fakeKernel) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.gen++
	f.cond.Broadcast()
	return nil
}

// queueLocked appends an event for kernel id kid (mu held).
func (f *fakeKernel) queueLocked(kid uint32, typ EventType, status int32, p *abi.UCMConnParam) {
	ctx, ok := f.ctxs[kid]
	if !ok {
		f.t.Errorf("queue %v for unknown id %d", typ, kid)
		return
	}
	e := fakeEvent{owner: kid}
	e.resp.UID, e.resp.ID, e.resp.Event, e.resp.Status = ctx.uid, kid, uint32(typ), uint32(status)
	if p != nil {
		e.resp.SetConnParam(p)
	}
	f.events = append(f.events, e)
	f.gen++
	f.cond.Broadcast()
}

// queue queues an event for kernel id kid.
func (f *fakeKernel) queue(kid uint32, typ EventType, status int32, p *abi.UCMConnParam) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queueLocked(kid, typ, status, p)
}

// queueUD queues an event with UD parameters.
func (f *fakeKernel) queueUD(kid uint32, typ EventType, p *abi.UCMUDParam) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := f.ctxs[kid]
	e := fakeEvent{owner: kid}
	e.resp.UID, e.resp.ID, e.resp.Event = ctx.uid, kid, uint32(typ)
	e.resp.SetUDParam(p)
	f.events = append(f.events, e)
	f.gen++
	f.cond.Broadcast()
}

// connRequest makes a new kernel id for an incoming request on listener
// lkid and queues CONNECT_REQUEST; it returns the new id.
func (f *fakeKernel) connRequest(lkid uint32, p *abi.UCMConnParam) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.ctxs[lkid]
	if !ok || !l.listen {
		f.t.Fatalf("connect request for %d, which does not listen", lkid)
	}
	child := f.alloc()
	f.ctxs[child] = &fakeCtx{ps: l.ps} // uid 0 until ACCEPT sets it
	e := fakeEvent{owner: lkid}
	e.resp.UID, e.resp.ID, e.resp.Event = l.uid, child, uint32(EventConnectRequest)
	if p != nil {
		e.resp.SetConnParam(p)
	}
	f.events = append(f.events, e)
	f.gen++
	f.cond.Broadcast()
	return child
}

// commands returns the recorded commands of type cmd.
func (f *fakeKernel) commands(cmd uint32) []fakeCmd {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCmd
	for _, c := range f.cmds {
		if c.Cmd == cmd {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeKernel) live() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ctxs)
}

func mustAddr(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func (c fakeCmd) String() string { return fmt.Sprintf("%s %+v", abi.UCMCmdString(c.Cmd), c.Body) }
