// Copyright 2026 The rdmago Authors.

package trace

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/tools/trace/pcap"
)

// TestPacketRecord decodes the two-node rping capture into recording
// entries: every frame decodes, the RDMA READ requests carry their RETH,
// the acknowledgements their AETH, the CM MADs their DETH.
func TestPacketRecord(t *testing.T) {
	f, err := os.Open("ibpkt/testdata/rping-6.1-two-nodes.pcap")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcap.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := PacketRecord(rec.Data, rec.OrigLen, false)
		if p.Err != "" || p.Summary == "" || p.WireLen != rec.OrigLen {
			t.Fatalf("frame %d: %+v", len(ops), p)
		}
		ops[p.Op]++
		switch {
		case p.Op == "RC RDMA READ Request" && (!p.HasKey || p.DMALen != 64 || p.VA == 0):
			t.Errorf("READ request without its RETH: %+v", p)
		case p.Op == "RC Acknowledge" && (!p.HasAETH || p.NAK || !strings.HasPrefix(p.AETH, "ACK")):
			t.Errorf("acknowledgement without its AETH: %+v", p)
		case p.Op == "UD SEND Only" && (p.SrcQP != 1 || p.QPN != 1 || len(p.Head) != 2*recordHeadLen):
			t.Errorf("CM MAD: %+v", p)
		case !strings.HasPrefix(p.Src, "10.77.0.") || !strings.HasSuffix(p.Dst, ":4791"):
			t.Errorf("addresses %s > %s", p.Src, p.Dst)
		}
	}
	if ops["RC RDMA READ Request"] != 3 || ops["RC Acknowledge"] != 15 || ops["UD SEND Only"] != 5 {
		t.Errorf("opcodes %v", ops)
	}
	if p := PacketRecord([]byte{1, 2, 3}, 3, true); p.Err == "" || !p.Out || !strings.Contains(p.Summary, "not decoded") {
		t.Errorf("a runt frame: %+v", p)
	}
}
