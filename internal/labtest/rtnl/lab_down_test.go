// Copyright 2026 The rdmago Authors.

package rtnl

import (
	"errors"
	"syscall"
	"testing"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestLabSetDownDelLink creates a veth pair in the guest, sets one end up
// and down again, deletes it, and checks that both ends are gone.
func TestLabSetDownDelLink(t *testing.T) {
	labtest.Require(t)
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.AddVeth("tw0", "tw1"); err != nil {
		t.Fatal(err)
	}
	deleted := false
	defer func() {
		if !deleted {
			c.DelLink("tw0")
		}
	}()
	if err := c.SetUp("tw0"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetDown("tw0"); err != nil {
		t.Fatal(err)
	}
	if l, err := c.LinkByName("tw0"); err != nil || l.Up() {
		t.Errorf("tw0 after SetDown: %+v, %v; want down", l, err)
	}
	if err := c.SetDown("nosuch0"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("setting a missing link down: %v, want ENODEV", err)
	}
	if err := c.DelLink("tw0"); err != nil {
		t.Fatal(err)
	}
	deleted = true
	for _, n := range []string{"tw0", "tw1"} {
		if _, err := c.LinkByName(n); !errors.Is(err, syscall.ENODEV) {
			t.Errorf("%s after DelLink: %v, want ENODEV", n, err)
		}
	}
	if err := c.DelLink("tw0"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("deleting tw0 twice: %v, want ENODEV", err)
	}
}
