// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"fmt"
	"syscall"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs/internal/rxe"
)

// SRQ is a shared receive queue (struct ibv_srq): one receive ring any number
// of QPs of its PD can take receives from. Its ring is mapped, so PostRecv
// makes no system call. One goroutine may post at a time. The caller must
// Close it after the QPs using it. Once the SRQ or its Context is closed,
// every method but the accessors fails with ErrClosed (the kernel reuses the
// handle).
type SRQ struct {
	ctx    *Context
	pd     *PD
	handle uint32
	num    uint32
	uh     uint64
	mem    []byte
	rq     rxe.RecvQueue
	maxWR  int
	maxSGE int

	handleLock          // also held by modify
	gate       dataGate // PostRecv inside; Close shuts it before unmapping the ring
}

// SRQOptions are the sizes of a shared receive queue (struct
// ibv_srq_init_attr).
type SRQOptions struct {
	// MaxWR is how many receive requests the SRQ must hold at least (>= 1).
	// The kernel may enlarge it: rxe rounds the ring up to a power of two
	// less one (128 becomes 255 on Linux 6.12). SRQ.MaxWR (or SRQ.Query)
	// gives the real size.
	MaxWR int
	// MaxSGE is how many SGEs a receive request may have (>= 1); SRQ.MaxSGE
	// gives what the kernel granted.
	MaxSGE int
	// Limit, when > 0, arms the SRQ: when fewer than Limit receives remain,
	// an EventSRQLimitReached async event fires (once; re-arm with
	// SetLimit). 0 leaves it unarmed.
	Limit int
}

// CreateSRQ is ibv_create_srq: a shared receive queue of the sizes in opts
// (see SRQOptions: the kernel may make it larger). The caller must Close it
// after the QPs that use it, and before the PD.
func (pd *PD) CreateSRQ(opts SRQOptions) (*SRQ, error) {
	c := pd.ctx
	maxWR, maxSGE, limit := opts.MaxWR, opts.MaxSGE, opts.Limit
	if maxWR < 1 || maxSGE < 1 || limit < 0 {
		return nil, fmt.Errorf("create srq: SRQOptions.MaxWR %d, MaxSGE %d, Limit %d: %w", maxWR, maxSGE, limit, syscall.EINVAL)
	}
	if err := pd.rlockOpen("create srq: pd"); err != nil {
		return nil, err
	}
	defer pd.mu.RUnlock()
	s := &SRQ{ctx: c, pd: pd}
	uh, err := c.track(kindSRQ, s)
	if err != nil {
		return nil, fmt.Errorf("create srq: %w", err)
	}
	s.uh = uh
	var resp struct {
		core abi.CreateSRQResp
		drv  abi.RxeCreateSRQResp // provider: the ring's mmap cookie
	}
	req := abi.CreateSRQ{Response: abi.PtrU64(unsafe.Pointer(&resp)), UserHandle: uh, PDHandle: pd.handle,
		MaxWR: uint32(maxWR), MaxSGE: uint32(maxSGE), SRQLimit: uint32(limit)}
	if err := c.write(abi.IB_USER_VERBS_CMD_CREATE_SRQ, abi.Bytes(&req), unsafe.Pointer(&resp), unsafe.Sizeof(resp)); err != nil {
		c.forget(kindSRQ, s, uh)
		return nil, fmt.Errorf("create srq of %d×%d: %w", maxWR, maxSGE, err)
	}
	s.handle, s.num = resp.core.SRQHandle, resp.core.SRQN
	if s.num == 0 {
		s.num = resp.drv.SRQNum // rxe reports the number in its own response
	}
	s.maxWR, s.maxSGE = int(resp.core.MaxWR), int(resp.core.MaxSGE)
	if err := s.mapRing(resp.drv.MI); err != nil {
		s.destroy()
		c.forget(kindSRQ, s, uh)
		return nil, fmt.Errorf("create srq: %w", err)
	}
	return s, nil
}

func (s *SRQ) mapRing(mi abi.MMInfo) error {
	mem, err := s.ctx.mapQueue(mi)
	if err != nil {
		return fmt.Errorf("map srq ring: %w", err)
	}
	q, err := rxe.NewQueue(mem)
	if err != nil {
		s.ctx.res.unmap(mem)
		return err
	}
	s.mem, s.rq = mem, rxe.RecvQueue{Q: q, MaxSGE: s.maxSGE}
	return nil
}

// Num is the SRQ number (srq_num).
func (s *SRQ) Num() uint32 { return s.num }

// MaxWR and MaxSGE are the capacities the kernel granted.
func (s *SRQ) MaxWR() int { return s.maxWR }

// MaxSGE is the largest SGE list a receive may have.
func (s *SRQ) MaxSGE() int { return s.maxSGE }

// PostRecv is ibv_post_srq_recv. Errors are as for QP.PostRecv, and so is a
// concurrent Close.
func (s *SRQ) PostRecv(wrs ...RecvWR) error {
	if !s.gate.enter() {
		return &PostError{Op: "post srq recv", Err: ErrClosed}
	}
	if s.rq.Q == nil {
		s.gate.exit()
		return &PostError{Op: "post srq recv", Err: ErrClosed}
	}
	for i := range wrs {
		if err := s.rq.Post(wrs[i].ID, sgl(wrs[i].SGL)); err != nil {
			s.gate.exit()
			return &PostError{Op: "post srq recv", Index: i, Err: postErr(err)}
		}
	}
	s.gate.exit()
	return nil
}

// SetLimit is ibv_modify_srq with IBV_SRQ_LIMIT: it arms the limit event.
func (s *SRQ) SetLimit(limit int) error {
	return s.modify(abi.IB_SRQ_LIMIT, 0, limit)
}

// Resize is ibv_modify_srq with IBV_SRQ_MAX_WR: the kernel moves the ring
// (keeping posted receives) and the SRQ maps the new one. Do not post
// concurrently.
func (s *SRQ) Resize(maxWR int) error {
	return s.modify(abi.IB_SRQ_MAX_WR, maxWR, 0)
}

func (s *SRQ) modify(mask uint32, maxWR, limit int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("modify srq: %w", ErrClosed)
	}
	mi := new(abi.MMInfo)
	var req struct {
		core abi.ModifySRQ
		drv  abi.RxeModifySRQCmd // provider: where the kernel reports a moved ring
	}
	req.core = abi.ModifySRQ{SRQHandle: s.handle, AttrMask: mask, MaxWR: uint32(maxWR), SRQLimit: uint32(limit)}
	req.drv.MmapInfoAddr = abi.PtrU64(unsafe.Pointer(mi))
	// mi is written by the kernel through the driver data: pin it like a response.
	if err := s.ctx.write(abi.IB_USER_VERBS_CMD_MODIFY_SRQ, abi.Bytes(&req), unsafe.Pointer(mi), 0); err != nil {
		return fmt.Errorf("modify srq: %w", err)
	}
	if mask&abi.IB_SRQ_MAX_WR != 0 {
		old := s.mem
		if err := s.mapRing(*mi); err != nil {
			return fmt.Errorf("modify srq: %w", err)
		}
		s.ctx.res.unmap(old)
		s.maxWR = maxWR
	}
	return nil
}

// Query is ibv_query_srq: the SRQ's capacities and current limit.
func (s *SRQ) Query() (maxWR, maxSGE, limit int, err error) {
	if err := s.rlockOpen("query srq"); err != nil {
		return 0, 0, 0, err
	}
	defer s.mu.RUnlock()
	resp := new(abi.QuerySRQResp)
	req := abi.QuerySRQ{Response: abi.PtrU64(unsafe.Pointer(resp)), SRQHandle: s.handle}
	if err := s.ctx.write(abi.IB_USER_VERBS_CMD_QUERY_SRQ, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return 0, 0, 0, fmt.Errorf("query srq: %w", err)
	}
	return int(resp.MaxWR), int(resp.MaxSGE), int(resp.SRQLimit), nil
}

func (s *SRQ) destroy() error {
	resp := new(abi.DestroySRQResp)
	req := abi.DestroySRQ{Response: abi.PtrU64(unsafe.Pointer(resp)), SRQHandle: s.handle}
	return s.ctx.write(abi.IB_USER_VERBS_CMD_DESTROY_SRQ, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp))
}

// Close is ibv_destroy_srq; it fails with EBUSY while QPs use the SRQ. It is
// idempotent.
func (s *SRQ) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if err := s.destroy(); err != nil {
		return fmt.Errorf("destroy srq: %w", err)
	}
	s.closed = true
	s.gate.shut() // no PostRecv writes the ring from here on
	err := s.ctx.res.unmap(s.mem)
	s.mem, s.rq = nil, rxe.RecvQueue{}
	s.ctx.forget(kindSRQ, s, s.uh)
	if err != nil {
		return fmt.Errorf("destroy srq: unmap ring: %w", err)
	}
	return nil
}

// abandon forgets the ring without system calls (see QP.abandon).
func (s *SRQ) abandon() {
	s.gate.shut()
	s.mu.Lock()
	s.closed = true
	s.mem, s.rq = nil, rxe.RecvQueue{}
	s.mu.Unlock()
}

func (s *SRQ) dataGate() *dataGate { return &s.gate }
