// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs/internal/rxe"
)

// SGE is struct ibv_sge: a piece of registered memory (MR.SGE builds one).
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// sgl views an SGE list as the ABI's ib_sge list (same layout, checked by a
// test) without copying.
func sgl(s []SGE) []abi.SGE {
	return *(*[]abi.SGE)(unsafe.Pointer(&s)) // no length checks: s is a slice already
}

// SendWR is struct ibv_send_wr without the list link: one send work request.
type SendWR struct {
	ID     uint64 // returned in the completion
	Opcode WROpcode
	Flags  SendFlags
	SGL    []SGE  // local memory to send from (or, for RDMA READ and atomics, to land in)
	Inline []byte // with SendInline: payload copied into the WQE; SGL is ignored
	Imm    uint32 // SendWithImm, RDMAWriteWithImm: immediate data, host byte order

	// RDMA READ/WRITE, atomics, ATOMIC_WRITE, FLUSH: the peer's memory.
	RemoteAddr uint64
	RKey       uint32

	// Atomics: CmpAndSwp compares with CompareAdd and swaps in Swap;
	// FetchAndAdd adds CompareAdd; AtomicWrite writes CompareAdd. Both are
	// host byte order here. The target is one uint64 at RemoteAddr, which
	// must be 8-byte aligned (PostSend refuses a misaligned one, as
	// rdma-core's rxe provider does), in memory registered with
	// AccessRemoteAtomic; the responder operates on it in its own byte
	// order (binary.NativeEndian on the peer). CmpAndSwp and FetchAndAdd
	// return the value the target held before, 8 bytes in this host's
	// byte order (read them with binary.NativeEndian), into the first 8
	// bytes of SGL, which must cover at least 8 bytes.
	CompareAdd uint64
	Swap       uint64

	// FLUSH: the byte range and IBA placement type/selectivity level
	// (IB_FLUSH_GLOBAL|IB_FLUSH_PERSISTENT, IB_FLUSH_RANGE/IB_FLUSH_MR).
	FlushLength uint32
	FlushType   uint8
	FlushLevel  uint8

	// UD: where to send.
	AH         *AH
	RemoteQPN  uint32
	RemoteQKey uint32

	// WRBindMW: the window and what to bind it to (see MW).
	Bind *MWBindWR
	// WRLocalInv, WRSendWithInv: the rkey to invalidate, here or at the
	// receiver.
	InvalidateRKey uint32
}

// RecvWR is struct ibv_recv_wr without the list link. A UD receive buffer
// must leave 40 bytes in front of the payload for the GRH.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

var (
	errNoAH     = errors.New("UD send needs an AH")
	errClosedAH = fmt.Errorf("UD send to a closed AH: %w", ErrClosed)
)

// PostSend is ibv_post_send: it writes each work request into the mapped send
// ring and then rings the doorbell once, with one write(2), for the whole list.
// It allocates nothing. On failure it returns a *PostError giving the index of
// the first request not posted; the requests before it were posted and the
// doorbell rung for them. A full ring gives ErrQueueFull: poll the send CQ.
// On a closed QP, or with a closed AH, it fails with ErrClosed and posts
// nothing. Close may run concurrently: it waits for a PostSend already
// writing the ring and ringing the doorbell, and later calls fail.
func (qp *QP) PostSend(wrs ...SendWR) error {
	if !qp.gate.enter() {
		return &PostError{Op: "post send", Err: ErrClosed}
	}
	if qp.sq.Q == nil {
		qp.gate.exit()
		return &PostError{Op: "post send", Err: ErrClosed}
	}
	var perr error
	posted := 0
	for i := range wrs {
		if err := qp.postOne(&wrs[i]); err != nil {
			perr = &PostError{Op: "post send", Index: i, Err: err}
			break
		}
		posted++
	}
	if posted > 0 {
		if err := qp.ring(); err != nil {
			qp.gate.exit()
			return fmt.Errorf("post send: doorbell: %w", err)
		}
	}
	qp.gate.exit()
	return perr
}

func (qp *QP) postOne(wr *SendWR) error {
	// Field by field: a composite literal here is built in a temporary and
	// then copied (twice the stores, on every post).
	var r rxe.SendWR
	r.ID, r.Opcode, r.Flags, r.Imm = wr.ID, uint32(wr.Opcode), uint32(wr.Flags), wr.Imm
	r.RemoteAddr, r.RKey, r.CompareAdd, r.Swap = wr.RemoteAddr, wr.RKey, wr.CompareAdd, wr.Swap
	r.Length, r.FlushType, r.FlushLevel = wr.FlushLength, wr.FlushType, wr.FlushLevel
	r.SGL, r.Inline = sgl(wr.SGL), wr.Inline
	switch wr.Opcode {
	case WRSend, WRSendWithImm, WRRDMAWrite, WRRDMAWriteWithImm:
	case WRRDMARead, WRAtomicCmpAndSwp, WRAtomicFetchAndAdd:
		if qp.typ != QPTypeRC {
			return fmt.Errorf("%v on a %v QP: %w", wr.Opcode, qp.typ, syscall.EINVAL)
		}
	case WRFlush:
		if !qp.flushOK {
			return fmt.Errorf("%v needs Linux 6.2+ and a device with FLUSH: %w", wr.Opcode, ErrNotSupported)
		}
	case WRAtomicWrite:
		if !qp.atomicWriteOK {
			return fmt.Errorf("%v needs Linux 6.2+ and a device with ATOMIC_WRITE: %w", wr.Opcode, ErrNotSupported)
		}
	case WRBindMW, WRLocalInv, WRSendWithInv:
		if err := qp.mwWR(wr, &r); err != nil {
			return err
		}
	default:
		return fmt.Errorf("opcode %v: %w", wr.Opcode, ErrNotSupported)
	}
	if qp.typ == QPTypeUD {
		if wr.Opcode != WRSend && wr.Opcode != WRSendWithImm {
			return fmt.Errorf("%v on a UD QP: only sends: %w", wr.Opcode, syscall.EINVAL)
		}
		if wr.AH == nil {
			return errNoAH
		}
		if wr.AH.closed.Load() { // its number may already name another AH
			return errClosedAH
		}
		r.AHNum, r.RemoteQPN, r.RemoteQKey = wr.AH.num, wr.RemoteQPN, wr.RemoteQKey
		if wr.AH.num == 0 {
			r.AV = &wr.AH.av
		}
	}
	if qp.sigAll {
		r.Flags |= abi.IB_SEND_SIGNALED
	}
	return postErr(qp.sq.Post(&r))
}

// postErr maps the provider's errors onto the package's. Every post passes
// here: nil returns before errors.Is, a call the compiler does not inline.
func postErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rxe.ErrQueueFull) {
		return ErrQueueFull
	}
	return err
}

// PostRecv is ibv_post_recv: it writes each request into the mapped receive
// ring; the kernel sees them without any system call. A QP in RESET takes no
// receives (move it to INIT first); a QP on an SRQ takes none (post to the
// SRQ). Errors are as for PostSend, and so is a concurrent Close.
func (qp *QP) PostRecv(wrs ...RecvWR) error {
	if !qp.gate.enter() {
		return &PostError{Op: "post recv", Err: ErrClosed}
	}
	if qp.rq.Q == nil {
		qp.gate.exit()
		err := ErrClosed
		if qp.srq != nil && !qp.closed.Load() {
			err = fmt.Errorf("the QP receives from an SRQ: post to the SRQ: %w", syscall.EINVAL)
		}
		return &PostError{Op: "post recv", Err: err}
	}
	if qp.State() == QPSReset {
		qp.gate.exit()
		return &PostError{Op: "post recv", Err: fmt.Errorf("QP %#x is in RESET: move it to INIT first: %w", qp.num, syscall.EINVAL)}
	}
	for i := range wrs {
		if err := qp.rq.Post(wrs[i].ID, sgl(wrs[i].SGL)); err != nil {
			qp.gate.exit()
			return &PostError{Op: "post recv", Index: i, Err: postErr(err)}
		}
	}
	qp.gate.exit()
	return nil
}
