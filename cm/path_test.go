// Copyright 2026 The rdmago Authors.

package cm

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs"
)

func TestPathFromWire(t *testing.T) {
	var b [64]byte
	be := binary.BigEndian
	be.PutUint64(b[0:], 0x0106000000004e21)
	dgid := uverbs.GIDFromAddr(netip.MustParseAddr("192.0.2.1"))
	sgid := uverbs.GIDFromAddr(netip.MustParseAddr("192.0.2.2"))
	copy(b[8:], dgid[:])
	copy(b[24:], sgid[:])
	be.PutUint16(b[40:], 0x11)
	be.PutUint16(b[42:], 0x22)
	be.PutUint32(b[44:], 1<<31|0xabcde<<8|64) // raw traffic, flow label, hop limit
	b[48] = 0x20
	b[49] = 0x80 | 1
	be.PutUint16(b[50:], 0xffff)
	be.PutUint16(b[52:], 0x123<<4|5)
	b[54] = 2<<6 | byte(uverbs.MTU1024)
	b[55] = 2<<6 | 3
	b[56] = 2<<6 | 18
	b[57] = 7
	var d abi.IBPathRecData
	d.Flags = abi.IB_PATH_PRIMARY | abi.IB_PATH_OUTBOUND
	for i := range d.PathRec {
		d.PathRec[i] = binary.NativeEndian.Uint32(b[4*i:])
	}
	got := pathFromWire(&d)
	want := PathRecord{
		ServiceID: 0x0106000000004e21, DGID: dgid, SGID: sgid, DLID: 0x11, SLID: 0x22,
		FlowLabel: 0xabcde, HopLimit: 64, TrafficClass: 0x20, Reversible: true, NumbPath: 1,
		PKey: 0xffff, SL: 5, MTU: uverbs.MTU1024, Rate: 3, PacketLifeTime: 18, Preference: 7,
		Flags: PathPrimary | PathOutbound,
	}
	if got != want {
		t.Errorf("pathFromWire:\n got %+v\nwant %+v", got, want)
	}
	if PathPrimary != abi.IB_PATH_PRIMARY || PathAlternate != abi.IB_PATH_ALTERNATE || PathOutbound != abi.IB_PATH_OUTBOUND ||
		PathInbound != abi.IB_PATH_INBOUND || PathInboundReverse != abi.IB_PATH_INBOUND_REVERSE || PathGMP != abi.IB_PATH_GMP {
		t.Error("Path* flags differ from IB_PATH_*")
	}
}

func TestPathFromUser(t *testing.T) {
	p := abi.IBUserPathRec{DLID: [2]byte{0, 9}, FlowLabel: [4]byte{0, 0, 1, 2}, PKey: [2]byte{0xff, 0xff}, MTU: uint32(uverbs.MTU4096), Reversible: 1, SL: 3}
	p.DGID[15] = 1
	got := pathFromUser(&p)
	if got.DLID != 9 || got.FlowLabel != 0x102 || got.PKey != 0xffff || got.MTU != uverbs.MTU4096 || !got.Reversible || got.SL != 3 || got.DGID[15] != 1 {
		t.Errorf("pathFromUser: %+v", got)
	}
}

// A UD event's parameters arrive with the AH attributes as a uverbs.AHAttr.
func TestUDEventAHAttr(t *testing.T) {
	ch, f := newFakeChannel(t)
	id, err := ch.CreateID(PortSpaceUDP)
	if err != nil {
		t.Fatal(err)
	}
	defer id.Close()
	p := abi.UCMUDParam{QPNum: 0x42, QKey: UDPQKey, AHAttr: abi.AHAttr{DLID: 7, SL: 2, IsGlobal: 1, PortNum: 1,
		GRH: abi.GlobalRoute{DGID: uverbs.GIDFromAddr(netip.MustParseAddr("192.0.2.9")), SGIDIndex: 3, HopLimit: 64, TrafficClass: 0x20}}}
	if err := p.SetData([]byte("ud")); err != nil {
		t.Fatal(err)
	}
	f.queueUD(id.Handle(), EventEstablished, &p)
	ev, err := id.WaitEvent(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := uverbs.AHAttr{DLID: 7, SL: 2, IsGlobal: true, Port: 1,
		GRH: uverbs.GlobalRoute{DGID: uverbs.GIDFromAddr(netip.MustParseAddr("192.0.2.9")), SGIDIndex: 3, HopLimit: 64, TrafficClass: 0x20}}
	if ev.Type != EventEstablished || ev.UD.QPNum != 0x42 || ev.UD.QKey != UDPQKey || string(ev.UD.PrivateData) != "ud" || ev.UD.AHAttr != want {
		t.Errorf("UD event: %+v, want AHAttr %+v", ev, want)
	}
}
