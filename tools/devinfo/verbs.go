// Copyright 2026 The rdmago Authors.

package devinfo

// Verbs asks a device for its attributes through uverbs (QUERY_DEVICE and
// QUERY_PORT, what ibv_query_device/ibv_query_port return). Only these know
// limits such as max_qp or the active MTU; sysfs and netlink do not.
type Verbs interface {
	Query(dev string) (VerbsInfo, error)
}

// VerbsInfo is what Verbs.Query returns for one device.
type VerbsInfo struct {
	Device         DeviceAttr `json:"device"`
	Ports          []PortAttr `json:"ports"`
	NumCompVectors int        `json:"num_comp_vectors"`
}

// DeviceAttr is the part of struct ibv_device_attr package uverbs returns,
// named as ibv_devinfo -v prints it.
type DeviceAttr struct {
	FWVer                 uint64 `json:"fw_ver"` // raw; see FWString
	VendorID              uint32 `json:"vendor_id"`
	VendorPartID          uint32 `json:"vendor_part_id"`
	HWVer                 uint32 `json:"hw_ver"`
	PhysPortCnt           int    `json:"phys_port_cnt"`
	MaxMRSize             uint64 `json:"max_mr_size"`
	PageSizeCap           uint64 `json:"page_size_cap"`
	MaxQP                 int    `json:"max_qp"`
	MaxQPWR               int    `json:"max_qp_wr"`
	DeviceCapFlags        uint32 `json:"device_cap_flags"`
	MaxSGE                int    `json:"max_sge"`
	MaxSGERD              int    `json:"max_sge_rd"`
	MaxCQ                 int    `json:"max_cq"`
	MaxCQE                int    `json:"max_cqe"`
	MaxMR                 int    `json:"max_mr"`
	MaxPD                 int    `json:"max_pd"`
	MaxQPRdAtom           int    `json:"max_qp_rd_atom"`
	MaxEERdAtom           int    `json:"max_ee_rd_atom"`
	MaxResRdAtom          int    `json:"max_res_rd_atom"`
	MaxQPInitRdAtom       int    `json:"max_qp_init_rd_atom"`
	MaxEEInitRdAtom       int    `json:"max_ee_init_rd_atom"`
	AtomicCap             uint32 `json:"atomic_cap"`
	MaxEE                 int    `json:"max_ee"`
	MaxRDD                int    `json:"max_rdd"`
	MaxMW                 int    `json:"max_mw"`
	MaxRawIPv6QP          int    `json:"max_raw_ipv6_qp"`
	MaxRawEthyQP          int    `json:"max_raw_ethy_qp"`
	MaxMcastGrp           int    `json:"max_mcast_grp"`
	MaxMcastQPAttach      int    `json:"max_mcast_qp_attach"`
	MaxTotalMcastQPAttach int    `json:"max_total_mcast_qp_attach"`
	MaxAH                 int    `json:"max_ah"`
	MaxFMR                int    `json:"max_fmr"`
	MaxMapPerFMR          int    `json:"max_map_per_fmr"`
	MaxSRQ                int    `json:"max_srq"`
	MaxSRQWR              int    `json:"max_srq_wr"`
	MaxSRQSGE             int    `json:"max_srq_sge"`
	MaxPKeys              int    `json:"max_pkeys"`
	LocalCAAckDelay       uint8  `json:"local_ca_ack_delay"`
	DeviceCapFlagsEx      uint64 `json:"device_cap_flags_ex,omitempty"`

	// From the extended query (ibv_query_device_ex); zero when the kernel
	// does not report them.
	ODPGeneralCaps             uint64 `json:"general_odp_caps"`
	RCODPCaps                  uint32 `json:"rc_odp_caps"`
	UCODPCaps                  uint32 `json:"uc_odp_caps"`
	UDODPCaps                  uint32 `json:"ud_odp_caps"`
	XRCODPCaps                 uint32 `json:"xrc_odp_caps"`
	CompletionTimestampMask    uint64 `json:"completion_timestamp_mask"`
	HCACoreClock               uint64 `json:"hca_core_clock"` // kHz
	RawPacketCaps              uint32 `json:"raw_packet_caps"`
	RSSSupportedQPTs           uint32 `json:"rss_supported_qpts"`
	MaxRWQIndirectionTables    uint32 `json:"max_rwq_indirection_tables"`
	MaxRWQIndirectionTableSize uint32 `json:"max_rwq_indirection_table_size"`
	MaxWQTypeRQ                uint32 `json:"max_wq_type_rq"`
	TMMaxRndvHdrSize           uint32 `json:"max_rndv_hdr_size"`
	TMMaxNumTags               uint32 `json:"max_num_tags"`
	TMFlags                    uint32 `json:"tm_flags"`
	TMMaxOps                   uint32 `json:"max_ops"`
	TMMaxSGE                   uint32 `json:"tm_max_sge"`
	MaxCQModerationCount       uint16 `json:"max_cq_count"`
	MaxCQModerationPeriod      uint16 `json:"max_cq_period"` // microseconds
	MaxDMSize                  uint64 `json:"max_dm_size"`
}

// PortAttr is the part of struct ibv_port_attr package uverbs returns.
type PortAttr struct {
	Port          int    `json:"port"`
	State         uint8  `json:"state"`
	MaxMTU        uint8  `json:"max_mtu"`    // enum ibv_mtu: 1=256 ... 5=4096
	ActiveMTU     uint8  `json:"active_mtu"` // enum ibv_mtu
	GIDTblLen     int    `json:"gid_tbl_len"`
	PortCapFlags  uint32 `json:"port_cap_flags"`
	PortCapFlags2 uint16 `json:"port_cap_flags2"`
	MaxMsgSz      uint32 `json:"max_msg_sz"`
	MaxVLNum      uint8  `json:"max_vl_num"` // 1, 2, 3, 4, 5: 1, 2, 4, 8, 15 data VLs
	BadPKeyCntr   uint32 `json:"bad_pkey_cntr"`
	QKeyViolCntr  uint32 `json:"qkey_viol_cntr"`
	PKeyTblLen    int    `json:"pkey_tbl_len"`
	SubnetTimeout uint8  `json:"subnet_timeout"`
	InitTypeReply uint8  `json:"init_type_reply"`
	LID           uint16 `json:"lid"`
	SMLID         uint16 `json:"sm_lid"`
	LMC           uint8  `json:"lmc"`
	ActiveWidth   uint8  `json:"active_width"`
	ActiveSpeed   uint8  `json:"active_speed"`
	PhysState     uint8  `json:"phys_state"`
	LinkLayer     uint8  `json:"link_layer"` // IBV_LINK_LAYER_*: 1 InfiniBand, 2 Ethernet
}

// FWString formats a raw firmware version the way libibverbs' providers do
// for a device whose sysfs fw_ver is empty (rxe): major.minor.sub_minor from
// 16-bit fields.
func FWString(v uint64) string {
	return itoa(int(v>>32&0xffff)) + "." + itoa(int(v>>16&0xffff)) + "." + itoa(int(v&0xffff))
}

// RXEActiveMTU is the active MTU enum Soft-RoCE gives its port for a netdev
// MTU: drivers/infiniband/sw/rxe (rxe.c rxe_set_mtu, called on creation and
// on every NETDEV_CHANGEMTU from rxe_net.c) takes eth_mtu_int_to_enum
// (rxe_param.h: subtract RXE_MAX_HDR_LENGTH = 80 bytes of headers, round
// down to an IB MTU, 0 below 256), caps it at 4096 and turns 0 into
// IB_MTU_256. So every netdev MTU below 592 gives 256: the port never says
// that its MTU is too small (see RoCERouteMTU for what does).
func RXEActiveMTU(netdevMTU int) uint8 {
	return max(ibMTUFloor(netdevMTU-80), 1)
}

// ibMTUFloor is the largest IB MTU enum (1=256 ... 5=4096) of at most n
// bytes, 0 below 256: rxe_mtu_int_to_enum and the ladder of iboe_get_mtu.
func ibMTUFloor(n int) uint8 {
	m := uint8(0)
	for b := 256; b <= 4096 && n >= b; b *= 2 {
		m++
	}
	return m
}

// RoCEHeaderBytes is what rdma_cm takes off a netdev MTU to get a RoCE path
// MTU (include/rdma/ib_addr.h, iboe_get_mtu): IB_GRH_BYTES 40 + IB_UDP_BYTES
// 8 + IB_BTH_BYTES 12 + IB_EXT_XRC_BYTES 4 + IB_EXT_ATOMICETH_BYTES 28 +
// IB_ICRC_BYTES 4, the largest header a RoCE v2 packet can carry.
const RoCEHeaderBytes = 96

// MinRoCENetdevMTU is the smallest netdev MTU over which rdma_cm resolves a
// RoCE route: 256 + RoCEHeaderBytes = 352.
const MinRoCENetdevMTU = 256 + RoCEHeaderBytes

// RoCERouteMTU is the path MTU enum rdma_cm puts in a RoCE route over a
// netdev with this MTU (drivers/infiniband/core/cma.c,
// cma_resolve_iboe_route: path_rec->mtu = iboe_get_mtu(ndev->mtu)), or 0
// below MinRoCENetdevMTU. For 0, cma_resolve_iboe_route returns -EINVAL, so
// rdma_resolve_route (RDMA_USER_CM_CMD_RESOLVE_ROUTE) fails for every
// rdma_cm program (rping, rdmaping, ...) — while Soft-RoCE still reports an
// ACTIVE port with an active MTU of 256 (RXEActiveMTU), since rxe subtracts
// only 80 bytes and rounds 0 up to 256. Netdev MTUs 300–351 are the trap:
// the device looks usable and rdma_cm is not.
func RoCERouteMTU(netdevMTU int) uint8 { return ibMTUFloor(netdevMTU - RoCEHeaderBytes) }
