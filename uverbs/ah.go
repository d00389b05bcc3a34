// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// AH is an address handle (struct ibv_ah): the destination of UD sends. The
// caller must Close it after the last send using it completed. Once it (or
// its Context) is closed, PostSend refuses it with ErrClosed.
type AH struct {
	pd     *PD
	handle uint32
	num    uint32 // rxe's AH number, put in UD send WQEs
	uh     uint64
	attr   AHAttr
	mu     sync.Mutex
	closed atomic.Bool // set under mu; read by PostSend without it
}

// CreateAH is ibv_create_ah. For RoCE set IsGlobal and GRH (DGID the peer's
// GID, SGIDIndex the local GID to send from). Needs Linux 5.10+, whose rxe
// returns an AH number (older kernels took the whole address in every WQE).
func (pd *PD) CreateAH(attr AHAttr) (*AH, error) {
	c := pd.ctx
	if attr.Port == 0 {
		attr.Port = 1
	}
	if err := pd.rlockOpen("create ah: pd"); err != nil {
		return nil, err
	}
	defer pd.mu.RUnlock()
	ah := &AH{pd: pd, attr: attr}
	uh, err := c.track(kindAH, ah)
	if err != nil {
		return nil, fmt.Errorf("create ah: %w", err)
	}
	ah.uh = uh
	var resp struct {
		core abi.CreateAHResp
		drv  abi.RxeCreateAHResp // provider: rxe's AH number
	}
	req := abi.CreateAH{
		Response: abi.PtrU64(unsafe.Pointer(&resp)), UserHandle: uh, PDHandle: pd.handle, Attr: attr.toABI(),
	}
	if err := c.write(abi.IB_USER_VERBS_CMD_CREATE_AH, abi.Bytes(&req), unsafe.Pointer(&resp), unsafe.Sizeof(resp)); err != nil {
		c.forget(kindAH, ah, uh)
		return nil, fmt.Errorf("create ah to %v: %w", attr.GRH.DGID, err)
	}
	ah.handle, ah.num = resp.core.AHHandle, resp.drv.AHNum
	if ah.num == 0 {
		ah.destroy()
		c.forget(kindAH, ah, uh)
		return nil, fmt.Errorf("create ah: the kernel's rxe returned no AH number (Linux 5.10+ needed): %w", ErrNotSupported)
	}
	return ah, nil
}

// Attr is the address the AH was created with.
func (ah *AH) Attr() AHAttr { return ah.attr }

func (ah *AH) destroy() error {
	req := abi.DestroyAH{AHHandle: ah.handle}
	return ah.pd.ctx.write(abi.IB_USER_VERBS_CMD_DESTROY_AH, abi.Bytes(&req), nil, 0)
}

// Close is ibv_destroy_ah. It is idempotent.
func (ah *AH) Close() error {
	ah.mu.Lock()
	defer ah.mu.Unlock()
	if ah.closed.Load() {
		return nil
	}
	if err := ah.destroy(); err != nil {
		return fmt.Errorf("destroy ah: %w", err)
	}
	ah.closed.Store(true)
	ah.pd.ctx.forget(kindAH, ah, ah.uh)
	return nil
}

// abandon marks the AH closed without a system call (see QP.abandon).
func (ah *AH) abandon() {
	ah.mu.Lock()
	ah.closed.Store(true)
	ah.mu.Unlock()
}
