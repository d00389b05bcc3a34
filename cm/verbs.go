// Copyright 2026 The rdmago Authors.

package cm

import (
	"fmt"
	"strings"
	"sync"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/uverbs"
)

// device is an open RDMA device shared by the connections on it: one
// uverbs Context per device per process, as librdmacm keeps one
// ibv_context per cma_device. It is reference counted; the last user
// closes it.
type device struct {
	name string
	ctx  *uverbs.Context
	attr uverbs.DeviceAttr
	refs int // guarded by devicesMu
	dead bool
	// external is a Context the caller owns (Options.PD's): never closed here.
	external bool
}

var (
	devicesMu sync.Mutex
	devices   = map[string]*device{}
)

// acquireDevice opens (or shares) the uverbs device an ID is bound to, as
// QUERY reported it: by its index, which RDMA netlink maps to a name, and
// its node GUID as a cross-check and fallback.
func acquireDevice(info AddrInfo) (*device, error) {
	if !info.HasDevice() {
		return nil, fmt.Errorf("the rdma_cm id is not bound to an RDMA device yet (resolve or bind first): %w", ErrNoDevice)
	}
	name, err := deviceName(info)
	if err != nil {
		return nil, err
	}
	devicesMu.Lock()
	defer devicesMu.Unlock()
	if d := devices[name]; d != nil && !d.dead {
		d.refs++
		return d, nil
	}
	ctx, err := uverbs.Open(name)
	if err != nil {
		return nil, err
	}
	attr, err := ctx.QueryDevice()
	if err != nil {
		ctx.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	d := &device{name: name, ctx: ctx, attr: attr, refs: 1}
	devices[name] = d
	return d, nil
}

// callerDevice wraps the Context of the caller's PD after checking it is
// the device the ID resolved to.
func callerDevice(info AddrInfo, ctx *uverbs.Context) (*device, error) {
	name, err := deviceName(info)
	if err != nil {
		return nil, err
	}
	if got := ctx.Device().Name; got != name {
		return nil, fmt.Errorf("cm: Options.PD is on %s, but the connection resolved to %s: %w", got, name, ErrNoDevice)
	}
	attr, err := ctx.QueryDevice()
	if err != nil {
		return nil, err
	}
	return &device{name: name, ctx: ctx, attr: attr, external: true}, nil
}

// release drops one reference; the last closes the Context and everything
// still on it.
func (d *device) release() error {
	if d.external {
		return nil
	}
	devicesMu.Lock()
	d.refs--
	last := d.refs == 0
	if last && devices[d.name] == d {
		delete(devices, d.name)
	}
	devicesMu.Unlock()
	if last {
		return d.ctx.Close()
	}
	return nil
}

// markDead stops new connections from sharing a device that was removed.
func (d *device) markDead() {
	if d.external {
		return
	}
	devicesMu.Lock()
	d.dead = true
	if devices[d.name] == d {
		delete(devices, d.name)
	}
	devicesMu.Unlock()
}

func deviceName(info AddrInfo) (string, error) {
	if nl, err := rdmanl.Dial(); err == nil {
		devs, err := nl.Devices()
		nl.Close()
		if err == nil {
			for _, d := range devs {
				if d.Index == info.DevIndex && (info.NodeGUID == 0 || d.NodeGUID == info.NodeGUID) {
					return d.Name, nil
				}
			}
		}
	}
	// No RDMA netlink: match the node GUID against sysfs.
	d, err := uverbs.LookupDevice(uverbs.DeviceQuery{NodeGUID: info.NodeGUID})
	if err != nil {
		return "", fmt.Errorf("device index %d: %w (%w)", info.DevIndex, err, ErrNoDevice)
	}
	return d.Name, nil
}

// unsupportedQPMask are the attribute bits INIT_QP_ATTR may return that
// uverbs.QPAttr cannot carry (alternate paths, path migration, SQD notify,
// capabilities, rate limit). RoCE connections never use them.
const unsupportedQPMask = abi.IB_QP_EN_SQD_ASYNC_NOTIFY | abi.IB_QP_ALT_PATH | abi.IB_QP_PATH_MIG_STATE |
	abi.IB_QP_CAP | abi.IB_QP_RATE_LIMIT

// legacyMaskBits are the attribute bits MODIFY_QP accepts (up to
// IB_QP_DEST_QPN); librdmacm clears the bits above, which old kernels leaked
// for RoCE.
const legacyMaskBits = abi.IB_QP_DEST_QPN<<1 - 1

// qpAttrFromABI converts INIT_QP_ATTR's answer into the attributes and
// mask of a uverbs modify.
func qpAttrFromABI(a *abi.QPAttr) (uverbs.QPAttr, uverbs.QPAttrMask, error) {
	mask := a.QPAttrMask & legacyMaskBits
	if bad := mask & unsupportedQPMask; bad != 0 {
		return uverbs.QPAttr{}, 0, fmt.Errorf("the CM asks for QP attributes %#x (alternate path, path migration, SQD notify or capabilities) that uverbs.QPAttr cannot carry: %w", bad, ErrNotSupported)
	}
	q := uverbs.QPAttr{
		State: uverbs.QPState(a.QPState), CurState: uverbs.QPState(a.CurQPState), PathMTU: uverbs.MTU(a.PathMTU),
		QKey: a.Qkey, RQPSN: a.RqPSN, SQPSN: a.SqPSN, DestQPN: a.DestQPNum,
		AccessFlags: uverbs.AccessFlags(a.QPAccessFlags), PKeyIndex: a.PkeyIndex, Port: a.PortNum,
		AH:          ahAttrFromABI(&a.AHAttr),
		MaxRdAtomic: a.MaxRdAtomic, MaxDestRdAtomic: a.MaxDestRdAtomic, MinRNRTimer: a.MinRnrTimer,
		Timeout: a.Timeout, RetryCnt: a.RetryCnt, RNRRetry: a.RnrRetry,
	}
	return q, uverbs.QPAttrMask(mask), nil
}

// maskString names the bits of a QP attribute mask (ibv_qp_attr_mask).
func maskString(m uverbs.QPAttrMask) string {
	names := []string{"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX", "PORT", "QKEY",
		"AV", "PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN", "MAX_QP_RD_ATOMIC", "ALT_PATH",
		"MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC", "PATH_MIG_STATE", "CAP", "DEST_QPN"}
	var s []string
	for i, n := range names {
		if m&(1<<i) != 0 {
			s = append(s, n)
		}
	}
	if m>>len(names) != 0 {
		s = append(s, fmt.Sprintf("%#x", uint32(m>>len(names)<<len(names))))
	}
	return strings.Join(s, "|")
}

// ahAttrFromABI converts the kernel's struct ib_uverbs_ah_attr — what
// rdma_cm's INIT_QP_ATTR and UD events report — into a uverbs.AHAttr
// (ibv_copy_ah_attr_from_kern).
func ahAttrFromABI(a *abi.AHAttr) uverbs.AHAttr {
	return uverbs.AHAttr{
		GRH: uverbs.GlobalRoute{DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, SGIDIndex: a.GRH.SGIDIndex,
			HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass},
		DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, IsGlobal: a.IsGlobal != 0, Port: a.PortNum,
	}
}
