// Copyright 2026 The rdmago Authors.

package abi

// Sizes and offsets below are those of the C header (include/uapi/rdma/ib_user_ioctl_verbs.h, rdma-core
// kernel-headers 691953d) on x86_64, printed once by a throwaway C program
// (offsetof/sizeof) compiled with gcc outside the repository.

func init() {
	register(layout{cName: "ib_uverbs_query_port_resp_ex", goVal: QueryPortRespEx{}, size: 48, offsets: map[string]uintptr{
		"legacy_resp":     0,
		"port_cap_flags2": 40,
		"reserved":        42,
		"active_speed_ex": 44,
	}})
	register(layout{cName: "ib_uverbs_qp_cap", goVal: QPCap{}, size: 20, offsets: map[string]uintptr{
		"max_send_wr":     0,
		"max_recv_wr":     4,
		"max_send_sge":    8,
		"max_recv_sge":    12,
		"max_inline_data": 16,
	}})
	register(layout{cName: "ib_uverbs_gid_entry", goVal: GIDEntry{}, size: 32, offsets: map[string]uintptr{
		"gid":            0,
		"gid_index":      16,
		"port_num":       20,
		"gid_type":       24,
		"netdev_ifindex": 28,
	}})
	register(layout{cName: "ib_uverbs_buffer_desc", goVal: BufferDesc{}, size: 32, offsets: map[string]uintptr{
		"type":           0,
		"fd":             4,
		"flags":          8,
		"optional_flags": 12,
		"addr":           16,
		"length":         24,
	}})

	registerTails()
}
