// Copyright 2026 The rdmago Authors.

//go:build linux

package capture

import (
	"sync/atomic"
	"unsafe"
)

// loadStatus reads a ring block's block_status with acquire ordering: the
// kernel writes the frames, then the status.
func loadStatus(blk []byte) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&blk[bdBlockStatus])))
}

// storeStatus hands a block back, after the reader is done with its frames.
func storeStatus(blk []byte, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&blk[bdBlockStatus])), v)
}
