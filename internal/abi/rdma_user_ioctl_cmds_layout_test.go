// Copyright 2026 The rdmago Authors.

package abi

// Sizes and offsets below are those of the C header (include/uapi/rdma/rdma_user_ioctl_cmds.h, rdma-core
// kernel-headers 691953d) on x86_64, printed once by a throwaway C program
// (offsetof/sizeof) compiled with gcc outside the repository.

func init() {
	register(layout{cName: "ib_uverbs_attr", goVal: IoctlAttr{}, size: 16, offsets: map[string]uintptr{
		"attr_id":   0,
		"len":       2,
		"flags":     4,
		"attr_data": 6,
		"data":      8,
	}})
	register(layout{cName: "ib_uverbs_ioctl_hdr", goVal: IoctlHdr{}, size: 24, offsets: map[string]uintptr{
		"length":    0,
		"object_id": 2,
		"method_id": 4,
		"num_attrs": 6,
		"reserved1": 8,
		"driver_id": 16,
		"reserved2": 20,
	}})

	registerTails(
		tail{cName: "ib_uverbs_ioctl_hdr", field: "attrs", offset: 24},
	)
}
