// Copyright 2026 The rdmago Authors.

package rtnl

import (
	"errors"
	"math"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestLabNetemQdisc puts a netem qdisc on the lab's netdev, reads it back
// from the kernel's dump, changes it, and removes it again, leaving the
// link's default qdisc.
func TestLabNetemQdisc(t *testing.T) {
	env := labtest.Require(t)
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dev := env.Netdev
	before, err := c.RootQdisc(dev)
	if err != nil {
		t.Fatal(err)
	}
	if before.Kind == "netem" {
		t.Fatalf("%s already has a netem root qdisc: %+v", dev, before)
	}
	t.Logf("%s: root qdisc %q before", dev, before.Kind)
	removed := false
	defer func() {
		if !removed {
			c.DelRootQdisc(dev)
		}
	}()
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	for _, want := range []Netem{
		{Loss: 2.5},
		{Latency: 3 * time.Millisecond, Jitter: 500 * time.Microsecond, Loss: 1, LossCorrelation: 25, Reorder: 10, Gap: 5, Limit: 300},
	} {
		if err := c.ReplaceNetem(dev, want); err != nil {
			t.Fatal(err)
		}
		q, err := c.RootQdisc(dev)
		if err != nil {
			t.Fatal(err)
		}
		if q.Kind != "netem" || q.Handle != NetemHandle || q.Netem == nil {
			t.Fatalf("root qdisc after ReplaceNetem(%+v): %+v", want, q)
		}
		got := *q.Netem
		if want.Limit == 0 {
			want.Limit = 1000
		}
		want.Jitter = want.Jitter.Truncate(64) // netem keeps 64 ns ticks
		if !near(got.Loss, want.Loss) || !near(got.LossCorrelation, want.LossCorrelation) || !near(got.Reorder, want.Reorder) ||
			got.Latency != want.Latency || got.Jitter != want.Jitter || got.Gap != want.Gap || got.Limit != want.Limit {
			t.Errorf("netem read back\n got %+v\nwant %+v", got, want)
		}
	}
	if err := c.DelRootQdisc(dev); err != nil {
		t.Fatal(err)
	}
	removed = true
	after, err := c.RootQdisc(dev)
	if err != nil {
		t.Fatal(err)
	}
	if after.Kind != before.Kind {
		t.Errorf("root qdisc %q after removing netem, %q before", after.Kind, before.Kind)
	}
	if err := c.DelRootQdisc(dev); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("deleting the default root qdisc: %v, want ENOENT", err)
	}
	if err := c.ReplaceNetem("nosuch0", Netem{Loss: 1}); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("netem on a missing link: %v, want ENODEV", err)
	}
	if err := c.ReplaceNetem(dev, Netem{Loss: 150}); err == nil {
		t.Error("a loss of 150% was accepted")
	}
}

// TestLabNetemDrops checks that netem really drops, and counts it: on a
// private veth pair with 100 % loss, the ARP requests for a neighbour are
// dropped and the qdisc's drop counter says so.
func TestLabNetemDrops(t *testing.T) {
	labtest.Require(t)
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.AddVeth("tq0", "tq1"); err != nil {
		t.Fatal(err)
	}
	defer c.DelLink("tq0")
	for _, n := range []string{"tq0", "tq1"} {
		if err := c.SetUp(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AddAddr("tq0", netip.MustParsePrefix("10.79.0.1/30")); err != nil {
		t.Fatal(err)
	}
	if err := c.ReplaceNetem("tq0", Netem{Loss: 100}); err != nil {
		t.Fatal(err)
	}
	q0, err := c.RootQdisc("tq0")
	if err != nil {
		t.Fatal(err)
	}
	if q0.Netem == nil || !(q0.Netem.Loss > 99.99) {
		t.Fatalf("root qdisc %+v, want netem with 100%% loss", q0)
	}
	u, err := net.DialUDP("udp4", nil, &net.UDPAddr{IP: net.IPv4(10, 79, 0, 2), Port: 9})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	var q Qdisc
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		u.Write([]byte("dropped")) // queues behind an ARP request that netem drops
		time.Sleep(200 * time.Millisecond)
		if q, err = c.RootQdisc("tq0"); err != nil {
			t.Fatal(err)
		}
		if q.Stats.Drops > 0 {
			break
		}
	}
	t.Logf("tq0 netem: %+v", q.Stats)
	if q.Stats.Drops == 0 {
		t.Errorf("netem with 100%% loss dropped nothing: %+v", q.Stats)
	}
	if q.Stats.Packets != 0 {
		t.Errorf("netem with 100%% loss let %d packets through", q.Stats.Packets)
	}
}
