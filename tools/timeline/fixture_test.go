// Copyright 2026 The rdmago Authors.

package timeline

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmago/rdmago/tools/trace"
)

// The synthetic exchange in testdata/synthetic-node{0,1}.rec, made by
// writeSynthetic: node 1's rdmaping connects to node 0's, node 0 registers
// an MR and SENDs its rkey, node 1 RDMA-WRITEs 6 KiB with it (a run of
// Write Middle), then writes with a wrong rkey and gets a NAK. Node 1's
// clock runs 5 s ahead of node 0's; the wire takes 30 µs one way.
const (
	synOffset = 5_000_000_000
	synDelay  = 30_000
	synRKey   = 0x1234
	synBadKey = 0x9999
	srvQPN    = 0x11
	cliQPN    = 0x12
)

type synNode struct {
	hdr trace.RecordHeader
	es  []trace.RecordEntry
}

func (n *synNode) call(ts uint64, pid uint32, subsys, op string, args []trace.KV, result string, resp []trace.KV) {
	e := trace.RecordEntry{Type: trace.EntryCall, TS: ts, PID: pid, TID: pid, Comm: "rdmaping", Subsys: subsys, Op: op,
		Args: args, Result: result, Dur: 20_000, Resp: resp}
	if subsys == "uverbs" {
		e.Dev = "rxe0"
	}
	if result != "ok" {
		e.Ret = -22
	}
	n.es = append(n.es, e)
}

func (n *synNode) event(ts uint64, op string) {
	n.es = append(n.es, trace.RecordEntry{Type: trace.EntryEvent, TS: ts, PID: 9, Comm: "kworker/0:1", Subsys: "cm", Op: op,
		Args: []trace.KV{{"status", "0"}, {"cm_id", "1"}}})
}

// packet adds a packet sent by from at t (node 0's clock) to both nodes.
func packet(nodes [2]*synNode, from int, t uint64, p trace.RecordPacket) {
	addr := [2]string{"10.77.0.1:4791", "10.77.0.2:4791"}
	p.Src, p.Dst = addr[from], addr[1-from]
	p.WireLen = p.Len + 58
	p.Summary = p.Src + " > " + p.Dst + " " + p.Op
	clock := [2]uint64{0, synOffset}
	out := p
	out.Out = true
	nodes[from].es = append(nodes[from].es, trace.RecordEntry{Type: trace.EntryPacket, TS: t + clock[from], Packet: &out})
	in := p
	nodes[1-from].es = append(nodes[1-from].es, trace.RecordEntry{Type: trace.EntryPacket, TS: t + synDelay + clock[1-from], Packet: &in})
}

func synthetic() [2]*synNode {
	n0 := &synNode{hdr: trace.RecordHeader{Format: trace.RecordFormat, Node: "node0", Iface: "v0", Addrs: []string{"10.77.0.1"},
		MonoNS: 1_000_000_000, RealNS: 1_700_000_000_000_000_000}}
	n1 := &synNode{hdr: trace.RecordHeader{Format: trace.RecordFormat, Node: "node1", Iface: "v0", Addrs: []string{"10.77.0.2"},
		MonoNS: 1_000_000_000 + synOffset, RealNS: 1_700_000_000_002_000_000}} // wall clocks 2 ms apart
	nodes := [2]*synNode{n0, n1}
	const ms = 1_000_000
	t := uint64(1_000 * ms)
	// Node 0 listens and registers its MR.
	n0.call(t, 100, "ucma", "CREATE_ID", []trace.KV{{"ps", "TCP"}, {"qp_type", "RC"}}, "ok", []trace.KV{{"id", "0"}})
	n0.call(t+1*ms, 100, "ucma", "LISTEN", []trace.KV{{"id", "0"}, {"backlog", "0"}}, "ok", nil)
	n0.call(t+2*ms, 100, "uverbs", "REG_MR", []trace.KV{{"pd", "0"}, {"len", "8192"}, {"access", "0x7"}}, "ok",
		[]trace.KV{{"mr", "3"}, {"lkey", "0x1234"}, {"rkey", "0x1234"}})
	// Node 1 connects.
	c := t + 200*ms
	n1.call(c+synOffset, 200, "ucma", "CREATE_ID", []trace.KV{{"ps", "TCP"}, {"qp_type", "RC"}}, "ok", []trace.KV{{"id", "0"}})
	n1.call(c+1*ms+synOffset, 200, "uverbs", "CREATE_QP", []trace.KV{{"type", "RC"}}, "ok", []trace.KV{{"qp", "1"}, {"qpn", "18"}})
	n1.call(c+2*ms+synOffset, 200, "ucma", "CONNECT", []trace.KV{{"qp_num", "18"}, {"private_data_len", "0"}}, "ok", nil)
	packet(nodes, 1, c+2*ms+100_000, trace.RecordPacket{OpCode: 0x64, Op: "UD SEND Only", QPN: 1, PSN: 0, Len: 256, SrcQP: 1, Head: madHead(0x10)})
	n0.event(c+3*ms, "CONNECT_REQUEST")
	n0.call(c+4*ms, 100, "uverbs", "CREATE_QP", []trace.KV{{"type", "RC"}}, "ok", []trace.KV{{"qp", "2"}, {"qpn", "17"}})
	for i, st := range []string{"INIT", "RTR", "RTS"} {
		n0.call(c+5*ms+uint64(i)*100_000, 100, "uverbs", "MODIFY_QP", []trace.KV{{"qp", "2"}, {"qpn", "17"}, {"mask", "0x1"}, {"state", st}}, "ok", nil)
	}
	n0.call(c+6*ms, 100, "ucma", "ACCEPT", []trace.KV{{"id", "1"}, {"qp_num", "17"}}, "ok", nil)
	packet(nodes, 0, c+6*ms+100_000, trace.RecordPacket{OpCode: 0x64, Op: "UD SEND Only", QPN: 1, PSN: 0, Len: 256, SrcQP: 1, Head: madHead(0x13)})
	for i, st := range []string{"INIT", "RTR", "RTS"} {
		n1.call(c+7*ms+uint64(i)*100_000+synOffset, 200, "uverbs", "MODIFY_QP", []trace.KV{{"qp", "1"}, {"qpn", "18"}, {"mask", "0x1"}, {"state", st}}, "ok", nil)
	}
	n1.event(c+8*ms+synOffset, "ESTABLISHED")
	n0.event(c+9*ms, "ESTABLISHED")
	// Node 0 SENDs its rkey (little endian at byte 8).
	s := c + 20*ms
	head := make([]byte, 16)
	binary.LittleEndian.PutUint64(head, 0x7f0000001000)
	binary.LittleEndian.PutUint32(head[8:], synRKey)
	n0.call(s, 100, "uverbs", "POST_SEND", []trace.KV{{"qp", "2"}, {"qpn", "17"}, {"wr_count", "0"}}, "ok", nil)
	packet(nodes, 0, s+50_000, trace.RecordPacket{OpCode: 0x04, Op: "RC SEND Only", QPN: cliQPN, PSN: 100, Len: 16, AckReq: true, Head: hex.EncodeToString(head)})
	packet(nodes, 1, s+200_000, trace.RecordPacket{OpCode: 0x11, Op: "RC Acknowledge", QPN: srvQPN, PSN: 100, HasAETH: true, Syndrome: 0x1f, MSN: 1, AETH: "ACK msn=1"})
	// Node 1 writes 6 KiB with it, 1 s later.
	w := s + 1000*ms
	n1.call(w+synOffset, 200, "uverbs", "POST_SEND", []trace.KV{{"qp", "1"}, {"qpn", "18"}, {"wr_count", "0"}}, "ok", nil)
	packet(nodes, 1, w+50_000, trace.RecordPacket{OpCode: 0x06, Op: "RC RDMA WRITE First", QPN: srvQPN, PSN: 200, Len: 1024, HasKey: true, VA: 0x7f0000001000, RKey: synRKey, DMALen: 6144})
	for i := range 4 {
		packet(nodes, 1, w+60_000+uint64(i)*10_000, trace.RecordPacket{OpCode: 0x07, Op: "RC RDMA WRITE Middle", QPN: srvQPN, PSN: 201 + uint32(i), Len: 1024})
	}
	packet(nodes, 1, w+110_000, trace.RecordPacket{OpCode: 0x08, Op: "RC RDMA WRITE Last", QPN: srvQPN, PSN: 205, Len: 1024, AckReq: true})
	packet(nodes, 0, w+150_000, trace.RecordPacket{OpCode: 0x11, Op: "RC Acknowledge", QPN: cliQPN, PSN: 205, HasAETH: true, Syndrome: 0x1f, MSN: 2, AETH: "ACK msn=2"})
	// A wrong rkey: the NAK and the error completion on node 1.
	b := w + 5*ms
	n1.call(b+synOffset, 200, "uverbs", "POST_SEND", []trace.KV{{"qp", "1"}, {"qpn", "18"}, {"wr_count", "0"}}, "ok", nil)
	packet(nodes, 1, b+50_000, trace.RecordPacket{OpCode: 0x0a, Op: "RC RDMA WRITE Only", QPN: srvQPN, PSN: 206, Len: 64, AckReq: true, HasKey: true, VA: 0x7f0000001000, RKey: synBadKey, DMALen: 64})
	packet(nodes, 0, b+120_000, trace.RecordPacket{OpCode: 0x11, Op: "RC Acknowledge", QPN: cliQPN, PSN: 206, HasAETH: true, Syndrome: 0x62, MSN: 2, AETH: "NAK remote access error msn=2", NAK: true})
	n1.call(b+2*ms+synOffset, 200, "uverbs", "REG_MR", []trace.KV{{"pd", "0"}, {"len", "4096"}, {"access", "0x100000"}}, "EINVAL", nil)
	n0.es = append(n0.es, trace.RecordEntry{Type: trace.EntryRXE, TS: b + 10*ms, RXE: []trace.RXECount{{Func: "rxe_responder", QPN: srvQPN, Count: 8}}})
	n1.es = append(n1.es, trace.RecordEntry{Type: trace.EntryRXE, TS: b + 10*ms + synOffset, RXE: []trace.RXECount{{Func: "rxe_cq_post", QPN: cliQPN, Error: true, Count: 1}}})
	return nodes
}

// writeSynthetic writes the synthetic recordings into dir; it returns their
// paths.
func writeSynthetic(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for i, n := range synthetic() {
		name := filepath.Join(dir, "synthetic-node"+string(rune('0'+i))+".rec")
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		enc := json.NewEncoder(f)
		if err := enc.Encode(n.hdr); err != nil {
			t.Fatal(err)
		}
		for _, e := range n.es {
			if err := enc.Encode(e); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		files = append(files, name)
	}
	return files
}

// madHead is the first bytes of a CM MAD with attribute ID attr, in hex.
func madHead(attr uint16) string {
	b := make([]byte, 24)
	b[0], b[1], b[2], b[3] = 1, 0x07, 2, 0x03 // base version, class CM, class version, method Send
	binary.BigEndian.PutUint64(b[8:], 0xabcdef01)
	binary.BigEndian.PutUint16(b[16:], attr)
	return hex.EncodeToString(b)
}
