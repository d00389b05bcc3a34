// Copyright 2026 The rdmago Authors.

package trace

import (
	"github.com/cilium/ebpf/asm"

	"github.com/rdmago/rdmago/internal/abi"
)

// Ring buffer flags and queries (include/uapi/linux/bpf.h).
const (
	bpfRBNoWakeup    = 1 // BPF_RB_NO_WAKEUP
	bpfRBForceWakeup = 2 // BPF_RB_FORCE_WAKEUP
	bpfRBAvailData   = 0 // BPF_RB_AVAIL_DATA
	bpfRBRingSize    = 1 // BPF_RB_RING_SIZE
)

// The drops map counts the records the ring buffer had no room for, per
// kind of call, so that a loss can be told as "uverbs POST_SEND ×812":
//
//	drops  hash  dropKey (16 bytes) -> u64
//
// dropKey: u8 kind, u8 flags (the record's), u16 zero, u32 extra, u64 head.
// head is the first 8 bytes of the record's data (the command header of a
// write(), rdma_ucm command or ioctl; zero when unread), a0 for a CM event
// (the event) and zero for mmap and completions; extra is, for an ioctl, the inline data of
// its UVERBS_ATTR_WRITE_CMD attribute when one of its first attributes is
// one (the write command an INVOKE_WRITE carries).
const (
	mapDrops     = "drops"
	dropKeySize  = 16
	dropKeyKind  = 0
	dropKeyFlags = 1
	dropKeyExtra = 4
	dropKeyHead  = 8

	// dropScanAttrs is how many ioctl attributes (in the record's data, after
	// the 24-byte header) are looked at for UVERBS_ATTR_WRITE_CMD.
	dropScanAttrs = (recDataLen - sizeofIoctlHdr) / sizeofIoctlAttr
)

// ringOutput sends the record at R7 (size bytes) to the ring buffer. It asks
// for no wakeup of the reader unless a quarter of the ring is filled, so that
// a busy program's events are read in batches (the reader also polls every
// 100 ms). When the ring is full it counts the loss in stats[statDrops] and
// in drops under the record's key, built at keyOff (dropKeySize bytes of
// stack, below statOff-8) with the 4 bytes at statOff as stats' key and the
// 8 at statOff-8 as scratch. Clobbers R0-R5, R8, R9.
func (b *builder) ringOutput(size int32, keyOff, statOff int16) {
	done := b.newLabel("outdone")
	wake := b.newLabel("wake")
	out := b.newLabel("out")
	b.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapEvents),
		asm.Mov.Imm(asm.R2, bpfRBAvailData),
		asm.FnRingbufQuery.Call(),
		asm.Mov.Reg(asm.R8, asm.R0),
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapEvents),
		asm.Mov.Imm(asm.R2, bpfRBRingSize),
		asm.FnRingbufQuery.Call(),
		asm.RSh.Imm(asm.R0, 2),
		asm.Mov.Imm(asm.R4, bpfRBForceWakeup),
		asm.JGE.Reg(asm.R8, asm.R0, wake),
		asm.Mov.Imm(asm.R4, bpfRBNoWakeup),
	)
	b.mark(wake)
	b.emit(
		asm.LoadMapPtr(asm.R1, 0).WithReference(mapEvents),
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Mov.Imm(asm.R3, size),
		asm.FnRingbufOutput.Call(),
		asm.JEq.Imm(asm.R0, 0, done),
	)
	b.countStat(statDrops, statOff)

	// The drop key.
	b.emit(asm.Mov.Imm(asm.R1, 0))
	for off := int16(0); off < dropKeySize; off += 8 {
		b.emit(asm.StoreMem(asm.RFP, keyOff+off, asm.R1, asm.DWord))
	}
	b.emit(
		asm.LoadMem(asm.R8, asm.R7, recKind, asm.Byte),
		asm.StoreMem(asm.RFP, keyOff+dropKeyKind, asm.R8, asm.Byte),
		asm.LoadMem(asm.R9, asm.R7, recFlags, asm.Byte),
		asm.And.Imm(asm.R9, flagData|flagDataShort),
		asm.StoreMem(asm.RFP, keyOff+dropKeyFlags, asm.R9, asm.Byte),
		asm.JNE.Imm(asm.R8, int32(KindCMEvent), "notcm_"+out),
		asm.LoadMem(asm.R1, asm.R7, recA0, asm.DWord),
		asm.StoreMem(asm.RFP, keyOff+dropKeyHead, asm.R1, asm.DWord),
		asm.Ja.Label(out),
		asm.JEq.Imm(asm.R8, int32(KindVerbsMmap), out).WithSymbol("notcm_"+out),
		asm.JEq.Imm(asm.R8, int32(KindCompletion), out),
		asm.JEq.Imm(asm.R9, 0, out),
		asm.LoadMem(asm.R1, asm.R7, recData, asm.DWord),
		asm.StoreMem(asm.RFP, keyOff+dropKeyHead, asm.R1, asm.DWord),
		asm.JNE.Imm(asm.R8, int32(KindVerbsIoctl), out),
		asm.And.Imm(asm.R9, flagData),
		asm.JEq.Imm(asm.R9, 0, out),
		// ib_uverbs_ioctl_hdr.num_attrs@6, then ib_uverbs_attr {attr_id@0, ..., data@8}.
		asm.LoadMem(asm.R9, asm.R7, recData+6, asm.Half),
	)
	for i := range dropScanAttrs {
		off := int16(recData + sizeofIoctlHdr + i*sizeofIoctlAttr)
		next := b.newLabel("attr")
		b.emit(
			asm.JLE.Imm(asm.R9, int32(i), out),
			asm.LoadMem(asm.R1, asm.R7, off, asm.Half),
			asm.JNE.Imm(asm.R1, abi.UVERBS_ATTR_WRITE_CMD, next),
			asm.LoadMem(asm.R1, asm.R7, off+8, asm.Word),
			asm.StoreMem(asm.RFP, keyOff+dropKeyExtra, asm.R1, asm.Word),
			asm.Ja.Label(out),
		)
		b.mark(next)
	}
	b.mark(out)
	lookup := func(found string) {
		b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(mapDrops))
		b.fpAddr(asm.R2, keyOff)
		b.emit(asm.FnMapLookupElem.Call(), asm.JNE.Imm(asm.R0, 0, found))
	}
	add := "add_" + out
	lookup(add)
	// First drop of this key: create it with 1; if another CPU created it
	// meanwhile (BPF_NOEXIST fails), look it up again and add.
	b.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreMem(asm.RFP, statOff-8, asm.R1, asm.DWord))
	b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(mapDrops))
	b.fpAddr(asm.R2, keyOff)
	b.fpAddr(asm.R3, statOff-8)
	b.emit(asm.Mov.Imm(asm.R4, 1), asm.FnMapUpdateElem.Call(), asm.JEq.Imm(asm.R0, 0, done))
	lookup(add)
	b.emit(asm.Ja.Label(done))
	b.mark(add)
	b.emit(asm.Mov.Imm(asm.R1, 1), asm.StoreXAdd(asm.R0, asm.R1, asm.DWord))
	b.mark(done)
}
