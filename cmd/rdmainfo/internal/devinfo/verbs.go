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

// RXEActiveMTU is the active MTU enum Soft-RoCE picks for a netdev MTU
// (drivers/infiniband/sw/rxe: eth_mtu_int_to_enum, which subtracts
// RXE_MAX_HDR_LENGTH = 80 bytes of headers, capped at 4096); 0 if the netdev
// MTU is too small for any RDMA MTU.
func RXEActiveMTU(netdevMTU int) uint8 {
	m := netdevMTU - 80
	switch {
	case m < 256:
		return 0
	case m < 512:
		return 1
	case m < 1024:
		return 2
	case m < 2048:
		return 3
	case m < 4096:
		return 4
	}
	return 5
}
