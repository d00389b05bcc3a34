// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"syscall"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// DeviceAttr is struct ibv_device_attr(_ex), the limits and capabilities of a
// device.
type DeviceAttr struct {
	FwVer                 uint64
	NodeGUID              uint64 // host order
	SysImageGUID          uint64 // host order
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HwVer                 uint32
	MaxQP                 int
	MaxQPWR               int
	DeviceCapFlags        uint32
	MaxSGE                int
	MaxSGERd              int
	MaxCQ                 int
	MaxCQE                int
	MaxMR                 int
	MaxPD                 int
	MaxQPRdAtom           int
	MaxEERdAtom           int
	MaxResRdAtom          int
	MaxQPInitRdAtom       int
	MaxEEInitRdAtom       int
	AtomicCap             uint32 // IB_ATOMIC_NONE, _HCA, _GLOB
	MaxEE                 int
	MaxRDD                int
	MaxMW                 int
	MaxRawIPv6QP          int
	MaxRawEthyQP          int
	MaxMcastGrp           int
	MaxMcastQPAttach      int
	MaxTotalMcastQPAttach int
	MaxAH                 int
	MaxFMR                int
	MaxMapPerFMR          int
	MaxSRQ                int
	MaxSRQWR              int
	MaxSRQSGE             int
	MaxPKeys              int
	LocalCAAckDelay       uint8
	PhysPortCnt           int
	DeviceCapFlagsEx      uint64 // 0 when the kernel has no extended query

	// The rest of struct ib_uverbs_ex_query_device_resp, filled by
	// QueryDeviceEx as far as the kernel's response_length reaches (zero
	// otherwise, as libibverbs leaves them). Provider-only fields of
	// ibv_device_attr_ex (tso_caps, the RSS hash function and fields,
	// packet_pacing_caps) are not in the kernel's answer: rxe has none.
	ODPGeneralCaps             uint64 // IB_UVERBS_ODP_SUPPORT, _IMPLICIT
	RCODPCaps                  uint32 // IB_UVERBS_ODP_SUPPORT_SEND, ...
	UCODPCaps                  uint32
	UDODPCaps                  uint32
	XRCODPCaps                 uint32
	CompletionTimestampMask    uint64 // 0: no completion timestamps
	HCACoreClock               uint64 // kHz; 0: not reported
	RSSSupportedQPTs           uint32 // bit (1 << QP type)
	MaxRWQIndirectionTables    uint32
	MaxRWQIndirectionTableSize uint32
	MaxWQTypeRQ                uint32
	RawPacketCaps              uint32
	TMMaxRndvHdrSize           uint32 // tag matching; all zero without it
	TMMaxNumTags               uint32
	TMFlags                    uint32
	TMMaxOps                   uint32
	TMMaxSGE                   uint32
	MaxCQModerationCount       uint16
	MaxCQModerationPeriod      uint16 // microseconds
	MaxDMSize                  uint64 // device memory, bytes
}

func deviceAttrFrom(r *abi.QueryDeviceResp) DeviceAttr {
	return DeviceAttr{
		FwVer: r.FwVer, NodeGUID: beSwap64(r.NodeGUID), SysImageGUID: beSwap64(r.SysImageGUID),
		MaxMRSize: r.MaxMRSize, PageSizeCap: r.PageSizeCap, VendorID: r.VendorID, VendorPartID: r.VendorPartID,
		HwVer: r.HwVer, MaxQP: int(r.MaxQP), MaxQPWR: int(r.MaxQPWR), DeviceCapFlags: r.DeviceCapFlags,
		MaxSGE: int(r.MaxSGE), MaxSGERd: int(r.MaxSGERd), MaxCQ: int(r.MaxCQ), MaxCQE: int(r.MaxCQE),
		MaxMR: int(r.MaxMR), MaxPD: int(r.MaxPD), MaxQPRdAtom: int(r.MaxQPRdAtom),
		MaxQPInitRdAtom: int(r.MaxQPInitRdAtom), MaxResRdAtom: int(r.MaxResRdAtom), AtomicCap: r.AtomicCap,
		MaxEERdAtom: int(r.MaxEERdAtom), MaxEEInitRdAtom: int(r.MaxEEInitRdAtom), MaxEE: int(r.MaxEE),
		MaxRDD: int(r.MaxRDD), MaxRawIPv6QP: int(r.MaxRawIPv6QP), MaxRawEthyQP: int(r.MaxRawEthyQP),
		MaxMcastGrp: int(r.MaxMcastGrp), MaxMcastQPAttach: int(r.MaxMcastQPAttach),
		MaxTotalMcastQPAttach: int(r.MaxTotalMcastQPAttach), MaxFMR: int(r.MaxFMR), MaxMapPerFMR: int(r.MaxMapPerFMR),
		MaxMW: int(r.MaxMW), MaxAH: int(r.MaxAH), MaxSRQ: int(r.MaxSRQ), MaxSRQWR: int(r.MaxSRQWR),
		MaxSRQSGE: int(r.MaxSRQSGE), MaxPKeys: int(r.MaxPkeys), LocalCAAckDelay: r.LocalCAAckDelay,
		PhysPortCnt: int(r.PhysPortCnt),
	}
}

// beSwap64 turns a __be64 read as a native integer into its value.
func beSwap64(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}

// QueryDevice is ibv_query_device (write QUERY_DEVICE).
func (c *Context) QueryDevice() (DeviceAttr, error) {
	resp := new(abi.QueryDeviceResp)
	req := abi.QueryDevice{Response: abi.PtrU64(unsafe.Pointer(resp))}
	if err := c.write(abi.IB_USER_VERBS_CMD_QUERY_DEVICE, abi.Bytes(&req), unsafe.Pointer(resp), unsafe.Sizeof(*resp)); err != nil {
		return DeviceAttr{}, fmt.Errorf("query device: %w", err)
	}
	return deviceAttrFrom(resp), nil
}

// QueryDeviceEx is ibv_query_device_ex (extended write EX_QUERY_DEVICE): the
// attributes of QueryDevice plus DeviceCapFlagsEx, which says whether the
// device does FLUSH and ATOMIC_WRITE (IB_UVERBS_DEVICE_FLUSH_GLOBAL, ...),
// and the ODP, clock, RSS, tag-matching, CQ-moderation and device-memory
// capabilities ibv_devinfo -v prints.
func (c *Context) QueryDeviceEx() (DeviceAttr, error) {
	resp := new(abi.ExQueryDeviceResp)
	var req abi.ExQueryDevice
	if err := c.writeEx(abi.IB_USER_VERBS_EX_CMD_QUERY_DEVICE, abi.Bytes(&req), nil, unsafe.Pointer(resp), int(unsafe.Sizeof(*resp)), 0); err != nil {
		return DeviceAttr{}, fmt.Errorf("query device ex: %w", err)
	}
	a := deviceAttrFrom(&resp.Base)
	// has is libibverbs' CAN_COPY: the kernel wrote the field.
	has := func(off, size uintptr) bool { return uintptr(resp.ResponseLength) >= off+size }
	if has(unsafe.Offsetof(resp.ODPCaps), unsafe.Sizeof(resp.ODPCaps)) {
		o := resp.ODPCaps
		a.ODPGeneralCaps, a.RCODPCaps, a.UCODPCaps, a.UDODPCaps = o.GeneralCaps, o.PerTransportCaps.RCODPCaps, o.PerTransportCaps.UCODPCaps, o.PerTransportCaps.UDODPCaps
	}
	if has(unsafe.Offsetof(resp.TimestampMask), 8) {
		a.CompletionTimestampMask = resp.TimestampMask
	}
	if has(unsafe.Offsetof(resp.HCACoreClock), 8) {
		a.HCACoreClock = resp.HCACoreClock
	}
	if has(unsafe.Offsetof(resp.DeviceCapFlagsEx), 8) {
		a.DeviceCapFlagsEx = resp.DeviceCapFlagsEx
	}
	if has(unsafe.Offsetof(resp.RSSCaps), unsafe.Sizeof(resp.RSSCaps)) {
		r := resp.RSSCaps
		a.RSSSupportedQPTs, a.MaxRWQIndirectionTables, a.MaxRWQIndirectionTableSize = r.SupportedQPTs, r.MaxRWQIndirectionTables, r.MaxRWQIndirectionTableSize
	}
	if has(unsafe.Offsetof(resp.MaxWQTypeRQ), 4) {
		a.MaxWQTypeRQ = resp.MaxWQTypeRQ
	}
	if has(unsafe.Offsetof(resp.RawPacketCaps), 4) {
		a.RawPacketCaps = resp.RawPacketCaps
	}
	if has(unsafe.Offsetof(resp.TMCaps), unsafe.Sizeof(resp.TMCaps)) {
		m := resp.TMCaps
		a.TMMaxRndvHdrSize, a.TMMaxNumTags, a.TMFlags, a.TMMaxOps, a.TMMaxSGE = m.MaxRndvHdrSize, m.MaxNumTags, m.Flags, m.MaxOps, m.MaxSGE
	}
	if has(unsafe.Offsetof(resp.CQModerationCaps), unsafe.Sizeof(resp.CQModerationCaps)) {
		a.MaxCQModerationCount, a.MaxCQModerationPeriod = resp.CQModerationCaps.MaxCQModerationCount, resp.CQModerationCaps.MaxCQModerationPeriod
	}
	if has(unsafe.Offsetof(resp.MaxDMSize), 8) {
		a.MaxDMSize = resp.MaxDMSize
	}
	if has(unsafe.Offsetof(resp.XRCODPCaps), 4) {
		a.XRCODPCaps = resp.XRCODPCaps
	}
	return a, nil
}

// PortAttr is struct ibv_port_attr.
type PortAttr struct {
	State         PortState
	MaxMTU        MTU
	ActiveMTU     MTU
	GIDTblLen     int
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPKeyCntr   uint32
	QKeyViolCntr  uint32
	PKeyTblLen    int
	LID           uint16
	SMLID         uint16
	LMC           uint8
	MaxVLNum      uint8 // 1, 2, 3, 4, 5: 1, 2, 4, 8, 15 data VLs
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8 // IB_WIDTH_*
	ActiveSpeed   uint8 // IB_SPEED_*
	PhysState     uint8 // 5 is LINK_UP
	LinkLayer     LinkLayer
	Flags         uint8
	PortCapFlags2 uint16
	ActiveSpeedEx uint32 // Linux 6.6+, 0 otherwise
}

// Rate is the port's signalling rate in Gb/s (lanes × per-lane speed), 0 if
// unknown. Soft-RoCE derives it from the netdev's link speed.
func (p PortAttr) Rate() float64 {
	lanes := map[uint8]float64{abi.IB_WIDTH_1X: 1, abi.IB_WIDTH_2X: 2, abi.IB_WIDTH_4X: 4, abi.IB_WIDTH_8X: 8, abi.IB_WIDTH_12X: 12}[p.ActiveWidth]
	speed := map[uint32]float64{abi.IB_SPEED_SDR: 2.5, abi.IB_SPEED_DDR: 5, abi.IB_SPEED_QDR: 10, abi.IB_SPEED_FDR10: 10.3125,
		abi.IB_SPEED_FDR: 14.0625, abi.IB_SPEED_EDR: 25.78125, abi.IB_SPEED_HDR: 53.125, abi.IB_SPEED_NDR: 106.25, abi.IB_SPEED_XDR: 212.5}
	s := speed[uint32(p.ActiveSpeed)]
	if p.ActiveSpeedEx != 0 {
		s = speed[p.ActiveSpeedEx]
	}
	return lanes * s
}

func portAttrFrom(r *abi.QueryPortResp) PortAttr {
	return PortAttr{
		State: PortState(r.State), MaxMTU: MTU(r.MaxMTU), ActiveMTU: MTU(r.ActiveMTU), GIDTblLen: int(r.GidTblLen),
		PortCapFlags: r.PortCapFlags, MaxMsgSz: r.MaxMsgSz, PKeyTblLen: int(r.PkeyTblLen), LID: r.LID, SMLID: r.SmLID,
		LMC: r.LMC, ActiveWidth: r.ActiveWidth, ActiveSpeed: r.ActiveSpeed, PhysState: r.PhysState,
		LinkLayer: LinkLayer(r.LinkLayer), Flags: r.Flags, BadPKeyCntr: r.BadPkeyCntr, QKeyViolCntr: r.QkeyViolCntr,
		MaxVLNum: r.MaxVLNum, SMSL: r.SmSL, SubnetTimeout: r.SubnetTimeout, InitTypeReply: r.InitTypeReply,
	}
}

// QueryPort is ibv_query_port: the state, MTU, link layer and speed of port
// (numbered from 1). It uses the ioctl method of Linux 5.4+ and falls back to
// the write command.
func (c *Context) QueryPort(port int) (PortAttr, error) {
	if port < 1 || port > 255 {
		return PortAttr{}, fmt.Errorf("query port %d: ports are numbered from 1: %w", port, syscall.EINVAL)
	}
	resp := new(abi.QueryPortRespEx)
	var pin runtime.Pinner
	pin.Pin(resp)
	attrs := []abi.IoctlAttr{
		abi.AttrConstIn(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, uint64(port)),
		abi.AttrPtr(abi.UVERBS_ATTR_QUERY_PORT_RESP, abi.PtrU64(unsafe.Pointer(resp)), int(unsafe.Sizeof(*resp))),
	}
	err := c.ioctl(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT, attrs)
	pin.Unpin()
	if err == nil {
		a := portAttrFrom(&resp.LegacyResp)
		a.PortCapFlags2, a.ActiveSpeedEx = resp.PortCapFlags2, resp.ActiveSpeedEx
		return a, nil
	}
	if !noIoctl(err) {
		return PortAttr{}, fmt.Errorf("query port %d: %w", port, err)
	}
	legacy := new(abi.QueryPortResp)
	req := abi.QueryPort{Response: abi.PtrU64(unsafe.Pointer(legacy)), PortNum: uint8(port)}
	if err := c.write(abi.IB_USER_VERBS_CMD_QUERY_PORT, abi.Bytes(&req), unsafe.Pointer(legacy), unsafe.Sizeof(*legacy)); err != nil {
		return PortAttr{}, fmt.Errorf("query port %d: %w", port, err)
	}
	return portAttrFrom(legacy), nil
}

// GID is a 128-bit RDMA global identifier (union ibv_gid). For RoCE it is an
// IPv6 address, IPv4-mapped for IPv4 (::ffff:a.b.c.d).
type GID [16]byte

// Addr is the GID as an IP address (unmapped for IPv4-mapped GIDs).
func (g GID) Addr() netip.Addr { return netip.AddrFrom16(g).Unmap() }

// IsZero reports an unused GID table slot.
func (g GID) IsZero() bool { return g == GID{} }

func (g GID) String() string { return netip.AddrFrom16(g).String() }

// GIDFromAddr returns the RoCE GID of an IP address.
func GIDFromAddr(a netip.Addr) GID { return GID(netip.AddrFrom16(a.As16()).As16()) }

// GIDEntry is struct ibv_gid_entry: one populated slot of a port's GID table.
type GIDEntry struct {
	GID     GID
	Index   int
	Port    int
	Type    GIDType
	Ifindex int    // 0 if no netdev
	Netdev  string // "" if none or unknown
}

// GIDTable is ibv_query_gid_table for one port: the populated GID entries with
// their type (IB, RoCE v1, RoCE v2) and netdev. It uses the ioctl method of
// Linux 5.10+ and falls back to sysfs (ports/N/gids, gid_attrs/types,
// gid_attrs/ndevs).
func (c *Context) GIDTable(port int) ([]GIDEntry, error) {
	pa, err := c.QueryPort(port)
	if err != nil {
		return nil, fmt.Errorf("gid table: %w", err)
	}
	n := pa.GIDTblLen
	if n <= 0 {
		return nil, nil
	}
	ents, err := c.gidTableIoctl(n)
	if err == nil {
		out := ents[:0]
		for _, e := range ents {
			if e.Port == port {
				out = append(out, e)
			}
		}
		return out, nil
	}
	if !noIoctl(err) {
		return nil, fmt.Errorf("query gid table: %w", err)
	}
	return gidTableSysfs(c.dev.Name, port, n)
}

func (c *Context) gidTableIoctl(max int) ([]GIDEntry, error) {
	raw := make([]abi.GIDEntry, max)
	count := new(uint64)
	var pin runtime.Pinner
	pin.Pin(&raw[0])
	pin.Pin(count)
	defer pin.Unpin()
	attrs := []abi.IoctlAttr{
		abi.AttrConstIn(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, uint64(unsafe.Sizeof(raw[0]))),
		abi.AttrInline(abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, make([]byte, 4)).Optional(),
		abi.AttrPtr(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, abi.PtrU64(unsafe.Pointer(&raw[0])), max*int(unsafe.Sizeof(raw[0]))),
		abi.AttrPtr(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, abi.PtrU64(unsafe.Pointer(count)), 8),
	}
	if err := c.ioctl(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE, attrs); err != nil {
		return nil, err
	}
	if *count > uint64(max) {
		return nil, fmt.Errorf("kernel returned %d gid entries for a table of %d: %w", *count, max, syscall.EOVERFLOW)
	}
	out := make([]GIDEntry, 0, *count)
	for _, r := range raw[:*count] {
		var g GID
		binary.NativeEndian.PutUint64(g[0:], r.GID[0])
		binary.NativeEndian.PutUint64(g[8:], r.GID[1])
		e := GIDEntry{GID: g, Index: int(r.GIDIndex), Port: int(r.PortNum), Type: GIDType(r.GIDType), Ifindex: int(r.NetdevIfindex)}
		if e.Ifindex != 0 {
			if ifc, err := net.InterfaceByIndex(e.Ifindex); err == nil {
				e.Netdev = ifc.Name
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// gidTableSysfs reads the GID table from /sys/class/infiniband/DEV/ports/N.
func gidTableSysfs(dev string, port, n int) ([]GIDEntry, error) {
	var out []GIDEntry
	for i := 0; i < n; i++ {
		s, ok, err := sysRoot.GIDAt(dev, port, i)
		if err != nil {
			return nil, fmt.Errorf("gid %s/%d: %w", dev, i, err)
		}
		if !ok {
			if i == 0 {
				return nil, fmt.Errorf("gid table of %s port %d: no sysfs gids: %w", dev, port, ErrNotSupported)
			}
			continue
		}
		g := GID(s.GID.As16())
		if g.IsZero() {
			continue
		}
		e := GIDEntry{GID: g, Index: i, Port: port}
		switch s.Version() {
		case "v2":
			e.Type = GIDTypeRoCEv2
		case "v1":
			e.Type = GIDTypeRoCEv1
		default:
			e.Type = GIDTypeIB
		}
		if s.Netdev != "" {
			e.Netdev = s.Netdev
			if ifc, err := net.InterfaceByName(s.Netdev); err == nil {
				e.Ifindex = ifc.Index
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// GIDForIP returns the RoCE v2 GID entry of port whose address is addr (the
// IPv4-mapped GID for an IPv4 address) — the sgid_index to put in address
// vectors for RoCE v2 traffic from that address.
func (c *Context) GIDForIP(port int, addr netip.Addr) (GIDEntry, error) {
	ents, err := c.GIDTable(port)
	if err != nil {
		return GIDEntry{}, err
	}
	want := GIDFromAddr(addr)
	for _, e := range ents {
		if e.GID == want && e.Type == GIDTypeRoCEv2 {
			return e, nil
		}
	}
	return GIDEntry{}, fmt.Errorf("no RoCE v2 GID for %v on %s port %d (is the address on the rxe netdev?): %w", addr, c.dev.Name, port, ErrNoGID)
}
