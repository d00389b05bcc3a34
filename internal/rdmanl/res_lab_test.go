// Copyright 2026 The rdmago Authors.

package rdmanl

import (
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/netlink"
)

var captureDir = flag.String("rdmanl.capture", "", "write the raw RES_* dump answers of the lab device into `DIR` (fixture capture)")

// resDumps are the per-object dumps the fixtures hold, by file name.
var resDumps = []struct {
	file string
	cmd  uint16
}{
	{"qp", abi.RDMA_NLDEV_CMD_RES_QP_GET},
	{"cq", abi.RDMA_NLDEV_CMD_RES_CQ_GET},
	{"mr", abi.RDMA_NLDEV_CMD_RES_MR_GET},
	{"pd", abi.RDMA_NLDEV_CMD_RES_PD_GET},
	{"cm_id", abi.RDMA_NLDEV_CMD_RES_CM_ID_GET},
}

// TestLabResources dumps the lab device's resources. The kernel always holds
// the GSI QP (QP1, owned by ib_core) and its PD and CQ on a RoCE port, so
// those must be listed and match the summary's counts. With -rdmanl.capture
// it also writes the raw answers as fixtures (one hex line per message).
func TestLabResources(t *testing.T) {
	env := labtest.Require(t)
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dev, err := c.DeviceByName(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	sums, err := c.ResSummary()
	if err != nil {
		t.Fatal(err)
	}
	var sum *ResSummary
	for i := range sums {
		if sums[i].DevIndex == dev.Index {
			sum = &sums[i]
		}
	}
	if sum == nil || sum.DevName != env.Dev {
		t.Fatalf("no resource summary for %s in %+v", env.Dev, sums)
	}
	t.Logf("summary %+v", *sum)
	qps, err := c.QPs(dev.Index)
	if err != nil {
		t.Fatal(err)
	}
	cqs, err := c.CQs(dev.Index)
	if err != nil {
		t.Fatal(err)
	}
	mrs, err := c.MRs(dev.Index)
	if err != nil {
		t.Fatal(err)
	}
	pds, err := c.PDs(dev.Index)
	if err != nil {
		t.Fatal(err)
	}
	cms, err := c.CMIDs(dev.Index)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"qp": len(qps), "cq": len(cqs), "mr": len(mrs), "pd": len(pds), "cm_id": len(cms)} {
		if got := sum.Count(name); got != uint64(n) {
			t.Errorf("summary says %d %s, the dump lists %d", got, name, n)
		}
	}
	var gsi bool
	for _, q := range qps {
		t.Logf("qp %+v", q)
		if q.LQPN == 1 && q.Type == 1 && q.KernName == "ib_core" && q.Port == 1 {
			gsi = true
		}
		if q.DevName != env.Dev {
			t.Errorf("qp %d on %q", q.LQPN, q.DevName)
		}
	}
	if !gsi {
		t.Error("the GSI QP (lqpn 1, type GSI, owned by ib_core, port 1) is not listed")
	}
	for _, x := range cqs {
		t.Logf("cq %+v", x)
	}
	for _, x := range mrs {
		t.Logf("mr %+v", x)
	}
	for _, x := range pds {
		t.Logf("pd %+v", x)
	}
	for _, x := range cms {
		t.Logf("cm_id %+v", x)
	}

	if *captureDir == "" {
		return
	}
	if err := os.MkdirAll(*captureDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, msgs [][]byte) {
		var sb strings.Builder
		for _, m := range msgs {
			sb.WriteString(hex.EncodeToString(m))
			sb.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(*captureDir, name+".hex"), []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	summary, err := c.c.Execute(msgType(abi.RDMA_NLDEV_CMD_RES_GET), netlink.NLM_F_DUMP, nil)
	if err != nil {
		t.Fatal(err)
	}
	var raw [][]byte
	for _, m := range summary {
		raw = append(raw, m.Data)
	}
	write("summary", raw)
	for _, d := range resDumps {
		msgs, err := c.RawResDump(d.cmd, dev.Index)
		if err != nil {
			t.Fatal(err)
		}
		write(d.file, msgs)
	}
}
