// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmago/rdmago/oob"
	"github.com/rdmago/rdmago/tools/ping"
	"github.com/rdmago/rdmago/uverbs"
)

// qpTypes are --qp-type's values.
var qpTypes = map[string]uverbs.QPType{"rc": uverbs.QPTypeRC, "uc": uverbs.QPTypeUC, "ud": uverbs.QPTypeUD}

// runPingpongTCP is ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong
// (--qp-type) or ibv_srq_pingpong (--srq N): their TCP address exchange
// (package oob) and their traffic (ping.Pingpong), in either role.
func runPingpongTCP(ctx context.Context, c *config) error {
	logf := c.narrate()
	typ := qpTypes[c.qpType]
	t, err := c.tcpSetup(logf)
	if err != nil {
		return err
	}
	defer t.Close()
	ln, dev, gid, port := t.ln, t.dev, t.gid, t.port
	mtu := min(port.ActiveMTU, uverbs.MTU1024) // the examples' -m default
	size := c.size
	if size <= 0 {
		size = ping.PingpongSize
		if typ == uverbs.QPTypeUD {
			size = ping.PingpongUDSize
		}
	}
	if typ == uverbs.QPTypeUD && size > port.ActiveMTU.Bytes() {
		return fmt.Errorf("-S %d is larger than the port's MTU (%d): a UD message is one packet", size, port.ActiveMTU.Bytes())
	}
	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	nqp := max(1, c.srq)
	depth := ping.PingpongDepth(nqp)
	ch, err := dev.CreateCompChannel()
	if err != nil {
		return err
	}
	cq, err := dev.CreateCQ(2*depth+nqp, &uverbs.CQOptions{Channel: ch})
	if err != nil {
		return err
	}
	logf("verbs: allocated PD, created completion channel and CQ (%d entries)", cq.CQE())
	var srq *uverbs.SRQ
	if c.srq > 0 {
		if srq, err = pd.CreateSRQ(uverbs.SRQOptions{MaxWR: depth, MaxSGE: 1}); err != nil {
			return err
		}
		logf("verbs: created SRQ %#x (%d receives)", srq.Num(), srq.MaxWR())
	}
	qps := make([]ping.PingpongQP, nqp)
	for i := range qps {
		qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: typ, SendCQ: cq, RecvCQ: cq, SRQ: srq,
			Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: depth, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			return err
		}
		var qkey uint32
		if typ == uverbs.QPTypeUD {
			qkey = ping.PingpongQKey
		}
		if err := qp.ModifyToInit(1, 0, qkey); err != nil {
			return err
		}
		logf("verbs: created %v QP %#x -> %v", qp.Type(), qp.Num(), uverbs.QPSInit)
		qps[i].QP = qp
	}
	pp, err := ping.NewPingpong(ping.PingpongConfig{Type: typ, Server: c.server, Iters: c.count, Size: size, Out: c.stdout, PeerTimeout: c.peerTimeout},
		cq, qps, srq, regMRLogged(pd, logf))
	if err != nil {
		return err
	}
	pp.Logf = c.logf()
	if err := pp.PostRecvs(); err != nil {
		return err
	}
	logf("verbs: posted %d receives", ping.PingpongDepth(nqp))
	local := make([]uverbs.Dest, nqp)
	for i := range local {
		local[i] = uverbs.Dest{LID: port.LID, QPN: qps[i].QP.Num(), PSN: randomPSN(), GID: gid.GID}
		fmt.Fprintf(c.stdout, "  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %v\n", local[i].LID, local[i].QPN, local[i].PSN, local[i].GID)
	}
	opts := uverbs.ConnectOptions{SGIDIndex: gid.Index, MTU: mtu}
	connect := func(remote []uverbs.Dest) error {
		valid := 0
		for _, d := range remote {
			if d.QPN != 0 {
				valid++
			}
		}
		if c.srq > 0 && valid != nqp {
			return fmt.Errorf("the peer has %d QPs (ibv_srq_pingpong -q), we have --srq %d: give the same number", valid, nqp)
		}
		for i := range qps {
			r := remote[i]
			fmt.Fprintf(c.stdout, "  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %v\n", r.LID, r.QPN, r.PSN, r.GID)
			qp := qps[i].QP
			if err := qp.Connect(r, local[i].PSN, &opts); err != nil {
				return err
			}
			logf("verbs: QP %#x -> %v -> %v (dest qp %#x, mtu %v, sgid index %d)", qp.Num(), uverbs.QPSRTR, uverbs.QPSRTS, r.QPN, opts.MTU, opts.SGIDIndex)
			if typ == uverbs.QPTypeUD {
				attr := uverbs.AHAttr{DLID: r.LID, Port: 1}
				if !r.GID.IsZero() {
					attr.IsGlobal = true
					attr.GRH = uverbs.GlobalRoute{DGID: r.GID, SGIDIndex: uint8(gid.Index), HopLimit: 64}
				}
				ah, err := pd.CreateAH(attr)
				if err != nil {
					return err
				}
				qps[i].AH, qps[i].RemoteQPN = ah, r.QPN
				logf("verbs: created AH to %v, sending to QPN %#x with Q_Key %#x", r.GID, r.QPN, ping.PingpongQKey)
			}
		}
		return nil
	}
	n := 1
	if c.srq > 0 {
		n = oob.SRQDests
	}
	logf("tcp: exchanging %d address(es) each way", n)
	if c.client {
		remote, err := exchangeRetry(ctx, hostPort(c.addr, c.port), func(ctx context.Context, addr string) ([]uverbs.Dest, error) {
			return oob.ClientN(ctx, addr, local, n, nil)
		})
		if err != nil {
			return srqHint(err, c.srq > 0)
		}
		if err := connect(remote); err != nil {
			return err
		}
	} else {
		logf("tcp: waiting for the client's exchange on %v", ln.Addr())
		if _, err := oob.ServerN(ctx, ln, local, n, connect, nil); err != nil {
			return srqHint(err, c.srq > 0)
		}
	}
	err = pp.Run(ctx)
	if err != nil {
		// The C examples wait for their next message with no timeout.
		if n := pp.Abort(abortWait); n > 0 {
			err = fmt.Errorf("%w\n(the peer was sent a message longer than its receive buffers, which fails its receive: an ibv_*_pingpong there exits instead of waiting for ever)", err)
		}
	}
	return err
}

// abortWait bounds Pingpong.Abort's wait for the peer's refusal.
const abortWait = 2 * time.Second

// srqHint maps an exchange whose peer exchanges another number of
// addresses (oob.ErrAddressCount) to the flag that fixes it: --srq when
// the peer seems to be ibv_srq_pingpong, dropping it when it seems to run
// a one-QP pingpong.
func srqHint(err error, srq bool) error {
	if !errors.Is(err, oob.ErrAddressCount) {
		return err
	}
	if srq {
		return fmt.Errorf("%w: drop --srq", err)
	}
	return fmt.Errorf("%w: give --srq", err)
}
