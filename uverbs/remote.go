// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"encoding/binary"
	"fmt"
	"math"
)

// RemoteBufferSize is the length of a RemoteBuffer's binary form.
const RemoteBufferSize = 16

// RemoteBuffer is what a peer needs to RDMA READ or WRITE a registered
// buffer: its address, its rkey and its length (the three fields of
// ibv_rc_pingpong-style "remote address" exchanges). MR.Descriptor gives
// it; send it to the peer (in cm private data, over a socket...) with
// MarshalBinary, and decode it there with UnmarshalBinary.
type RemoteBuffer struct {
	Addr uint64 // the buffer's address in the owner's address space (SendWR.RemoteAddr)
	RKey uint32 // the MR's rkey (SendWR.RKey)
	Len  uint32 // the buffer's length in bytes
}

// Descriptor returns the RemoteBuffer that describes mr to a peer: its
// address, rkey and length (capped at 4 GiB − 1, the most one RDMA
// operation moves).
func (mr *MR) Descriptor() RemoteBuffer {
	return RemoteBuffer{Addr: mr.Addr(), RKey: mr.rkey, Len: uint32(min(len(mr.buf), math.MaxUint32))}
}

// MarshalBinary encodes b in RemoteBufferSize (16) bytes, big-endian:
// bytes 0-7 Addr, 8-11 RKey, 12-15 Len.
func (b RemoteBuffer) MarshalBinary() ([]byte, error) {
	return b.AppendBinary(make([]byte, 0, RemoteBufferSize))
}

// AppendBinary appends the 16 bytes of MarshalBinary to p.
func (b RemoteBuffer) AppendBinary(p []byte) ([]byte, error) {
	p = binary.BigEndian.AppendUint64(p, b.Addr)
	p = binary.BigEndian.AppendUint32(p, b.RKey)
	return binary.BigEndian.AppendUint32(p, b.Len), nil
}

// UnmarshalBinary decodes what MarshalBinary encoded. data must be exactly
// RemoteBufferSize bytes: slice longer input (such as cm private data, which
// the wire pads with zeros) first.
func (b *RemoteBuffer) UnmarshalBinary(data []byte) error {
	if len(data) != RemoteBufferSize {
		return fmt.Errorf("uverbs: remote buffer descriptor of %d bytes, want %d", len(data), RemoteBufferSize)
	}
	b.Addr = binary.BigEndian.Uint64(data)
	b.RKey = binary.BigEndian.Uint32(data[8:])
	b.Len = binary.BigEndian.Uint32(data[12:])
	return nil
}

func (b RemoteBuffer) String() string {
	return fmt.Sprintf("remote buffer %#x+%d rkey %#x", b.Addr, b.Len, b.RKey)
}
