// Copyright 2026 The rdmago Authors.

package rdmanl

import (
	"encoding/hex"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
)

// Golden bytes captured with strace from iproute2 6.1's `rdma` tool in the
// lab guest (Linux 6.1.0-56-amd64): `rdma link add rxe1 type rxe netdev t0`,
// `rdma dev show`, `rdma link show`, `rdma link delete rxe1`.
const (
	goldenNewLink   = "09000200727865310000000008004100727865000700330074300000"
	goldenDelLink   = "0800010001000000"
	goldenDevReply  = "080001000100000009000200727865310000000008000300010000000c000400763c2201000000000c0006004ae433feffb10dc80c0007004ae433feffb10dc805000e0001000000050054000000000009004300726f636500000000"
	goldenPortReply = "08000100000000000900020072786530000000000800030001000000" + "05000c0004000000" + "05000d0005000000" + "0800320003000000" + "0700330076300000"
)

func TestNewLinkGolden(t *testing.T) {
	if got := hex.EncodeToString(newLinkReq("rxe1", "rxe", "t0")); got != goldenNewLink {
		t.Errorf("newlink\n got %s\nwant %s", got, goldenNewLink)
	}
	if got := hex.EncodeToString(devIndexReq(1)); got != goldenDelLink {
		t.Errorf("dellink\n got %s\nwant %s", got, goldenDelLink)
	}
	if msgType(abi.RDMA_NLDEV_CMD_NEWLINK) != 0x1403 || msgType(abi.RDMA_NLDEV_CMD_PORT_GET) != 0x1405 {
		t.Errorf("message types %#x %#x", msgType(abi.RDMA_NLDEV_CMD_NEWLINK), msgType(abi.RDMA_NLDEV_CMD_PORT_GET))
	}
}

func TestParseDeviceGolden(t *testing.T) {
	b, _ := hex.DecodeString(goldenDevReply)
	d, err := parseDevice(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Device{Index: 1, Name: "rxe1", Ports: 1, CapFlags: 0x01223c76, NodeGUID: 0xc80db1fffe33e44a,
		SysImageGUID: 0xc80db1fffe33e44a, NodeType: abi.RDMA_NODE_IB_CA, Protocol: "roce"}
	if d != want {
		t.Errorf("device\n got %+v\nwant %+v", d, want)
	}
	if _, err := parseDevice(b[:8]); err == nil {
		t.Error("a reply without a name was accepted")
	}
	if _, err := parseDevice(b[:10]); err == nil {
		t.Error("a truncated reply was accepted")
	}
}

func TestParsePortGolden(t *testing.T) {
	b, _ := hex.DecodeString(goldenPortReply)
	p, err := parsePort(b)
	if err != nil {
		t.Fatal(err)
	}
	want := Port{DevIndex: 0, DevName: "rxe0", Index: 1, State: IB_PORT_ACTIVE, PhysState: 5, NetdevIndex: 3, NetdevName: "v0"}
	if p != want {
		t.Errorf("port\n got %+v\nwant %+v", p, want)
	}
	if p.State.String() != "ACTIVE" || PortState(9).String() != "PortState(9)" {
		t.Errorf("state strings %q %q", p.State, PortState(9))
	}
}

func TestChardev(t *testing.T) {
	// GET_CHARDEV of uverbs for device 0, then rdma_cm without a device.
	if got := hex.EncodeToString(chardevReq(0, "uverbs")); got != "0800010000000000"+"0b0045007576657262730000" {
		t.Errorf("chardev request %s", got)
	}
	if got := hex.EncodeToString(chardevReq(-1, "rdma_cm")); got != "0c00450072646d615f636d00" {
		t.Errorf("chardev request without device %s", got)
	}
	// A reply built from what the 6.1 guest reported for uverbs0 (TestLabDevice):
	// dev_t 231:192 (new_encode_dev 0xe7c0), ABI 2, driver RDMA_DRIVER_RXE (14).
	b, _ := hex.DecodeString("0c004800c0e70000000000000c0047000200000000000000" + "0c0046007576657262733000" + "080049000e000000")
	c, err := parseChardev(b)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "uverbs0" || c.ABI != 2 || c.Major() != 231 || c.Minor() != 192 || c.DriverID != abi.RDMA_DRIVER_RXE {
		t.Errorf("chardev %+v (%d:%d)", c, c.Major(), c.Minor())
	}
}
