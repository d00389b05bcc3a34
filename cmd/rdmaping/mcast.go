// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/tools/ping"
	"github.com/rdmago/rdmago/uverbs"
)

// runMcast is librdmacm's mckey: -s joins the group and receives -C
// datagrams (`mckey -m GROUP`), -c joins and sends them (`mckey -s -m
// GROUP`); -a is the address to bind to (mckey -b). The group is joined
// through rdma_cm (JOIN_MCAST), the UD QP attached with what MULTICAST_JOIN
// reports, datagrams go to QPN 0xffffff with the event's Q_Key and carry
// the sender's QPN as immediate data, as mckey's do.
func runMcast(ctx context.Context, c *config) error {
	logf := c.narrate()
	group, err := netip.ParseAddr(c.mcast)
	if err != nil || !group.IsMulticast() {
		return fmt.Errorf("--mcast %q: want a multicast IP address (224.0.0.0/4 or ff00::/8)", c.mcast)
	}
	count, size := c.count, c.size
	if count < 0 {
		count = ping.McastDefaultCount
	}
	if size <= 0 {
		size = ping.McastDefaultSize
	}
	sender := c.client
	role := "server"
	if sender {
		role = "client"
	}
	fmt.Fprintf(c.stdout, "mckey: starting %s\n", role)
	ch, err := cm.OpenChannel()
	if err != nil {
		return err
	}
	defer ch.Close()
	id, err := ch.CreateID(cm.PortSpaceUDP)
	if err != nil {
		return err
	}
	defer id.Close()
	var src netip.AddrPort
	if c.addr != "" {
		a, err := netip.ParseAddr(c.addr)
		if err != nil {
			return fmt.Errorf("-a %q: want the local address to bind to: %w", c.addr, err)
		}
		src = netip.AddrPortFrom(a, 0)
	}
	fmt.Fprintln(c.stdout, "mckey: joining")
	if err := id.ResolveAddr(ctx, src, netip.AddrPortFrom(group, 0), 2*time.Second); err != nil {
		return err
	}
	info, err := id.Query()
	if err != nil {
		return err
	}
	logf("cm: resolved %v from %v (port %d)", group, info.Local.Addr(), info.Port)
	dev, err := openByIP(info.Local.Addr())
	if err != nil {
		return err
	}
	defer dev.Close()
	if p, err := dev.QueryPort(1); err == nil && size > p.ActiveMTU.Bytes() {
		return fmt.Errorf("mckey: message_size %d is larger than active mtu %d", size, p.ActiveMTU.Bytes())
	}
	flags := cm.JoinFullMember
	if sender && c.sendOnly {
		flags = cm.JoinSendOnlyFullMember
	}
	mc, err := id.JoinMulticast(group, flags)
	if err != nil {
		return err
	}
	defer mc.Leave()
	ev, err := mc.AwaitJoin(ctx)
	if err != nil {
		return err
	}
	ah := ev.UD.AHAttr
	fmt.Fprintf(c.stdout, "mckey: joined dgid: %v mlid 0x%x sl %d\n", ah.GRH.DGID, ah.DLID, ah.SL)
	logf("cm: MULTICAST_JOIN: send to QPN %#x with Q_Key %#x, sgid index %d", ev.UD.QPNum, ev.UD.QKey, ah.GRH.SGIDIndex)

	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	// A completion channel, so the receiver sleeps until a datagram lands
	// instead of polling for up to 20 s, taking the processor from a
	// sender on the same node.
	cch, err := dev.CreateCompChannel()
	if err != nil {
		return err
	}
	cq, err := dev.CreateCQ(2*count+2, &uverbs.CQOptions{Channel: cch})
	if err != nil {
		return err
	}
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeUD, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: max(count, 1), MaxRecvWR: max(count, 1), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return err
	}
	if err := qp.ModifyToInit(1, 0, ev.UD.QKey); err != nil {
		return err
	}
	if err := qp.Connect(uverbs.Dest{}, 0, nil); err != nil {
		return err
	}
	logf("verbs: created UD QP %#x (Q_Key %#x) -> %v", qp.Num(), ev.UD.QKey, uverbs.QPSRTS)
	m, err := ping.NewMcast(ping.McastConfig{Count: count, Size: size, Out: c.stdout, Logf: c.logf()}, qp, cq, pd.RegMR)
	if err != nil {
		return err
	}
	if !sender {
		// Receives first, then attach: from the attach on the group's
		// datagrams reach the QP, and each needs a receive waiting.
		if err := m.PostReceives(); err != nil {
			return err
		}
		logf("verbs: posted %d receives of %d bytes", count, size+ping.GRHSize)
		if err := qp.AttachMcast(ah.GRH.DGID, ah.DLID); err != nil {
			return err
		}
		defer qp.DetachMcast(ah.GRH.DGID, ah.DLID)
		logf("verbs: attached QP %#x to %v", qp.Num(), ah.GRH.DGID)
		if err := m.Receive(ctx); err != nil {
			return err
		}
	} else {
		sah, err := pd.CreateAH(ah)
		if err != nil {
			return err
		}
		// --settle: mckey pauses 3 s here, to give a subnet manager time
		// to set up the group's switches; receivers started at the same
		// time have joined by then.
		logf("mcast: waiting %v before sending (--settle)", c.settle)
		select {
		case <-time.After(c.settle):
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := m.Send(ctx, sah, ev.UD.QPNum, ev.UD.QKey); err != nil {
			return err
		}
		logf("verbs: %d datagrams of %d bytes sent to %v", count, size, group)
	}
	fmt.Fprintln(c.stdout, "data transfers complete")
	fmt.Fprintln(c.stdout, "test complete")
	return nil
}
