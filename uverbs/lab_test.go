// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/internal/rdmanl"
)

func TestLabDeviceQuery(t *testing.T) {
	e := requireLab(t)
	devs, err := Devices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("Devices: %v, %v", devs, err)
	}
	t.Logf("devices: %+v", devs)
	c := openLab(t, e)
	d := c.Device()
	if d.Name != e.Dev || d.DriverID == 0 {
		t.Errorf("device %+v (want %s with a netlink driver id)", d, e.Dev)
	}
	t.Logf("opened %s via ioctl=%v, %d completion vectors", d.Name, c.viaIoctl, c.NumCompVectors())
	if !c.viaIoctl {
		t.Error("GET_CONTEXT did not go through the ioctl interface")
	}
	a, err := c.QueryDevice()
	if err != nil {
		t.Fatal(err)
	}
	ax, err := c.QueryDeviceEx()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device: max_qp %d max_qp_wr %d max_sge %d max_cqe %d max_mr_size %#x atomic_cap %d caps_ex %#x",
		a.MaxQP, a.MaxQPWR, a.MaxSGE, a.MaxCQE, a.MaxMRSize, a.AtomicCap, ax.DeviceCapFlagsEx)
	if a.MaxQP == 0 || a.PhysPortCnt != 1 || ax.MaxQP != a.MaxQP {
		t.Errorf("implausible attributes %+v / %+v", a, ax)
	}
	p, err := c.QueryPort(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("port 1: %v mtu %v/%v %v %.1f Gb/s gid_tbl_len %d", p.State, p.ActiveMTU, p.MaxMTU, p.LinkLayer, p.Rate(), p.GIDTblLen)
	if p.State != PortActive || p.LinkLayer != LinkLayerEthernet || p.ActiveMTU.Bytes() < 1024 || p.GIDTblLen == 0 {
		t.Errorf("port %+v", p)
	}
	if _, err := c.QueryPort(0); err == nil {
		t.Error("port 0 accepted")
	}
	ents, err := c.GIDTable(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range ents {
		t.Logf("gid %d: %v %v %s", g.Index, g.GID, g.Type, g.Netdev)
	}
	sys, err := gidTableSysfs(e.Dev, 1, p.GIDTblLen)
	if err != nil {
		t.Fatal(err)
	}
	if len(sys) != len(ents) {
		t.Errorf("ioctl table has %d entries, sysfs %d", len(ents), len(sys))
	}
	for i := range sys {
		if i < len(ents) && (sys[i].GID != ents[i].GID || sys[i].Type != ents[i].Type || sys[i].Index != ents[i].Index || sys[i].Netdev != ents[i].Netdev) {
			t.Errorf("entry %d: ioctl %+v, sysfs %+v", i, ents[i], sys[i])
		}
	}
	g, err := c.GIDForIP(1, e.addr)
	if err != nil {
		t.Fatal(err)
	}
	if g.Type != GIDTypeRoCEv2 || g.GID.Addr() != e.addr {
		t.Errorf("GIDForIP(%v) = %+v", e.addr, g)
	}
	if d2, err := LookupDevice(DeviceQuery{IP: e.addr}); err != nil || d2.Name != e.Dev {
		t.Errorf("LookupDevice(IP %v) = %+v, %v", e.addr, d2, err)
	}
	if d2, err := LookupDevice(DeviceQuery{NodeGUID: a.NodeGUID}); err != nil || d2.Name != e.Dev {
		t.Errorf("LookupDevice(NodeGUID %#x) = %+v, %v", a.NodeGUID, d2, err)
	}
	nl, err := rdmanl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer nl.Close()
	nlDevs, err := nl.Devices()
	if err != nil || len(nlDevs) == 0 {
		t.Fatalf("rdma netlink devices: %+v %v", nlDevs, err)
	}
	for _, n := range nlDevs {
		if d2, err := LookupDevice(DeviceQuery{Index: deviceIndex(n.Index)}); err != nil || d2.Name != n.Name {
			t.Errorf("LookupDevice(Index %d) = %+v, %v; want %s", n.Index, d2, err, n.Name)
		}
	}
	if _, err := LookupDevice(DeviceQuery{Index: 1 << 30}); !errors.Is(err, ErrNoDevice) {
		t.Errorf("LookupDevice of a missing index: %v", err)
	}
	if _, err := Open("nosuchdev0"); !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open(nosuchdev0): %v", err)
	}
}

func TestLabSendRecv(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	a, b := rcPair(t, c, e, epOpts{})
	fill(a.buf[:300], 1)
	clear(b.buf)
	// b posts one receive of two SGEs; a sends 300 bytes from three SGEs.
	if err := b.qp.PostRecv(RecvWR{ID: 77, SGL: []SGE{b.mr.SGE(0, 100), b.mr.SGE(1000, 1000)}}); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRSend, Flags: SendSignaled,
		SGL: []SGE{a.mr.SGE(0, 50), a.mr.SGE(50, 150), a.mr.SGE(200, 100)}}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1)[0]; wc.WRID != 1 || wc.Opcode != WCSend {
		t.Errorf("send completion %+v", wc)
	}
	wc := b.wait(t, 1)[0]
	if wc.WRID != 77 || wc.Opcode != WCRecv || wc.ByteLen != 300 || wc.QPNum != b.qp.Num() {
		t.Errorf("recv completion %+v", wc)
	}
	got := append(append([]byte{}, b.buf[:100]...), b.buf[1000:1200]...)
	if !bytes.Equal(got, a.buf[:300]) {
		t.Errorf("received bytes differ")
	}

	// SEND_WITH_IMM and inline.
	if err := b.qp.PostRecv(RecvWR{ID: 78, SGL: []SGE{b.mr.SGE(0, 4096)}}, RecvWR{ID: 79, SGL: []SGE{b.mr.SGE(4096, 4096)}}); err != nil {
		t.Fatal(err)
	}
	msg := []byte("inline payload, copied into the WQE")
	if err := a.qp.PostSend(
		SendWR{ID: 2, Opcode: WRSendWithImm, Flags: SendSignaled, Imm: 0xdeadbeef, SGL: []SGE{a.mr.SGE(0, 64)}},
		SendWR{ID: 3, Opcode: WRSend, Flags: SendSignaled | SendInline, Inline: msg},
	); err != nil {
		t.Fatal(err)
	}
	if a.qp.Doorbells() != 2 {
		t.Errorf("%d doorbells after two PostSend calls", a.qp.Doorbells())
	}
	a.wait(t, 2)
	wcs := b.wait(t, 2)
	if wcs[0].WRID != 78 || wcs[0].Flags&WCWithImm == 0 || wcs[0].Imm != 0xdeadbeef || wcs[0].ByteLen != 64 {
		t.Errorf("imm completion %+v", wcs[0])
	}
	if !bytes.Equal(b.buf[:64], a.buf[:64]) {
		t.Error("imm payload differs")
	}
	if wcs[1].WRID != 79 || wcs[1].ByteLen != uint32(len(msg)) || !bytes.Equal(b.buf[4096:4096+len(msg)], msg) {
		t.Errorf("inline completion %+v, data %q", wcs[1], b.buf[4096:4096+len(msg)])
	}
}

func TestLabRDMA(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	a, b := rcPair(t, c, e, epOpts{})
	fill(a.buf[:8192], 3)
	clear(b.buf)
	// RDMA WRITE of 8 KiB from two SGEs, no receive needed.
	if err := a.qp.PostSend(SendWR{ID: 10, Opcode: WRRDMAWrite, Flags: SendSignaled,
		SGL: []SGE{a.mr.SGE(0, 5000), a.mr.SGE(5000, 3192)}, RemoteAddr: b.mr.Addr() + 100, RKey: b.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1)[0]; wc.Opcode != WCRDMAWrite {
		t.Errorf("write completion %+v", wc)
	}
	if !bytes.Equal(b.buf[100:100+8192], a.buf[:8192]) {
		t.Error("RDMA WRITE: remote bytes differ")
	}
	// RDMA WRITE WITH IMM consumes a receive and carries the immediate.
	if err := b.qp.PostRecv(RecvWR{ID: 11}); err != nil {
		t.Fatal(err)
	}
	fill(a.buf[:512], 9)
	if err := a.qp.PostSend(SendWR{ID: 12, Opcode: WRRDMAWriteWithImm, Flags: SendSignaled, Imm: 0x12345678,
		SGL: []SGE{a.mr.SGE(0, 512)}, RemoteAddr: b.mr.Addr() + 20000, RKey: b.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1)
	wc := b.wait(t, 1)[0]
	if wc.WRID != 11 || wc.Opcode != WCRecvRDMAWithImm || wc.Imm != 0x12345678 || wc.ByteLen != 512 {
		t.Errorf("write-with-imm completion %+v", wc)
	}
	if !bytes.Equal(b.buf[20000:20512], a.buf[:512]) {
		t.Error("RDMA WRITE WITH IMM: remote bytes differ")
	}
	// RDMA READ back into a different place.
	fill(b.buf[30000:36000], 42)
	if err := a.qp.PostSend(SendWR{ID: 13, Opcode: WRRDMARead, Flags: SendSignaled,
		SGL: []SGE{a.mr.SGE(40000, 6000)}, RemoteAddr: b.mr.Addr() + 30000, RKey: b.mr.RKey()}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1)[0]; wc.Opcode != WCRDMARead || wc.ByteLen != 6000 {
		t.Errorf("read completion %+v", wc)
	}
	if !bytes.Equal(a.buf[40000:46000], b.buf[30000:36000]) {
		t.Error("RDMA READ: local bytes differ")
	}
}

func TestLabAtomics(t *testing.T) {
	e := requireLab(t)
	c := openLab(t, e)
	a, b := rcPair(t, c, e, epOpts{})
	ne := binary.NativeEndian
	ne.PutUint64(b.buf[64:], 1000)
	// Fetch and add: returns the old value, adds remotely.
	if err := a.qp.PostSend(SendWR{ID: 1, Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 8)},
		RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: 34}); err != nil {
		t.Fatal(err)
	}
	if wc := a.wait(t, 1)[0]; wc.Opcode != WCFetchAdd {
		t.Errorf("fetch-add completion %+v", wc)
	}
	if old, now := ne.Uint64(a.buf[0:]), ne.Uint64(b.buf[64:]); old != 1000 || now != 1034 {
		t.Errorf("fetch-add: returned %d (want 1000), remote now %d (want 1034)", old, now)
	}
	// Compare and swap that fails, then one that succeeds.
	for i, c := range []struct{ cmp, swap, wantOld, wantNow uint64 }{
		{999, 5, 1034, 1034},
		{1034, 5, 1034, 5},
	} {
		if err := a.qp.PostSend(SendWR{ID: uint64(2 + i), Opcode: WRAtomicCmpAndSwp, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(8, 8)},
			RemoteAddr: b.mr.Addr() + 64, RKey: b.mr.RKey(), CompareAdd: c.cmp, Swap: c.swap}); err != nil {
			t.Fatal(err)
		}
		if wc := a.wait(t, 1)[0]; wc.Opcode != WCCompSwap {
			t.Errorf("cas completion %+v", wc)
		}
		if old, now := ne.Uint64(a.buf[8:]), ne.Uint64(b.buf[64:]); old != c.wantOld || now != c.wantNow {
			t.Errorf("cas(%d→%d): returned %d, remote %d; want %d, %d", c.cmp, c.swap, old, now, c.wantOld, c.wantNow)
		}
	}
	// A target that is not 8-byte aligned is refused before it reaches the
	// device, as SendWR documents.
	err := a.qp.PostSend(SendWR{ID: 9, Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(16, 8)},
		RemoteAddr: b.mr.Addr() + 68, RKey: b.mr.RKey(), CompareAdd: 1})
	if err == nil || !strings.Contains(err.Error(), "8-byte aligned") {
		t.Errorf("misaligned fetch-add posted: %v, want refused", err)
	}
	if now := ne.Uint64(b.buf[64:]); now != 5 {
		t.Errorf("after the misaligned fetch-add the aligned target holds %d, want 5", now)
	}
}

// deviceIndex is the DeviceQuery.Index for the kernel's index idx.
func deviceIndex(idx uint32) int {
	if idx == 0 {
		return DeviceIndexZero
	}
	return int(idx)
}
