// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// AH is an address handle (struct ibv_ah): the destination of UD sends. The
// caller must Close it after the last send using it completed. Once it (or
// its Context) is closed, PostSend refuses it with ErrClosed.
type AH struct {
	pd     *PD
	handle uint32
	num    uint32    // rxe's AH number, put in UD send WQEs
	av     abi.RxeAV // with num 0 (Linux 5.10): the address every WQE carries
	uh     uint64
	attr   AHAttr
	mu     sync.Mutex
	closed atomic.Bool // set under mu; read by PostSend without it
}

// CreateAH is ibv_create_ah. For RoCE set IsGlobal and GRH (DGID the peer's
// GID, SGIDIndex the local GID to send from). rxe since Linux 5.13 returns
// an AH number that UD sends name; with older kernels (5.10) every send
// carries the whole address, as rdma-core's provider does.
func (pd *PD) CreateAH(attr AHAttr) (*AH, error) {
	c := pd.ctx
	if attr.Port == 0 {
		attr.Port = 1
	}
	if err := pd.rlockOpen("create ah: pd"); err != nil {
		return nil, err
	}
	defer pd.mu.RUnlock()
	ah := &AH{pd: pd, attr: attr}
	uh, err := c.track(kindAH, ah)
	if err != nil {
		return nil, fmt.Errorf("create ah: %w", err)
	}
	ah.uh = uh
	var resp struct {
		core abi.CreateAHResp
		drv  abi.RxeCreateAHResp // provider: rxe's AH number
	}
	req := abi.CreateAH{
		Response: abi.PtrU64(unsafe.Pointer(&resp)), UserHandle: uh, PDHandle: pd.handle, Attr: attr.toABI(),
	}
	if err := c.write(abi.IB_USER_VERBS_CMD_CREATE_AH, abi.Bytes(&req), unsafe.Pointer(&resp), unsafe.Sizeof(resp)); err != nil {
		c.forget(kindAH, ah, uh)
		return nil, fmt.Errorf("create ah to %v: %w", attr.GRH.DGID, err)
	}
	ah.handle, ah.num = resp.core.AHHandle, resp.drv.AHNum
	if ah.num == 0 {
		sgid, err := c.gid(int(attr.Port), int(attr.GRH.SGIDIndex))
		if err == nil {
			ah.av = rxeAV(attr, sgid.GID)
			ah.av.DMAC = loopbackMAC(sgid.Ifindex, attr.GRH.DGID)
		} else {
			ah.destroy()
			c.forget(kindAH, ah, uh)
			return nil, fmt.Errorf("create ah: the kernel's rxe returned no AH number, and the address vector needs the source GID: %w", err)
		}
	}
	return ah, nil
}

// rxeAV is the address vector (struct rxe_av) a UD send WQE carries on a
// kernel whose rxe returns no AH number: the route and the two IP
// addresses, as rdma-core's rxe provider fills it. The destination MAC is
// the caller's (loopbackMAC).
func rxeAV(attr AHAttr, sgid GID) abi.RxeAV {
	av := abi.RxeAV{
		PortNum: attr.Port,
		GRH: abi.RxeGlobalRoute{DGID: attr.GRH.DGID, FlowLabel: attr.GRH.FlowLabel, SGIDIndex: attr.GRH.SGIDIndex,
			HopLimit: attr.GRH.HopLimit, TrafficClass: attr.GRH.TrafficClass},
	}
	av.NetworkType = abi.RXE_NETWORK_TYPE_IPV6
	if netip.AddrFrom16(sgid).Is4In6() {
		av.NetworkType = abi.RXE_NETWORK_TYPE_IPV4
	}
	putSockaddr(&av.SGIDAddr, sgid)
	putSockaddr(&av.DGIDAddr, attr.GRH.DGID)
	return av
}

// putSockaddr writes gid as the sockaddr_in (an IPv4-mapped GID) or
// sockaddr_in6 it stands for, port 0, into a union of the two
// (rdma_gid2ip).
func putSockaddr(b *[28]uint8, gid GID) {
	*b = [28]uint8{}
	a := netip.AddrFrom16(gid)
	if a.Is4In6() {
		binary.NativeEndian.PutUint16(b[0:], 2) // AF_INET
		v4 := a.Unmap().As4()
		copy(b[4:8], v4[:])
		return
	}
	binary.NativeEndian.PutUint16(b[0:], 10) // AF_INET6 (Linux)
	copy(b[8:24], gid[:])
}

// Attr is the address the AH was created with.
func (ah *AH) Attr() AHAttr { return ah.attr }

func (ah *AH) destroy() error {
	req := abi.DestroyAH{AHHandle: ah.handle}
	return ah.pd.ctx.write(abi.IB_USER_VERBS_CMD_DESTROY_AH, abi.Bytes(&req), nil, 0)
}

// Close is ibv_destroy_ah. It is idempotent.
func (ah *AH) Close() error {
	ah.mu.Lock()
	defer ah.mu.Unlock()
	if ah.closed.Load() {
		return nil
	}
	if err := ah.destroy(); err != nil {
		return fmt.Errorf("destroy ah: %w", err)
	}
	ah.closed.Store(true)
	ah.pd.ctx.forget(kindAH, ah, ah.uh)
	return nil
}

// abandon marks the AH closed without a system call (see QP.abandon).
func (ah *AH) abandon() {
	ah.mu.Lock()
	ah.closed.Store(true)
	ah.mu.Unlock()
}

// gid is the entry at index of port's GID table.
func (c *Context) gid(port, index int) (GIDEntry, error) {
	ents, err := c.GIDTable(port)
	if err != nil {
		return GIDEntry{}, err
	}
	for _, e := range ents {
		if e.Index == index {
			return e, nil
		}
	}
	return GIDEntry{}, fmt.Errorf("port %d has no GID at index %d", port, index)
}

// loopbackMAC is the destination MAC of an address vector: the MAC of the
// source GID's netdev (ifindex) when dgid is an address of that netdev,
// zero otherwise. rxe before AH numbers (5.10) takes a packet whose
// destination MAC is its own netdev's as one to loop back to itself;
// with a zero MAC it sends it to the IP stack, where nothing receives it.
// Other destinations need no MAC: the IP stack resolves theirs.
func loopbackMAC(ifindex int, dgid GID) [6]byte {
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil || len(ifi.HardwareAddr) != 6 {
		return [6]byte{}
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return [6]byte{}
	}
	dst := dgid.Addr()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == dst {
				return [6]byte(ifi.HardwareAddr)
			}
		}
	}
	return [6]byte{}
}
