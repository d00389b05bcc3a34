// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/sysfs"
)

var ne = binary.NativeEndian

// record builds a raw record as the programs write it, at the offsets of the
// layout table in event.go.
type record struct {
	ts, dur  uint64
	ret      int64
	pid, tid uint32
	kind     Kind
	flags    uint8
	dev      uint32
	comm     string
	a0, a1   uint64
	data     []byte
	resp     []byte
}

func (r record) bytes() []byte {
	b := make([]byte, 224)
	ne.PutUint64(b[0:], r.ts)
	ne.PutUint64(b[8:], r.dur)
	ne.PutUint64(b[16:], uint64(r.ret))
	ne.PutUint32(b[24:], r.pid)
	ne.PutUint32(b[28:], r.tid)
	b[32] = uint8(r.kind)
	b[33] = r.flags
	ne.PutUint32(b[36:], r.dev)
	copy(b[40:56], r.comm)
	ne.PutUint64(b[56:], r.a0)
	ne.PutUint64(b[64:], r.a1)
	copy(b[72:200], r.data)
	copy(b[200:224], r.resp)
	return b
}

func mustDecode(t *testing.T, r record) Event {
	t.Helper()
	e, err := DecodeEvent(r.bytes())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// cmd builds a write() command: header words then body.
func cmd(command uint32, in, out uint16, body ...any) []byte {
	var b bytes.Buffer
	binary.Write(&b, ne, command)
	binary.Write(&b, ne, in)
	binary.Write(&b, ne, out)
	for _, x := range body {
		binary.Write(&b, ne, x)
	}
	return b.Bytes()
}

func le(vals ...any) []byte {
	var b bytes.Buffer
	for _, x := range vals {
		binary.Write(&b, ne, x)
	}
	return b.Bytes()
}

func TestDecodeEvent(t *testing.T) {
	r := record{ts: 5e9, dur: 41000, ret: -22, pid: 812, tid: 813, kind: KindVerbsWrite,
		flags: flagReturned | flagData | flagResp, dev: 231<<20 | 192, comm: "rping", a0: 24,
		data: cmd(3, 4, 1, uint64(0x1000)), resp: le(uint32(7))}
	e := mustDecode(t, r)
	want := Event{Kind: KindVerbsWrite, TS: 5e9, Dur: 41000, Ret: -22, Returned: true, PID: 812, TID: 813,
		Comm: "rping", Dev: 231<<20 | 192, A0: 24}
	got := e
	got.Data, got.Resp = nil, nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
	if len(e.Data) != recDataLen || ne.Uint32(e.Data) != 3 || len(e.Resp) != recRespLen || ne.Uint32(e.Resp) != 7 {
		t.Errorf("data % x / resp % x", e.Data[:16], e.Resp)
	}

	// Short data: only the command header was readable.
	r.flags = flagDataShort
	if e := mustDecode(t, r); len(e.Data) != 8 || e.Resp != nil || e.Returned {
		t.Errorf("short record: data %d bytes, resp %v, returned %v", len(e.Data), e.Resp, e.Returned)
	}
	// A 16-byte comm without NUL is kept whole; mmap's int return is sign-extended from 32 bits.
	r = record{kind: KindVerbsMmap, flags: flagReturned, comm: "0123456789abcdef", ret: 0x00000000ffffffea}
	if e := mustDecode(t, r); e.Comm != "0123456789abcdef" || e.Ret != -22 {
		t.Errorf("comm %q ret %d", e.Comm, e.Ret)
	}
	if _, err := DecodeEvent(make([]byte, 223)); err == nil {
		t.Error("223-byte record accepted")
	}
	if _, err := DecodeEvent(record{kind: 9}.bytes()); err == nil {
		t.Error("kind 9 accepted")
	}
}

func TestFormatLines(t *testing.T) {
	f := &Formatter{Names: ABINames{}, Devices: map[uint32]string{231<<20 | 192: "rxe0"}, Start: 1e9}
	const ok = flagReturned | flagData | flagResp
	ex := uint32(abi.IB_USER_VERBS_CMD_FLAG_EXTENDED)
	modify := make([]byte, 112)
	ne.PutUint32(modify[64:], 3)                                  // qp_handle
	ne.PutUint32(modify[68:], abi.IB_QP_STATE|abi.IB_QP_DEST_QPN) // attr_mask
	ne.PutUint32(modify[84:], 18)                                 // dest_qp_num
	modify[96] = abi.IB_QPS_RTR                                   // qp_state

	tests := []struct {
		name string
		r    record
		want string
	}{{
		"get context",
		record{ts: 1e9 + 12345678, dur: 41000, ret: 16, pid: 7, comm: "ibv_devinfo", kind: KindVerbsWrite, flags: ok,
			dev: 231<<20 | 192, data: cmd(abi.IB_USER_VERBS_CMD_GET_CONTEXT, 4, 2, uint64(0xabc)), resp: le(uint32(4), uint32(2))},
		"0.012346 ibv_devinfo[7] uverbs/rxe0 GET_CONTEXT -> ok 41us async_fd=4 num_comp_vectors=2",
	}, {
		"create qp",
		record{ts: 2e9, dur: 1500000, ret: 64, pid: 7, comm: "rping", kind: KindVerbsWrite, flags: ok,
			data: cmd(abi.IB_USER_VERBS_CMD_CREATE_QP, 16, 8, uint64(1), uint64(2), uint32(0), uint32(1), uint32(2), uint32(0),
				uint32(64), uint32(32), uint32(1), uint32(1), uint32(0), uint8(0), uint8(abi.IB_QPT_RC)),
			resp: le(uint32(5), uint32(17))},
		"1.000000 rping[7] uverbs CREATE_QP type=RC pd=0 send_cq=1 recv_cq=2 max_send_wr=64 max_recv_wr=32 max_send_sge=1 max_recv_sge=1 max_inline=0 -> ok 1.500ms qp=5 qpn=17",
	}, {
		"modify qp, extended, failing",
		record{ts: 1e9, dur: 3000, ret: -22, pid: 7, comm: "x", kind: KindVerbsWrite, flags: flagReturned | flagData,
			data: append(cmd(ex|abi.IB_USER_VERBS_EX_CMD_MODIFY_QP, 15, 1, uint64(0x10), uint32(0), uint32(0)), modify...)},
		"0.000000 x[7] uverbs MODIFY_QP_EX qp=3 mask=0x100001 state=RTR dest_qpn=18 -> EINVAL (-22) 3us",
	}, {
		"invalid command",
		record{ts: 1e9, dur: 2000, ret: -95, pid: 9, comm: "t", kind: KindVerbsWrite, flags: flagReturned | flagData,
			data: cmd(0x3e, 2, 0)},
		"0.000000 t[9] uverbs CMD_0x3e -> EOPNOTSUPP (-95) 2us",
	}, {
		"ioctl",
		record{ts: 1e9, dur: 80000, pid: 9, comm: "t", kind: KindVerbsIoctl, flags: flagReturned | flagData,
			a0: uint64(abi.RDMA_VERBS_IOCTL), data: le(uint16(88), uint16(abi.UVERBS_OBJECT_CQ), uint16(abi.UVERBS_METHOD_CQ_CREATE), uint16(5))},
		"0.000000 t[9] uverbs ioctl CQ.CREATE attrs=5 -> ok 80us",
	}, {
		"ioctl invoke write",
		record{ts: 1e9, dur: 1000, pid: 9, comm: "t", kind: KindVerbsIoctl, flags: flagReturned | flagData,
			a0: uint64(abi.RDMA_VERBS_IOCTL),
			data: le(uint16(40), uint16(abi.UVERBS_OBJECT_DEVICE), uint16(abi.UVERBS_METHOD_INVOKE_WRITE), uint16(1), uint64(0), uint32(0), uint32(0),
				uint16(abi.UVERBS_ATTR_WRITE_CMD), uint16(0), uint16(0), uint16(0), uint64(abi.IB_USER_VERBS_CMD_ALLOC_PD))},
		"0.000000 t[9] uverbs ALLOC_PD via=ioctl attrs=1 -> ok 1us",
	}, {
		"mmap",
		record{ts: 1e9, dur: 5000, pid: 9, comm: "t", kind: KindVerbsMmap, flags: flagReturned | flagData, a0: 2, a1: 8192},
		"0.000000 t[9] uverbs mmap offset=0x2000 len=8192 -> ok 5us",
	}, {
		"ucma get event",
		record{ts: 1e9, dur: 1200000, ret: 8, pid: 9, comm: "rping", kind: KindUCMWrite, flags: ok,
			data: le(uint32(abi.RDMA_USER_CM_CMD_GET_EVENT), uint16(8), uint16(336), uint64(0x1000)),
			resp: le(uint64(1), uint32(3), uint32(abi.RDMA_CM_EVENT_ESTABLISHED), int32(0))},
		"0.000000 rping[9] ucma GET_EVENT -> ok 1.200ms event=ESTABLISHED status=0 id=3",
	}, {
		"ucma connect",
		record{ts: 1e9, dur: 9000, pid: 9, comm: "rping", kind: KindUCMWrite, flags: flagReturned | flagData,
			data: le(uint32(abi.RDMA_USER_CM_CMD_CONNECT), uint16(296), uint16(0), uint32(17), uint32(0))},
		"0.000000 rping[9] ucma CONNECT qp_num=17 -> ok 9us",
	}, {
		"ucma bind",
		record{ts: 1e9, dur: 9000, pid: 9, comm: "rping", kind: KindUCMWrite, flags: flagReturned | flagData,
			data: le(uint32(abi.RDMA_USER_CM_CMD_BIND), uint16(136), uint16(0), uint32(2), uint16(16), uint16(0),
				[]byte{2, 0, 0x1b, 0x1e, 10, 77, 0, 1})},
		"0.000000 rping[9] ucma BIND id=2 addr=10.77.0.1:6942 -> ok 9us",
	}, {
		"ucma create id",
		record{ts: 1e9, dur: 9000, pid: 9, comm: "rping", kind: KindUCMWrite, flags: flagReturned | flagData | flagResp,
			data: le(uint32(abi.RDMA_USER_CM_CMD_CREATE_ID), uint16(24), uint16(4), uint64(0x55), uint64(0x1000),
				uint16(abi.RDMA_PS_TCP), uint8(abi.IB_QPT_RC)), resp: le(uint32(6))},
		"0.000000 rping[9] ucma CREATE_ID ps=TCP qp_type=RC -> ok 9us id=6",
	}, {
		"cm event",
		record{ts: 1e9, pid: 0, comm: "kworker/0:1", kind: KindCMEvent, flags: flagData, a0: uint64(abi.RDMA_CM_EVENT_CONNECT_REQUEST),
			a1: 0xffffff92, data: append(le(uint32(4), uint32(0)), append(
				append([]byte{2, 0, 0x48, 0x66, 10, 77, 0, 1}, make([]byte, 20)...),
				[]byte{2, 0, 0x1b, 0x1e, 10, 77, 0, 2}...)...)},
		"0.000000 kworker/0:1[0] cm CONNECT_REQUEST status=-110 cm_id=4 src=10.77.0.1:18534 dst=10.77.0.2:6942",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.Line(mustDecode(t, tt.r)); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestFormatJSON(t *testing.T) {
	f := &Formatter{Start: 1e9}
	e := mustDecode(t, record{ts: 3e9, dur: 2500, ret: -1, pid: 4, tid: 5, comm: "a", kind: KindVerbsWrite,
		flags: flagReturned | flagData, data: cmd(abi.IB_USER_VERBS_CMD_DEALLOC_PD, 3, 0, uint32(9))})
	b, err := f.JSON(e)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"time": 2.0, "comm": "a", "pid": 4.0, "tid": 5.0, "subsys": "uverbs", "op": "DEALLOC_PD",
		"args": map[string]any{"pd": 9.0}, "ret": -1.0, "result": "EPERM", "dur_us": 2.5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSON (-want +got):\n%s\n%s", diff, b)
	}
}

// fakeNames shows the formatter takes every name from its Names.
type fakeNames struct{}

func (fakeNames) VerbsCommand(c uint32) string   { return "V" + string(rune('0'+c)) }
func (fakeNames) VerbsExCommand(c uint32) string { return "" }
func (fakeNames) IoctlObject(o uint16) string    { return "O" }
func (fakeNames) IoctlMethod(o, m uint16) string { return "M" }
func (fakeNames) UCMCommand(c uint32) string     { return "U" }
func (fakeNames) CMEvent(e uint32) string        { return "E" }
func TestFormatterUsesNames(t *testing.T) {
	f := &Formatter{Names: fakeNames{}}
	e := mustDecode(t, record{kind: KindVerbsWrite, flags: flagData, data: cmd(3, 2, 0)})
	if d := f.Describe(e); d.Op != "V3" {
		t.Errorf("op %q", d.Op)
	}
	e = mustDecode(t, record{kind: KindVerbsWrite, flags: flagData, data: cmd(0x80000003, 2, 0)})
	if d := f.Describe(e); d.Op != "EX_CMD_0x3_EX" {
		t.Errorf("unnamed extended op %q", d.Op)
	}
}

func TestSummary(t *testing.T) {
	f := &Formatter{}
	s := NewSummary(f)
	add := func(pid uint32, comm string, c uint32, dur uint64, ret int64) {
		s.Add(mustDecode(t, record{pid: pid, comm: comm, kind: KindVerbsWrite, flags: flagReturned | flagData,
			dur: dur, ret: ret, data: cmd(c, 2, 0)}))
	}
	add(1, "a", abi.IB_USER_VERBS_CMD_ALLOC_PD, 500, 0)         // bucket 0 (<1us)
	add(1, "a", abi.IB_USER_VERBS_CMD_ALLOC_PD, 3000, 0)        // 3us: bucket 2
	add(2, "b", abi.IB_USER_VERBS_CMD_ALLOC_PD, 3500, -22)      // bucket 2, error
	add(2, "b", abi.IB_USER_VERBS_CMD_DEALLOC_PD, 1_000_000, 0) // 1000us: bucket 10
	s.Add(mustDecode(t, record{kind: KindCMEvent, pid: 0, comm: "kworker", flags: flagData}))
	ops := s.Ops()
	if len(ops) != 3 || ops[0].Op != "ALLOC_PD" || ops[0].Count != 3 || ops[0].Errors != 1 {
		t.Fatalf("ops %+v", ops)
	}
	if ops[0].Hist[0] != 1 || ops[0].Hist[2] != 2 || ops[0].MaxNS != 3500 || ops[0].Avg() != 7000/3 {
		t.Errorf("ALLOC_PD hist %v max %d avg %d", ops[0].Hist[:4], ops[0].MaxNS, ops[0].Avg())
	}
	procs := s.Procs()
	if len(procs) != 2 || procs[1].PID != 2 || procs[1].Errors != 1 || procs[1].Ops["uverbs DEALLOC_PD"] != 1 {
		t.Errorf("procs %+v (the CM event must not count as a process call)", procs)
	}
	var buf bytes.Buffer
	s.Write(&buf, true)
	out := buf.String()
	for _, want := range []string{"uverbs  ALLOC_PD", "3      1", "512 -> 1023", "b     2      1       uverbs ALLOC_PD×1"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestHWCountersAndDevices(t *testing.T) {
	root := t.TempDir()
	write := func(p, v string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ib/rxe0/ports/1/hw_counters/sent_pkts", "10\n")
	write("ib/rxe0/ports/1/hw_counters/rcvd_pkts", "4\n")
	write("ib/rxe0/ports/1/hw_counters/lifespan", "x\n")
	write("ib/rxe1/ports/1/hw_counters/sent_pkts", "1\n")
	before, err := sysfs.ReadHWCounters(filepath.Join(root, "ib"), []string{"rxe0"})
	if err != nil || len(before) != 1 || before[0].Values["sent_pkts"] != 10 || len(before[0].Values) != 2 {
		t.Fatalf("read: %+v %v", before, err)
	}
	write("ib/rxe0/ports/1/hw_counters/sent_pkts", "15\n")
	now, _ := sysfs.ReadHWCounters(filepath.Join(root, "ib"), nil)
	d := DiffHWCounters(before, now, false)
	want := []CounterDelta{{Dev: "rxe0", Port: 1, Name: "sent_pkts", Before: 10, Now: 15}, {Dev: "rxe1", Port: 1, Name: "sent_pkts", Now: 1}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("delta (-want +got):\n%s", diff)
	}
	if _, err := sysfs.ReadHWCounters(filepath.Join(root, "ib"), []string{"nope"}); err == nil {
		t.Error("missing device accepted")
	}

	write("verbs/uverbs0/dev", "231:192\n")
	write("verbs/uverbs0/ibdev", "rxe0\n")
	write("verbs/uverbs1/dev", "231:193\n")
	write("verbs/uverbs1/ibdev", "siw0\n")
	write("verbs/abi_version", "6\n")
	if got := UverbsDevices(filepath.Join(root, "verbs")); !cmp.Equal(got, map[uint32]string{231<<20 | 192: "rxe0", 231<<20 | 193: "siw0"}) {
		t.Errorf("UverbsDevices = %v", got)
	}
}

func TestFormatDuration(t *testing.T) {
	for ns, want := range map[uint64]string{999: "0us", 41_000: "41us", 1_250_000: "1.250ms", 2_000_000_000: "2.000s"} {
		if got := FormatDuration(ns); got != want {
			t.Errorf("FormatDuration(%d) = %q, want %q", ns, got, want)
		}
	}
}
