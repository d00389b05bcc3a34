// Copyright 2026 The rdmago Authors.

package trace

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// qpnSource says how an rxe probe finds the QP number from its arguments:
// take argument Arg, follow each pointer at Derefs[i] bytes into the current
// object, then read the u32 at Off. BE24 reads a big-endian 24-bit field (the
// BTH destination QP: Off points at the BTH's byte 4).
type qpnSource struct {
	Arg    int
	Derefs []int32
	Off    int32
	BE24   bool
}

// cqeSource finds the QP number and status of the completion rxe_cq_post(cq,
// cqe, solicited) posts. struct rxe_cqe is a union of struct ib_wc (kernel
// CQs: status, and qp as a pointer) and struct ib_uverbs_wc (user CQs:
// status and qp_num); cq->is_user says which.
type cqeSource struct {
	CQArg, CQEArg int
	IsUser        int32 // rxe_cq.is_user
	UStatus, UQPN int32 // ib_uverbs_wc.status, .qp_num
	KStatus, KQP  int32 // ib_wc.status, .qp
	IBQPNum       int32 // ib_qp.qp_num
}

// rxeCounter is the kprobe program counting hits of one rxe function per QP
// in the rxecounts map under {id, qpn}. With neither source it counts under
// qpnUnknown.
func rxeCounter(id uint16, qp *qpnSource, cqe *cqeSource) (asm.Instructions, error) {
	return rxeCounterFor(id, qp, cqe, false)
}

// rxeCounterFor is rxeCounter as a kprobe program or, with fentry, as an
// fentry program (BPF_PROG_TYPE_TRACING attached to the function's BTF id:
// a direct call from the function's ftrace site into the program through a
// trampoline, no breakpoint, no pt_regs).
func rxeCounterFor(id uint16, qp *qpnSource, cqe *cqeSource, fentry bool) (asm.Instructions, error) {
	b := &builder{fentry: fentry}
	const key, scratch = -16, -8
	unknown, haveQPN := "unknown", "key"
	b.emit(asm.Mov.Reg(asm.R6, asm.R1), asm.Mov.Imm(asm.R9, int32(id)))
	readU32 := func(srcOff int32) { // R3 = object; R1 = u32 at R3+srcOff, or unknown
		b.emit(asm.Add.Imm(asm.R3, srcOff))
		b.probeRead(asm.FnProbeReadKernel, scratch, 4)
		b.emit(asm.JNE.Imm(asm.R0, 0, unknown), asm.LoadMem(asm.R1, asm.RFP, scratch, asm.Word))
	}
	readPtr := func(srcOff int32) { // R3 = pointer at R3+srcOff, or unknown
		b.emit(asm.Add.Imm(asm.R3, srcOff))
		b.probeRead(asm.FnProbeReadKernel, scratch, 8)
		b.emit(
			asm.JNE.Imm(asm.R0, 0, unknown),
			asm.LoadMem(asm.R3, asm.RFP, scratch, asm.DWord),
			asm.JEq.Imm(asm.R3, 0, unknown),
		)
	}
	switch {
	case qp != nil:
		if err := b.loadArg(asm.R3, qp.Arg); err != nil {
			return nil, err
		}
		b.emit(asm.JEq.Imm(asm.R3, 0, unknown))
		for _, d := range qp.Derefs {
			readPtr(d)
		}
		readU32(qp.Off)
		if qp.BE24 {
			b.emit(asm.HostTo(asm.BE, asm.R1, asm.Word), asm.And.Imm(asm.R1, 0xffffff))
		}
		b.emit(asm.Ja.Label(haveQPN))
	case cqe != nil:
		if err := b.loadArg(asm.R7, cqe.CQArg); err != nil {
			return nil, err
		}
		if err := b.loadArg(asm.R8, cqe.CQEArg); err != nil {
			return nil, err
		}
		b.emit(asm.Mov.Reg(asm.R3, asm.R7), asm.Add.Imm(asm.R3, cqe.IsUser))
		b.probeRead(asm.FnProbeReadKernel, scratch, 1)
		b.emit(
			asm.JNE.Imm(asm.R0, 0, unknown),
			asm.LoadMem(asm.R1, asm.RFP, scratch, asm.Byte),
			asm.JEq.Imm(asm.R1, 0, "kernelcq"),
			asm.Mov.Reg(asm.R3, asm.R8),
		)
		readU32(cqe.UStatus)
		b.emit(asm.JEq.Imm(asm.R1, 0, "uok"), asm.Or.Imm(asm.R9, rxeErrorBit))
		b.mark("uok")
		b.emit(asm.Mov.Reg(asm.R3, asm.R8))
		readU32(cqe.UQPN)
		b.emit(asm.Ja.Label(haveQPN))
		b.mark("kernelcq")
		b.emit(asm.Mov.Reg(asm.R3, asm.R8))
		readU32(cqe.KStatus)
		b.emit(asm.JEq.Imm(asm.R1, 0, "kok"), asm.Or.Imm(asm.R9, rxeErrorBit))
		b.mark("kok")
		b.emit(asm.Mov.Reg(asm.R3, asm.R8))
		readPtr(cqe.KQP)
		readU32(cqe.IBQPNum)
		b.emit(asm.Ja.Label(haveQPN))
	}
	b.mark(unknown)
	b.emit(asm.Mov.Imm32(asm.R1, -1)) // qpnUnknown; mov32 zero-extends
	b.mark(haveQPN)
	b.emit(
		asm.StoreMem(asm.RFP, key, asm.R9, asm.Word),
		asm.StoreMem(asm.RFP, key+4, asm.R1, asm.Word),
	)
	lookup := func(found string) {
		b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(mapRXECounts))
		b.fpAddr(asm.R2, key)
		b.emit(asm.FnMapLookupElem.Call(), asm.JNE.Imm(asm.R0, 0, found))
	}
	lookup("add")
	// First hit: create the entry with 1; if another CPU created it
	// meanwhile (BPF_NOEXIST fails), look it up again and add.
	b.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.RFP, scratch, asm.R1, asm.DWord))
	b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(mapRXECounts))
	b.fpAddr(asm.R2, key)
	b.fpAddr(asm.R3, scratch)
	b.emit(asm.Mov.Imm(asm.R4, 1), asm.FnMapUpdateElem.Call(), asm.JEq.Imm(asm.R0, 0, "exit"))
	lookup("add")
	b.emit(asm.Ja.Label("exit"))
	b.mark("add")
	b.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreXAdd(asm.R0, asm.R1, asm.DWord))
	b.mark("exit")
	b.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	if qp != nil && cqe != nil {
		return nil, fmt.Errorf("rxe probe %d: both a QP and a CQE source", id)
	}
	return b.insns, nil
}
