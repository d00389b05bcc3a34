// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"sync/atomic"
	"unsafe"
)

// loadSGE reads an entry of our target SGL, which the peer's RDMA WRITE may
// be filling at this moment (a later credit update than the one being
// processed): the length first, and the address and key only when it is
// set, each with one atomic load. The writer (the HCA's DMA, rxe's memcpy)
// fills the 16 bytes in address order, so a length seen set means the
// address and key before it are in place; a zero length means "not yet".
// b is 8-byte aligned (an entry of the page-aligned buffer).
func loadSGE(b []byte) rsSGE {
	if len(b) < sgeLen {
		panic("rsocket: short SGE")
	}
	p := unsafe.Pointer(&b[0])
	n := atomic.LoadUint32((*uint32)(unsafe.Add(p, 12)))
	if n == 0 {
		return rsSGE{}
	}
	return rsSGE{
		Addr:   atomic.LoadUint64((*uint64)(p)),
		Key:    atomic.LoadUint32((*uint32)(unsafe.Add(p, 8))),
		Length: n,
	}
}

// clearSGE marks an entry used up (its length zero) before the data that
// uses up its buffer is posted.
func clearSGE(b []byte) {
	if len(b) < sgeLen {
		panic("rsocket: short SGE")
	}
	atomic.StoreUint32((*uint32)(unsafe.Add(unsafe.Pointer(&b[0]), 12)), 0)
}
