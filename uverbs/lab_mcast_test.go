// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"
)

// TestLabMcastAttach: a UD QP attached to a multicast group receives a
// datagram sent to the group (QPN 0xffffff); detached, it does not.
func TestLabMcastAttach(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	o := epOpts{typ: QPTypeUD, access: AccessLocalWrite}
	a := newEndpoint(t, c, pd, e, o)
	b := newEndpoint(t, c, pd, e, o)
	for _, ep := range []*endpoint{a, b} {
		if err := ep.qp.Connect(Dest{}, 0, nil); err != nil {
			t.Fatal(err)
		}
	}
	groupIP := netip.MustParseAddr("239.7.7.7")
	group := GIDFromAddr(groupIP)
	// RoCE v2 datagrams are UDP: the IP layer drops a group it has not
	// joined. rdma_cm's join does that (IGMP); here a UDP socket does.
	ifi := ifaceOf(t, e.addr)
	sock, err := net.ListenMulticastUDP("udp4", ifi, &net.UDPAddr{IP: groupIP.AsSlice(), Port: 4792})
	if err != nil {
		t.Fatalf("join %v on %s: %v", groupIP, ifi.Name, err)
	}
	defer sock.Close()
	if err := b.qp.AttachMcast(group, 0); err != nil {
		t.Fatal(err)
	}
	ah, err := pd.CreateAH(AHAttr{IsGlobal: true, Port: 1, GRH: GlobalRoute{DGID: group, SGIDIndex: uint8(a.gid.Index), HopLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer ah.Close()
	send := func(id uint64) {
		fill(a.buf[:300], byte(id))
		if err := a.qp.PostSend(SendWR{ID: id, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 300)},
			AH: ah, RemoteQPN: 0xffffff, RemoteQKey: udQKey}); err != nil {
			t.Fatal(err)
		}
		a.wait(t, 1)
	}
	if err := b.qp.PostRecv(RecvWR{ID: 1, SGL: []SGE{b.mr.SGE(0, 40+1024)}}); err != nil {
		t.Fatal(err)
	}
	send(2)
	wc := b.wait(t, 1)[0]
	if wc.ByteLen != 340 || wc.SrcQP != a.qp.Num() {
		t.Errorf("multicast receive %+v", wc)
	}
	if !bytes.Equal(b.buf[40:340], a.buf[:300]) {
		t.Error("multicast payload differs")
	}
	if err := b.qp.DetachMcast(group, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.PostRecv(RecvWR{ID: 3, SGL: []SGE{b.mr.SGE(0, 40+1024)}}); err != nil {
		t.Fatal(err)
	}
	send(4)
	time.Sleep(300 * time.Millisecond)
	if n := b.cq.Poll(make([]WC, 1)); n != 0 {
		t.Error("a detached QP received the group's datagram")
	}
	// Only UD QPs join groups.
	rc := newEndpoint(t, c, pd, e, epOpts{})
	if err := rc.qp.AttachMcast(group, 0); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("attach an RC QP: %v, want EINVAL", err)
	}
}

// ifaceOf is the interface that has addr.
func ifaceOf(t *testing.T, addr netip.Addr) *net.Interface {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ifs {
		as, _ := ifs[i].Addrs()
		for _, a := range as {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == addr {
				return &ifs[i]
			}
		}
	}
	t.Fatalf("no interface has %v", addr)
	return nil
}
