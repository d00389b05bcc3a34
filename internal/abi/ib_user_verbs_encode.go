// Copyright 2026 The rdmago Authors.

package abi

import (
	"encoding/binary"
	"fmt"
)

// Encoding helpers for the write() and ioctl framing. They compute word counts
// and attribute encodings; they perform no system call.

// NewCmdHdr returns the header of a plain (non-extended) write() command.
// reqLen is the length of everything after the header (core command plus driver
// data), respLen the length of the response buffer (core plus driver response).
// Both must be multiples of 4: the kernel counts 4-byte words and requires
// InWords*4 to equal the length of the write.
func NewCmdHdr(command uint32, reqLen, respLen int) (CmdHdr, error) {
	const hdr = 8 // sizeof(struct ib_uverbs_cmd_hdr)
	if reqLen < 0 || respLen < 0 || (hdr+reqLen)%4 != 0 || respLen%4 != 0 {
		return CmdHdr{}, fmt.Errorf("uverbs command %d: lengths %d/%d are not multiples of 4", command, reqLen, respLen)
	}
	in, out := (hdr+reqLen)/4, respLen/4
	if in > 0xffff || out > 0xffff {
		return CmdHdr{}, fmt.Errorf("uverbs command %d: %d/%d words do not fit in 16 bits", command, in, out)
	}
	return CmdHdr{Command: command, InWords: uint16(in), OutWords: uint16(out)}, nil
}

// NewExCmdHdr returns the two headers of an extended write() command: the
// command word gets IB_USER_VERBS_CMD_FLAG_EXTENDED, and the core and driver
// parts of request and response are counted separately in 8-byte words, headers
// excluded. response is the address of the response buffer, or 0 for none.
func NewExCmdHdr(command uint32, coreIn, drvIn, coreOut, drvOut int, response uint64) (CmdHdr, ExCmdHdr, error) {
	for _, n := range [...]int{coreIn, drvIn, coreOut, drvOut} {
		if n < 0 || n%8 != 0 || n/8 > 0xffff {
			return CmdHdr{}, ExCmdHdr{}, fmt.Errorf("uverbs extended command %d: length %d is not a multiple of 8 below 512 KiB", command, n)
		}
	}
	h := CmdHdr{
		Command:  command | IB_USER_VERBS_CMD_FLAG_EXTENDED,
		InWords:  uint16(coreIn / 8),
		OutWords: uint16(coreOut / 8),
	}
	x := ExCmdHdr{
		Response:         response,
		ProviderInWords:  uint16(drvIn / 8),
		ProviderOutWords: uint16(drvOut / 8),
	}
	return h, x, nil
}

// IoctlLength is the IoctlHdr.Length of a command with n attributes.
func IoctlLength(n int) uint16 { return uint16(24 + 16*n) }

// AttrConstIn returns a mandatory PTR_IN attribute carrying v inline, the
// encoding of rdma-core's fill_attr_const_in and fill_attr_in_uint64.
func AttrConstIn(id uint16, v uint64) IoctlAttr {
	return IoctlAttr{AttrID: id, Len: 8, Flags: UVERBS_ATTR_F_MANDATORY, Data: v}
}

// AttrInline returns a mandatory PTR_IN attribute whose value (at most 8 bytes)
// is carried in Data, as the kernel expects for any attribute with Len <= 8.
func AttrInline(id uint16, b []byte) IoctlAttr {
	if len(b) > 8 {
		panic("abi: AttrInline value longer than 8 bytes")
	}
	var d [8]byte
	copy(d[:], b)
	return IoctlAttr{AttrID: id, Len: uint16(len(b)), Flags: UVERBS_ATTR_F_MANDATORY, Data: binary.NativeEndian.Uint64(d[:])}
}

// AttrPtr returns a mandatory PTR_IN or PTR_OUT attribute pointing at n bytes at
// address addr (see PtrU64). Inputs of at most 8 bytes must use AttrInline.
func AttrPtr(id uint16, addr uint64, n int) IoctlAttr {
	return IoctlAttr{AttrID: id, Len: uint16(n), Flags: UVERBS_ATTR_F_MANDATORY, Data: addr}
}

// AttrIDR returns a mandatory IDR attribute naming the object handle h (for
// UVERBS_ACCESS_NEW attributes the kernel writes the new handle into Data).
func AttrIDR(id uint16, h uint32) IoctlAttr {
	return IoctlAttr{AttrID: id, Flags: UVERBS_ATTR_F_MANDATORY, Data: uint64(h)}
}

// AttrFD returns a mandatory FD attribute; for an FD_OUT the kernel writes the
// new descriptor into Data.
func AttrFD(id uint16, fd int32) IoctlAttr {
	return IoctlAttr{AttrID: id, Flags: UVERBS_ATTR_F_MANDATORY, Data: uint64(int64(fd))}
}

// Optional returns a with UVERBS_ATTR_F_MANDATORY cleared: a kernel that does
// not know the attribute then ignores it instead of failing.
func (a IoctlAttr) Optional() IoctlAttr {
	a.Flags &^= UVERBS_ATTR_F_MANDATORY
	return a
}

// Valid reports whether the kernel wrote this PTR_OUT attribute.
func (a IoctlAttr) Valid() bool { return a.Flags&UVERBS_ATTR_F_VALID_OUTPUT != 0 }
