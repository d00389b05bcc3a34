// Copyright 2026 The rdmago Authors.

package ibpkt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/tools/trace/pcap"
)

// captureFile was captured by `rdmatrace capture -i
// eth0` on lab node 0 (Debian 6.1, rxe) while rdma-core's `rping -c -C 3`
// talked to `rping -s` on node 1: the CM handshake in UD MADs to QP 1, then
// the RC SEND / RDMA READ / RDMA WRITE / ACK exchange of three pings.
const captureFile = "testdata/rping-6.1-two-nodes.pcap"

// openCapture opens captureFile for reading; it is closed when the test ends.
func openCapture(t *testing.T) *pcap.Reader {
	t.Helper()
	f, err := os.Open(captureFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r, err := pcap.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestDecodeRealCapture decodes captureFile and checks its traffic.
func TestDecodeRealCapture(t *testing.T) {
	r := openCapture(t)
	ops := map[string]int{}
	rcQPs := map[uint32]bool{}
	var readVA uint64
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fr, err := DecodeFrame(rec.Data)
		if err != nil {
			t.Fatalf("frame of %d bytes: %v", len(rec.Data), err)
		}
		p := fr.Packet
		ops[p.BTH.OpCode.String()]++
		switch p.BTH.OpCode.Transport() {
		case UD:
			// CM MADs: GSI QP 1, the well-known GSI Q_Key, 256-byte MADs.
			if p.BTH.DestQP != 1 || p.DETH.SrcQP != 1 || p.DETH.QKey != 0x80010000 || len(p.Payload) != 256 {
				t.Errorf("CM MAD: %s", fr.Summary())
			}
		case RC:
			rcQPs[p.BTH.DestQP] = true
			if p.BTH.OpCode.Op() == OpRDMAReadRequest {
				if readVA != 0 && p.RETH.VA != readVA {
					t.Errorf("RDMA READs of different buffers: %#x, %#x", readVA, p.RETH.VA)
				}
				readVA = p.RETH.VA
				if p.RETH.DMALen != 64 {
					t.Errorf("rping reads 64 bytes, got %d", p.RETH.DMALen)
				}
			}
			if p.BTH.OpCode.Op() == OpAcknowledge && p.AETH.Kind() != AETHAck {
				t.Errorf("NAK in a clean run: %s", fr.Summary())
			}
		}
	}
	want := map[string]int{"RC Acknowledge": 15, "RC RDMA READ Request": 3, "RC RDMA READ Response Only": 3,
		"RC RDMA WRITE Only": 3, "RC SEND Only": 12, "UD SEND Only": 5}
	if diff := cmp.Diff(want, ops); diff != "" {
		t.Errorf("opcodes (-want +got):\n%s", diff)
	}
	if len(rcQPs) == 0 || len(rcQPs) > 2 {
		t.Errorf("RC traffic for QPs %v, want the two ends of one connection", rcQPs)
	}
}

// TestAgreesWithWireshark compares the decoder with Wireshark's InfiniBand
// dissector, frame by frame, on the real capture (tshark: scripts/deps.sh
// installs it; a host without it skips, the lab fails).
func TestAgreesWithWireshark(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The capture goes in on stdin: in the lab tshark runs chrooted into
	// the host's root, where the test's paths do not resolve.
	cmd := labtest.HostTool(t, ctx, "tshark", "-r", "-", "-T", "fields", "-e", "infiniband.bth.opcode",
		"-e", "infiniband.bth.destqp", "-e", "infiniband.bth.psn", "-e", "infiniband.reth.va")
	in, err := os.Open(captureFile)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd.Stdin = in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tshark: %v", err)
	}
	r := openCapture(t)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for i, line := range lines {
		rec, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		fr, err := DecodeFrame(rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		p := fr.Packet
		ours := fmt.Sprintf("%d\t%#06x\t%d\t", p.BTH.OpCode, p.BTH.DestQP, p.BTH.PSN)
		if p.HasRETH {
			ours += fmt.Sprintf("0x%016x", p.RETH.VA)
		}
		if strings.TrimRight(line, "\t") != strings.TrimRight(ours, "\t") {
			t.Errorf("frame %d: tshark %q, ibpkt %q", i, line, ours)
		}
	}
	if len(lines) != 41 {
		t.Errorf("tshark listed %d frames, want 41", len(lines))
	}
}
