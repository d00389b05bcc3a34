// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"fmt"

	"github.com/rdmago/rdmago/uverbs"
)

// UverbsQuerier is the Verbs of the running system: it opens the device with
// package uverbs (ibv_open_device), queries the device and each port, and
// closes it again. Opening needs read-write access to /dev/infiniband/uverbsN.
type UverbsQuerier struct{}

// Query is ibv_query_device plus ibv_query_port for every port.
func (UverbsQuerier) Query(dev string) (VerbsInfo, error) {
	c, err := uverbs.Open(dev)
	if err != nil {
		return VerbsInfo{}, err
	}
	defer c.Close()
	a, err := c.QueryDeviceEx()
	if err != nil {
		// Kernels without EX_QUERY_DEVICE: the base attributes only, as
		// libibverbs falls back to.
		if a, err = c.QueryDevice(); err != nil {
			return VerbsInfo{}, err
		}
	}
	info := VerbsInfo{
		NumCompVectors: c.NumCompVectors(),
		Device: DeviceAttr{
			FWVer: a.FwVer, VendorID: a.VendorID, VendorPartID: a.VendorPartID, HWVer: a.HwVer,
			PhysPortCnt: a.PhysPortCnt, MaxMRSize: a.MaxMRSize, PageSizeCap: a.PageSizeCap,
			MaxQP: a.MaxQP, MaxQPWR: a.MaxQPWR, DeviceCapFlags: a.DeviceCapFlags, MaxSGE: a.MaxSGE,
			MaxSGERD: a.MaxSGERd, MaxCQ: a.MaxCQ, MaxCQE: a.MaxCQE, MaxMR: a.MaxMR, MaxPD: a.MaxPD,
			MaxQPRdAtom: a.MaxQPRdAtom, MaxResRdAtom: a.MaxResRdAtom, MaxQPInitRdAtom: a.MaxQPInitRdAtom,
			AtomicCap: a.AtomicCap, MaxMW: a.MaxMW, MaxAH: a.MaxAH, MaxSRQ: a.MaxSRQ, MaxSRQWR: a.MaxSRQWR,
			MaxSRQSGE: a.MaxSRQSGE, MaxPKeys: a.MaxPKeys, LocalCAAckDelay: a.LocalCAAckDelay,
			MaxEERdAtom: a.MaxEERdAtom, MaxEEInitRdAtom: a.MaxEEInitRdAtom, MaxEE: a.MaxEE, MaxRDD: a.MaxRDD,
			MaxRawIPv6QP: a.MaxRawIPv6QP, MaxRawEthyQP: a.MaxRawEthyQP, MaxMcastGrp: a.MaxMcastGrp,
			MaxMcastQPAttach: a.MaxMcastQPAttach, MaxTotalMcastQPAttach: a.MaxTotalMcastQPAttach,
			MaxFMR: a.MaxFMR, MaxMapPerFMR: a.MaxMapPerFMR, DeviceCapFlagsEx: a.DeviceCapFlagsEx,
			ODPGeneralCaps: a.ODPGeneralCaps, RCODPCaps: a.RCODPCaps, UCODPCaps: a.UCODPCaps, UDODPCaps: a.UDODPCaps,
			XRCODPCaps: a.XRCODPCaps, CompletionTimestampMask: a.CompletionTimestampMask, HCACoreClock: a.HCACoreClock,
			RawPacketCaps: a.RawPacketCaps, RSSSupportedQPTs: a.RSSSupportedQPTs, MaxRWQIndirectionTables: a.MaxRWQIndirectionTables,
			MaxRWQIndirectionTableSize: a.MaxRWQIndirectionTableSize, MaxWQTypeRQ: a.MaxWQTypeRQ,
			TMMaxRndvHdrSize: a.TMMaxRndvHdrSize, TMMaxNumTags: a.TMMaxNumTags, TMFlags: a.TMFlags, TMMaxOps: a.TMMaxOps,
			TMMaxSGE: a.TMMaxSGE, MaxCQModerationCount: a.MaxCQModerationCount, MaxCQModerationPeriod: a.MaxCQModerationPeriod,
			MaxDMSize: a.MaxDMSize,
		},
	}
	for p := 1; p <= a.PhysPortCnt; p++ {
		pa, err := c.QueryPort(p)
		if err != nil {
			return VerbsInfo{}, fmt.Errorf("%s: %w", dev, err)
		}
		info.Ports = append(info.Ports, PortAttr{
			Port: p, State: uint8(pa.State), MaxMTU: uint8(pa.MaxMTU), ActiveMTU: uint8(pa.ActiveMTU),
			GIDTblLen: pa.GIDTblLen, PortCapFlags: pa.PortCapFlags, PortCapFlags2: pa.PortCapFlags2,
			MaxMsgSz: pa.MaxMsgSz, PKeyTblLen: pa.PKeyTblLen, LID: pa.LID, SMLID: pa.SMLID, LMC: pa.LMC,
			ActiveWidth: pa.ActiveWidth, ActiveSpeed: pa.ActiveSpeed, PhysState: pa.PhysState,
			LinkLayer: uint8(pa.LinkLayer), MaxVLNum: pa.MaxVLNum, BadPKeyCntr: pa.BadPKeyCntr,
			QKeyViolCntr: pa.QKeyViolCntr, SubnetTimeout: pa.SubnetTimeout, InitTypeReply: pa.InitTypeReply,
		})
	}
	return info, nil
}
