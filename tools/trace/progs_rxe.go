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
	// UWC is rxe_cqe.uibwc: the struct ib_uverbs_wc of a user CQ's
	// completion, sent whole as a KindCompletion record.
	UWC int32
}

// wqeSource finds, at rxe_post_send(ibqp, ...) (the doorbell of a user
// QP: the process has written its WQEs into the mapped send ring and
// advanced the producer index), the send queue's struct rxe_queue_buf:
// ibqp + SQQueue is rxe_qp.sq.queue (a struct rxe_queue *), whose member
// at QueueBuf is the buffer. The program copies the last WQE posted into
// the doorbell's write() record (flagWQE).
type wqeSource struct {
	QPArg    int
	SQQueue  int32 // rxe_qp.sq.queue - rxe_qp.ibqp
	QueueBuf int32 // rxe_queue.buf
}

// The WQE digest a POST_SEND record carries in its data (flagWQE): the
// first wqeHeadLen bytes of struct rxe_send_wqe (struct rxe_send_wr up to
// the end of the rdma/atomic/ud members used here), dma.length, and the
// producer index after the post (so that the WRs of one doorbell can be
// counted).
const (
	wqeDigestOff = 64 // in the record's data, past any write() command with wr_count=0
	wqeHeadLen   = 56
	wqeDMALenOff = wqeDigestOff + wqeHeadLen
	wqeProdOff   = wqeDMALenOff + 4
	// rxe_queue_buf: producer_index, data[] (include/uapi/rdma/rdma_user_rxe.h).
	rxeBufProducer = 128
	rxeBufData     = 384
)

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
	return rxeProgFor(rxePlan{ID: id, QP: qp, CQE: cqe}, fentry)
}

// rxeProgFor is the program of plan p: the counter and, with p.CQE, a
// KindCompletion record for each completion posted to a user CQ; with
// p.WQE, the WQE digest added to the doorbell's record.
func rxeProgFor(p rxePlan, fentry bool) (asm.Instructions, error) {
	id, qp, cqe := p.ID, p.QP, p.CQE
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
	if cqe != nil {
		b.completionRecord(cqe)
	}
	if p.WQE != nil {
		if err := b.wqeDigest(p.WQE); err != nil {
			return nil, err
		}
	}
	b.mark("ret")
	b.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	if qp != nil && cqe != nil {
		return nil, fmt.Errorf("rxe probe %d: both a QP and a CQE source", id)
	}
	return b.insns, nil
}

// Stack of the completion record (below the counter's key and scratch at
// -16 and -8).
const (
	cqRec     = -16 - recSize
	cqStatOff = cqRec - 8
	cqKeyOff  = cqStatOff - 8 - dropKeySize
)

// completionRecord sends a KindCompletion record for a completion posted
// to a user CQ (R7 the struct rxe_cq, R8 the struct rxe_cqe): the struct
// ib_uverbs_wc in the data, the current task (where rxe posted it, often
// not the QP's process) in tgid/tid/comm.
func (b *builder) completionRecord(c *cqeSource) {
	b.emit(asm.Mov.Reg(asm.R3, asm.R7), asm.Add.Imm(asm.R3, c.IsUser))
	b.probeRead(asm.FnProbeReadKernel, -8, 1)
	b.emit(
		asm.JNE.Imm(asm.R0, 0, "ret"),
		asm.LoadMem(asm.R1, asm.RFP, -8, asm.Byte),
		asm.JEq.Imm(asm.R1, 0, "ret"),
		asm.Mov.Imm(asm.R1, 0),
	)
	for off := int16(0); off < recSize; off += 8 {
		b.emit(asm.StoreMem(asm.RFP, cqRec+off, asm.R1, asm.DWord))
	}
	b.emit(asm.Mov.Reg(asm.R3, asm.R8), asm.Add.Imm(asm.R3, c.UWC))
	b.probeRead(asm.FnProbeReadKernel, cqRec+recData, sizeofUverbsWC)
	b.emit(asm.JNE.Imm(asm.R0, 0, "ret"))
	b.taskRecord(cqRec, KindCompletion, flagData)
	b.fpAddr(asm.R7, cqRec)
	b.ringOutput(recSize, cqKeyOff, cqStatOff)
}

// wqeDigest copies the last WQE of the send ring into the record of the
// write() this doorbell is part of (the inflight record of this thread),
// with dma.length and the producer index, and sets flagWQE. Without such a
// record (a kernel QP, a process the filter leaves out) it does nothing.
func (b *builder) wqeDigest(w *wqeSource) error {
	const buf, prod, wqe, key = -24, -32, -40, -48 // stack slots below the counter's
	if err := b.loadArg(asm.R3, w.QPArg); err != nil {
		return err
	}
	readPtr := func(off int32) { // R3 = pointer at R3+off, or ret
		b.emit(asm.JEq.Imm(asm.R3, 0, "ret"), asm.Add.Imm(asm.R3, off))
		b.probeRead(asm.FnProbeReadKernel, -8, 8)
		b.emit(asm.JNE.Imm(asm.R0, 0, "ret"), asm.LoadMem(asm.R3, asm.RFP, -8, asm.DWord))
	}
	readPtr(w.SQQueue)
	readPtr(w.QueueBuf)
	b.emit(asm.JEq.Imm(asm.R3, 0, "ret"), asm.StoreMem(asm.RFP, buf, asm.R3, asm.DWord))
	// log2_elem_size@0 and index_mask@4 into -8; producer_index into prod.
	b.probeRead(asm.FnProbeReadKernel, -8, 8)
	b.emit(
		asm.JNE.Imm(asm.R0, 0, "ret"),
		asm.LoadMem(asm.R3, asm.RFP, buf, asm.DWord),
		asm.Add.Imm(asm.R3, rxeBufProducer),
	)
	b.probeRead(asm.FnProbeReadKernel, prod, 4)
	b.emit(
		asm.JNE.Imm(asm.R0, 0, "ret"),
		asm.LoadMem(asm.R1, asm.RFP, prod, asm.Word),
		asm.Sub.Imm(asm.R1, 1),
		asm.LoadMem(asm.R2, asm.RFP, -4, asm.Word), // index_mask
		asm.And.Reg(asm.R1, asm.R2),
		asm.LoadMem(asm.R2, asm.RFP, -8, asm.Word), // log2_elem_size
		asm.And.Imm(asm.R2, 31),
		asm.LSh.Reg(asm.R1, asm.R2),
		asm.LoadMem(asm.R2, asm.RFP, buf, asm.DWord),
		asm.Add.Reg(asm.R1, asm.R2),
		asm.Add.Imm(asm.R1, rxeBufData),
		asm.StoreMem(asm.RFP, wqe, asm.R1, asm.DWord),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, key, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapInflight),
	)
	b.fpAddr(asm.R2, key)
	b.emit(
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "ret"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, recData+wqeDigestOff),
		asm.Mov.Imm(asm.R2, wqeHeadLen),
		asm.LoadMem(asm.R3, asm.RFP, wqe, asm.DWord),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "ret"),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, recData+wqeDMALenOff),
		asm.Mov.Imm(asm.R2, 4),
		asm.LoadMem(asm.R3, asm.RFP, wqe, asm.DWord),
		asm.Add.Imm(asm.R3, rxeWQEDMALen),
		asm.FnProbeReadKernel.Call(),
		asm.JNE.Imm(asm.R0, 0, "ret"),
		asm.LoadMem(asm.R1, asm.RFP, prod, asm.Word),
		asm.StoreMem(asm.R7, recData+wqeProdOff, asm.R1, asm.Word),
		asm.LoadMem(asm.R1, asm.R7, recFlags, asm.Byte),
		asm.Or.Imm(asm.R1, flagWQE),
		asm.StoreMem(asm.R7, recFlags, asm.R1, asm.Byte),
	)
	return nil
}
