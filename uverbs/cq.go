// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"context"
	"encoding/binary"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/sys"
	"github.com/rdmago/rdmago/uverbs/internal/rxe"
)

// CQ is a completion queue (struct ibv_cq) whose ring is mapped from the
// kernel: Poll reads completions with no system call. One goroutine at a time
// may Poll; Arm, Resize and Close are safe anywhere (Close waits for a Poll
// reading the ring, then unmaps it). The caller must Close it
// after the QPs that use it. Once the CQ or its Context is closed, Arm and
// Resize fail with ErrClosed (the kernel reuses the handle), PollN too, and
// Poll finds nothing.
type CQ struct {
	ctx     *Context
	handle  uint32
	uh      uint64
	cqe     int
	channel *CompChannel
	mem     []byte
	ring    rxe.CQ

	handleLock          // also held by Resize
	gate       dataGate // Poll inside; Close shuts it before unmapping the ring

	compEvents uint32 // events delivered through the channel
}

// CQOptions are optional CreateCQ settings.
type CQOptions struct {
	// Channel receives an event when the armed CQ gets a completion.
	Channel *CompChannel
	// CompVector picks the completion vector (0 .. NumCompVectors-1).
	CompVector int
}

// CreateCQ is ibv_create_cq: a CQ with room for at least cqe completions.
// The kernel may round cqe up; CQE reports the result.
func (c *Context) CreateCQ(cqe int, opts *CQOptions) (*CQ, error) {
	if cqe < 1 {
		return nil, fmt.Errorf("create cq: %d entries: %w", cqe, syscall.EINVAL)
	}
	var o CQOptions
	if opts != nil {
		o = *opts
	}
	if o.Channel != nil {
		if o.Channel.ctx != c {
			return nil, fmt.Errorf("create cq: the completion channel belongs to another Context: %w", syscall.EINVAL)
		}
		// The channel's fd number goes into the command: hold it open.
		if err := o.Channel.rlockOpen("create cq: completion channel"); err != nil {
			return nil, err
		}
		defer o.Channel.mu.RUnlock()
	}
	cq := &CQ{ctx: c, channel: o.Channel}
	uh, err := c.track(kindCQ, cq)
	if err != nil {
		return nil, fmt.Errorf("create cq: %w", err)
	}
	cq.uh = uh
	chfd := int32(-1)
	if o.Channel != nil {
		chfd = int32(o.Channel.fd)
	}
	var resp struct {
		core abi.CreateCQResp
		drv  abi.RxeCreateCQResp // provider: rxe returns the ring's mmap cookie
	}
	req := abi.CreateCQ{
		Response: abi.PtrU64(unsafe.Pointer(&resp)), UserHandle: uh, CQE: uint32(cqe),
		CompVector: uint32(o.CompVector), CompChannel: chfd,
	}
	if err := c.write(abi.IB_USER_VERBS_CMD_CREATE_CQ, abi.Bytes(&req), unsafe.Pointer(&resp), unsafe.Sizeof(resp)); err != nil {
		c.forget(kindCQ, cq, uh)
		return nil, fmt.Errorf("create cq of %d entries: %w", cqe, err)
	}
	cq.handle, cq.cqe = resp.core.CQHandle, int(resp.core.CQE)
	if err := cq.mapRing(resp.drv.MI); err != nil {
		cq.destroy()
		c.forget(kindCQ, cq, uh)
		return nil, fmt.Errorf("create cq: %w", err)
	}
	return cq, nil
}

// mapRing maps the CQ ring described by mi (each cookie can be mapped once).
func (cq *CQ) mapRing(mi abi.MMInfo) error {
	mem, err := cq.ctx.mapQueue(mi)
	if err != nil {
		return fmt.Errorf("map cq ring: %w", err)
	}
	q, err := rxe.NewQueue(mem)
	if err == nil {
		err = rxe.CheckCQ(q)
	}
	if err != nil {
		cq.ctx.res.unmap(mem)
		return err
	}
	cq.mem, cq.ring = mem, rxe.CQ{Q: q}
	return nil
}

// mapQueue maps a queue the kernel described with an mmap cookie.
func (c *Context) mapQueue(mi abi.MMInfo) ([]byte, error) {
	if mi.Size == 0 {
		return nil, fmt.Errorf("empty queue mapping: %w", syscall.EINVAL)
	}
	c.cmdMu.RLock()
	defer c.cmdMu.RUnlock()
	if c.closed {
		return nil, ErrClosed
	}
	mem, err := sys.MmapShared(c.fd, int64(mi.Offset), int(mi.Size))
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes at cookie %#x: %w", mi.Size, mi.Offset, err)
	}
	c.res.addMap(mem)
	return mem, nil
}

// Context is the Context the CQ was created on.
func (cq *CQ) Context() *Context { return cq.ctx }

// CQE is the number of completions the CQ holds, as the kernel sized it.
func (cq *CQ) CQE() int { return cq.cqe }

// Poll is ibv_poll_cq: it copies up to len(wcs) completions, oldest first,
// and returns how many. It reads the mapped ring only: no system call and no
// allocation. Zero means the CQ is empty (or closed).
func (cq *CQ) Poll(wcs []WC) int {
	if !cq.gate.enter() { // closed
		return 0
	}
	if cq.ring.Q == nil {
		cq.gate.exit()
		return 0
	}
	n := 0
	for n < len(wcs) {
		wc := &wcs[n]
		if !cq.ring.Poll((*abi.WC)(unsafe.Pointer(wc))) {
			break
		}
		if wc.Flags&WCWithImm != 0 {
			wc.Imm = binary.BigEndian.Uint32((*[4]byte)(unsafe.Pointer(&wc.Imm))[:])
		}
		n++
	}
	cq.gate.exit()
	return n
}

// gone reports whether the CQ has no ring to poll (it is closed).
func (cq *CQ) gone() bool {
	if !cq.gate.enter() {
		return true
	}
	gone := cq.ring.Q == nil
	cq.gate.exit()
	return gone
}

// Ready reports whether the CQ's ring holds a completion that Poll would
// return, without taking it: one load of each ring index, no system call.
// It is false for a closed CQ. (A WaitQuiet caller's quiet asks it; C has
// no counterpart: ibv_poll_cq would take the completion.)
func (cq *CQ) Ready() bool {
	if !cq.gate.enter() {
		return false
	}
	ready := cq.ring.Q != nil && !cq.ring.Q.Empty()
	cq.gate.exit()
	return ready
}

// PollN polls until it has n completions in wcs[:n] or ctx is done, yielding
// the processor between empty polls. It is the helper for tests and teardown;
// a latency-sensitive loop calls Poll itself, and a thread-friendly one waits
// on a CompChannel.
func (cq *CQ) PollN(ctx context.Context, wcs []WC, n int) (int, error) {
	if n > len(wcs) {
		n = len(wcs)
	}
	got := 0
	for spins := 0; got < n; spins++ {
		k := cq.Poll(wcs[got:n])
		got += k
		if got == n {
			break
		}
		if k == 0 {
			if cq.gone() {
				return got, fmt.Errorf("poll cq: %d of %d completions: %w", got, n, ErrClosed)
			}
			if err := ctx.Err(); err != nil {
				return got, fmt.Errorf("poll cq: %d of %d completions: %w", got, n, err)
			}
			if spins < 100 {
				continue
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	return got, nil
}

// Arm is ibv_req_notify_cq: the next completion (or, with solicitedOnly, the
// next solicited one or error) makes the kernel send one event to the CQ's
// completion channel. Events are one-shot: re-arm after each, then poll
// again, since completions that arrived before arming raise no event.
func (cq *CQ) Arm(solicitedOnly bool) error {
	if err := cq.rlockOpen("req notify cq"); err != nil {
		return err
	}
	defer cq.mu.RUnlock()
	req := abi.ReqNotifyCQ{CQHandle: cq.handle}
	if solicitedOnly {
		req.SolicitedOnly = 1
	}
	// A raw write: called before every sleep on the channel, it would
	// otherwise wake sysmon each time (see sys.RawRead).
	if err := cq.ctx.rawWrite(abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ, abi.Bytes(&req)); err != nil {
		return fmt.Errorf("req notify cq: %w", err)
	}
	return nil
}

// Resize is ibv_resize_cq: the kernel moves the ring (keeping unpolled
// completions) and the CQ maps the new one. Do not Poll concurrently.
func (cq *CQ) Resize(cqe int) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return fmt.Errorf("resize cq to %d: %w", cqe, ErrClosed)
	}
	var resp struct {
		core abi.ResizeCQResp
		drv  abi.RxeResizeCQResp
	}
	req := abi.ResizeCQ{Response: abi.PtrU64(unsafe.Pointer(&resp)), CQHandle: cq.handle, CQE: uint32(cqe)}
	if err := cq.ctx.write(abi.IB_USER_VERBS_CMD_RESIZE_CQ, abi.Bytes(&req), unsafe.Pointer(&resp), unsafe.Sizeof(resp)); err != nil {
		return fmt.Errorf("resize cq to %d: %w", cqe, err)
	}
	old := cq.mem
	if err := cq.mapRing(resp.drv.MI); err != nil {
		return fmt.Errorf("resize cq: %w", err)
	}
	cq.cqe = int(resp.core.CQE)
	if err := cq.ctx.res.unmap(old); err != nil {
		return fmt.Errorf("resize cq: unmap old ring: %w", err)
	}
	return nil
}

func (cq *CQ) destroy() (abi.DestroyCQResp, error) {
	resp := new(abi.DestroyCQResp)
	req := abi.DestroyCQ{Response: abi.PtrU64(unsafe.Pointer(resp)), CQHandle: cq.handle}
	err := cq.ctx.write(abi.IB_USER_VERBS_CMD_DESTROY_CQ, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp))
	return *resp, err
}

// Close is ibv_destroy_cq; it fails with EBUSY while a QP or SRQ uses the CQ.
// A Poll running meanwhile finishes before the ring is unmapped; later ones
// find nothing. It is idempotent.
func (cq *CQ) Close() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return nil
	}
	if _, err := cq.destroy(); err != nil {
		return fmt.Errorf("destroy cq: %w", err)
	}
	cq.closed = true
	cq.gate.shut() // no Poll reads the ring from here on
	err := cq.ctx.res.unmap(cq.mem)
	cq.mem, cq.ring = nil, rxe.CQ{}
	cq.ctx.forget(kindCQ, cq, cq.uh)
	if err != nil {
		return fmt.Errorf("destroy cq: unmap ring: %w", err)
	}
	return nil
}

// abandon forgets the ring without system calls (see QP.abandon).
func (cq *CQ) abandon() {
	cq.gate.shut()
	cq.mu.Lock()
	cq.closed = true
	cq.mem, cq.ring = nil, rxe.CQ{}
	cq.mu.Unlock()
}

func (cq *CQ) dataGate() *dataGate { return &cq.gate }
