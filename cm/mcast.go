// Copyright 2026 The rdmago Authors.

package cm

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/rdmago/rdmago/internal/abi"
)

// JoinFlags is the join type of JoinMulticast (the RDMA_MC_JOIN_FLAG_*
// enum).
type JoinFlags uint16

// Join types.
const (
	// JoinFullMember receives and sends (rdma_join_multicast).
	JoinFullMember JoinFlags = 0x0 // RDMA_MC_JOIN_FLAG_FULLMEMBER
	// JoinSendOnlyFullMember only sends: no IGMP join, and the group's
	// traffic is not delivered (mckey -o).
	JoinSendOnlyFullMember JoinFlags = 0x1 // RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER
)

// Multicast is a group joined by JoinMulticast.
type Multicast struct {
	id    *ID
	kid   uint32 // the kernel's id for the membership (LEAVE_MCAST names it)
	group netip.Addr
	left  bool
}

// Group is the group's address.
func (m *Multicast) Group() netip.Addr { return m.group }

// JoinMulticast is rdma_join_multicast_ex (JOIN_MCAST) on a PortSpaceUDP id
// whose address was resolved (ResolveAddr towards the group, or Bind to a
// local address): it asks to join group and returns at once; the
// MULTICAST_JOIN event — its UD parameters hold the AH attributes that reach
// the group, the QPN 0xffffff and the Q_Key to send with — or
// MULTICAST_ERROR follows on the id (AwaitJoin). Unlike librdmacm, which
// attaches the id's QP when it reads the event, the caller attaches its UD
// QP itself (uverbs.QP.AttachMcast with the event's AHAttr.GRH.DGID and
// DLID). On RoCE the kernel sends the IGMP join for a full member (Linux
// 5.10+). Leave with Multicast.Leave (or Close the id).
func (id *ID) JoinMulticast(group netip.Addr, flags JoinFlags) (*Multicast, error) {
	if !group.IsMulticast() {
		return nil, fmt.Errorf("rdma_cm join multicast %v: not a multicast address", group)
	}
	body := &abi.UCMJoinMcast{ID: id.kid, UID: id.uid, JoinFlags: uint16(flags)}
	var err error
	if body.Addr, body.AddrSize, err = abi.SockaddrStorageFrom(netip.AddrPortFrom(group, 0)); err != nil {
		return nil, fmt.Errorf("rdma_cm join multicast %v: %w", group, err)
	}
	resp := make([]byte, 4)
	if err := id.exec(abi.RDMA_USER_CM_CMD_JOIN_MCAST, body, resp); err != nil {
		return nil, fmt.Errorf("rdma_cm join multicast %v: %w", group, err)
	}
	var r abi.UCMCreateIDResp
	if err := abi.DecodeUCMResp(resp, &r); err != nil {
		return nil, err
	}
	return &Multicast{id: id, kid: r.ID, group: group}, nil
}

// AwaitJoin waits for the MULTICAST_JOIN event of a join (an *EventError
// for MULTICAST_ERROR).
func (m *Multicast) AwaitJoin(ctx context.Context) (Event, error) {
	return m.id.await(ctx, "join multicast", m.group.String(), EventMulticastJoin)
}

// Leave is rdma_leave_multicast (LEAVE_MCAST). Detach the QP first. It is
// idempotent.
func (m *Multicast) Leave() error {
	if m.left {
		return nil
	}
	body := &abi.UCMDestroyID{ID: m.kid}
	resp := make([]byte, 4) // events_reported
	if err := m.id.exec(abi.RDMA_USER_CM_CMD_LEAVE_MCAST, body, resp); err != nil {
		return fmt.Errorf("rdma_cm leave multicast %v: %w", m.group, err)
	}
	m.left = true
	return nil
}
