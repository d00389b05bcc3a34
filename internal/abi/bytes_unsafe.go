// Copyright 2026 The rdmago Authors.

package abi

import "unsafe"

// Bytes returns the in-memory bytes of the ABI struct *p (host byte order, the
// order the kernel reads). The slice aliases *p.
func Bytes[T any](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// PtrU64 returns the address p points at, for the __aligned_u64 pointer fields
// of the ABI (Response, Start, MmapInfoAddr, IoctlAttr.Data). The caller must
// keep the memory alive and in place (heap memory pinned with runtime.Pinner,
// or mmap'd memory) until the kernel is done with it.
func PtrU64(p unsafe.Pointer) uint64 { return uint64(uintptr(p)) }
