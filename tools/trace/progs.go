// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"
)

// The eBPF programs, written with cilium/ebpf's asm package (no C, no clang).
// They share three maps, referenced by name:
//
//	inflight  hash   u64 pid_tgid -> record (recSize bytes): entry state
//	events    ringbuf of records
//	stats     array  u32 -> u64: statDrops (ring buffer full), statInflightFull
//	rxecounts hash   {u32 probe, u32 qpn} -> u64 hit count (rxe probes)
//	drops     hash   what a lost record was -> u64 (progs_ring.go)
const (
	mapInflight  = "inflight"
	mapEvents    = "events"
	mapStats     = "stats"
	mapRXECounts = "rxecounts"

	statDrops        = 0
	statInflightFull = 1
	statCount        = 2

	// qpnUnknown is the qpn key of rxe hits whose QP could not be read.
	qpnUnknown = 0xffffffff
	// rxeErrorBit marks rxe_cq_post hits whose completion status is not success.
	rxeErrorBit = 0x8000
)

// Stack layout of the entry and tracepoint programs (offsets from R10).
const (
	stackRec     = -recSize // the record being built
	stackKey     = stackRec - 8
	stackScratch = stackKey - 8
)

// filter is what the entry programs check before recording anything.
type filter struct {
	PID  uint32 // tgid to keep; 0 keeps all
	Comm string // comm to keep (at most 15 bytes); "" keeps all
}

// kernelOffsets are the struct member offsets the programs need, found in the
// running kernel's BTF. -1 means unknown: the field is left zero.
type kernelOffsets struct {
	FileInode int32 // struct file.f_inode
	InodeRdev int32 // struct inode.i_rdev
	VMStart   int32 // struct vm_area_struct.vm_start
	VMEnd     int32 // .vm_end
	VMPgoff   int32 // .vm_pgoff
}

var unknownOffsets = kernelOffsets{-1, -1, -1, -1, -1}

// respRead says where the response pointer of a ucma command sits in the
// command's data (offset from the start of the rdma_ucm_cmd_hdr) and how many
// response bytes to read at return.
type respRead struct {
	Cmd    uint32
	PtrOff int16
	Size   int32
}

// builder accumulates instructions and hands out labels.
type builder struct {
	insns   asm.Instructions
	pending string
	n       int
	// fentry: the context (R6 once saved) is an fentry program's array of
	// u64 arguments, not a struct pt_regs.
	fentry bool
}

func (b *builder) emit(ins ...asm.Instruction) {
	for _, in := range ins {
		if b.pending != "" {
			in = in.WithSymbol(b.pending)
			b.pending = ""
		}
		b.insns = append(b.insns, in)
	}
}

func (b *builder) newLabel(what string) string {
	b.n++
	return fmt.Sprintf("%s_%d", what, b.n)
}

// mark puts label on the next instruction emitted.
func (b *builder) mark(label string) {
	if b.pending != "" {
		// Two labels on one spot: a no-op carries the first.
		b.emit(asm.Mov.Reg(asm.R6, asm.R6))
	}
	b.pending = label
}

// fentryMaxArgs is how many arguments an fentry program can read (MAX_BPF_FUNC_ARGS).
const fentryMaxArgs = 12

func argOff(i int) (int16, error) {
	if !regsSupported {
		return 0, fmt.Errorf("kprobe arguments: architecture not supported (amd64 and arm64 are)")
	}
	if i < 0 || i >= len(regArgOffsets) {
		return 0, fmt.Errorf("kprobe argument %d not in a register", i)
	}
	return regArgOffsets[i], nil
}

// loadArg loads argument i into dst: from pt_regs in R6 (kprobe) or from
// the argument array in R6 (fentry).
func (b *builder) loadArg(dst asm.Register, i int) error {
	if b.fentry {
		if i < 0 || i >= fentryMaxArgs {
			return fmt.Errorf("fentry argument %d out of range", i)
		}
		b.emit(asm.LoadMem(dst, asm.R6, int16(8*i), asm.DWord))
		return nil
	}
	off, err := argOff(i)
	if err != nil {
		return err
	}
	b.emit(asm.LoadMem(dst, asm.R6, off, asm.DWord))
	return nil
}

// fpAddr sets dst = R10 + off.
func (b *builder) fpAddr(dst asm.Register, off int16) {
	b.emit(asm.Mov.Reg(dst, asm.RFP), asm.Add.Imm(dst, int32(off)))
}

// probeRead emits fn(dst=R10+stackOff, size, src=R3) and leaves the result in R0.
func (b *builder) probeRead(fn asm.BuiltinFunc, stackOff int16, size int32) {
	b.fpAddr(asm.R1, stackOff)
	b.emit(asm.Mov.Imm(asm.R2, size), fn.Call())
}

// zeroRecord clears the record on the stack (clobbers R1).
func (b *builder) zeroRecord() {
	b.emit(asm.Mov.Imm(asm.R1, 0))
	for off := int16(0); off < recSize; off += 8 {
		b.emit(asm.StoreMem(asm.RFP, stackRec+off, asm.R1, asm.DWord))
	}
}

// prologue saves ctx in R6, gets pid_tgid into R7 and the key slot, applies
// the filter (jumping to exit when it does not match), and fills the common
// record fields: ts, tgid, tid, kind, comm.
func (b *builder) prologue(kind Kind, f filter, exit string) error {
	b.emit(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.StoreMem(asm.RFP, stackKey, asm.R7, asm.DWord),
	)
	if f.PID != 0 {
		b.emit(
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.RSh.Imm(asm.R1, 32),
			asm.JNE.Imm(asm.R1, int32(f.PID), exit),
		)
	}
	b.zeroRecord()
	b.fpAddr(asm.R1, stackRec+recComm)
	b.emit(asm.Mov.Imm(asm.R2, commLen), asm.FnGetCurrentComm.Call())
	if f.Comm != "" {
		if len(f.Comm) >= commLen {
			return fmt.Errorf("comm filter %q: the kernel keeps at most %d bytes of a command name", f.Comm, commLen-1)
		}
		var c [commLen]byte
		copy(c[:], f.Comm)
		for i := 0; i < commLen; i += 8 {
			b.emit(
				asm.LoadMem(asm.R1, asm.RFP, stackRec+recComm+int16(i), asm.DWord),
				asm.LoadImm(asm.R2, int64(binary.NativeEndian.Uint64(c[i:])), asm.DWord),
				asm.JNE.Reg(asm.R1, asm.R2, exit),
			)
		}
	}
	b.emit(
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.RSh.Imm(asm.R1, 32),
		asm.StoreMem(asm.RFP, stackRec+recTgid, asm.R1, asm.Word),
		asm.StoreMem(asm.RFP, stackRec+recTid, asm.R7, asm.Word),
		asm.StoreImm(asm.RFP, stackRec+recKind, int64(kind), asm.Byte),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.RFP, stackRec+recTS, asm.R0, asm.DWord),
		asm.Mov.Imm(asm.R8, 0), // flags
	)
	return nil
}

// dev reads file->f_inode->i_rdev of the struct file in argument filpArg into
// the record.
func (b *builder) dev(filpArg int, ko kernelOffsets) error {
	if ko.FileInode < 0 || ko.InodeRdev < 0 {
		return nil
	}
	skip := b.newLabel("nodev")
	if err := b.loadArg(asm.R3, filpArg); err != nil {
		return err
	}
	b.emit(asm.Add.Imm(asm.R3, ko.FileInode))
	b.probeRead(asm.FnProbeReadKernel, stackScratch, 8)
	b.emit(
		asm.JNE.Imm(asm.R0, 0, skip),
		asm.LoadMem(asm.R3, asm.RFP, stackScratch, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, skip),
		asm.Add.Imm(asm.R3, ko.InodeRdev),
	)
	b.probeRead(asm.FnProbeReadKernel, stackRec+recDev, 4)
	b.mark(skip)
	return nil
}

// userData copies recDataLen bytes from the user pointer in argument ptrArg
// into the record's data, or failing that the first 8 (a command header).
func (b *builder) userData(ptrArg int) error {
	short, done := b.newLabel("short"), b.newLabel("datadone")
	if err := b.loadArg(asm.R3, ptrArg); err != nil {
		return err
	}
	b.probeRead(asm.FnProbeReadUser, stackRec+recData, recDataLen)
	b.emit(
		asm.JNE.Imm(asm.R0, 0, short),
		asm.Or.Imm(asm.R8, flagData),
		asm.Ja.Label(done),
	)
	b.mark(short)
	if err := b.loadArg(asm.R3, ptrArg); err != nil {
		return err
	}
	b.probeRead(asm.FnProbeReadUser, stackRec+recData, 8)
	b.emit(
		asm.JNE.Imm(asm.R0, 0, done),
		asm.Or.Imm(asm.R8, flagDataShort),
	)
	b.mark(done)
	return nil
}

// epilogueInflight stores the flags and puts the record in the inflight map
// under pid_tgid for the kretprobe; a full map is counted.
func (b *builder) epilogueInflight(exit string) {
	b.emit(asm.StoreMem(asm.RFP, stackRec+recFlags, asm.R8, asm.Byte))
	b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(mapInflight))
	b.fpAddr(asm.R2, stackKey)
	b.fpAddr(asm.R3, stackRec)
	b.emit(asm.Mov.Imm(asm.R4, 0), asm.FnMapUpdateElem.Call(), asm.JEq.Imm(asm.R0, 0, exit))
	b.countStat(statInflightFull, stackScratch)
	b.mark(exit)
	b.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
}

// countStat adds one to stats[idx], using the 4 bytes at stackOff as the key.
func (b *builder) countStat(idx int32, stackOff int16) {
	skip := b.newLabel("nostat")
	b.emit(asm.StoreImm(asm.RFP, stackOff, int64(idx), asm.Word))
	b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(mapStats))
	b.fpAddr(asm.R2, stackOff)
	b.emit(
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, skip),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
	)
	b.mark(skip)
}

// verbsWriteEntry is the kprobe on ib_uverbs_write(struct file *filp,
// const char __user *buf, size_t count, loff_t *pos) and, with kind
// KindUCMWrite, on ucma_write with the same signature: it records the
// command header and the start of the command from buf.
func verbsWriteEntry(kind Kind, f filter, ko kernelOffsets) (asm.Instructions, error) {
	b := &builder{}
	exit := "exit"
	if err := b.writeEntryHead(kind, f, ko, exit); err != nil {
		return nil, err
	}
	b.epilogueInflight(exit)
	return b.insns, nil
}

// writeEntryHead builds the record of a write(filp, buf, count, pos) entry
// on the stack: the prologue, count in a0, the device, and buf's data.
func (b *builder) writeEntryHead(kind Kind, f filter, ko kernelOffsets, exit string) error {
	if err := b.prologue(kind, f, exit); err != nil {
		return err
	}
	if err := b.loadArg(asm.R1, 2); err != nil {
		return err
	}
	b.emit(asm.StoreMem(asm.RFP, stackRec+recA0, asm.R1, asm.DWord))
	if err := b.dev(0, ko); err != nil {
		return err
	}
	return b.userData(1)
}

// verbsMmapEntry is the kprobe on ib_uverbs_mmap(struct file *filp,
// struct vm_area_struct *vma): it records vma->vm_pgoff and the length.
func verbsMmapEntry(f filter, ko kernelOffsets) (asm.Instructions, error) {
	b := &builder{}
	exit := "exit"
	if err := b.prologue(KindVerbsMmap, f, exit); err != nil {
		return nil, err
	}
	if err := b.dev(0, ko); err != nil {
		return nil, err
	}
	if ko.VMStart >= 0 && ko.VMEnd >= 0 && ko.VMPgoff >= 0 {
		novma := b.newLabel("novma")
		if err := b.loadArg(asm.R9, 1); err != nil {
			return nil, err
		}
		for _, r := range []struct {
			off   int32
			stack int16
		}{{ko.VMPgoff, stackRec + recA0}, {ko.VMEnd, stackRec + recA1}, {ko.VMStart, stackScratch}} {
			b.emit(asm.Mov.Reg(asm.R3, asm.R9), asm.Add.Imm(asm.R3, r.off))
			b.probeRead(asm.FnProbeReadKernel, r.stack, 8)
			b.emit(asm.JNE.Imm(asm.R0, 0, novma))
		}
		b.emit(
			asm.LoadMem(asm.R1, asm.RFP, stackRec+recA1, asm.DWord),
			asm.LoadMem(asm.R2, asm.RFP, stackScratch, asm.DWord),
			asm.Sub.Reg(asm.R1, asm.R2),
			asm.StoreMem(asm.RFP, stackRec+recA1, asm.R1, asm.DWord),
			asm.Or.Imm(asm.R8, flagData), // a0/a1 valid
			asm.Ja.Label(exit+"_store"),
		)
		b.mark(novma)
		b.emit(
			asm.Mov.Imm(asm.R1, 0),
			asm.StoreMem(asm.RFP, stackRec+recA0, asm.R1, asm.DWord),
			asm.StoreMem(asm.RFP, stackRec+recA1, asm.R1, asm.DWord),
		)
	}
	b.mark(exit + "_store")
	b.epilogueInflight(exit)
	return b.insns, nil
}

// retProg is the kretprobe shared by all entry programs: it completes the
// record saved under pid_tgid with the duration and return value, reads the
// response of successful write() commands (verbs: the response pointer is the
// first u64 after the 8-byte header, size from out_words; ucma: per ucmResp),
// sends it to the ring buffer and forgets it.
func retProg(ucmResp []respRead) (asm.Instructions, error) {
	return retProgFor(ucmResp, false)
}

// retProgFor builds retProg (small records) or retBigProg (big records).
func retProgFor(ucmResp []respRead, big bool) (asm.Instructions, error) {
	if !regsSupported {
		return nil, fmt.Errorf("kretprobe: architecture not supported (amd64 and arm64 are)")
	}
	b := &builder{}
	const exit, out, del = "exit", "out", "del"
	inflight, size := mapInflight, int32(recSize)
	if big {
		inflight, size = mapBigInflight, int32(bigRecSize)
	}
	b.emit(
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, -8, asm.R0, asm.DWord),
		asm.LoadMapPtr(asm.R1, 0).WithReference(inflight),
	)
	b.fpAddr(asm.R2, -8)
	b.emit(
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, exit),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R7, recTS, asm.DWord),
		asm.Sub.Reg(asm.R0, asm.R1),
		asm.StoreMem(asm.R7, recDur, asm.R0, asm.DWord),
		asm.LoadMem(asm.R1, asm.R6, regRetOffset, asm.DWord),
		asm.StoreMem(asm.R7, recRet, asm.R1, asm.DWord),
		asm.LoadMem(asm.R1, asm.R7, recFlags, asm.Byte),
		asm.Or.Imm(asm.R1, flagReturned),
		asm.StoreMem(asm.R7, recFlags, asm.R1, asm.Byte),
		// Responses only for successful commands whose data was read.
		asm.LoadMem(asm.R1, asm.R7, recRet, asm.DWord),
		asm.JSLT.Imm(asm.R1, 0, out),
		asm.LoadMem(asm.R1, asm.R7, recFlags, asm.Byte),
		asm.And.Imm(asm.R1, flagData),
		asm.JEq.Imm(asm.R1, 0, out),
		asm.LoadMem(asm.R1, asm.R7, recKind, asm.Byte),
		asm.JNE.Imm(asm.R1, int32(KindVerbsWrite), "ucma"),
		// ib_uverbs_cmd_hdr: command@0, in_words@4, out_words@6.
		asm.LoadMem(asm.R2, asm.R7, recData+6, asm.Half),
		asm.LoadMem(asm.R1, asm.R7, recData, asm.Word),
		asm.RSh.Imm(asm.R1, 31), // IB_USER_VERBS_CMD_FLAG_EXTENDED
		asm.JEq.Imm(asm.R1, 0, "words4"),
		asm.LSh.Imm(asm.R2, 3), // extended commands count 8-byte words
		asm.Ja.Label("clamp"),
		asm.LSh.Imm(asm.R2, 2).WithSymbol("words4"),
		asm.JLE.Imm(asm.R2, recRespLen, "sized").WithSymbol("clamp"),
		asm.Mov.Imm(asm.R2, recRespLen),
		asm.JEq.Imm(asm.R2, 0, out).WithSymbol("sized"),
		// The response pointer: first u64 of the command (or of ib_uverbs_ex_cmd_hdr).
		asm.LoadMem(asm.R3, asm.R7, recData+8, asm.DWord),
		asm.JEq.Imm(asm.R3, 0, out),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, recResp),
		asm.FnProbeReadUser.Call(),
		asm.JNE.Imm(asm.R0, 0, out),
		asm.Ja.Label("gotresp"),
	)
	b.mark("ucma")
	notUCM := out
	if big {
		notUCM = "ioctl"
	}
	b.emit(asm.JNE.Imm(asm.R1, int32(KindUCMWrite), notUCM))
	b.emit(asm.LoadMem(asm.R1, asm.R7, recData, asm.Word)) // rdma_ucm_cmd_hdr.cmd
	for _, r := range ucmResp {
		if r.PtrOff < 8 || int(r.PtrOff)+8 > recDataLen || r.Size <= 0 || r.Size > recRespLen {
			return nil, fmt.Errorf("ucma response rule %+v out of range", r)
		}
		next := b.newLabel("nextucm")
		b.emit(
			asm.JNE.Imm(asm.R1, int32(r.Cmd), next),
			asm.LoadMem(asm.R3, asm.R7, recData+r.PtrOff, asm.DWord),
			asm.JEq.Imm(asm.R3, 0, out),
			asm.Mov.Reg(asm.R1, asm.R7),
			asm.Add.Imm(asm.R1, recResp),
			asm.Mov.Imm(asm.R2, r.Size),
			asm.FnProbeReadUser.Call(),
			asm.JNE.Imm(asm.R0, 0, out),
			asm.Ja.Label("gotresp"),
		)
		b.mark(next)
	}
	b.emit(asm.Ja.Label(out))
	if big {
		b.mark("ioctl")
		b.ioctlReturn(out)
	}
	b.mark("gotresp")
	b.emit(
		asm.LoadMem(asm.R1, asm.R7, recFlags, asm.Byte),
		asm.Or.Imm(asm.R1, flagResp),
		asm.StoreMem(asm.R7, recFlags, asm.R1, asm.Byte),
	)
	b.mark(out)
	b.ringOutput(size, -48, -16)
	b.mark(del)
	b.emit(asm.LoadMapPtr(asm.R1, 0).WithReference(inflight))
	b.fpAddr(asm.R2, -8)
	b.emit(asm.FnMapDeleteElem.Call())
	b.mark(exit)
	b.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return b.insns, nil
}

// tpField is one field of a tracepoint record (from its format file).
type tpField struct {
	Offset, Size int
	Signed       bool
}

// cmEventFields are the rdma_cma:cm_event_handler fields the program reads.
// Event and Status are required; the others are copied when present.
type cmEventFields struct {
	CMID, Tos, Event, Status, SrcAddr, DstAddr tpField
}

// copyCtx copies size bytes of the tracepoint record at off into the stack,
// in the widest loads the context's alignment rule (off % size == 0) allows.
func (b *builder) copyCtx(stackOff int16, f tpField, max int) {
	n := min(f.Size, max)
	// Both the context load and the stack store must be aligned to their size.
	aligned := func(i, w int) bool { return n-i >= w && (f.Offset+i)%w == 0 && (int(stackOff)+i)%w == 0 }
	for i := 0; i < n; {
		size, w := asm.Byte, 1
		switch {
		case aligned(i, 8):
			size, w = asm.DWord, 8
		case aligned(i, 4):
			size, w = asm.Word, 4
		case aligned(i, 2):
			size, w = asm.Half, 2
		}
		b.emit(
			asm.LoadMem(asm.R1, asm.R6, int16(f.Offset+i), size),
			asm.StoreMem(asm.RFP, stackOff+int16(i), asm.R1, size),
		)
		i += w
	}
}

// taskRecord fills in the record on the stack at rec the current task
// (tid, tgid, comm), kind, flags and the time, for the programs that run in
// whatever task the kernel is in (clobbers R0-R5).
func (b *builder) taskRecord(rec int16, kind Kind, flags int64) {
	b.emit(
		asm.FnGetCurrentPidTgid.Call(),
		asm.StoreMem(asm.RFP, rec+recTid, asm.R0, asm.Word),
		asm.RSh.Imm(asm.R0, 32),
		asm.StoreMem(asm.RFP, rec+recTgid, asm.R0, asm.Word),
	)
	b.fpAddr(asm.R1, rec+recComm)
	b.emit(asm.Mov.Imm(asm.R2, commLen), asm.FnGetCurrentComm.Call())
	b.emit(
		asm.StoreImm(asm.RFP, rec+recKind, int64(kind), asm.Byte),
		asm.StoreImm(asm.RFP, rec+recFlags, flags, asm.Byte),
		asm.FnKtimeGetNs.Call(),
		asm.StoreMem(asm.RFP, rec+recTS, asm.R0, asm.DWord),
	)
}

// cmEventProg is the tracepoint program for rdma_cma:cm_event_handler. It
// runs in the context that delivers the CM event (often a kernel worker), so
// it applies no pid/comm filter. Record: a0 = event, a1 = status (as u32),
// data = cm_id u32, tos u32, srcaddr [28], dstaddr [28].
func cmEventProg(fl cmEventFields) (asm.Instructions, error) {
	for name, f := range map[string]tpField{"event": fl.Event, "status": fl.Status} {
		if f.Size != 4 && f.Size != 8 {
			return nil, fmt.Errorf("cm_event_handler field %s: size %d, want 4 or 8", name, f.Size)
		}
		if f.Offset < 8 || f.Offset%f.Size != 0 {
			return nil, fmt.Errorf("cm_event_handler field %s: offset %d not usable", name, f.Offset)
		}
	}
	b := &builder{}
	b.emit(asm.Mov.Reg(asm.R6, asm.R1))
	b.zeroRecord()
	b.taskRecord(stackRec, KindCMEvent, flagData)
	for _, x := range []struct {
		f   tpField
		dst int16
	}{{fl.Event, recA0}, {fl.Status, recA1}} {
		sz := asm.Word
		if x.f.Size == 8 {
			sz = asm.DWord
		}
		b.emit(
			asm.LoadMem(asm.R1, asm.R6, int16(x.f.Offset), sz), // zero-extends
			asm.StoreMem(asm.RFP, stackRec+x.dst, asm.R1, asm.DWord),
		)
	}
	for _, x := range []struct {
		f        tpField
		dst, max int
	}{{fl.CMID, 0, 4}, {fl.Tos, 4, 4}, {fl.SrcAddr, 8, 28}, {fl.DstAddr, 36, 28}} {
		if x.f.Size > 0 && x.f.Offset >= 8 {
			b.copyCtx(stackRec+recData+int16(x.dst), x.f, x.max)
		}
	}
	b.fpAddr(asm.R7, stackRec)
	b.ringOutput(recSize, stackScratch-8-dropKeySize, stackScratch)
	b.emit(asm.Mov.Imm(asm.R0, 0), asm.Return())
	return b.insns, nil
}
