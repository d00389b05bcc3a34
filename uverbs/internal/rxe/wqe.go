// Copyright 2026 The rdmago Authors.

package rxe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// Offsets of the variable part of the WQEs: SGEs (or inline data) follow the
// fixed struct.
const (
	SendWQEHeader = int(unsafe.Sizeof(abi.RxeSendWQE{})) // 208
	RecvWQEHeader = int(unsafe.Sizeof(abi.RxeRecvWQE{})) // 40
	sgeSize       = int(unsafe.Sizeof(abi.RxeSGE{}))     // 16
	wcSize        = int(unsafe.Sizeof(abi.WC{}))         // 48
)

// Errors of Post. They describe bad input, never a kernel state.
var (
	ErrQueueFull     = errors.New("queue full")
	ErrTooManySGE    = errors.New("more SGEs than the queue was created for")
	ErrInlineTooLong = errors.New("inline data longer than the queue's max_inline_data")
	ErrBadAtomic     = errors.New("atomic needs an 8-byte aligned remote address and a local SGE of at least 8 bytes")
)

// SendWR is a work request as the provider encodes it. Opcode and Flags use
// the kernel's numbers (IB_WR_*, IB_SEND_*); Imm is in host byte order.
type SendWR struct {
	ID         uint64
	Opcode     uint32
	Flags      uint32
	Imm        uint32
	RemoteAddr uint64
	RKey       uint32
	CompareAdd uint64 // atomics; the value for ATOMIC_WRITE
	Swap       uint64
	Length     uint32 // FLUSH: the length to flush
	FlushType  uint8  // FLUSH: enum ib_placement_type
	FlushLevel uint8  // FLUSH: enum ib_selectivity_level
	AHNum      uint32 // UD
	// AV (UD) is the address the WQE carries whole when AHNum is 0: the
	// ABI of kernels whose rxe returns no AH number (Linux 5.10).
	AV         *abi.RxeAV
	RemoteQPN  uint32 // UD
	RemoteQKey uint32 // UD
	SGL        []abi.SGE
	Inline     []byte // with IB_SEND_INLINE: the payload, copied into the WQE
	// BIND_MW: the window (MWRKey, its current rkey), its new rkey, and the
	// MR range and access it gets.
	MW abi.RxeWRMW
	// LOCAL_INV, SEND_WITH_INV: the rkey to invalidate (union ex, host
	// byte order, where Imm goes big-endian).
	InvalidateRKey uint32
}

// SendQueue is the send ring of an rxe QP.
type SendQueue struct {
	Q         *Queue
	MaxSGE    int
	MaxInline int
	UD        bool
}

// Post writes wr into the next slot and publishes it. The caller rings the
// doorbell (one POST_SEND write for any number of Posts).
func (s *SendQueue) Post(wr *SendWR) error {
	q := s.Q
	if q.Full() {
		return ErrQueueFull
	}
	var length uint64
	inline := wr.Flags&abi.IB_SEND_INLINE != 0
	if inline {
		if len(wr.Inline) > s.MaxInline || SendWQEHeader+len(wr.Inline) > q.SlotSize() {
			return fmt.Errorf("%w (%d > %d)", ErrInlineTooLong, len(wr.Inline), s.MaxInline)
		}
		length = uint64(len(wr.Inline))
	} else {
		if len(wr.SGL) > s.MaxSGE || SendWQEHeader+len(wr.SGL)*sgeSize > q.SlotSize() {
			return fmt.Errorf("%w (%d > %d)", ErrTooManySGE, len(wr.SGL), s.MaxSGE)
		}
		for i := range wr.SGL {
			length += uint64(wr.SGL[i].Length)
		}
	}
	switch wr.Opcode {
	case abi.IB_WR_ATOMIC_CMP_AND_SWP, abi.IB_WR_ATOMIC_FETCH_AND_ADD:
		if length < 8 || wr.RemoteAddr&7 != 0 {
			return ErrBadAtomic
		}
	case abi.IB_WR_ATOMIC_WRITE:
		if wr.RemoteAddr&7 != 0 {
			return ErrBadAtomic
		}
	}
	if length > 1<<31 {
		return fmt.Errorf("rxe: message of %d bytes exceeds 2 GiB", length)
	}

	slot := q.ProducerSlot()
	w := (*abi.RxeSendWQE)(slot)
	*w = abi.RxeSendWQE{} // the kernel reads status/state/mask fields too
	w.WR.WrID = wr.ID
	w.WR.Opcode = wr.Opcode
	w.WR.SendFlags = wr.Flags
	if wr.Opcode == abi.IB_WR_LOCAL_INV || wr.Opcode == abi.IB_WR_SEND_WITH_INV {
		w.WR.ImmData = wr.InvalidateRKey
	} else {
		binary.BigEndian.PutUint32((*[4]byte)(unsafe.Pointer(&w.WR.ImmData))[:], wr.Imm)
	}
	u := unsafe.Pointer(&w.WR.WR)
	iova := wr.RemoteAddr
	switch wr.Opcode {
	case abi.IB_WR_RDMA_WRITE, abi.IB_WR_RDMA_WRITE_WITH_IMM, abi.IB_WR_RDMA_READ, abi.IB_WR_ATOMIC_WRITE:
		r := (*abi.RxeWRRdma)(u)
		r.RemoteAddr, r.RKey = wr.RemoteAddr, wr.RKey
	case abi.IB_WR_ATOMIC_CMP_AND_SWP, abi.IB_WR_ATOMIC_FETCH_AND_ADD:
		a := (*abi.RxeWRAtomic)(u)
		a.RemoteAddr, a.CompareAdd, a.Swap, a.RKey = wr.RemoteAddr, wr.CompareAdd, wr.Swap, wr.RKey
	case abi.IB_WR_FLUSH:
		f := (*abi.RxeWRFlush)(u)
		f.RemoteAddr, f.Length, f.RKey, f.Type, f.Level = wr.RemoteAddr, wr.Length, wr.RKey, wr.FlushType, wr.FlushLevel
		length = uint64(wr.Length)
	case abi.IB_WR_BIND_MW:
		if length != 0 {
			return errors.New("rxe: BIND_MW takes no SGE")
		}
		*(*abi.RxeWRMW)(u) = wr.MW
		iova = 0
	case abi.IB_WR_LOCAL_INV:
		iova = 0
	case abi.IB_WR_SEND, abi.IB_WR_SEND_WITH_IMM, abi.IB_WR_SEND_WITH_INV:
		iova = 0
		if s.UD {
			d := (*abi.RxeWRUD)(u)
			d.RemoteQPN, d.RemoteQkey, d.AHNum = wr.RemoteQPN, wr.RemoteQKey, wr.AHNum
			if wr.AHNum == 0 && wr.AV != nil {
				d.AV = *wr.AV
			}
		}
	}
	w.IOVA = iova
	tail := unsafe.Add(slot, SendWQEHeader)
	switch {
	case wr.Opcode == abi.IB_WR_ATOMIC_WRITE:
		// The 8-byte value travels in the WQE (dma.atomic_wr), not in an SGE.
		binary.NativeEndian.PutUint64(unsafe.Slice((*byte)(tail), 8), wr.CompareAdd)
		length = 8
	case inline:
		copy(unsafe.Slice((*byte)(tail), len(wr.Inline)), wr.Inline)
	case len(wr.SGL) == 1: // the common case, without memmove's call
		*(*abi.SGE)(tail) = wr.SGL[0]
		w.DMA.NumSGE = 1
	case len(wr.SGL) > 1:
		copy(unsafe.Slice((*abi.SGE)(tail), len(wr.SGL)), wr.SGL)
		w.DMA.NumSGE = uint32(len(wr.SGL))
	}
	w.DMA.Length = uint32(length)
	w.DMA.Resid = uint32(length)
	q.Produce()
	return nil
}

// RecvQueue is the receive ring of an rxe QP or SRQ.
type RecvQueue struct {
	Q      *Queue
	MaxSGE int
}

// Post writes one receive WQE and publishes it; the kernel picks it up without
// a system call.
func (r *RecvQueue) Post(id uint64, sgl []abi.SGE) error {
	q := r.Q
	if q.Full() {
		return ErrQueueFull
	}
	if len(sgl) > r.MaxSGE || RecvWQEHeader+len(sgl)*sgeSize > q.SlotSize() {
		return fmt.Errorf("%w (%d > %d)", ErrTooManySGE, len(sgl), r.MaxSGE)
	}
	var length uint64
	for i := range sgl {
		length += uint64(sgl[i].Length)
	}
	slot := q.ProducerSlot()
	w := (*abi.RxeRecvWQE)(slot)
	*w = abi.RxeRecvWQE{WrID: id}
	copy(unsafe.Slice((*abi.SGE)(unsafe.Add(slot, RecvWQEHeader)), len(sgl)), sgl)
	w.DMA.Length = uint32(length)
	w.DMA.Resid = uint32(length)
	w.DMA.NumSGE = uint32(len(sgl))
	q.Produce()
	return nil
}

// CQ is the completion ring of an rxe CQ; the kernel produces.
type CQ struct {
	Q *Queue
}

// CheckCQ reports whether q's slots can hold a work completion.
func CheckCQ(q *Queue) error {
	if q.SlotSize() < wcSize {
		return fmt.Errorf("%w: CQ slots of %d bytes cannot hold a %d-byte completion", ErrBadQueue, q.SlotSize(), wcSize)
	}
	return nil
}

// Poll copies the oldest completion into *wc and frees its slot. It returns
// false when the CQ is empty.
func (c *CQ) Poll(wc *abi.WC) bool {
	q := c.Q
	if q.Empty() {
		return false
	}
	*wc = *(*abi.WC)(q.ConsumerSlot())
	q.Consume()
	return true
}
