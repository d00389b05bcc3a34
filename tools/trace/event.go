// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/rdmago/rdmago/internal/abi"
)

// Kind says which probe produced an Event.
type Kind uint8

// Event kinds.
const (
	KindVerbsWrite Kind = 1 // kprobe+kretprobe ib_uverbs_write: a write() command on /dev/infiniband/uverbsN
	KindVerbsIoctl Kind = 2 // kprobe+kretprobe ib_uverbs_ioctl: RDMA_VERBS_IOCTL
	KindVerbsMmap  Kind = 3 // kprobe+kretprobe ib_uverbs_mmap
	KindUCMWrite   Kind = 4 // kprobe+kretprobe ucma_write: a command on /dev/infiniband/rdma_cm
	KindCMEvent    Kind = 5 // tracepoint rdma_cma:cm_event_handler
	// KindCompletion is a completion rxe posted to a user CQ (the
	// rxe_cq_post probe): Data is its struct ib_uverbs_wc; PID, TID and
	// Comm are the task rxe posted it in, not necessarily the QP's process
	// (Formatter.Line names the QP's owner when it knows it).
	KindCompletion Kind = 6
)

func (k Kind) String() string {
	switch k {
	case KindVerbsWrite:
		return "uverbs"
	case KindVerbsIoctl:
		return "uverbs-ioctl"
	case KindVerbsMmap:
		return "uverbs-mmap"
	case KindUCMWrite:
		return "ucma"
	case KindCMEvent:
		return "cm"
	case KindCompletion:
		return "cq"
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// The record the eBPF programs fill, in the host's byte order. The programs in
// progs.go write these offsets; Decode reads them.
//
//	off  size  field
//	  0    8   ts      bpf_ktime_get_ns() at entry (CLOCK_MONOTONIC)
//	  8    8   dur     ns from entry to return (kretprobe kinds)
//	 16    8   ret     return value register at kretprobe
//	 24    4   tgid
//	 28    4   tid
//	 32    1   kind
//	 33    1   flags   recReturned | recData | recResp | recDataShort
//	 36    4   dev     kernel dev_t (MAJOR<<20|MINOR) of the file, 0 if unknown
//	 40   16   comm
//	 56    8   a0      write/ucma: count; ioctl: cmd; mmap: vm_pgoff; cm: event
//	 64    8   a1      mmap: vm_end-vm_start; cm: status
//	 72  128   data    write/ucma: first 128 bytes of the user buffer; ioctl:
//	                   ib_uverbs_ioctl_hdr + attrs; cm: cm_id, tos, srcaddr, dstaddr
//	200   24   resp    first bytes of the command's response, read at return
//
// A completion record (KindCompletion) has the struct ib_uverbs_wc in
// data. The record of a POST_SEND doorbell on an rxe user QP (flagWQE)
// carries, from data+64 (past the command, which is 32 bytes when it
// carries no WR), the WQE digest read from the send ring at rxe_post_send:
// the first 56 bytes of struct rxe_send_wqe, its dma.length, and the
// ring's producer index after the post (progs_rxe.go).
//
// ioctl and ucma records are longer (bigRecSize): the extension that follows
// the record above is
//
//	224    4   ioctl: bit i set when slot i was read at entry (an input
//	           buffer); ucma: bytes of the command copied to 232
//	228    4   ioctl: bit i set when slot i was read at return (an output
//	           the kernel marked UVERBS_ATTR_F_VALID_OUTPUT)
//	232  256   ioctl: the ib_uverbs_attr array (ioctlMaxAttrs), re-read at
//	           return so that new object handles and fds are filled in;
//	           ucma: the command, up to ucmDataMax bytes
//	488 2048   ioctl: ioctlMaxAttrs slots of ioctlSlotLen bytes, slot i
//	           holding the first bytes attribute i's pointer points to
//
// For ioctl, a1 is the user pointer of the ib_uverbs_ioctl_hdr.
const (
	recTS      = 0
	recDur     = 8
	recRet     = 16
	recTgid    = 24
	recTid     = 28
	recKind    = 32
	recFlags   = 33
	recDev     = 36
	recComm    = 40
	recA0      = 56
	recA1      = 64
	recData    = 72
	recResp    = 200
	recSize    = 224
	recDataLen = recResp - recData
	recRespLen = recSize - recResp
	commLen    = 16

	extMaskIn     = recSize
	extMaskOut    = recSize + 4
	extAttrs      = recSize + 8
	ioctlMaxAttrs = 16
	extSlots      = extAttrs + ioctlMaxAttrs*sizeofIoctlAttr
	ioctlSlotLen  = 128
	bigRecSize    = extSlots + ioctlMaxAttrs*ioctlSlotLen

	extUCMLen  = extMaskIn
	extUCMData = extAttrs
	ucmDataMax = 512
)

// Record flags.
const (
	flagReturned  = 1 << 0 // ret and dur are set
	flagData      = 1 << 1 // data holds recDataLen bytes read from the user
	flagResp      = 1 << 2 // resp was read from the command's response buffer
	flagDataShort = 1 << 3 // only the 8-byte command header could be read
	flagExt       = 1 << 4 // the extension of a big record was read
	flagWQE       = 1 << 5 // data+wqeDigestOff holds a WQE digest (POST_SEND on rxe)
)

// Event is one decoded record.
type Event struct {
	Kind     Kind
	TS       uint64 // CLOCK_MONOTONIC ns at entry
	Dur      uint64 // ns; 0 unless Returned
	Ret      int64  // return value; negative errno on failure
	Returned bool   // the kretprobe saw the return (Ret and Dur are valid)
	PID, TID uint32 // tgid and thread id
	Comm     string
	Dev      uint32 // kernel dev_t of the char device, 0 if unknown
	A0, A1   uint64 // kind-specific, see the record layout
	Data     []byte // kind-specific payload (nil when it could not be read)
	Resp     []byte // response bytes read at return (nil when not read)

	// IoctlAttrs is the ib_uverbs_attr array of a KindVerbsIoctl event (its
	// first ioctlMaxAttrs entries), as re-read at return: the kernel has
	// written the handles (fds) of new objects into Data. Nil when unread.
	IoctlAttrs []abi.IoctlAttr
	// IoctlBufs[i] is what IoctlAttrs[i] points to (at most ioctlSlotLen
	// bytes): an input buffer (Len > 8) read at entry, or an output the
	// kernel wrote (UVERBS_ATTR_F_VALID_OUTPUT) read at return. Nil for
	// inline attributes and buffers that could not be read.
	IoctlBufs [][]byte

	// WQE is the digest of the last send WQE of a POST_SEND doorbell on an
	// rxe user QP, read from the send ring by the rxe_post_send probe
	// (wqeDigestOff in the record); nil otherwise.
	WQE []byte
}

// DecodeEvent parses one record written by the programs. b must be exactly
// one record.
func DecodeEvent(b []byte) (Event, error) {
	if len(b) != recSize && len(b) != bigRecSize {
		return Event{}, fmt.Errorf("decode event: %d bytes, want %d or %d", len(b), recSize, bigRecSize)
	}
	bo := binary.NativeEndian
	e := Event{
		Kind: Kind(b[recKind]),
		TS:   bo.Uint64(b[recTS:]),
		Dur:  bo.Uint64(b[recDur:]),
		Ret:  int64(bo.Uint64(b[recRet:])),
		PID:  bo.Uint32(b[recTgid:]),
		TID:  bo.Uint32(b[recTid:]),
		Dev:  bo.Uint32(b[recDev:]),
		A0:   bo.Uint64(b[recA0:]),
		A1:   bo.Uint64(b[recA1:]),
	}
	if e.Kind < KindVerbsWrite || e.Kind > KindCompletion {
		return Event{}, fmt.Errorf("decode event: unknown kind %d", e.Kind)
	}
	comm := b[recComm : recComm+commLen]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	e.Comm = string(comm)
	flags := b[recFlags]
	e.Returned = flags&flagReturned != 0
	if e.Kind == KindVerbsMmap && e.Returned {
		// ib_uverbs_mmap returns int: only the low 32 bits of the register count.
		e.Ret = int64(int32(e.Ret))
	}
	switch {
	case flags&flagData != 0:
		e.Data = bytes.Clone(b[recData : recData+recDataLen])
	case flags&flagDataShort != 0:
		e.Data = bytes.Clone(b[recData : recData+8])
	}
	if flags&flagWQE != 0 && flags&flagData != 0 {
		e.WQE = bytes.Clone(b[recData+wqeDigestOff : recData+recDataLen])
	}
	if flags&flagResp != 0 {
		e.Resp = bytes.Clone(b[recResp : recResp+recRespLen])
	}
	if len(b) == bigRecSize && flags&flagExt != 0 {
		decodeExt(&e, b)
	}
	return e, nil
}

// decodeExt reads the extension of a big record (see the layout above).
func decodeExt(e *Event, b []byte) {
	bo := binary.NativeEndian
	switch e.Kind {
	case KindUCMWrite:
		// The longer copy of the command replaces the first recDataLen bytes.
		if n := int(bo.Uint32(b[extUCMLen:])); n > 0 && n <= ucmDataMax {
			e.Data = bytes.Clone(b[extUCMData : extUCMData+n])
		}
	case KindVerbsIoctl:
		var hdr abi.IoctlHdr
		if !decode(e.Data, &hdr) {
			return
		}
		n := min(int(hdr.NumAttrs), ioctlMaxAttrs)
		in, out := bo.Uint32(b[extMaskIn:]), bo.Uint32(b[extMaskOut:])
		e.IoctlAttrs = make([]abi.IoctlAttr, n)
		e.IoctlBufs = make([][]byte, n)
		for i := range n {
			decode(b[extAttrs+i*sizeofIoctlAttr:], &e.IoctlAttrs[i])
			if (in|out)&(1<<i) != 0 {
				l := min(int(e.IoctlAttrs[i].Len), ioctlSlotLen)
				off := extSlots + i*ioctlSlotLen
				e.IoctlBufs[i] = bytes.Clone(b[off : off+l])
			}
		}
	}
}
