// Copyright 2026 The rdmago Authors.

package abi

// Sizes and offsets below are those of the C header (include/uapi/rdma/ib_user_verbs.h, rdma-core
// kernel-headers 691953d) on x86_64, printed once by a throwaway C program
// (offsetof/sizeof) compiled with gcc outside the repository.

func init() {
	register(layout{cName: "ib_uverbs_async_event_desc", goVal: AsyncEventDesc{}, size: 16, offsets: map[string]uintptr{
		"element":    0,
		"event_type": 8,
		"reserved":   12,
	}})
	register(layout{cName: "ib_uverbs_comp_event_desc", goVal: CompEventDesc{}, size: 8, offsets: map[string]uintptr{
		"cq_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_cq_moderation_caps", goVal: CQModerationCaps{}, size: 8, offsets: map[string]uintptr{
		"max_cq_moderation_count":  0,
		"max_cq_moderation_period": 2,
		"reserved":                 4,
	}})
	register(layout{cName: "ib_uverbs_cmd_hdr", goVal: CmdHdr{}, size: 8, offsets: map[string]uintptr{
		"command":   0,
		"in_words":  4,
		"out_words": 6,
	}})
	register(layout{cName: "ib_uverbs_ex_cmd_hdr", goVal: ExCmdHdr{}, size: 16, offsets: map[string]uintptr{
		"response":           0,
		"provider_in_words":  8,
		"provider_out_words": 10,
		"cmd_hdr_reserved":   12,
	}})
	register(layout{cName: "ib_uverbs_get_context", goVal: GetContext{}, size: 8, offsets: map[string]uintptr{
		"response": 0,
	}})
	register(layout{cName: "ib_uverbs_get_context_resp", goVal: GetContextResp{}, size: 8, offsets: map[string]uintptr{
		"async_fd":         0,
		"num_comp_vectors": 4,
	}})
	register(layout{cName: "ib_uverbs_query_device", goVal: QueryDevice{}, size: 8, offsets: map[string]uintptr{
		"response": 0,
	}})
	register(layout{cName: "ib_uverbs_query_device_resp", goVal: QueryDeviceResp{}, size: 176, offsets: map[string]uintptr{
		"fw_ver":                    0,
		"node_guid":                 8,
		"sys_image_guid":            16,
		"max_mr_size":               24,
		"page_size_cap":             32,
		"vendor_id":                 40,
		"vendor_part_id":            44,
		"hw_ver":                    48,
		"max_qp":                    52,
		"max_qp_wr":                 56,
		"device_cap_flags":          60,
		"max_sge":                   64,
		"max_sge_rd":                68,
		"max_cq":                    72,
		"max_cqe":                   76,
		"max_mr":                    80,
		"max_pd":                    84,
		"max_qp_rd_atom":            88,
		"max_ee_rd_atom":            92,
		"max_res_rd_atom":           96,
		"max_qp_init_rd_atom":       100,
		"max_ee_init_rd_atom":       104,
		"atomic_cap":                108,
		"max_ee":                    112,
		"max_rdd":                   116,
		"max_mw":                    120,
		"max_raw_ipv6_qp":           124,
		"max_raw_ethy_qp":           128,
		"max_mcast_grp":             132,
		"max_mcast_qp_attach":       136,
		"max_total_mcast_qp_attach": 140,
		"max_ah":                    144,
		"max_fmr":                   148,
		"max_map_per_fmr":           152,
		"max_srq":                   156,
		"max_srq_wr":                160,
		"max_srq_sge":               164,
		"max_pkeys":                 168,
		"local_ca_ack_delay":        170,
		"phys_port_cnt":             171,
		"reserved":                  172,
	}})
	register(layout{cName: "ib_uverbs_ex_query_device", goVal: ExQueryDevice{}, size: 8, offsets: map[string]uintptr{
		"comp_mask": 0,
		"reserved":  4,
	}})
	register(layout{cName: "ib_uverbs_odp_caps", goVal: ODPCaps{}, size: 24, offsets: map[string]uintptr{
		"general_caps":       0,
		"per_transport_caps": 8,
		"reserved":           20,
	}})
	register(layout{cName: "ib_uverbs_rss_caps", goVal: RSSCaps{}, size: 16, offsets: map[string]uintptr{
		"supported_qpts":                 0,
		"max_rwq_indirection_tables":     4,
		"max_rwq_indirection_table_size": 8,
		"reserved":                       12,
	}})
	register(layout{cName: "ib_uverbs_tm_caps", goVal: TMCaps{}, size: 24, offsets: map[string]uintptr{
		"max_rndv_hdr_size": 0,
		"max_num_tags":      4,
		"flags":             8,
		"max_ops":           12,
		"max_sge":           16,
		"reserved":          20,
	}})
	register(layout{cName: "ib_uverbs_ex_query_device_resp", goVal: ExQueryDeviceResp{}, size: 304, offsets: map[string]uintptr{
		"base":                0,
		"comp_mask":           176,
		"response_length":     180,
		"odp_caps":            184,
		"timestamp_mask":      208,
		"hca_core_clock":      216,
		"device_cap_flags_ex": 224,
		"rss_caps":            232,
		"max_wq_type_rq":      248,
		"raw_packet_caps":     252,
		"tm_caps":             256,
		"cq_moderation_caps":  280,
		"max_dm_size":         288,
		"xrc_odp_caps":        296,
		"reserved":            300,
	}})
	register(layout{cName: "ib_uverbs_query_port", goVal: QueryPort{}, size: 16, offsets: map[string]uintptr{
		"response": 0,
		"port_num": 8,
		"reserved": 9,
	}})
	register(layout{cName: "ib_uverbs_query_port_resp", goVal: QueryPortResp{}, size: 40, offsets: map[string]uintptr{
		"port_cap_flags":  0,
		"max_msg_sz":      4,
		"bad_pkey_cntr":   8,
		"qkey_viol_cntr":  12,
		"gid_tbl_len":     16,
		"pkey_tbl_len":    20,
		"lid":             22,
		"sm_lid":          24,
		"state":           26,
		"max_mtu":         27,
		"active_mtu":      28,
		"lmc":             29,
		"max_vl_num":      30,
		"sm_sl":           31,
		"subnet_timeout":  32,
		"init_type_reply": 33,
		"active_width":    34,
		"active_speed":    35,
		"phys_state":      36,
		"link_layer":      37,
		"flags":           38,
		"reserved":        39,
	}})
	register(layout{cName: "ib_uverbs_alloc_pd", goVal: AllocPD{}, size: 8, offsets: map[string]uintptr{
		"response": 0,
	}})
	register(layout{cName: "ib_uverbs_alloc_pd_resp", goVal: AllocPDResp{}, size: 4, offsets: map[string]uintptr{
		"pd_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_dealloc_pd", goVal: DeallocPD{}, size: 4, offsets: map[string]uintptr{
		"pd_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_open_xrcd", goVal: OpenXRCD{}, size: 16, offsets: map[string]uintptr{
		"response": 0,
		"fd":       8,
		"oflags":   12,
	}})
	register(layout{cName: "ib_uverbs_open_xrcd_resp", goVal: OpenXRCDResp{}, size: 4, offsets: map[string]uintptr{
		"xrcd_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_close_xrcd", goVal: CloseXRCD{}, size: 4, offsets: map[string]uintptr{
		"xrcd_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_reg_mr", goVal: RegMR{}, size: 40, offsets: map[string]uintptr{
		"response":     0,
		"start":        8,
		"length":       16,
		"hca_va":       24,
		"pd_handle":    32,
		"access_flags": 36,
	}})
	register(layout{cName: "ib_uverbs_reg_mr_resp", goVal: RegMRResp{}, size: 12, offsets: map[string]uintptr{
		"mr_handle": 0,
		"lkey":      4,
		"rkey":      8,
	}})
	register(layout{cName: "ib_uverbs_rereg_mr", goVal: ReregMR{}, size: 48, offsets: map[string]uintptr{
		"response":     0,
		"mr_handle":    8,
		"flags":        12,
		"start":        16,
		"length":       24,
		"hca_va":       32,
		"pd_handle":    40,
		"access_flags": 44,
	}})
	register(layout{cName: "ib_uverbs_rereg_mr_resp", goVal: ReregMRResp{}, size: 8, offsets: map[string]uintptr{
		"lkey": 0,
		"rkey": 4,
	}})
	register(layout{cName: "ib_uverbs_dereg_mr", goVal: DeregMR{}, size: 4, offsets: map[string]uintptr{
		"mr_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_alloc_mw", goVal: AllocMW{}, size: 16, offsets: map[string]uintptr{
		"response":  0,
		"pd_handle": 8,
		"mw_type":   12,
		"reserved":  13,
	}})
	register(layout{cName: "ib_uverbs_alloc_mw_resp", goVal: AllocMWResp{}, size: 8, offsets: map[string]uintptr{
		"mw_handle": 0,
		"rkey":      4,
	}})
	register(layout{cName: "ib_uverbs_dealloc_mw", goVal: DeallocMW{}, size: 4, offsets: map[string]uintptr{
		"mw_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_create_comp_channel", goVal: CreateCompChannel{}, size: 8, offsets: map[string]uintptr{
		"response": 0,
	}})
	register(layout{cName: "ib_uverbs_create_comp_channel_resp", goVal: CreateCompChannelResp{}, size: 4, offsets: map[string]uintptr{
		"fd": 0,
	}})
	register(layout{cName: "ib_uverbs_create_cq", goVal: CreateCQ{}, size: 32, offsets: map[string]uintptr{
		"response":     0,
		"user_handle":  8,
		"cqe":          16,
		"comp_vector":  20,
		"comp_channel": 24,
		"reserved":     28,
	}})
	register(layout{cName: "ib_uverbs_ex_create_cq", goVal: ExCreateCQ{}, size: 32, offsets: map[string]uintptr{
		"user_handle":  0,
		"cqe":          8,
		"comp_vector":  12,
		"comp_channel": 16,
		"comp_mask":    20,
		"flags":        24,
		"reserved":     28,
	}})
	register(layout{cName: "ib_uverbs_create_cq_resp", goVal: CreateCQResp{}, size: 8, offsets: map[string]uintptr{
		"cq_handle": 0,
		"cqe":       4,
	}})
	register(layout{cName: "ib_uverbs_ex_create_cq_resp", goVal: ExCreateCQResp{}, size: 16, offsets: map[string]uintptr{
		"base":            0,
		"comp_mask":       8,
		"response_length": 12,
	}})
	register(layout{cName: "ib_uverbs_resize_cq", goVal: ResizeCQ{}, size: 16, offsets: map[string]uintptr{
		"response":  0,
		"cq_handle": 8,
		"cqe":       12,
	}})
	register(layout{cName: "ib_uverbs_resize_cq_resp", goVal: ResizeCQResp{}, size: 8, offsets: map[string]uintptr{
		"cqe":      0,
		"reserved": 4,
	}})
	register(layout{cName: "ib_uverbs_poll_cq", goVal: PollCQ{}, size: 16, offsets: map[string]uintptr{
		"response":  0,
		"cq_handle": 8,
		"ne":        12,
	}})
	register(layout{cName: "ib_uverbs_wc", goVal: WC{}, size: 48, offsets: map[string]uintptr{
		"wr_id":          0,
		"status":         8,
		"opcode":         12,
		"vendor_err":     16,
		"byte_len":       20,
		"imm_data":       24,
		"qp_num":         28,
		"src_qp":         32,
		"wc_flags":       36,
		"pkey_index":     40,
		"slid":           42,
		"sl":             44,
		"dlid_path_bits": 45,
		"port_num":       46,
		"reserved":       47,
	}})
	register(layout{cName: "ib_uverbs_poll_cq_resp", goVal: PollCQResp{}, size: 8, offsets: map[string]uintptr{
		"count":    0,
		"reserved": 4,
	}})
	register(layout{cName: "ib_uverbs_req_notify_cq", goVal: ReqNotifyCQ{}, size: 8, offsets: map[string]uintptr{
		"cq_handle":      0,
		"solicited_only": 4,
	}})
	register(layout{cName: "ib_uverbs_destroy_cq", goVal: DestroyCQ{}, size: 16, offsets: map[string]uintptr{
		"response":  0,
		"cq_handle": 8,
		"reserved":  12,
	}})
	register(layout{cName: "ib_uverbs_destroy_cq_resp", goVal: DestroyCQResp{}, size: 8, offsets: map[string]uintptr{
		"comp_events_reported":  0,
		"async_events_reported": 4,
	}})
	register(layout{cName: "ib_uverbs_global_route", goVal: GlobalRoute{}, size: 24, offsets: map[string]uintptr{
		"dgid":          0,
		"flow_label":    16,
		"sgid_index":    20,
		"hop_limit":     21,
		"traffic_class": 22,
		"reserved":      23,
	}})
	register(layout{cName: "ib_uverbs_ah_attr", goVal: AHAttr{}, size: 32, offsets: map[string]uintptr{
		"grh":           0,
		"dlid":          24,
		"sl":            26,
		"src_path_bits": 27,
		"static_rate":   28,
		"is_global":     29,
		"port_num":      30,
		"reserved":      31,
	}})
	register(layout{cName: "ib_uverbs_qp_attr", goVal: QPAttr{}, size: 144, offsets: map[string]uintptr{
		"qp_attr_mask":        0,
		"qp_state":            4,
		"cur_qp_state":        8,
		"path_mtu":            12,
		"path_mig_state":      16,
		"qkey":                20,
		"rq_psn":              24,
		"sq_psn":              28,
		"dest_qp_num":         32,
		"qp_access_flags":     36,
		"ah_attr":             40,
		"alt_ah_attr":         72,
		"max_send_wr":         104,
		"max_recv_wr":         108,
		"max_send_sge":        112,
		"max_recv_sge":        116,
		"max_inline_data":     120,
		"pkey_index":          124,
		"alt_pkey_index":      126,
		"en_sqd_async_notify": 128,
		"sq_draining":         129,
		"max_rd_atomic":       130,
		"max_dest_rd_atomic":  131,
		"min_rnr_timer":       132,
		"port_num":            133,
		"timeout":             134,
		"retry_cnt":           135,
		"rnr_retry":           136,
		"alt_port_num":        137,
		"alt_timeout":         138,
		"reserved":            139,
	}})
	register(layout{cName: "ib_uverbs_create_qp", goVal: CreateQP{}, size: 56, offsets: map[string]uintptr{
		"response":        0,
		"user_handle":     8,
		"pd_handle":       16,
		"send_cq_handle":  20,
		"recv_cq_handle":  24,
		"srq_handle":      28,
		"max_send_wr":     32,
		"max_recv_wr":     36,
		"max_send_sge":    40,
		"max_recv_sge":    44,
		"max_inline_data": 48,
		"sq_sig_all":      52,
		"qp_type":         53,
		"is_srq":          54,
		"reserved":        55,
	}})
	register(layout{cName: "ib_uverbs_ex_create_qp", goVal: ExCreateQP{}, size: 64, offsets: map[string]uintptr{
		"user_handle":        0,
		"pd_handle":          8,
		"send_cq_handle":     12,
		"recv_cq_handle":     16,
		"srq_handle":         20,
		"max_send_wr":        24,
		"max_recv_wr":        28,
		"max_send_sge":       32,
		"max_recv_sge":       36,
		"max_inline_data":    40,
		"sq_sig_all":         44,
		"qp_type":            45,
		"is_srq":             46,
		"reserved":           47,
		"comp_mask":          48,
		"create_flags":       52,
		"rwq_ind_tbl_handle": 56,
		"source_qpn":         60,
	}})
	register(layout{cName: "ib_uverbs_open_qp", goVal: OpenQP{}, size: 32, offsets: map[string]uintptr{
		"response":    0,
		"user_handle": 8,
		"pd_handle":   16,
		"qpn":         20,
		"qp_type":     24,
		"reserved":    25,
	}})
	register(layout{cName: "ib_uverbs_create_qp_resp", goVal: CreateQPResp{}, size: 32, offsets: map[string]uintptr{
		"qp_handle":       0,
		"qpn":             4,
		"max_send_wr":     8,
		"max_recv_wr":     12,
		"max_send_sge":    16,
		"max_recv_sge":    20,
		"max_inline_data": 24,
		"reserved":        28,
	}})
	register(layout{cName: "ib_uverbs_ex_create_qp_resp", goVal: ExCreateQPResp{}, size: 40, offsets: map[string]uintptr{
		"base":            0,
		"comp_mask":       32,
		"response_length": 36,
	}})
	register(layout{cName: "ib_uverbs_qp_dest", goVal: QPDest{}, size: 32, offsets: map[string]uintptr{
		"dgid":          0,
		"flow_label":    16,
		"dlid":          20,
		"reserved":      22,
		"sgid_index":    24,
		"hop_limit":     25,
		"traffic_class": 26,
		"sl":            27,
		"src_path_bits": 28,
		"static_rate":   29,
		"is_global":     30,
		"port_num":      31,
	}})
	register(layout{cName: "ib_uverbs_query_qp", goVal: QueryQP{}, size: 16, offsets: map[string]uintptr{
		"response":  0,
		"qp_handle": 8,
		"attr_mask": 12,
	}})
	register(layout{cName: "ib_uverbs_query_qp_resp", goVal: QueryQPResp{}, size: 128, offsets: map[string]uintptr{
		"dest":               0,
		"alt_dest":           32,
		"max_send_wr":        64,
		"max_recv_wr":        68,
		"max_send_sge":       72,
		"max_recv_sge":       76,
		"max_inline_data":    80,
		"qkey":               84,
		"rq_psn":             88,
		"sq_psn":             92,
		"dest_qp_num":        96,
		"qp_access_flags":    100,
		"pkey_index":         104,
		"alt_pkey_index":     106,
		"qp_state":           108,
		"cur_qp_state":       109,
		"path_mtu":           110,
		"path_mig_state":     111,
		"sq_draining":        112,
		"max_rd_atomic":      113,
		"max_dest_rd_atomic": 114,
		"min_rnr_timer":      115,
		"port_num":           116,
		"timeout":            117,
		"retry_cnt":          118,
		"rnr_retry":          119,
		"alt_port_num":       120,
		"alt_timeout":        121,
		"sq_sig_all":         122,
		"reserved":           123,
	}})
	register(layout{cName: "ib_uverbs_modify_qp", goVal: ModifyQP{}, size: 112, offsets: map[string]uintptr{
		"dest":                0,
		"alt_dest":            32,
		"qp_handle":           64,
		"attr_mask":           68,
		"qkey":                72,
		"rq_psn":              76,
		"sq_psn":              80,
		"dest_qp_num":         84,
		"qp_access_flags":     88,
		"pkey_index":          92,
		"alt_pkey_index":      94,
		"qp_state":            96,
		"cur_qp_state":        97,
		"path_mtu":            98,
		"path_mig_state":      99,
		"en_sqd_async_notify": 100,
		"max_rd_atomic":       101,
		"max_dest_rd_atomic":  102,
		"min_rnr_timer":       103,
		"port_num":            104,
		"timeout":             105,
		"retry_cnt":           106,
		"rnr_retry":           107,
		"alt_port_num":        108,
		"alt_timeout":         109,
		"reserved":            110,
	}})
	register(layout{cName: "ib_uverbs_ex_modify_qp", goVal: ExModifyQP{}, size: 120, offsets: map[string]uintptr{
		"base":       0,
		"rate_limit": 112,
		"reserved":   116,
	}})
	register(layout{cName: "ib_uverbs_ex_modify_qp_resp", goVal: ExModifyQPResp{}, size: 8, offsets: map[string]uintptr{
		"comp_mask":       0,
		"response_length": 4,
	}})
	register(layout{cName: "ib_uverbs_destroy_qp", goVal: DestroyQP{}, size: 16, offsets: map[string]uintptr{
		"response":  0,
		"qp_handle": 8,
		"reserved":  12,
	}})
	register(layout{cName: "ib_uverbs_destroy_qp_resp", goVal: DestroyQPResp{}, size: 4, offsets: map[string]uintptr{
		"events_reported": 0,
	}})
	register(layout{cName: "ib_uverbs_sge", goVal: SGE{}, size: 16, offsets: map[string]uintptr{
		"addr":   0,
		"length": 8,
		"lkey":   12,
	}})
	register(layout{cName: "ib_uverbs_send_wr", goVal: SendWR{}, size: 56, offsets: map[string]uintptr{
		"wr_id":      0,
		"num_sge":    8,
		"opcode":     12,
		"send_flags": 16,
		"imm_data":   20,
		"wr":         24,
	}})
	register(layout{cName: "ib_uverbs_post_send", goVal: PostSend{}, size: 24, offsets: map[string]uintptr{
		"response":  0,
		"qp_handle": 8,
		"wr_count":  12,
		"sge_count": 16,
		"wqe_size":  20,
	}})
	register(layout{cName: "ib_uverbs_post_send_resp", goVal: PostSendResp{}, size: 4, offsets: map[string]uintptr{
		"bad_wr": 0,
	}})
	register(layout{cName: "ib_uverbs_recv_wr", goVal: RecvWR{}, size: 16, offsets: map[string]uintptr{
		"wr_id":    0,
		"num_sge":  8,
		"reserved": 12,
	}})
	register(layout{cName: "ib_uverbs_post_recv", goVal: PostRecv{}, size: 24, offsets: map[string]uintptr{
		"response":  0,
		"qp_handle": 8,
		"wr_count":  12,
		"sge_count": 16,
		"wqe_size":  20,
	}})
	register(layout{cName: "ib_uverbs_post_recv_resp", goVal: PostRecvResp{}, size: 4, offsets: map[string]uintptr{
		"bad_wr": 0,
	}})
	register(layout{cName: "ib_uverbs_post_srq_recv", goVal: PostSRQRecv{}, size: 24, offsets: map[string]uintptr{
		"response":   0,
		"srq_handle": 8,
		"wr_count":   12,
		"sge_count":  16,
		"wqe_size":   20,
	}})
	register(layout{cName: "ib_uverbs_post_srq_recv_resp", goVal: PostSRQRecvResp{}, size: 4, offsets: map[string]uintptr{
		"bad_wr": 0,
	}})
	register(layout{cName: "ib_uverbs_create_ah", goVal: CreateAH{}, size: 56, offsets: map[string]uintptr{
		"response":    0,
		"user_handle": 8,
		"pd_handle":   16,
		"reserved":    20,
		"attr":        24,
	}})
	register(layout{cName: "ib_uverbs_create_ah_resp", goVal: CreateAHResp{}, size: 4, offsets: map[string]uintptr{
		"ah_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_destroy_ah", goVal: DestroyAH{}, size: 4, offsets: map[string]uintptr{
		"ah_handle": 0,
	}})
	register(layout{cName: "ib_uverbs_attach_mcast", goVal: AttachMcast{}, size: 24, offsets: map[string]uintptr{
		"gid":       0,
		"qp_handle": 16,
		"mlid":      20,
		"reserved":  22,
	}})
	register(layout{cName: "ib_uverbs_detach_mcast", goVal: DetachMcast{}, size: 24, offsets: map[string]uintptr{
		"gid":       0,
		"qp_handle": 16,
		"mlid":      20,
		"reserved":  22,
	}})
	register(layout{cName: "ib_uverbs_create_srq", goVal: CreateSRQ{}, size: 32, offsets: map[string]uintptr{
		"response":    0,
		"user_handle": 8,
		"pd_handle":   16,
		"max_wr":      20,
		"max_sge":     24,
		"srq_limit":   28,
	}})
	register(layout{cName: "ib_uverbs_create_xsrq", goVal: CreateXSRQ{}, size: 48, offsets: map[string]uintptr{
		"response":     0,
		"user_handle":  8,
		"srq_type":     16,
		"pd_handle":    20,
		"max_wr":       24,
		"max_sge":      28,
		"srq_limit":    32,
		"max_num_tags": 36,
		"xrcd_handle":  40,
		"cq_handle":    44,
	}})
	register(layout{cName: "ib_uverbs_create_srq_resp", goVal: CreateSRQResp{}, size: 16, offsets: map[string]uintptr{
		"srq_handle": 0,
		"max_wr":     4,
		"max_sge":    8,
		"srqn":       12,
	}})
	register(layout{cName: "ib_uverbs_modify_srq", goVal: ModifySRQ{}, size: 16, offsets: map[string]uintptr{
		"srq_handle": 0,
		"attr_mask":  4,
		"max_wr":     8,
		"srq_limit":  12,
	}})
	register(layout{cName: "ib_uverbs_query_srq", goVal: QuerySRQ{}, size: 16, offsets: map[string]uintptr{
		"response":   0,
		"srq_handle": 8,
		"reserved":   12,
	}})
	register(layout{cName: "ib_uverbs_query_srq_resp", goVal: QuerySRQResp{}, size: 16, offsets: map[string]uintptr{
		"max_wr":    0,
		"max_sge":   4,
		"srq_limit": 8,
		"reserved":  12,
	}})
	register(layout{cName: "ib_uverbs_destroy_srq", goVal: DestroySRQ{}, size: 16, offsets: map[string]uintptr{
		"response":   0,
		"srq_handle": 8,
		"reserved":   12,
	}})
	register(layout{cName: "ib_uverbs_destroy_srq_resp", goVal: DestroySRQResp{}, size: 4, offsets: map[string]uintptr{
		"events_reported": 0,
	}})
	register(layout{cName: "ib_uverbs_ex_create_wq", goVal: ExCreateWQ{}, size: 40, offsets: map[string]uintptr{
		"comp_mask":    0,
		"wq_type":      4,
		"user_handle":  8,
		"pd_handle":    16,
		"cq_handle":    20,
		"max_wr":       24,
		"max_sge":      28,
		"create_flags": 32,
		"reserved":     36,
	}})
	register(layout{cName: "ib_uverbs_ex_create_wq_resp", goVal: ExCreateWQResp{}, size: 24, offsets: map[string]uintptr{
		"comp_mask":       0,
		"response_length": 4,
		"wq_handle":       8,
		"max_wr":          12,
		"max_sge":         16,
		"wqn":             20,
	}})
	register(layout{cName: "ib_uverbs_ex_destroy_wq", goVal: ExDestroyWQ{}, size: 8, offsets: map[string]uintptr{
		"comp_mask": 0,
		"wq_handle": 4,
	}})
	register(layout{cName: "ib_uverbs_ex_destroy_wq_resp", goVal: ExDestroyWQResp{}, size: 16, offsets: map[string]uintptr{
		"comp_mask":       0,
		"response_length": 4,
		"events_reported": 8,
		"reserved":        12,
	}})
	register(layout{cName: "ib_uverbs_ex_modify_wq", goVal: ExModifyWQ{}, size: 24, offsets: map[string]uintptr{
		"attr_mask":     0,
		"wq_handle":     4,
		"wq_state":      8,
		"curr_wq_state": 12,
		"flags":         16,
		"flags_mask":    20,
	}})
	register(layout{cName: "ib_uverbs_ex_create_rwq_ind_table", goVal: ExCreateRWQIndTable{}, size: 8, offsets: map[string]uintptr{
		"comp_mask":        0,
		"log_ind_tbl_size": 4,
	}})
	register(layout{cName: "ib_uverbs_ex_create_rwq_ind_table_resp", goVal: ExCreateRWQIndTableResp{}, size: 16, offsets: map[string]uintptr{
		"comp_mask":       0,
		"response_length": 4,
		"ind_tbl_handle":  8,
		"ind_tbl_num":     12,
	}})
	register(layout{cName: "ib_uverbs_ex_destroy_rwq_ind_table", goVal: ExDestroyRWQIndTable{}, size: 8, offsets: map[string]uintptr{
		"comp_mask":      0,
		"ind_tbl_handle": 4,
	}})
	register(layout{cName: "ib_uverbs_cq_moderation", goVal: CQModeration{}, size: 4, offsets: map[string]uintptr{
		"cq_count":  0,
		"cq_period": 2,
	}})
	register(layout{cName: "ib_uverbs_ex_modify_cq", goVal: ExModifyCQ{}, size: 16, offsets: map[string]uintptr{
		"cq_handle": 0,
		"attr_mask": 4,
		"attr":      8,
		"reserved":  12,
	}})
	register(layout{cName: "ib_uverbs_clock_info", goVal: ClockInfo{}, size: 56, offsets: map[string]uintptr{
		"sign":            0,
		"resv":            4,
		"nsec":            8,
		"cycles":          16,
		"frac":            24,
		"mult":            32,
		"shift":           36,
		"mask":            40,
		"overflow_period": 48,
	}})

	registerTails(
		tail{cName: "ib_uverbs_get_context", field: "driver_data", offset: 8},
		tail{cName: "ib_uverbs_get_context_resp", field: "driver_data", offset: 8},
		tail{cName: "ib_uverbs_query_device", field: "driver_data", offset: 8},
		tail{cName: "ib_uverbs_query_port", field: "driver_data", offset: 16},
		tail{cName: "ib_uverbs_alloc_pd", field: "driver_data", offset: 8},
		tail{cName: "ib_uverbs_alloc_pd_resp", field: "driver_data", offset: 4},
		tail{cName: "ib_uverbs_open_xrcd", field: "driver_data", offset: 16},
		tail{cName: "ib_uverbs_open_xrcd_resp", field: "driver_data", offset: 4},
		tail{cName: "ib_uverbs_reg_mr", field: "driver_data", offset: 40},
		tail{cName: "ib_uverbs_reg_mr_resp", field: "driver_data", offset: 12},
		tail{cName: "ib_uverbs_rereg_mr", field: "driver_data", offset: 48},
		tail{cName: "ib_uverbs_rereg_mr_resp", field: "driver_data", offset: 8},
		tail{cName: "ib_uverbs_alloc_mw", field: "driver_data", offset: 16},
		tail{cName: "ib_uverbs_alloc_mw_resp", field: "driver_data", offset: 8},
		tail{cName: "ib_uverbs_create_cq", field: "driver_data", offset: 32},
		tail{cName: "ib_uverbs_create_cq_resp", field: "driver_data", offset: 8},
		tail{cName: "ib_uverbs_resize_cq", field: "driver_data", offset: 16},
		tail{cName: "ib_uverbs_resize_cq_resp", field: "driver_data", offset: 8},
		tail{cName: "ib_uverbs_poll_cq_resp", field: "wc", offset: 8},
		tail{cName: "ib_uverbs_create_qp", field: "driver_data", offset: 56},
		tail{cName: "ib_uverbs_open_qp", field: "driver_data", offset: 32},
		tail{cName: "ib_uverbs_create_qp_resp", field: "driver_data", offset: 32},
		tail{cName: "ib_uverbs_query_qp", field: "driver_data", offset: 16},
		tail{cName: "ib_uverbs_query_qp_resp", field: "driver_data", offset: 128},
		tail{cName: "ib_uverbs_modify_qp", field: "driver_data", offset: 112},
		tail{cName: "ib_uverbs_post_send", field: "send_wr", offset: 24},
		tail{cName: "ib_uverbs_post_recv", field: "recv_wr", offset: 24},
		tail{cName: "ib_uverbs_post_srq_recv", field: "recv", offset: 24},
		tail{cName: "ib_uverbs_create_ah", field: "driver_data", offset: 56},
		tail{cName: "ib_uverbs_create_ah_resp", field: "driver_data", offset: 4},
		tail{cName: "ib_uverbs_attach_mcast", field: "driver_data", offset: 24},
		tail{cName: "ib_uverbs_detach_mcast", field: "driver_data", offset: 24},
		tail{cName: "ib_uverbs_create_srq", field: "driver_data", offset: 32},
		tail{cName: "ib_uverbs_create_xsrq", field: "driver_data", offset: 48},
		tail{cName: "ib_uverbs_create_srq_resp", field: "driver_data", offset: 16},
		tail{cName: "ib_uverbs_modify_srq", field: "driver_data", offset: 16},
		tail{cName: "ib_uverbs_query_srq", field: "driver_data", offset: 16},
		tail{cName: "ib_uverbs_ex_create_rwq_ind_table", field: "wq_handles", offset: 8},
	)
	registerOverlays(
		overlay{cName: "ib_uverbs_send_wr.wr.rdma", goVal: SendWRRdma{}, base: 24, size: 16, offsets: map[string]uintptr{
			"remote_addr": 0,
			"rkey":        8,
			"reserved":    12,
		}},
		overlay{cName: "ib_uverbs_send_wr.wr.atomic", goVal: SendWRAtomic{}, base: 24, size: 32, offsets: map[string]uintptr{
			"remote_addr": 0,
			"compare_add": 8,
			"swap":        16,
			"rkey":        24,
			"reserved":    28,
		}},
		overlay{cName: "ib_uverbs_send_wr.wr.ud", goVal: SendWRUD{}, base: 24, size: 16, offsets: map[string]uintptr{
			"ah":          0,
			"remote_qpn":  4,
			"remote_qkey": 8,
			"reserved":    12,
		}},
		overlay{cName: "ib_uverbs_odp_caps.per_transport_caps", goVal: ODPTransportCaps{}, base: 8, size: 12, offsets: map[string]uintptr{
			"rc_odp_caps": 0,
			"uc_odp_caps": 4,
			"ud_odp_caps": 8,
		}},
	)
}
