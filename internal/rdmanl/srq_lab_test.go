// Copyright 2026 The rdmago Authors.

package rdmanl_test

import (
	"slices"
	"testing"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/uverbs"
)

// TestLabSRQs creates an SRQ with three RC QPs receiving from it and
// expects RDMA_NLDEV_CMD_RES_SRQ_GET to list it: BASIC, owned by this
// process, on this process's PD, with exactly those QPs as runs, and
// counted in the summary.
func TestLabSRQs(t *testing.T) {
	env := labtest.Require(t)
	c, err := rdmanl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dev, err := c.DeviceByName(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := uverbs.Open(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	pd, err := ctx.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := ctx.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd.CreateSRQ(uverbs.SRQOptions{MaxWR: 8, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []uint32
	for range 3 {
		qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, SRQ: srq,
			Cap: uverbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, qp.Num())
	}
	slices.Sort(want)

	srqs, err := c.SRQs(dev.Index)
	if err != nil {
		t.Fatal(err)
	}
	pds, err := c.PDs(dev.Index)
	if err != nil {
		t.Fatal(err)
	}
	// This process's SRQ is the one with its QPs (in the lab the pid the
	// kernel reports was not os.Getpid()).
	var ours []rdmanl.SRQ
	for _, s := range srqs {
		if len(s.QPs) > 0 && s.QPs[0].Min == want[0] {
			ours = append(ours, s)
		}
	}
	if len(ours) != 1 {
		t.Fatalf("this process's SRQs: %+v (all: %+v)", ours, srqs)
	}
	s := ours[0]
	t.Logf("SRQ %+v", s)
	if s.DevName != env.Dev || s.Type.String() != "BASIC" || s.HasCQ {
		t.Errorf("SRQ %+v: want a BASIC SRQ of %s without a CQ", s, env.Dev)
	}
	ownPD := false
	for _, p := range pds {
		ownPD = ownPD || p.PDN == s.PDN && p.PID == s.PID && s.PID != 0
	}
	if !ownPD {
		t.Errorf("SRQ pdn %d is not this process's PD: %+v", s.PDN, pds)
	}
	var got []uint32
	for _, r := range s.QPs {
		for n := r.Min; n <= r.Max; n++ {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("SRQ QPs %v (runs %v), want %v", got, s.QPs, want)
	}
	sums, err := c.ResSummary()
	if err != nil {
		t.Fatal(err)
	}
	summed := false
	for _, x := range sums {
		if x.DevIndex != dev.Index {
			continue
		}
		summed = true
		if x.Count("srq") != uint64(len(srqs)) {
			t.Errorf("summary counts %d SRQs, the dump lists %d", x.Count("srq"), len(srqs))
		}
	}
	if !summed {
		t.Errorf("no resource summary for %s (index %d): %+v", env.Dev, dev.Index, sums)
	}
}
