// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs/internal/rxe"
)

// MWType is enum ibv_mw_type.
type MWType uint8

// Memory window types.
const (
	// MWType1 windows are bound with QP.BindMW (ibv_bind_mw) and stay
	// until bound again or deallocated; they cannot be invalidated.
	MWType1 MWType = 1 // IB_MW_TYPE_1
	// MWType2 windows are bound by a WRBindMW work request on a QP, and
	// freed by WRLocalInv or by a peer's WRSendWithInv naming their rkey.
	MWType2 MWType = 2 // IB_MW_TYPE_2
)

func (t MWType) String() string {
	switch t {
	case MWType1:
		return "IBV_MW_TYPE_1"
	case MWType2:
		return "IBV_MW_TYPE_2"
	}
	return fmt.Sprintf("MWType(%d)", uint8(t))
}

// MW is a memory window (struct ibv_mw): an rkey for a sub-range of an MR
// registered with AccessMWBind, with access rights of its own, that can be
// re-bound or revoked without deregistering the MR. Soft-RoCE has them since
// Linux 5.12 (both types). The caller must Close it before the MR it is
// bound to (rxe refuses to deregister an MR with windows bound) and before
// its PD.
type MW struct {
	pd     *PD
	handle uint32
	typ    MWType
	rkey   atomic.Uint32
	uh     uint64
	mu     sync.Mutex
	closed bool
}

// AllocMW is ibv_alloc_mw (ALLOC_MW): a window of type typ on the PD,
// bound to nothing. The caller must Close it.
func (pd *PD) AllocMW(typ MWType) (*MW, error) {
	if typ != MWType1 && typ != MWType2 {
		return nil, fmt.Errorf("alloc mw: type %d: want MWType1 or MWType2: %w", typ, syscall.EINVAL)
	}
	if err := pd.rlockOpen("alloc mw: pd"); err != nil {
		return nil, err
	}
	defer pd.mu.RUnlock()
	resp := new(abi.AllocMWResp)
	req := abi.AllocMW{Response: abi.PtrU64(unsafe.Pointer(resp)), PDHandle: pd.handle, MWType: uint8(typ)}
	if err := pd.ctx.write(abi.IB_USER_VERBS_CMD_ALLOC_MW, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		if errors.Is(err, syscall.EOPNOTSUPP) {
			// The device has no ALLOC_MW (rxe before Linux 5.12).
			return nil, fmt.Errorf("alloc mw (%v): the device has no memory windows (rxe has them since Linux 5.12): %w: %w", typ, ErrNotSupported, err)
		}
		return nil, fmt.Errorf("alloc mw (%v): %w", typ, err)
	}
	mw := &MW{pd: pd, handle: resp.MWHandle, typ: typ}
	mw.rkey.Store(resp.RKey)
	uh, err := pd.ctx.track(kindMW, mw)
	if err != nil {
		mw.dealloc()
		return nil, fmt.Errorf("alloc mw: %w", err)
	}
	mw.uh = uh
	return mw, nil
}

// Type is the window's type.
func (mw *MW) Type() MWType { return mw.typ }

// RKey is the window's rkey: the one of its last bind posted (a bind whose
// completion fails leaves the window with its previous rkey, as in
// rdma-core: the caller must then SetRKey it back).
func (mw *MW) RKey() uint32 { return mw.rkey.Load() }

// SetRKey sets the rkey RKey reports, to undo a bind that failed.
func (mw *MW) SetRKey(rkey uint32) { mw.rkey.Store(rkey) }

// IncRKey is ibv_inc_rkey: rkey with its low 8 bits, the key the consumer
// owns, incremented. Each bind must give a window a new rkey.
func IncRKey(rkey uint32) uint32 { return rkey&^0xff | (rkey+1)&0xff }

func (mw *MW) dealloc() error {
	req := abi.DeallocMW{MWHandle: mw.handle}
	return mw.pd.ctx.write(abi.IB_USER_VERBS_CMD_DEALLOC_MW, abi.Bytes(&req), nil, 0)
}

// Close is ibv_dealloc_mw (DEALLOC_MW). It is idempotent.
func (mw *MW) Close() error {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	if mw.closed {
		return nil
	}
	if err := mw.dealloc(); err != nil {
		return fmt.Errorf("dealloc mw: %w", err)
	}
	mw.closed = true
	mw.pd.ctx.forget(kindMW, mw, mw.uh)
	return nil
}

func (mw *MW) abandon() {
	mw.mu.Lock()
	mw.closed = true
	mw.mu.Unlock()
}

// MWBindInfo is struct ibv_mw_bind_info: the MR range a window opens and
// what peers may do through it (AccessRemoteRead, AccessRemoteWrite,
// AccessRemoteAtomic; write and atomic need an MR with AccessLocalWrite).
// The MR must have AccessMWBind. Addr is a virtual address inside the MR
// (MR.Addr() + offset); zero-based windows are not supported (rxe refuses
// them).
type MWBindInfo struct {
	MR     *MR
	Addr   uint64
	Length uint64
	Access AccessFlags
}

// MWBindWR is what a WRBindMW work request binds: MW to Info under the new
// rkey RKey (IncRKey(MW.RKey()) is the usual choice; only its low 8 bits
// are the caller's).
type MWBindWR struct {
	MW   *MW
	RKey uint32
	Info MWBindInfo
}

// BindMW is ibv_bind_mw for a type 1 window: it posts a BIND_MW work
// request on qp (RC or UC, in RTS, on the window's PD) giving mw the next
// rkey and returns it; mw.RKey reports it from now on. The completion
// (WCBindMW, when flags has SendSignaled or the QP signals all) carries
// id. Type 2 windows are bound with a WRBindMW SendWR instead.
func (qp *QP) BindMW(mw *MW, info MWBindInfo, id uint64, flags SendFlags) (uint32, error) {
	if mw.typ != MWType1 {
		return 0, fmt.Errorf("bind mw: %v windows are bound with a WRBindMW work request: %w", mw.typ, syscall.EINVAL)
	}
	rkey := IncRKey(mw.RKey())
	if err := qp.PostSend(SendWR{ID: id, Opcode: WRBindMW, Flags: flags, Bind: &MWBindWR{MW: mw, RKey: rkey, Info: info}}); err != nil {
		return 0, fmt.Errorf("bind mw: %w", err)
	}
	return rkey, nil
}

// mwWR checks and encodes WRBindMW, WRLocalInv and WRSendWithInv
// (rdma-core's rxe convert_send_wr and validate_send_wr).
func (qp *QP) mwWR(wr *SendWR, r *rxe.SendWR) error {
	if qp.typ != QPTypeRC && qp.typ != QPTypeUC {
		return fmt.Errorf("%v on a %v QP: RC and UC only: %w", wr.Opcode, qp.typ, syscall.EINVAL)
	}
	switch wr.Opcode {
	case WRLocalInv, WRSendWithInv:
		r.InvalidateRKey = wr.InvalidateRKey
		return nil
	}
	b := wr.Bind
	if b == nil || b.MW == nil {
		return fmt.Errorf("%v needs SendWR.Bind with the window: %w", wr.Opcode, syscall.EINVAL)
	}
	if len(wr.SGL) != 0 || wr.Imm != 0 {
		return fmt.Errorf("%v takes no SGL and no immediate: %w", wr.Opcode, syscall.EINVAL)
	}
	if b.Info.Access&AccessZeroBased != 0 {
		return fmt.Errorf("%v: zero-based windows: %w", wr.Opcode, ErrNotSupported)
	}
	r.MW.MWRKey, r.MW.RKey = b.MW.RKey(), b.RKey
	r.MW.Addr, r.MW.Length, r.MW.Access = b.Info.Addr, b.Info.Length, uint32(b.Info.Access)
	if b.Info.MR != nil {
		r.MW.MRLKey = b.Info.MR.lkey
	}
	b.MW.rkey.Store(b.RKey)
	return nil
}

// InvalidatedRKey returns the rkey a peer's WRSendWithInv invalidated at
// this receive, and whether there was one (IBV_WC_WITH_INV,
// wc.invalidated_rkey).
func (wc *WC) InvalidatedRKey() (uint32, bool) {
	if wc.Flags&WCWithInv == 0 {
		return 0, false
	}
	return wc.Imm, true
}
