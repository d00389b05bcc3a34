// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/cmd/rdmaping/internal/ping"
	"github.com/rdmago/rdmago/uverbs"
)

// mcastMagic starts rdmaping's multicast messages, followed by the
// sequence number; mckey sends whatever its buffer holds.
const mcastMagic = "rdmaping mcast"

// mcastSettle is how long the sender waits after joining before it sends,
// as mckey does ("give SM chance to configure switches"): receivers
// started at the same time have joined by then.
var mcastSettle = 3 * time.Second

// runMcast is librdmacm's mckey: -s joins the group and receives -C
// datagrams (`mckey -m GROUP`), -c joins and sends them (`mckey -s -m
// GROUP`); -a is the address to bind to (mckey -b). The group is joined
// through rdma_cm (JOIN_MCAST), the UD QP attached with what MULTICAST_JOIN
// reports, datagrams go to QPN 0xffffff with the event's Q_Key and carry
// the sender's QPN as immediate data, as mckey's do.
func runMcast(ctx context.Context, c *config) error {
	logf := c.logf()
	if logf == nil {
		logf = func(string, ...any) {}
	}
	group, err := netip.ParseAddr(c.mcast)
	if err != nil || !group.IsMulticast() {
		return fmt.Errorf("--mcast %q: want a multicast IP address (224.0.0.0/4 or ff00::/8)", c.mcast)
	}
	count, size := c.count, c.size
	if count < 0 {
		count = 10
	}
	if size <= 0 {
		size = 100
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
	dev, err := uverbs.OpenByIP(info.Local.Addr())
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
	ah := uverbs.AHAttrFromABI(&ev.UD.AHAttr)
	fmt.Fprintf(c.stdout, "mckey: joined dgid: %v mlid 0x%x sl %d\n", ah.GRH.DGID, ah.DLID, ah.SL)
	logf("cm: MULTICAST_JOIN: send to QPN %#x with Q_Key %#x, sgid index %d", ev.UD.QPNum, ev.UD.QKey, ah.GRH.SGIDIndex)

	pd, err := dev.AllocPD()
	if err != nil {
		return err
	}
	cq, err := dev.CreateCQ(2*count+2, nil)
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
	slot := size + ping.GRHSize
	buf := make([]byte, max(count, 1)*slot)
	mr, err := pd.RegMR(buf, uverbs.AccessLocalWrite)
	if err != nil {
		return err
	}
	if !sender {
		if err := qp.AttachMcast(ah.GRH.DGID, ah.DLID); err != nil {
			return err
		}
		defer qp.DetachMcast(ah.GRH.DGID, ah.DLID)
		logf("verbs: attached QP %#x to %v", qp.Num(), ah.GRH.DGID)
		for i := range count {
			if err := qp.PostRecv(uverbs.RecvWR{ID: uint64(i), SGL: []uverbs.SGE{mr.SGE(i*slot, slot)}}); err != nil {
				return err
			}
		}
		fmt.Fprintln(c.stdout, "receiving data transfers")
		if err := mcastReceive(ctx, c, cq, buf, slot, size, count); err != nil {
			return err
		}
		fmt.Fprintln(c.stdout, "data transfers complete")
		fmt.Fprintln(c.stdout, "test complete")
		return nil
	}
	sah, err := pd.CreateAH(ah)
	if err != nil {
		return err
	}
	select {
	case <-time.After(mcastSettle):
	case <-ctx.Done():
		return ctx.Err()
	}
	fmt.Fprintln(c.stdout, "initiating data transfers")
	for i := range count {
		m := buf[i*slot : i*slot+size]
		mcastMessage(m, i)
		if err := qp.PostSend(uverbs.SendWR{ID: uint64(i), Opcode: uverbs.WRSendWithImm, Flags: uverbs.SendSignaled, Imm: qp.Num(),
			SGL: []uverbs.SGE{mr.SGE(i*slot, size)}, AH: sah, RemoteQPN: ev.UD.QPNum, RemoteQKey: ev.UD.QKey}); err != nil {
			return err
		}
	}
	wcs := make([]uverbs.WC, max(count, 1))
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := cq.PollN(wctx, wcs, count); err != nil {
		return fmt.Errorf("send completions: %w", err)
	}
	for _, wc := range wcs[:count] {
		if err := wc.Err(); err != nil {
			return err
		}
	}
	logf("verbs: %d datagrams of %d bytes sent to %v", count, size, group)
	fmt.Fprintln(c.stdout, "data transfers complete")
	fmt.Fprintln(c.stdout, "test complete")
	return nil
}

// mcastMessage fills rdmaping's i-th datagram: the magic, i, then a
// pattern.
func mcastMessage(m []byte, i int) {
	for j := range m {
		m[j] = byte(i + j*11)
	}
	if len(m) >= len(mcastMagic)+4 {
		copy(m, mcastMagic)
		binary.BigEndian.PutUint32(m[len(mcastMagic):], uint32(i))
	}
}

// mcastReceive waits for count datagrams, each within 20 s of the last.
// The immediate must be the sender's QPN (mckey's and rdmaping's); the
// data is checked in full when the sender is rdmaping.
func mcastReceive(ctx context.Context, c *config, cq *uverbs.CQ, buf []byte, slot, size, count int) error {
	want := make([]byte, size)
	peer := ""
	var wcs [8]uverbs.WC
	for got := 0; got < count; {
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		n, _, err := uverbs.WaitCQs(wctx, nil, wcs[:], cq)
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("%d of %d datagrams after 20 s of silence: is the sender (mckey -s or rdmaping -c --mcast) sending to this group with -C %d?", got, count, count)
			}
			return err
		}
		for _, wc := range wcs[:n] {
			if err := wc.Err(); err != nil {
				return err
			}
			if int(wc.ByteLen) != size+ping.GRHSize {
				return fmt.Errorf("datagram %d: %d bytes, want %d: give the sender's -S", got, int(wc.ByteLen)-ping.GRHSize, size)
			}
			if wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != wc.SrcQP {
				return fmt.Errorf("datagram %d from QPN %#x: immediate %#x (flags %v), want the sender's QPN as mckey sends it", got, wc.SrcQP, wc.Imm, wc.Flags)
			}
			m := buf[int(wc.WRID)*slot+ping.GRHSize : int(wc.WRID)*slot+ping.GRHSize+size]
			who := "mckey"
			if bytes.HasPrefix(m, []byte(mcastMagic)) {
				who = "rdmaping"
				i := int(binary.BigEndian.Uint32(m[len(mcastMagic):]))
				mcastMessage(want, i)
				if !bytes.Equal(m, want) {
					return fmt.Errorf("datagram %d from rdmaping: data mismatch", i)
				}
			}
			if peer != "" && peer != who {
				return fmt.Errorf("datagram %d: senders %s and %s mixed in the group", got, peer, who)
			}
			peer = who
			if c.verbose {
				fmt.Fprintf(c.stderr, "rdmaping: datagram %d: %d bytes from QPN %#x (%s)\n", got, size, wc.SrcQP, who)
			}
			got++
		}
	}
	checked := "immediate checked"
	if peer == "rdmaping" {
		checked = "every byte checked"
	}
	fmt.Fprintf(c.stdout, "mcast: %d datagrams of %d bytes from %s, %s\n", count, size, peer, checked)
	return nil
}
