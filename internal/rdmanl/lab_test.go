// Copyright 2026 The rdmago Authors.

//go:build linux

package rdmanl

import (
	"errors"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
	"golang.org/x/sys/unix"
)

// TestLabDevice lists the lab's rxe device over RDMA netlink and checks that
// its port is ACTIVE on the lab netdev, and that its uverbs chardev is known.
func TestLabDevice(t *testing.T) {
	env := labtest.Require(t)
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	var dev *Device
	for i := range devs {
		t.Logf("device %+v", devs[i])
		if devs[i].Name == env.Dev {
			dev = &devs[i]
		}
	}
	if dev == nil {
		t.Fatalf("device %q not among %d listed", env.Dev, len(devs))
	}
	if dev.NodeType != 1 { // RDMA_NODE_IB_CA
		t.Errorf("node type %d, want 1 (IB CA)", dev.NodeType)
	}
	if dev.Ports != 1 {
		t.Errorf("%d ports, want 1", dev.Ports)
	}
	if dev.NodeGUID == 0 {
		t.Error("node GUID is 0")
	}
	ports, err := c.Ports(dev.Index)
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 1 {
		t.Fatalf("%d ports listed, want 1", len(ports))
	}
	p := ports[0]
	t.Logf("port %+v", p)
	if p.State != IB_PORT_ACTIVE {
		t.Errorf("port state %v, want ACTIVE", p.State)
	}
	if p.DevName != env.Dev || p.Index != 1 {
		t.Errorf("port belongs to %s/%d, want %s/1", p.DevName, p.Index, env.Dev)
	}
	if want := labtestNetdev(); want != "" && p.NetdevName != want {
		t.Errorf("port netdev %q, want %q", p.NetdevName, want)
	}
	cd, err := c.Chardev(int64(dev.Index), "uverbs")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("uverbs chardev %+v (%d:%d)", cd, cd.Major(), cd.Minor())
	if cd.Name != "uverbs0" {
		t.Errorf("uverbs chardev %q, want uverbs0", cd.Name)
	}
	if cd.DriverID != abi.RDMA_DRIVER_RXE {
		t.Errorf("uverbs driver id %d, want RDMA_DRIVER_RXE (%d)", cd.DriverID, abi.RDMA_DRIVER_RXE)
	}
	var st unix.Stat_t
	if err := unix.Stat("/dev/infiniband/"+cd.Name, &st); err != nil {
		t.Fatal(err)
	}
	if unix.Major(uint64(st.Rdev)) != cd.Major() || unix.Minor(uint64(st.Rdev)) != cd.Minor() {
		t.Errorf("/dev/infiniband/%s is %d:%d, netlink says %d:%d", cd.Name, unix.Major(uint64(st.Rdev)), unix.Minor(uint64(st.Rdev)), cd.Major(), cd.Minor())
	}

	// A second rxe on the same netdev under another name is refused or
	// accepted depending on the kernel; deleting a device that does not exist
	// must fail cleanly.
	if err := c.DelLink(0xfffff); err == nil {
		t.Error("deleting device index 0xfffff succeeded")
	} else if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.EOPNOTSUPP) {
		t.Logf("delete of a missing device: %v", err)
	}
}
