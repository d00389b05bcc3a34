// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"encoding/binary"
	"fmt"
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
)

// Record flags.
const (
	flagReturned  = 1 << 0 // ret and dur are set
	flagData      = 1 << 1 // data holds recDataLen bytes read from the user
	flagResp      = 1 << 2 // resp was read from the command's response buffer
	flagDataShort = 1 << 3 // only the 8-byte command header could be read
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
}

// DecodeEvent parses one record written by the programs. b must be exactly
// one record.
func DecodeEvent(b []byte) (Event, error) {
	if len(b) != recSize {
		return Event{}, fmt.Errorf("decode event: %d bytes, want %d", len(b), recSize)
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
	if e.Kind < KindVerbsWrite || e.Kind > KindCMEvent {
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
	if flags&flagResp != 0 {
		e.Resp = bytes.Clone(b[recResp : recResp+recRespLen])
	}
	return e, nil
}
