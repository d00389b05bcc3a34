// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"bytes"
	"encoding"
	"testing"
)

var (
	_ encoding.BinaryMarshaler   = RemoteBuffer{}
	_ encoding.BinaryUnmarshaler = (*RemoteBuffer)(nil)
)

func TestRemoteBufferBinary(t *testing.T) {
	b := RemoteBuffer{Addr: 0x0102030405060708, RKey: 0x090a0b0c, Len: 0x0d0e0f10}
	p, err := b.MarshalBinary()
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	if err != nil || !bytes.Equal(p, want) {
		t.Fatalf("MarshalBinary = %x %v, want %x", p, err, want)
	}
	var got RemoteBuffer
	if err := got.UnmarshalBinary(p); err != nil || got != b {
		t.Errorf("UnmarshalBinary = %+v %v, want %+v", got, err, b)
	}
	for _, n := range []int{0, 15, 17, 56} {
		if err := got.UnmarshalBinary(make([]byte, n)); err == nil {
			t.Errorf("UnmarshalBinary of %d bytes: no error", n)
		}
	}
}

func FuzzRemoteBufferUnmarshal(f *testing.F) {
	f.Add(make([]byte, 16))
	f.Add([]byte{1, 2, 3})
	f.Add(bytes.Repeat([]byte{0xff}, 16))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b RemoteBuffer
		if err := b.UnmarshalBinary(data); err != nil {
			if len(data) == RemoteBufferSize {
				t.Fatalf("16 bytes refused: %v", err)
			}
			return
		}
		p, err := b.MarshalBinary()
		if err != nil || !bytes.Equal(p, data) {
			t.Fatalf("round trip of %x gave %x %v", data, p, err)
		}
	})
}
