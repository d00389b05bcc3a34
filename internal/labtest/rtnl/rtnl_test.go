// Copyright 2026 The rdmago Authors.

package rtnl

import (
	"encoding/hex"
	"net/netip"
	"testing"
)

// The golden payloads were captured with strace from iproute2 6.1 (Debian
// 12) in the lab guest: `ip link add t0 type veth peer name t1`, `ip link set
// t0 up` and `ip addr add 10.9.0.1/24 brd + dev t0` (t0 had index 5).

func TestAddVethGolden(t *testing.T) {
	want := "00000000000000000000000000000000" + "0700030074300000" +
		"2c001200" + "0800010076657468" + "20000200" + "1c000100" +
		"00000000000000000000000000000000" + "0700030074310000"
	if got := hex.EncodeToString(addVethReq("t0", "t1")); got != want {
		t.Errorf("veth request\n got %s\nwant %s", got, want)
	}
}

func TestSetUpGolden(t *testing.T) {
	want := "00000000050000000100000001000000"
	if got := hex.EncodeToString(setUpReq(5, true)); got != want {
		t.Errorf("set up\n got %s\nwant %s", got, want)
	}
	if got := hex.EncodeToString(setUpReq(5, false)); got != "00000000050000000000000001000000" {
		t.Errorf("set down: %s", got)
	}
}

// TestSetDownDelLinkGolden: iproute2 6.1's `ip link set t0 down` and `ip
// link del t0` (strace -xx on a veth in a private network namespace, t0 at
// index 5) send a bare struct ifinfomsg: RTM_NEWLINK with flags 0 and change
// IFF_UP, and RTM_DELLINK with flags and change 0.
func TestSetDownDelLinkGolden(t *testing.T) {
	if got := hex.EncodeToString(setUpReq(5, false)); got != "00000000050000000000000001000000" {
		t.Errorf("set down\n got %s\nwant 00000000050000000000000001000000", got)
	}
	if got := hex.EncodeToString(delLinkReq(5)); got != "00000000050000000000000000000000" {
		t.Errorf("delete link\n got %s\nwant 00000000050000000000000000000000", got)
	}
	if got := hex.EncodeToString(delLinkReq(300)); got != "000000002c0100000000000000000000" {
		t.Errorf("delete link 300: %s (the index is host-endian at offset 4)", got)
	}
}

func TestAddAddrGolden(t *testing.T) {
	want := "0218000005000000" + "080002000a090001" + "080001000a090001" + "080004000a0900ff"
	got, err := addAddrReq(5, netip.MustParsePrefix("10.9.0.1/24"))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(got) != want {
		t.Errorf("add address\n got %x\nwant %s", got, want)
	}
	if _, err := addAddrReq(5, netip.MustParsePrefix("fe80::1/64")); err == nil {
		t.Error("an IPv6 address was accepted")
	}
	// /32: no broadcast.
	got, _ = addAddrReq(1, netip.MustParsePrefix("10.0.0.1/32"))
	if len(got) != 8+8+8 {
		t.Errorf("/32 request is %d bytes, want 24 (no broadcast)", len(got))
	}
}

func TestGetLinkAndParse(t *testing.T) {
	if got := hex.EncodeToString(getLinkReq("v0")); got != "00000000000000000000000000000000"+"0700030076300000" {
		t.Errorf("get link request %s", got)
	}
	// An RTM_NEWLINK answer: index 3, IFF_UP|IFF_LOWER_UP, name v0, MTU
	// 1500, address 52:54:00:77:00:01.
	msg, _ := hex.DecodeString("00000100030000000100010000000000" +
		"0700030076300000" + "08000400dc050000" + "0a000100525400770001" + "0000")
	l, err := parseLink(msg)
	if err != nil {
		t.Fatal(err)
	}
	if l.Index != 3 || l.Name != "v0" || l.MTU != 1500 || !l.Up() || hex.EncodeToString(l.HardwareAddr) != "525400770001" {
		t.Errorf("parsed %+v", l)
	}
	if _, err := parseLink(msg[:10]); err == nil {
		t.Error("a short ifinfomsg was accepted")
	}
}
