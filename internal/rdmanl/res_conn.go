// Copyright 2026 The rdmago Authors.

package rdmanl

import (
	"fmt"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/netlink"
)

// ResSummary is `rdma resource show`: the count of each tracked object type
// on every device (RDMA_NLDEV_CMD_RES_GET dump). It needs no privileges.
func (c *Conn) ResSummary() ([]ResSummary, error) {
	msgs, err := c.c.Execute(msgType(abi.RDMA_NLDEV_CMD_RES_GET), netlink.NLM_F_DUMP, nil)
	if err != nil {
		return nil, fmt.Errorf("rdma resource summary: %w", err)
	}
	out := make([]ResSummary, 0, len(msgs))
	for _, m := range msgs {
		s, err := parseResSummary(m.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// RawResDump sends a RES_*_GET dump request (cmd is an RDMA_NLDEV_CMD_RES_*
// value) for device dev and returns the payloads of the answers, undecoded.
// It exists to capture test fixtures; the typed methods below decode them.
func (c *Conn) RawResDump(cmd uint16, dev uint32) ([][]byte, error) {
	msgs, err := c.c.Execute(msgType(cmd), netlink.NLM_F_DUMP, devIndexReq(dev))
	if err != nil {
		return nil, fmt.Errorf("rdma resource dump %d of device %d: %w", cmd, dev, err)
	}
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = m.Data
	}
	return out, nil
}

// dumpRes runs one per-device resource dump and decodes each message.
func dumpRes[T any](c *Conn, what string, cmd uint16, dev uint32, parse func([]byte) ([]T, error)) ([]T, error) {
	msgs, err := c.RawResDump(cmd, dev)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	var out []T
	for _, m := range msgs {
		v, err := parse(m)
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}

// QPs is `rdma resource show qp` for the device with index dev.
func (c *Conn) QPs(dev uint32) ([]QP, error) {
	return dumpRes(c, "QPs", abi.RDMA_NLDEV_CMD_RES_QP_GET, dev, parseQPs)
}

// CQs is `rdma resource show cq` for the device with index dev.
func (c *Conn) CQs(dev uint32) ([]CQ, error) {
	return dumpRes(c, "CQs", abi.RDMA_NLDEV_CMD_RES_CQ_GET, dev, parseCQs)
}

// MRs is `rdma resource show mr` for the device with index dev. Keys and
// addresses are filled only for a CAP_NET_ADMIN caller.
func (c *Conn) MRs(dev uint32) ([]MR, error) {
	return dumpRes(c, "MRs", abi.RDMA_NLDEV_CMD_RES_MR_GET, dev, parseMRs)
}

// PDs is `rdma resource show pd` for the device with index dev.
func (c *Conn) PDs(dev uint32) ([]PD, error) {
	return dumpRes(c, "PDs", abi.RDMA_NLDEV_CMD_RES_PD_GET, dev, parsePDs)
}

// CMIDs is `rdma resource show cm_id` for the device with index dev.
func (c *Conn) CMIDs(dev uint32) ([]CMID, error) {
	return dumpRes(c, "cm_ids", abi.RDMA_NLDEV_CMD_RES_CM_ID_GET, dev, parseCMIDs)
}

// SRQs is `rdma resource show srq` for the device with index dev
// (RDMA_NLDEV_CMD_RES_SRQ_GET).
func (c *Conn) SRQs(dev uint32) ([]SRQ, error) {
	return dumpRes(c, "SRQs", abi.RDMA_NLDEV_CMD_RES_SRQ_GET, dev, parseSRQs)
}
