// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/uverbs"
)

func itoa(n int) string { return strconv.Itoa(n) }

// DeviceInfo is everything `rdmainfo show` knows about one device.
type DeviceInfo struct {
	Name      string       `json:"name"`
	Sysfs     sysfs.Device `json:"sysfs"`
	Transport int          `json:"transport"` // enum ibv_transport_type
	// From RDMA netlink (absent without it).
	Netlink *rdmanl.Device `json:"netlink,omitempty"`
	// From uverbs QUERY_DEVICE/QUERY_PORT (absent when the device cannot be
	// opened; VerbsErr says why).
	Verbs    *VerbsInfo `json:"verbs,omitempty"`
	VerbsErr string     `json:"verbs_error,omitempty"`
	// Netdevs[i] is the network device under port i+1 ("" if none).
	Netdevs []string `json:"netdevs"`
}

// Transport values (enum ibv_transport_type).
const (
	TransportIB          = 0
	TransportIWARP       = 1
	TransportUSNIC       = 2
	TransportUSNICUDP    = 3
	TransportUnspecified = 4
)

// transportOf is libibverbs' mapping of a node type to a transport.
func transportOf(nodeType int) int {
	switch nodeType {
	case 1, 2, 3: // CA, switch, router
		return TransportIB
	case 4:
		return TransportIWARP
	case 5:
		return TransportUSNIC
	case 6:
		return TransportUSNICUDP
	}
	return TransportUnspecified
}

// TransportString is ibv_devinfo's name of a transport.
func TransportString(t int) string {
	switch t {
	case TransportIB:
		return "InfiniBand"
	case TransportIWARP:
		return "iWARP"
	case TransportUSNIC:
		return "usNIC"
	case TransportUSNICUDP:
		return "usNIC UDP"
	case TransportUnspecified:
		return "unspecified"
	}
	return "invalid transport"
}

// netlinkDevices returns the netlink view of the devices by name, or nil.
func (s *System) netlinkDevices() map[string]rdmanl.Device {
	if s.NL == nil {
		return nil
	}
	devs, err := s.NL.Devices()
	if err != nil {
		return nil
	}
	m := make(map[string]rdmanl.Device, len(devs))
	for _, d := range devs {
		m[d.Name] = d
	}
	return m
}

// portNetdevs returns the netdev under each port of dev: from netlink when
// it answers, else from the GID table.
func (s *System) portNetdevs(d sysfs.Device, nl *rdmanl.Device) []string {
	out := make([]string, len(d.Ports))
	if nl != nil && s.NL != nil {
		if ports, err := s.NL.Ports(nl.Index); err == nil {
			for _, p := range ports {
				for i, sp := range d.Ports {
					if uint32(sp.Num) == p.Index {
						out[i] = p.NetdevName
					}
				}
			}
		}
	}
	for i, p := range d.Ports {
		if out[i] != "" {
			continue
		}
		for _, g := range p.GIDs {
			if g.Netdev != "" {
				out[i] = g.Netdev
				break
			}
		}
	}
	return out
}

// Show gathers DeviceInfo for device name, or for every device when name is
// empty.
func (s *System) Show(name string) ([]DeviceInfo, error) {
	devs, err := s.devices(name)
	if err != nil {
		return nil, err
	}
	nl := s.netlinkDevices()
	out := make([]DeviceInfo, 0, len(devs))
	for _, d := range devs {
		info := DeviceInfo{Name: d.Name, Sysfs: d, Transport: transportOf(d.NodeType)}
		if n, ok := nl[d.Name]; ok {
			info.Netlink = &n
		}
		info.Netdevs = s.portNetdevs(d, info.Netlink)
		if s.Verbs != nil {
			v, err := s.Verbs.Query(d.Name)
			if err != nil {
				info.VerbsErr = err.Error()
			} else {
				info.Verbs = &v
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// kv writes "key:" indented by tabs, then tabs up to column col (tabs are 8
// wide), then the value: the layout of ibv_devinfo.
func kv(w io.Writer, tabs int, key string, col int, value string) {
	pos := 8*tabs + len(key) + 1
	var b strings.Builder
	b.WriteString(strings.Repeat("\t", tabs))
	b.WriteString(key)
	b.WriteString(":")
	for {
		pos = (pos/8 + 1) * 8
		b.WriteByte('\t')
		if pos >= col {
			break
		}
	}
	b.WriteString(value)
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}

// Names of ibv_device_cap_flags bits, in ibv_devinfo's order.
var deviceCapNames = []flagName{
	{1 << 0, "RESIZE_MAX_WR"}, {1 << 1, "BAD_PKEY_CNTR"}, {1 << 2, "BAD_QKEY_CNTR"}, {1 << 3, "RAW_MULTI"},
	{1 << 4, "AUTO_PATH_MIG"}, {1 << 5, "CHANGE_PHY_PORT"}, {1 << 6, "UD_AV_PORT_ENFORCE"},
	{1 << 7, "CURR_QP_STATE_MOD"}, {1 << 8, "SHUTDOWN_PORT"}, {1 << 9, "INIT_TYPE"},
	{1 << 10, "PORT_ACTIVE_EVENT"}, {1 << 11, "SYS_IMAGE_GUID"}, {1 << 12, "RC_RNR_NAK_GEN"},
	{1 << 13, "SRQ_RESIZE"}, {1 << 14, "N_NOTIFY_CQ"}, {1 << 17, "MEM_WINDOW"}, {1 << 18, "UD_IP_CSUM"},
	{1 << 20, "XRC"}, {1 << 21, "MEM_MGT_EXTENSIONS"}, {1 << 23, "MEM_WINDOW_TYPE_2A"},
	{1 << 24, "MEM_WINDOW_TYPE_2B"}, {1 << 25, "RC_IP_CSUM"}, {1 << 26, "RAW_IP_CSUM"},
	{1 << 29, "MANAGED_FLOW_STEERING"},
}

// DeviceCapNames decodes device_cap_flags into IBV_DEVICE_* names; bits
// without a name are returned as the remainder.
func DeviceCapNames(f uint32) (names []string, unknown uint32) {
	for _, n := range deviceCapNames {
		if uint64(f)&n.bit != 0 {
			names = append(names, n.name)
			f &^= uint32(n.bit)
		}
	}
	return names, f
}

// PortStateString is ibv_port_state_str without the IBV_ prefix, as
// ibv_devinfo prints it ("PORT_ACTIVE").
func PortStateString(s int) string {
	names := []string{"PORT_NOP", "PORT_DOWN", "PORT_INIT", "PORT_ARMED", "PORT_ACTIVE", "PORT_ACTIVE_DEFER"}
	if s >= 0 && s < len(names) {
		return names[s]
	}
	return "invalid state"
}

// PhysStateString is ibv_devinfo's name of a physical port state.
func PhysStateString(s int) string {
	names := map[int]string{1: "SLEEP", 2: "POLLING", 3: "DISABLED", 4: "PORT_CONFIGURATION TRAINING",
		5: "LINK_UP", 6: "LINK_ERROR RECOVERY", 7: "PHY TEST"}
	if n, ok := names[s]; ok {
		return n
	}
	return "invalid physical state"
}

// widthString and speedString are ibv_devinfo's names of active_width and
// active_speed.
func widthString(w int) string {
	if s, ok := map[int]string{1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}[w]; ok {
		return s
	}
	return "invalid width"
}

// vlString is ibv_devinfo's name of a max_vl_num code: the number of data
// VLs.
func vlString(v uint8) string {
	if s, ok := map[uint8]string{1: "1", 2: "2", 3: "4", 4: "8", 5: "15"}[v]; ok {
		return s
	}
	return "invalid value"
}

func speedString(s int) string {
	if v, ok := map[int]string{1: "2.5 Gbps", 2: "5.0 Gbps", 4: "10.0 Gbps", 8: "10.0 Gbps", 16: "14.0 Gbps",
		32: "25.0 Gbps", 64: "50.0 Gbps", 128: "100.0 Gbps", 256: "200.0 Gbps"}[s]; ok {
		return v
	}
	return "invalid speed"
}

// ParseRate decodes the sysfs rate file, "10 Gb/sec (1X FDR10)", into the
// IB width and speed codes of struct ibv_port_attr (SDR has no suffix).
func ParseRate(rate string) (width, speed int, ok bool) {
	open := strings.IndexByte(rate, '(')
	end := strings.IndexByte(rate, ')')
	if open < 0 || end < open {
		return 0, 0, false
	}
	f := strings.Fields(rate[open+1 : end])
	if len(f) == 0 {
		return 0, 0, false
	}
	width, ok = map[string]int{"1X": 1, "2X": 16, "4X": 2, "8X": 4, "12X": 8}[f[0]]
	if !ok {
		return 0, 0, false
	}
	speed = 1
	if len(f) > 1 {
		speed, ok = map[string]int{"DDR": 2, "QDR": 4, "FDR10": 8, "FDR": 16, "EDR": 32, "HDR": 64,
			"NDR": 128, "XDR": 256}[f[1]]
		if !ok {
			return 0, 0, false
		}
	}
	return width, speed, true
}

func atomicString(a uint32) string {
	switch a {
	case 0:
		return "ATOMIC_NONE (0)"
	case 1:
		return "ATOMIC_HCA (1)"
	case 2:
		return "ATOMIC_GLOB (2)"
	}
	return fmt.Sprintf("invalid atomic capability (%d)", a)
}

func mtuString(m uint8) string { return fmt.Sprintf("%d (%d)", uverbs.MTU(m).Bytes(), m) }

// WriteShow prints infos in ibv_devinfo's layout (its -v layout when verbose),
// followed by what rdmainfo adds: the netdev of each port. Fields only uverbs
// knows are left out, with a note, when the device could not be opened.
func WriteShow(w io.Writer, infos []DeviceInfo, verbose bool) {
	const dcol, pcol = 40, 48
	for i, d := range infos {
		if i > 0 {
			fmt.Fprintln(w)
		}
		kv(w, 0, "hca_id", 8, d.Name)
		kv(w, 1, "transport", dcol, fmt.Sprintf("%s (%d)", TransportString(d.Transport), d.Transport))
		v := d.Verbs
		switch {
		case d.Sysfs.FWVer != "":
			kv(w, 1, "fw_ver", dcol, d.Sysfs.FWVer)
		case v != nil:
			kv(w, 1, "fw_ver", dcol, FWString(v.Device.FWVer))
		}
		kv(w, 1, "node_guid", dcol, d.Sysfs.NodeGUID.String())
		kv(w, 1, "sys_image_guid", dcol, d.Sysfs.SysImageGUID.String())
		if v != nil {
			kv(w, 1, "vendor_id", dcol, fmt.Sprintf("0x%04x", v.Device.VendorID))
			kv(w, 1, "vendor_part_id", dcol, itoa(int(v.Device.VendorPartID)))
			kv(w, 1, "hw_ver", dcol, fmt.Sprintf("0x%X", v.Device.HWVer))
		}
		if d.Sysfs.BoardID != "" {
			kv(w, 1, "board_id", dcol, d.Sysfs.BoardID)
		}
		kv(w, 1, "phys_port_cnt", dcol, itoa(len(d.Sysfs.Ports)))
		if verbose {
			writeDeviceAttrs(w, d, dcol)
		}
		if d.Sysfs.Uverbs != "" {
			kv(w, 1, "uverbs", dcol, "/dev/infiniband/"+d.Sysfs.Uverbs)
		}
		if d.VerbsErr != "" {
			fmt.Fprintf(w, "\t# device attributes need uverbs: %s\n", d.VerbsErr)
		}
		for pi, p := range d.Sysfs.Ports {
			var pa *PortAttr
			if v != nil && pi < len(v.Ports) {
				pa = &v.Ports[pi]
			}
			writePort(w, p, pa, d.Netdevs[pi], verbose, pcol)
		}
	}
	fmt.Fprintln(w)
}

func writeDeviceAttrs(w io.Writer, d DeviceInfo, col int) {
	if d.Verbs == nil {
		if d.Netlink != nil {
			writeCapFlags(w, uint32(d.Netlink.CapFlags), col)
		}
		return
	}
	a := d.Verbs.Device
	kv(w, 1, "max_mr_size", col, fmt.Sprintf("0x%x", a.MaxMRSize))
	kv(w, 1, "page_size_cap", col, fmt.Sprintf("0x%x", a.PageSizeCap))
	kv(w, 1, "max_qp", col, itoa(a.MaxQP))
	kv(w, 1, "max_qp_wr", col, itoa(a.MaxQPWR))
	writeCapFlags(w, a.DeviceCapFlags, col)
	type field struct {
		k string
		v int
	}
	ints := func(fs ...field) {
		for _, f := range fs {
			kv(w, 1, f.k, col, itoa(f.v))
		}
	}
	ints(field{"max_sge", a.MaxSGE}, field{"max_sge_rd", a.MaxSGERD}, field{"max_cq", a.MaxCQ},
		field{"max_cqe", a.MaxCQE}, field{"max_mr", a.MaxMR}, field{"max_pd", a.MaxPD},
		field{"max_qp_rd_atom", a.MaxQPRdAtom}, field{"max_ee_rd_atom", a.MaxEERdAtom},
		field{"max_res_rd_atom", a.MaxResRdAtom}, field{"max_qp_init_rd_atom", a.MaxQPInitRdAtom},
		field{"max_ee_init_rd_atom", a.MaxEEInitRdAtom})
	kv(w, 1, "atomic_cap", col, atomicString(a.AtomicCap))
	ints(field{"max_ee", a.MaxEE}, field{"max_rdd", a.MaxRDD}, field{"max_mw", a.MaxMW},
		field{"max_raw_ipv6_qp", a.MaxRawIPv6QP}, field{"max_raw_ethy_qp", a.MaxRawEthyQP},
		field{"max_mcast_grp", a.MaxMcastGrp}, field{"max_mcast_qp_attach", a.MaxMcastQPAttach},
		field{"max_total_mcast_qp_attach", a.MaxTotalMcastQPAttach}, field{"max_ah", a.MaxAH},
		field{"max_fmr", a.MaxFMR})
	// ibv_devinfo leaves out what a zero count makes meaningless.
	if a.MaxFMR != 0 {
		ints(field{"max_map_per_fmr", a.MaxMapPerFMR})
	}
	ints(field{"max_srq", a.MaxSRQ})
	if a.MaxSRQ != 0 {
		ints(field{"max_srq_wr", a.MaxSRQWR}, field{"max_srq_sge", a.MaxSRQSGE})
	}
	ints(field{"max_pkeys", a.MaxPKeys}, field{"local_ca_ack_delay", int(a.LocalCAAckDelay)})
	writeDeviceAttrsEx(w, a, col)
	kv(w, 1, "num_comp_vectors", col, itoa(d.Verbs.NumCompVectors))
}

// names prints one flag name a line, as ibv_devinfo does, and the bits it
// has no name for.
func names(w io.Writer, f uint64, table []flagName) {
	known := uint64(0)
	for _, n := range table {
		if f&n.bit != 0 {
			fmt.Fprintf(w, "\t\t\t\t\t%s\n", n.name)
		}
		known |= n.bit
	}
	if f&^known != 0 {
		fmt.Fprintf(w, "\t\t\t\t\tUnknown flags: 0x%X\n", f&^known)
	}
}

// flagName names one bit of a capability mask, as ibv_devinfo prints it.
type flagName struct {
	bit  uint64
	name string
}

// Flag names of libibverbs/examples/devinfo.c (enum ibv_odp_transport_cap_bits,
// ibv_odp_general_caps, the IBV_DEVICE_* bits above 31, ibv_raw_packet_caps,
// and 1 << enum ibv_qp_type for supported_qp).
var (
	odpGeneralNames = []flagName{{1 << 0, "ODP_SUPPORT"}, {1 << 1, "ODP_SUPPORT_IMPLICIT"}}
	odpTransNames   = []flagName{{1 << 0, "SUPPORT_SEND"}, {1 << 1, "SUPPORT_RECV"}, {1 << 2, "SUPPORT_WRITE"},
		{1 << 3, "SUPPORT_READ"}, {1 << 4, "SUPPORT_ATOMIC"}, {1 << 5, "SUPPORT_SRQ"}, {1 << 6, "SUPPORT_FLUSH"},
		{1 << 7, "SUPPORT_ATOMIC_WRITE"}}
	capExNames = []flagName{{1 << 34, "RAW_SCATTER_FCS"}, {1 << 36, "PCI_WRITE_END_PADDING"}, {1 << 41, "CC_DMA_BOUNCE"}}
	rawNames   = []flagName{{1 << 0, "C-VLAN stripping offload"}, {1 << 1, "Scatter FCS offload"}, {1 << 2, "IP csum offload"},
		{1 << 3, "Delay drop"}}
	qptNames = []flagName{{1 << 8, "SUPPORT_RAW_PACKET"}, {1 << 4, "SUPPORT_UD"}}
)

// writeDeviceAttrsEx prints what ibv_devinfo -v prints from
// ibv_query_device_ex after local_ca_ack_delay, in its order and with its
// conventions: sections that are absent print "not supported", zero caps
// print "NO SUPPORT", and the TSO, RSS hash and packet-pacing numbers —
// which only a provider's driver data carries, and rxe's carries none — are
// the zeros libibverbs reports.
func writeDeviceAttrsEx(w io.Writer, a DeviceAttr, col int) {
	fmt.Fprintln(w, "\tgeneral_odp_caps:")
	names(w, a.ODPGeneralCaps, odpGeneralNames)
	for _, t := range []struct {
		k    string
		caps uint32
	}{{"rc_odp_caps", a.RCODPCaps}, {"uc_odp_caps", a.UCODPCaps}, {"ud_odp_caps", a.UDODPCaps}, {"xrc_odp_caps", a.XRCODPCaps}} {
		fmt.Fprintf(w, "\t%s:\n", t.k)
		if t.caps == 0 {
			fmt.Fprintln(w, "\t\t\t\t\tNO SUPPORT")
		} else {
			names(w, uint64(t.caps), odpTransNames)
		}
	}
	if a.CompletionTimestampMask != 0 {
		kv(w, 1, "completion timestamp_mask", col+16, fmt.Sprintf("0x%016x", a.CompletionTimestampMask))
	} else {
		fmt.Fprintln(w, "\tcompletion_timestamp_mask not supported")
	}
	if a.HCACoreClock != 0 {
		kv(w, 1, "hca_core_clock", col, fmt.Sprintf("%dkHZ", a.HCACoreClock))
	} else {
		fmt.Fprintln(w, "\tcore clock not supported")
	}
	if a.RawPacketCaps != 0 {
		fmt.Fprintln(w, "\traw packet caps:")
		names(w, uint64(a.RawPacketCaps), rawNames)
	}
	kv(w, 1, "device_cap_flags_ex", col, fmt.Sprintf("0x%X", a.DeviceCapFlagsEx))
	names(w, a.DeviceCapFlagsEx&0xffffffff00000000, capExNames)
	fmt.Fprintln(w, "\ttso_caps:")
	kv(w, 2, "max_tso", col, "0")
	fmt.Fprintln(w, "\trss_caps:")
	kv(w, 2, "max_rwq_indirection_tables", col+24, itoa(int(a.MaxRWQIndirectionTables)))
	kv(w, 2, "max_rwq_indirection_table_size", col+24, itoa(int(a.MaxRWQIndirectionTableSize)))
	kv(w, 2, "rx_hash_function", col+24, "0x0")
	kv(w, 2, "rx_hash_fields_mask", col+24, "0x0")
	if a.RSSSupportedQPTs != 0 {
		fmt.Fprintln(w, "\t\tsupported_qp:")
		names(w, uint64(a.RSSSupportedQPTs), qptNames)
	}
	kv(w, 1, "max_wq_type_rq", col, itoa(int(a.MaxWQTypeRQ)))
	fmt.Fprintln(w, "\tpacket_pacing_caps:")
	kv(w, 2, "qp_rate_limit_min", 24, "0kbps")
	kv(w, 2, "qp_rate_limit_max", 24, "0kbps")
	if a.TMMaxNumTags != 0 {
		kv(w, 1, "max_rndv_hdr_size", col, itoa(int(a.TMMaxRndvHdrSize)))
		kv(w, 1, "max_num_tags", col, itoa(int(a.TMMaxNumTags)))
		kv(w, 1, "max_ops", col, itoa(int(a.TMMaxOps)))
		kv(w, 1, "max_sge", col, itoa(int(a.TMMaxSGE)))
		fmt.Fprintln(w, "\tflags:")
		if a.TMFlags&1 != 0 {
			fmt.Fprintln(w, "\t\t\t\t\tIBV_TM_CAP_RC")
		}
	} else {
		fmt.Fprintln(w, "\ttag matching not supported")
	}
	if a.MaxCQModerationCount != 0 && a.MaxCQModerationPeriod != 0 {
		fmt.Fprintf(w, "\n\tcq moderation caps:\n\t\tmax_cq_count:\t%d\n\t\tmax_cq_period:\t%d us\n\n", a.MaxCQModerationCount, a.MaxCQModerationPeriod)
	}
	if a.MaxDMSize != 0 {
		fmt.Fprintf(w, "\tmaximum available device memory:\t%dBytes\n\n", a.MaxDMSize)
	}
}

func writeCapFlags(w io.Writer, f uint32, col int) {
	kv(w, 1, "device_cap_flags", col, fmt.Sprintf("0x%08x", f))
	names(w, uint64(f), deviceCapNames)
}

func writePort(w io.Writer, p sysfs.Port, pa *PortAttr, netdev string, verbose bool, col int) {
	kv(w, 2, "port", 24, itoa(p.Num))
	state, phys := p.State, p.PhysState
	lid, smlid, lmc := int(p.LID), int(p.SMLID), int(p.LMC)
	if pa != nil {
		state, phys = int(pa.State), int(pa.PhysState)
		lid, smlid, lmc = int(pa.LID), int(pa.SMLID), int(pa.LMC)
	}
	kv(w, 3, "state", col, fmt.Sprintf("%s (%d)", PortStateString(state), state))
	if pa != nil {
		kv(w, 3, "max_mtu", col, mtuString(pa.MaxMTU))
		kv(w, 3, "active_mtu", col, mtuString(pa.ActiveMTU))
	}
	kv(w, 3, "sm_lid", col, itoa(smlid))
	kv(w, 3, "port_lid", col, itoa(lid))
	kv(w, 3, "port_lmc", col, fmt.Sprintf("0x%02x", lmc))
	kv(w, 3, "link_layer", col, p.LinkLayer)
	if verbose {
		capMask, pkeys, gids := p.CapMask, p.PKeyTableLen, p.GIDTableLen
		if pa != nil {
			kv(w, 3, "max_msg_sz", col, fmt.Sprintf("0x%x", pa.MaxMsgSz))
			capMask, pkeys, gids = pa.PortCapFlags, pa.PKeyTblLen, pa.GIDTblLen
		}
		kv(w, 3, "port_cap_flags", col, fmt.Sprintf("0x%08x", capMask))
		if pa != nil {
			kv(w, 3, "port_cap_flags2", col, fmt.Sprintf("0x%04x", pa.PortCapFlags2))
			kv(w, 3, "max_vl_num", col, fmt.Sprintf("%s (%d)", vlString(pa.MaxVLNum), pa.MaxVLNum))
			kv(w, 3, "bad_pkey_cntr", col, fmt.Sprintf("0x%x", pa.BadPKeyCntr))
			kv(w, 3, "qkey_viol_cntr", col, fmt.Sprintf("0x%x", pa.QKeyViolCntr))
		}
		kv(w, 3, "sm_sl", col, itoa(int(p.SMSL)))
		kv(w, 3, "pkey_tbl_len", col, itoa(pkeys))
		kv(w, 3, "gid_tbl_len", col, itoa(gids))
		if pa != nil {
			kv(w, 3, "subnet_timeout", col, itoa(int(pa.SubnetTimeout)))
			kv(w, 3, "init_type_reply", col, itoa(int(pa.InitTypeReply)))
		}
		width, speed, ok := ParseRate(p.Rate)
		if pa != nil {
			width, speed, ok = int(pa.ActiveWidth), int(pa.ActiveSpeed), true
		}
		if ok {
			kv(w, 3, "active_width", col, fmt.Sprintf("%s (%d)", widthString(width), width))
			kv(w, 3, "active_speed", col, fmt.Sprintf("%s (%d)", speedString(speed), speed))
		}
		kv(w, 3, "phys_state", col, fmt.Sprintf("%s (%d)", PhysStateString(phys), phys))
		for _, g := range p.GIDs {
			suffix := ""
			if v := g.Version(); v != "" && p.LinkLayer == "Ethernet" {
				suffix = ", RoCE " + v
			}
			kv(w, 3, fmt.Sprintf("GID[%3d]", g.Index), col, g.GID.String()+suffix)
		}
	}
	if netdev != "" {
		kv(w, 3, "netdev", col, netdev)
	}
}
