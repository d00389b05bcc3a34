// Copyright 2026 The rdmago Authors.

package rtnl

import (
	"errors"
	"net/netip"
	"os"
	"syscall"
	"testing"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestLabLinks checks the lab's own netdev, then creates, raises and
// addresses a veth pair inside the guest (the traffic-free part of what the
// guest init does at boot).
func TestLabLinks(t *testing.T) {
	labtest.Require(t)
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	netdev := os.Getenv("RDMALAB_NETDEV")
	l, err := c.LinkByName(netdev)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Up() || l.Index <= 0 || l.MTU == 0 {
		t.Errorf("lab netdev %s: %+v, want up with an index and an MTU", netdev, l)
	}
	if _, err := c.LinkByName("nosuch0"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("missing link: %v, want ENODEV", err)
	}

	if err := c.AddVeth("tv0", "tv1"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Deleting one end of a veth pair removes both (runs before c.Close).
		if err := c.DelLink("tv0"); err != nil {
			t.Errorf("delete tv0: %v", err)
		}
		if _, err := c.LinkByName("tv1"); !errors.Is(err, syscall.ENODEV) {
			t.Errorf("tv1 after deleting tv0: %v, want ENODEV", err)
		}
	}()
	if err := c.AddVeth("tv0", "tv2"); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("adding tv0 twice: %v, want EEXIST", err)
	}
	for _, n := range []string{"tv0", "tv1"} {
		if err := c.SetUp(n); err != nil {
			t.Fatal(err)
		}
		l, err := c.LinkByName(n)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Up() {
			t.Errorf("%s is not up after SetUp", n)
		}
	}
	if err := c.AddAddr("tv0", netip.MustParsePrefix("10.78.0.1/30")); err != nil {
		t.Fatal(err)
	}
	if err := c.AddAddr("tv0", netip.MustParsePrefix("10.78.0.1/30")); !errors.Is(err, syscall.EEXIST) {
		t.Errorf("adding the address twice: %v, want EEXIST", err)
	}
}
