package abi

import (
	"reflect"
	"strings"
	"structs"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// Host tests of matchBTF, the matcher TestBTFLayouts uses in the lab, against
// hand-built BTF.

var (
	btfU8  = &btf.Int{Name: "__u8", Size: 1}
	btfU16 = &btf.Int{Name: "__u16", Size: 2}
	btfU32 = &btf.Int{Name: "__u32", Size: 4}
	btfU64 = &btf.Int{Name: "__u64", Size: 8}
)

func btfBytes(n uint32) *btf.Array { return &btf.Array{Index: btfU32, Type: btfU8, Nelems: n} }

func mem(name string, typ btf.Type, byteOff uint32) btf.Member {
	return btf.Member{Name: name, Type: typ, Offset: btf.Bits(byteOff * 8)}
}

// eventRespBTF is struct rdma_ucm_event_resp as the kernel's BTF describes it.
func eventRespBTF() *btf.Struct {
	conn := &btf.Struct{Name: "rdma_ucm_conn_param", Size: 272, Members: []btf.Member{
		mem("qp_num", btfU32, 0), mem("qkey", btfU32, 4), mem("private_data", btfBytes(256), 8),
	}}
	ud := &btf.Struct{Name: "rdma_ucm_ud_param", Size: 304, Members: []btf.Member{
		mem("qp_num", btfU32, 0), mem("qkey", btfU32, 4),
	}}
	param := &btf.Union{Size: 304, Members: []btf.Member{mem("conn", conn, 0), mem("ud", ud, 0)}}
	ece := &btf.Struct{Name: "rdma_ucm_ece", Size: 8, Members: []btf.Member{mem("vendor_id", btfU32, 0), mem("attr_mod", btfU32, 4)}}
	return &btf.Struct{Name: "rdma_ucm_event_resp", Size: 336, Members: []btf.Member{
		mem("uid", &btf.Typedef{Name: "__aligned_u64", Type: btfU64}, 0),
		mem("id", btfU32, 8), mem("event", btfU32, 12), mem("status", btfU32, 16),
		mem("param", param, 20), mem("reserved", btfU32, 324), mem("ece", ece, 328),
	}}
}

func TestMatchBTFEventResp(t *testing.T) {
	goType := reflect.TypeFor[UCMEventResp]()
	r := matchBTF("rdma_ucm_event_resp", goType, eventRespBTF())
	if len(r.problems) != 0 || r.fields != 7 {
		t.Fatalf("good struct: %d fields, problems %q", r.fields, r.problems)
	}

	for _, c := range []struct {
		name   string
		mutate func(s *btf.Struct)
		want   string
	}{
		{"size", func(s *btf.Struct) { s.Size = 340 }, "kernel size 340"},
		{"offset", func(s *btf.Struct) { s.Members[3].Offset = 17 * 8 }, "status: kernel offset 17"},
		{"member size", func(s *btf.Struct) { s.Members[2].Type = btfU16 }, "event: kernel size 2"},
		{"unknown member", func(s *btf.Struct) { s.Members[1].Name = "handle" }, "handle at offset 8 has no Go field"},
		{"union size", func(s *btf.Struct) { s.Members[4].Type.(*btf.Union).Size = 300 }, "param: kernel size 300"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := eventRespBTF()
			c.mutate(s)
			r := matchBTF("rdma_ucm_event_resp", goType, s)
			if len(r.problems) != 1 || !strings.Contains(r.problems[0], c.want) {
				t.Errorf("problems %q, want one saying %q", r.problems, c.want)
			}
		})
	}
}

// btfTestPort ports btfTestStruct below by the project's rules.
type btfTestPort struct {
	_     structs.HostLayout
	A     uint32
	X     uint32 // anonymous union {x; y}
	P     uint64 // anonymous struct {p}
	Imm   uint32 // union wr {imm; rkey}, ported as its first member
	_     [4]byte
	Flags uint8 // flags:4 and kind:4
	_     [7]byte
}

func btfTestStruct() *btf.Struct {
	anonUnion := &btf.Union{Size: 4, Members: []btf.Member{mem("x", btfU32, 0), mem("y", btfU32, 0)}}
	anonStruct := &btf.Struct{Size: 8, Members: []btf.Member{mem("p", btfU64, 0)}}
	wr := &btf.Union{Name: "", Size: 4, Members: []btf.Member{mem("imm", btfU32, 0), mem("rkey", btfU32, 0)}}
	return &btf.Struct{Name: "btf_test", Size: 32, Members: []btf.Member{
		mem("a", btfU32, 0),
		mem("", anonUnion, 4),
		mem("", anonStruct, 8),
		mem("wr", wr, 16),
		mem("reserved", btfU32, 20),
		{Name: "flags", Type: btfU8, Offset: 24 * 8, BitfieldSize: 4},
		{Name: "kind", Type: btfU8, Offset: 24*8 + 4, BitfieldSize: 4},
		mem("reserved2", btfU8, 25),
		mem("data", btfBytes(0), 32),
	}}
}

func TestMatchBTFRules(t *testing.T) {
	goType := reflect.TypeFor[btfTestPort]()
	r := matchBTF("btf_test", goType, btfTestStruct())
	if len(r.problems) != 0 {
		t.Fatalf("problems %q", r.problems)
	}
	if r.fields != 5 { // a, x, p, wr as imm, flags
		t.Errorf("%d fields matched, want 5", r.fields)
	}
	notes := strings.Join(append(r.notes, r.flex...), "\n")
	for _, w := range []string{"reserved: reserved, ported as padding _ (4@20)", "reserved2: reserved", "kind: bitfield", "btf_test.data@32"} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes %q lack %q", r.notes, w)
		}
	}
	if strings.Contains(notes, ".y") {
		t.Errorf("a union alternative was reported: %q", r.notes)
	}

	// A member outside every Go field fails, and so does a reserved member
	// no blank field covers. A kernel member inside the port's padding is a
	// field of a newer kernel: accepted, with a note.
	s := btfTestStruct()
	s.Members = append(s.Members, mem("other", btfU8, 26), mem("reserved3", btfU32, 32), mem("more", btfU8, 36))
	s.Size = 40
	r = matchBTF("btf_test", goType, s)
	got := strings.Join(r.problems, "\n")
	for _, w := range []string{"kernel size 40", "reserved3 at offset 32 has no Go field", "more at offset 36 has no Go field"} {
		if !strings.Contains(got, w) {
			t.Errorf("problems %q lack %q", r.problems, w)
		}
	}
	if len(r.problems) != 3 {
		t.Errorf("%d problems, want 3: %q", len(r.problems), r.problems)
	}
	if !strings.Contains(strings.Join(r.notes, "\n"), "other: a kernel field at 26 inside the port's _ (7@25)") {
		t.Errorf("notes %q lack the newer kernel field", r.notes)
	}

	// A zero-size member (DECLARE_FLEX_ARRAY's __empty_data) is no field.
	s = btfTestStruct()
	s.Members = append(s.Members, mem("__empty_data", &btf.Struct{Size: 0}, 32))
	if r := matchBTF("btf_test", goType, s); len(r.problems) != 0 || len(r.flex) != 2 {
		t.Errorf("zero-size member: problems %q, flex %q", r.problems, r.flex)
	}

	// The anonymous union's first member is required.
	s = btfTestStruct()
	s.Members[1].Type.(*btf.Union).Members[0].Name = "z"
	if r := matchBTF("btf_test", goType, s); len(r.problems) != 1 || !strings.Contains(r.problems[0], "z at offset 4") {
		t.Errorf("renamed union member: %q", r.problems)
	}
}

// btfCarvePort ports a struct whose newer header carved SpeedEx out of
// reserved bytes (like ib_uverbs_query_port_resp_ex in rdma-core v44 vs
// Linux 6.1).
type btfCarvePort struct {
	_        structs.HostLayout
	Flags2   uint16
	Reserved [2]uint8
	SpeedEx  uint32
}

func TestMatchBTFReservedCarveOut(t *testing.T) {
	goType := reflect.TypeFor[btfCarvePort]()
	old := &btf.Struct{Name: "carve", Size: 8, Members: []btf.Member{mem("flags2", btfU16, 0), mem("reserved", btfBytes(6), 2)}}
	r := matchBTF("carve", goType, old)
	if len(r.problems) != 0 || !strings.Contains(strings.Join(r.notes, ""), "reserves 6 bytes at 2, the ported header uses them as Reserved (2@2), SpeedEx (4@4)") {
		t.Errorf("old kernel: problems %q notes %q", r.problems, r.notes)
	}
	cur := &btf.Struct{Name: "carve", Size: 8, Members: []btf.Member{mem("flags2", btfU16, 0), mem("reserved", btfBytes(2), 2), mem("speed_ex", btfU32, 4)}}
	if r := matchBTF("carve", goType, cur); len(r.problems) != 0 || r.fields != 3 || len(r.notes) != 0 {
		t.Errorf("current kernel: %+v", r)
	}
	// Go fields that overrun the reserved bytes are a real mismatch.
	short := &btf.Struct{Name: "carve", Size: 8, Members: []btf.Member{mem("flags2", btfU16, 0), mem("reserved", btfBytes(4), 2), mem("x", btfU16, 6)}}
	if r := matchBTF("carve", goType, short); len(r.problems) == 0 || !strings.Contains(strings.Join(r.problems, ""), "reserved: kernel size 4, Go Reserved size 2") {
		t.Errorf("overrun: problems %q", r.problems)
	}
	// A named (non-reserved) member of another size is never excused.
	named := &btf.Struct{Name: "carve", Size: 8, Members: []btf.Member{mem("flags2", btfU32, 0), mem("speed_ex", btfU32, 4)}}
	if r := matchBTF("carve", goType, named); !strings.Contains(strings.Join(r.problems, ""), "flags2: kernel size 4, Go Flags2 size 2") {
		t.Errorf("named size mismatch: problems %q", r.problems)
	}
}
