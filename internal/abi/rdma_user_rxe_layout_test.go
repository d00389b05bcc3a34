// Copyright 2026 The rdmago Authors.

package abi

// Sizes and offsets below are those of the C header (include/uapi/rdma/rdma_user_rxe.h, rdma-core
// kernel-headers 691953d) on x86_64, printed once by a throwaway C program
// (offsetof/sizeof) compiled with gcc outside the repository.

func init() {
	register(layout{cName: "rxe_global_route", goVal: RxeGlobalRoute{}, size: 24, offsets: map[string]uintptr{
		"dgid":          0,
		"flow_label":    16,
		"sgid_index":    20,
		"hop_limit":     21,
		"traffic_class": 22,
	}})
	register(layout{cName: "rxe_av", goVal: RxeAV{}, size: 88, offsets: map[string]uintptr{
		"port_num":     0,
		"network_type": 1,
		"dmac":         2,
		"grh":          8,
		"sgid_addr":    32,
		"dgid_addr":    60,
	}})
	register(layout{cName: "rxe_send_wr", goVal: RxeSendWR{}, size: 144, offsets: map[string]uintptr{
		"wr_id":      0,
		"reserved":   8,
		"opcode":     12,
		"send_flags": 16,
		"imm_data":   20,
		"wr":         24,
	}})
	register(layout{cName: "rxe_sge", goVal: RxeSGE{}, size: 16, offsets: map[string]uintptr{
		"addr":   0,
		"length": 8,
		"lkey":   12,
	}})
	register(layout{cName: "mminfo", goVal: MMInfo{}, size: 16, offsets: map[string]uintptr{
		"offset": 0,
		"size":   8,
		"pad":    12,
	}})
	register(layout{cName: "rxe_dma_info", goVal: RxeDMAInfo{}, size: 24, offsets: map[string]uintptr{
		"length":     0,
		"resid":      4,
		"cur_sge":    8,
		"num_sge":    12,
		"sge_offset": 16,
		"reserved":   20,
	}})
	register(layout{cName: "rxe_send_wqe", goVal: RxeSendWQE{}, size: 208, offsets: map[string]uintptr{
		"wr":            0,
		"status":        144,
		"state":         148,
		"iova":          152,
		"mask":          160,
		"first_psn":     164,
		"last_psn":      168,
		"ack_length":    172,
		"ssn":           176,
		"has_rd_atomic": 180,
		"dma":           184,
	}})
	register(layout{cName: "rxe_recv_wqe", goVal: RxeRecvWQE{}, size: 40, offsets: map[string]uintptr{
		"wr_id":    0,
		"reserved": 8,
		"padding":  12,
		"dma":      16,
	}})
	register(layout{cName: "rxe_create_ah_resp", goVal: RxeCreateAHResp{}, size: 8, offsets: map[string]uintptr{
		"ah_num":   0,
		"reserved": 4,
	}})
	register(layout{cName: "rxe_create_cq_resp", goVal: RxeCreateCQResp{}, size: 16, offsets: map[string]uintptr{
		"mi": 0,
	}})
	register(layout{cName: "rxe_resize_cq_resp", goVal: RxeResizeCQResp{}, size: 16, offsets: map[string]uintptr{
		"mi": 0,
	}})
	register(layout{cName: "rxe_create_qp_resp", goVal: RxeCreateQPResp{}, size: 32, offsets: map[string]uintptr{
		"rq_mi": 0,
		"sq_mi": 16,
	}})
	register(layout{cName: "rxe_create_srq_resp", goVal: RxeCreateSRQResp{}, size: 24, offsets: map[string]uintptr{
		"mi":       0,
		"srq_num":  16,
		"reserved": 20,
	}})
	register(layout{cName: "rxe_modify_srq_cmd", goVal: RxeModifySRQCmd{}, size: 8, offsets: map[string]uintptr{
		"mmap_info_addr": 0,
	}})
	register(layout{cName: "rxe_queue_buf", goVal: RxeQueueBuf{}, size: 384, offsets: map[string]uintptr{
		"log2_elem_size": 0,
		"index_mask":     4,
		"pad_1":          8,
		"producer_index": 128,
		"pad_2":          132,
		"consumer_index": 256,
		"pad_3":          260,
	}})

	registerTails(
		tail{cName: "rxe_dma_info", field: "inline_data", offset: 24},
		tail{cName: "rxe_dma_info", field: "atomic_wr", offset: 24},
		tail{cName: "rxe_dma_info", field: "sge", offset: 24},
		tail{cName: "rxe_send_wqe", field: "dma.inline_data", offset: 208},
		tail{cName: "rxe_send_wqe", field: "dma.atomic_wr", offset: 208},
		tail{cName: "rxe_send_wqe", field: "dma.sge", offset: 208},
		tail{cName: "rxe_recv_wqe", field: "dma.sge", offset: 40},
		tail{cName: "rxe_queue_buf", field: "data", offset: 384},
	)
	registerOverlays(
		overlay{cName: "rxe_send_wr.wr.flush", goVal: RxeWRFlush{}, base: 24, size: 24, offsets: map[string]uintptr{
			"remote_addr": 0,
			"length":      8,
			"rkey":        12,
			"type":        16,
			"level":       17,
		}},
		overlay{cName: "rxe_send_wr.wr.rdma", goVal: RxeWRRdma{}, base: 24, size: 16, offsets: map[string]uintptr{
			"remote_addr": 0,
			"rkey":        8,
			"reserved":    12,
		}},
		overlay{cName: "rxe_send_wr.wr.atomic", goVal: RxeWRAtomic{}, base: 24, size: 32, offsets: map[string]uintptr{
			"remote_addr": 0,
			"compare_add": 8,
			"swap":        16,
			"rkey":        24,
			"reserved":    28,
		}},
		overlay{cName: "rxe_send_wr.wr.ud", goVal: RxeWRUD{}, base: 24, size: 120, offsets: map[string]uintptr{
			"remote_qpn":  0,
			"remote_qkey": 4,
			"pkey_index":  8,
			"reserved":    10,
			"ah_num":      12,
			"pad":         16,
			"av":          32,
		}},
		overlay{cName: "rxe_send_wr.wr.mw", goVal: RxeWRMW{}, base: 24, size: 32, offsets: map[string]uintptr{
			"addr":    0,
			"length":  8,
			"mr_lkey": 16,
			"mw_rkey": 20,
			"rkey":    24,
			"access":  28,
		}},
	)
}
