// Copyright 2026 The rdmago Authors.

package abi

import (
	"structs"
	"unsafe"
)

// This file is include/uapi/rdma/rdma_user_ioctl_cmds.h: the framing of the
// RDMA_VERBS_IOCTL command on /dev/infiniband/uverbsN (Linux 4.16+), ported by
// hand from rdma-core's kernel-headers (commit 691953d) and checked against the
// BTF of Linux 6.1 and 6.12.
//
// An ioctl command is one IoctlHdr immediately followed by NumAttrs IoctlAttr
// records; Length is the size of the whole block.

// RDMA_IOCTL_MAGIC is the ioctl type byte of the RDMA subsystem.
const RDMA_IOCTL_MAGIC = 0x1b

// RDMA_VERBS_IOCTL is _IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr),
// computed from the size of IoctlHdr (0xc0181b01 on the common Linux ports).
const RDMA_VERBS_IOCTL = _IOC_READ_WRITE<<_IOC_DIRSHIFT |
	uint32(unsafe.Sizeof(IoctlHdr{}))<<_IOC_SIZESHIFT |
	RDMA_IOCTL_MAGIC<<_IOC_TYPESHIFT | 1<<_IOC_NRSHIFT

// ioctl number layout shared by all Linux ports (include/uapi/asm-generic/ioctl.h).
const (
	_IOC_NRSHIFT   = 0
	_IOC_TYPESHIFT = 8
	_IOC_SIZESHIFT = 16
)

// Attribute flags.
const (
	UVERBS_ATTR_F_MANDATORY    = 1 << 0 // user input: fail if the kernel does not know the attribute
	UVERBS_ATTR_F_VALID_OUTPUT = 1 << 1 // kernel output: this PTR_OUT was written
)

// IoctlAttr is struct ib_uverbs_attr (include/uapi/rdma/rdma_user_ioctl_cmds.h).
// AttrData is the union attr_data {struct {u8 elem_id; u8 reserved} enum_data;
// u16 reserved}: byte 0 is elem_id for enum attributes. Data is the anonymous
// union {__aligned_u64 data; __s64 data_s64}, named after its first member: the
// value of inline attributes (Len <= 8), a pointer for longer buffers, an object
// handle, or an fd.
type IoctlAttr struct {
	_        structs.HostLayout
	AttrID   uint16
	Len      uint16
	Flags    uint16
	AttrData [2]uint8
	Data     uint64
}

// IoctlHdr is struct ib_uverbs_ioctl_hdr
// (include/uapi/rdma/rdma_user_ioctl_cmds.h). DriverID must equal the device's
// enum rdma_driver_id or the kernel answers EINVAL.
type IoctlHdr struct {
	_         structs.HostLayout
	Length    uint16
	ObjectID  uint16
	MethodID  uint16
	NumAttrs  uint16
	Reserved1 uint64
	DriverID  uint32
	Reserved2 uint32
}
