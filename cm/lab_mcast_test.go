// Copyright 2026 The rdmago Authors.

//go:build linux

package cm

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/uverbs"
)

// TestLabJoinMulticast joins a group through rdma_cm (JOIN_MCAST), attaches
// a UD QP with what MULTICAST_JOIN reports, receives a datagram sent to the
// group with the event's AH and Q_Key, and leaves.
func TestLabJoinMulticast(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 60*time.Second)
	ch, err := OpenChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	id, err := ch.CreateID(PortSpaceUDP)
	if err != nil {
		t.Fatal(err)
	}
	defer id.Close()
	group := netip.MustParseAddr("239.9.8.7")
	if err := id.ResolveAddr(ctx, netip.AddrPortFrom(e.addr, 0), netip.AddrPortFrom(group, 0), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := id.JoinMulticast(netip.MustParseAddr("10.0.0.1"), JoinFullMember); err == nil {
		t.Error("joined a unicast address")
	}
	mc, err := id.JoinMulticast(group, JoinFullMember)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := mc.AwaitJoin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MULTICAST_JOIN: qpn %#x qkey %#x dgid %v", ev.UD.QPNum, ev.UD.QKey, uverbs.GID(ev.UD.AHAttr.GRH.DGID))
	ah := ev.UD.AHAttr
	if ev.UD.QPNum != 0xffffff || ah.GRH.DGID != uverbs.GIDFromAddr(group) || !ah.IsGlobal {
		t.Fatalf("MULTICAST_JOIN parameters: qpn %#x, AH %+v", ev.UD.QPNum, ah)
	}

	// Two UD QPs on the device: b attached to the group, a sending to it.
	dev, err := openByIP(e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	pd, err := dev.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := dev.CreateCQ(16, nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	mr, err := pd.RegMR(buf, uverbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	var qps [2]*uverbs.QP
	for i := range qps {
		if qps[i], err = pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeUD, SendCQ: cq, RecvCQ: cq,
			Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}); err != nil {
			t.Fatal(err)
		}
		if err := qps[i].ModifyToInit(1, 0, ev.UD.QKey); err != nil {
			t.Fatal(err)
		}
		if err := qps[i].Connect(uverbs.Dest{}, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	a, b := qps[0], qps[1]
	if err := b.AttachMcast(ah.GRH.DGID, ah.DLID); err != nil {
		t.Fatal(err)
	}
	if err := b.PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{mr.SGE(2048, 2048)}}); err != nil {
		t.Fatal(err)
	}
	sendAH, err := pd.CreateAH(ah)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, "rdmago multicast")
	if err := a.PostSend(uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{mr.SGE(0, 16)},
		AH: sendAH, RemoteQPN: 0xffffff, RemoteQKey: ev.UD.QKey}); err != nil {
		t.Fatal(err)
	}
	wcs := make([]uverbs.WC, 2)
	if _, err := cq.PollN(ctx, wcs, 2); err != nil {
		t.Fatalf("%v (have %+v)", err, wcs)
	}
	for _, wc := range wcs {
		if err := wc.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(buf[2048+40:2048+40+16], []byte("rdmago multicast")) {
		t.Errorf("multicast payload % x", buf[2048+40:2048+56])
	}
	if err := b.DetachMcast(ah.GRH.DGID, ah.DLID); err != nil {
		t.Fatal(err)
	}
	if err := mc.Leave(); err != nil {
		t.Fatal(err)
	}
	if err := mc.Leave(); err != nil {
		t.Errorf("second Leave: %v", err)
	}
}

// openByIP opens the RDMA device on the interface that holds addr.
func openByIP(addr netip.Addr) (*uverbs.Context, error) {
	d, err := uverbs.LookupDevice(uverbs.DeviceQuery{IP: addr})
	if err != nil {
		return nil, err
	}
	return uverbs.Open(d.Name)
}
