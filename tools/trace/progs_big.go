// Copyright 2026 The rdmago Authors.

package trace

import (
	"github.com/cilium/ebpf/asm"

	"github.com/rdmago/rdmago/internal/abi"
)

// Big records (bigRecSize, layout in event.go) for RDMA_VERBS_IOCTL and the
// rdma_cm write() commands: too large for the 512-byte BPF stack, they are
// built in a per-CPU scratch map, kept between entry and return in their own
// in-flight map, and completed by retBigProg.
const (
	mapBigInflight = "biginflight" // hash u64 pid_tgid -> big record
	mapScratch     = "scratch"     // per-CPU array, one big record
)

// toScratch copies the record built on the stack into the per-CPU scratch
// record, leaving its address in R9 (jumping to exit when the lookup
// fails). The extension's masks are cleared; R8 (the flags) is stored by
// bigEpilogue.
func (b *builder) toScratch(exit string) {
	b.emit(asm.StoreImm(asm.RFP, stackScratch, 0, asm.Word)) // key 0
	b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(mapScratch))
	b.fpAddr(asm.R2, stackScratch)
	b.emit(
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, exit),
		asm.Mov.Reg(asm.R9, asm.R0),
	)
	for off := int16(0); off < recSize; off += 8 {
		b.emit(
			asm.LoadMem(asm.R1, asm.RFP, stackRec+off, asm.DWord),
			asm.StoreMem(asm.R9, off, asm.R1, asm.DWord),
		)
	}
	b.emit(
		asm.StoreImm(asm.R9, extMaskIn, 0, asm.Word),
		asm.StoreImm(asm.R9, extMaskOut, 0, asm.Word),
	)
}

// bigEpilogue stores the flags (R8) and puts the scratch record (R9) in the
// big in-flight map under pid_tgid; a full map is counted.
func (b *builder) bigEpilogue(exit string) {
	b.emit(asm.StoreMem(asm.R9, recFlags, asm.R8, asm.Byte))
	b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(mapBigInflight))
	b.fpAddr(asm.R2, stackKey)
	b.emit(
		asm.Mov.Reg(asm.R3, asm.R9),
		asm.Mov.Imm(asm.R4, 0),
		asm.FnMapUpdateElem.Call(),
		asm.JEq.Imm(asm.R0, 0, exit),
	)
	b.countStat(statInflightFull, stackScratch)
	b.mark(exit)
	b.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// ioctlAttrCount loads min(hdr.num_attrs, ioctlMaxAttrs) of the big record
// at rec into dst.
func (b *builder) ioctlAttrCount(dst, rec asm.Register) {
	ok := b.newLabel("nattrs")
	b.emit(
		asm.LoadMem(dst, rec, recData+int16(offsetofIoctlNumAttrs), asm.Half),
		asm.JLE.Imm(dst, ioctlMaxAttrs, ok),
		asm.Mov.Imm(dst, ioctlMaxAttrs),
	)
	b.mark(ok)
}

// readIoctlAttrs reads the attribute array after the ib_uverbs_ioctl_hdr at
// the user address in rec's a1 into the extension, jumping to fail when it
// cannot be read.
func (b *builder) readIoctlAttrs(rec asm.Register, fail string) {
	b.ioctlAttrCount(asm.R2, rec)
	b.emit(
		asm.LSh.Imm(asm.R2, 4), // * sizeof(struct ib_uverbs_attr)
		asm.LoadMem(asm.R3, rec, recA1, asm.DWord),
		asm.Add.Imm(asm.R3, int32(sizeofIoctlHdr)),
		asm.Mov.Reg(asm.R1, rec),
		asm.Add.Imm(asm.R1, extAttrs),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, fail),
	)
}

// readIoctlSlots copies, for each attribute i (i < num_attrs) of the array
// in rec's extension that want selects, up to ioctlSlotLen bytes from its
// pointer into slot i, and sets bit i of the mask at maskOff. want is called
// with the attribute's flags in R1 and its length in R2 and jumps to skip
// for attributes without a buffer.
func (b *builder) readIoctlSlots(rec asm.Register, maskOff int16, done string, want func(skip string)) {
	for i := 0; i < ioctlMaxAttrs; i++ {
		next := b.newLabel("slot")
		attr := int16(extAttrs + i*sizeofIoctlAttr)
		b.ioctlAttrCount(asm.R1, rec)
		b.emit(
			asm.JLE.Imm(asm.R1, int32(i), done),
			asm.LoadMem(asm.R1, rec, attr+4, asm.Half), // flags
			asm.LoadMem(asm.R2, rec, attr+2, asm.Half), // len
		)
		want(next)
		clamped := b.newLabel("clamped")
		b.emit(
			asm.JEq.Imm(asm.R2, 0, next),
			asm.JLE.Imm(asm.R2, ioctlSlotLen, clamped),
			asm.Mov.Imm(asm.R2, ioctlSlotLen),
		)
		b.mark(clamped)
		b.emit(
			asm.LoadMem(asm.R3, rec, attr+8, asm.DWord), // data: the pointer
			asm.Mov.Reg(asm.R1, rec),
			asm.Add.Imm(asm.R1, int32(extSlots+i*ioctlSlotLen)),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, next),
			asm.LoadMem(asm.R1, rec, maskOff, asm.Word),
			asm.Or.Imm(asm.R1, 1<<i),
			asm.StoreMem(rec, maskOff, asm.R1, asm.Word),
		)
		b.mark(next)
	}
	b.emit(asm.Ja.Label(done))
}

// verbsIoctlEntry is the kprobe on ib_uverbs_ioctl(struct file *filp,
// unsigned int cmd, unsigned long arg): it records cmd, the
// ib_uverbs_ioctl_hdr and first attributes that arg points to (data), the
// whole attribute array (up to ioctlMaxAttrs) and the input buffers of
// attributes longer than 8 bytes (their data is then a pointer), in a big
// record.
func verbsIoctlEntry(f filter, ko kernelOffsets) (asm.Instructions, error) {
	b := &builder{}
	exit := "exit"
	if err := b.prologue(KindVerbsIoctl, f, exit); err != nil {
		return nil, err
	}
	if err := b.loadArg(asm.R1, 1); err != nil {
		return nil, err
	}
	b.emit(
		asm.LSh.Imm(asm.R1, 32), // unsigned int: drop the register's upper half
		asm.RSh.Imm(asm.R1, 32),
		asm.StoreMem(asm.RFP, stackRec+recA0, asm.R1, asm.DWord),
	)
	if err := b.loadArg(asm.R1, 2); err != nil {
		return nil, err
	}
	b.emit(asm.StoreMem(asm.RFP, stackRec+recA1, asm.R1, asm.DWord))
	if err := b.dev(0, ko); err != nil {
		return nil, err
	}
	if err := b.userData(2); err != nil {
		return nil, err
	}
	b.toScratch(exit)
	store := "store"
	b.emit(
		asm.Mov.Reg(asm.R1, asm.R8),
		asm.And.Imm(asm.R1, flagData),
		asm.JEq.Imm(asm.R1, 0, store),
	)
	b.readIoctlAttrs(asm.R9, store)
	b.emit(asm.Or.Imm(asm.R8, flagExt))
	b.readIoctlSlots(asm.R9, extMaskIn, store, func(skip string) {
		// Inline values (len <= 8) have no buffer; outputs are read at return.
		b.emit(asm.JLE.Imm(asm.R2, 8, skip))
	})
	b.mark(store)
	b.bigEpilogue(exit)
	return b.insns, nil
}

// ucmaWriteEntry is the kprobe on ucma_write(struct file *filp, const char
// __user *buf, size_t len, loff_t *pos): like verbsWriteEntry with
// KindUCMWrite, and the command's first ucmDataMax bytes in the extension of
// a big record (addresses and connection parameters lie past recDataLen).
func ucmaWriteEntry(f filter, ko kernelOffsets) (asm.Instructions, error) {
	b := &builder{}
	exit := "exit"
	if err := b.writeEntryHead(KindUCMWrite, f, ko, exit); err != nil {
		return nil, err
	}
	b.toScratch(exit)
	store, clamped := "store", "clamped"
	b.emit(
		asm.LoadMem(asm.R2, asm.R9, recA0, asm.DWord),
		asm.JLE.Imm(asm.R2, ucmDataMax, clamped),
		asm.Mov.Imm(asm.R2, ucmDataMax),
	)
	b.mark(clamped)
	b.emit(
		asm.StoreMem(asm.R9, extUCMLen, asm.R2, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.Add.Imm(asm.R1, extUCMData),
	)
	if err := b.loadArg(asm.R3, 1); err != nil {
		return nil, err
	}
	b.emit(
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, store),
		asm.Or.Imm(asm.R8, flagExt),
	)
	b.mark(store)
	b.bigEpilogue(exit)
	return b.insns, nil
}

// retBigProg is the kretprobe of the big-record entries (ioctl, ucma): as
// retProg, and for a successful ioctl the attribute array is read again (new
// handles) with every output the kernel marked UVERBS_ATTR_F_VALID_OUTPUT.
func retBigProg(ucmResp []respRead) (asm.Instructions, error) {
	return retProgFor(ucmResp, true)
}

// ioctlReturn is retBigProg's part for ioctl records (R7: the record, R1: its
// kind); it jumps to out when done.
func (b *builder) ioctlReturn(out string) {
	b.emit(
		asm.JNE.Imm(asm.R1, int32(KindVerbsIoctl), out),
		asm.LoadMem(asm.R1, asm.R7, recFlags, asm.Byte),
		asm.And.Imm(asm.R1, flagExt),
		asm.JEq.Imm(asm.R1, 0, out),
	)
	b.readIoctlAttrs(asm.R7, out)
	b.readIoctlSlots(asm.R7, extMaskOut, out, func(skip string) {
		b.emit(
			asm.And.Imm(asm.R1, abi.UVERBS_ATTR_F_VALID_OUTPUT),
			asm.JEq.Imm(asm.R1, 0, skip),
		)
	})
}
