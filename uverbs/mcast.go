// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"fmt"
	"syscall"

	"github.com/rdmago/rdmago/internal/abi"
)

// AttachMcast is ibv_attach_mcast (ATTACH_MCAST): the UD QP receives the
// datagrams sent to multicast group gid (on RoCE, the group's IP address as
// a GID: GIDFromAddr). lid is the group's LID, 0 on RoCE. rxe adds the
// group's Ethernet address to the netdev, but RoCE v2 datagrams are UDP:
// the IP layer drops them unless the host joined the IP group, which
// rdma_cm's join does (cm.ID.JoinMulticast, then attach with what its
// MULTICAST_JOIN event reports); otherwise join it on the interface
// yourself (net.ListenMulticastUDP). Detach with DetachMcast before
// closing the QP, or let Close drop the attachment.
func (qp *QP) AttachMcast(gid GID, lid uint16) error {
	return qp.mcast(abi.IB_USER_VERBS_CMD_ATTACH_MCAST, "attach mcast", gid, lid)
}

// DetachMcast is ibv_detach_mcast (DETACH_MCAST): it undoes AttachMcast.
func (qp *QP) DetachMcast(gid GID, lid uint16) error {
	return qp.mcast(abi.IB_USER_VERBS_CMD_DETACH_MCAST, "detach mcast", gid, lid)
}

func (qp *QP) mcast(cmd uint32, op string, gid GID, lid uint16) error {
	if qp.typ != QPTypeUD {
		return fmt.Errorf("%s %v: a %v QP: multicast needs a UD QP: %w", op, gid, qp.typ, syscall.EINVAL)
	}
	qp.mu.RLock()
	defer qp.mu.RUnlock()
	if qp.closed.Load() {
		return fmt.Errorf("%s %v: %w", op, gid, ErrClosed)
	}
	// Both commands share one layout.
	req := abi.AttachMcast{GID: gid, QPHandle: qp.handle, MLID: lid}
	if err := qp.ctx.write(cmd, abi.Bytes(&req), nil, 0); err != nil {
		return fmt.Errorf("%s %v on QP %#x: %w", op, gid, qp.num, err)
	}
	return nil
}
