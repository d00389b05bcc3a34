// Copyright 2026 The rdmago Authors.

package cm

import (
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// addrOf returns the address of buf's first byte for a command's pointer
// field (Response, OptVal). The caller pins buf (runtime.Pinner) first and
// keeps it pinned until the write that carries the address returns.
func addrOf(buf []byte) uint64 {
	if len(buf) == 0 {
		return 0
	}
	return abi.PtrU64(unsafe.Pointer(unsafe.SliceData(buf)))
}
