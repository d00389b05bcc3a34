// Copyright 2026 The rdmago Authors.

package trace

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf/btf"
	"github.com/google/go-cmp/cmp"

	"github.com/rdmago/rdmago/internal/labtest"
)

// fakeBTF is a typeFinder over hand-built types.
type fakeBTF map[string][]btf.Type

func (f fakeBTF) AnyTypesByName(name string) ([]btf.Type, error) {
	if ts, ok := f[name]; ok {
		return ts, nil
	}
	return nil, btf.ErrNotFound
}

func (f fakeBTF) add(ts ...btf.Type) fakeBTF {
	for _, t := range ts {
		f[t.TypeName()] = append(f[t.TypeName()], t)
	}
	return f
}

var (
	u32T  = &btf.Int{Name: "u32", Size: 4}
	u8T   = &btf.Int{Name: "u8", Size: 1}
	boolT = &btf.Typedef{Name: "bool", Type: &btf.Int{Name: "_Bool", Size: 1, Encoding: btf.Bool}}
	voidP = &btf.Pointer{Target: &btf.Void{}}
)

func member(name string, t btf.Type, byteOff uint32) btf.Member {
	return btf.Member{Name: name, Type: t, Offset: btf.Bits(byteOff * 8)}
}

func fn(name string, params ...btf.FuncParam) *btf.Func {
	return &btf.Func{Name: name, Type: &btf.FuncProto{Return: &btf.Int{Name: "int", Size: 4}, Params: params}}
}

func ptr(t btf.Type) btf.Type { return &btf.Pointer{Target: t} }

// rxeBTF builds the rdma_rxe types that matter, shaped like Linux 6.1 (task
// arg is a void *, rxe_requester(void *)) or 6.12 (task->qp, rxe_requester(qp)).
func rxeBTF(v612 bool) fakeBTF {
	ibqp := &btf.Struct{Name: "ib_qp", Size: 296, Members: []btf.Member{member("device", voidP, 0), member("qp_num", u32T, 156)}}
	if v612 {
		ibqp = &btf.Struct{Name: "ib_qp", Size: 336, Members: []btf.Member{member("device", voidP, 0), member("qp_num", u32T, 172)}}
	}
	rxeqp := &btf.Struct{Name: "rxe_qp", Size: 2048, Members: []btf.Member{member("ibqp", ibqp, 0), member("is_user", boolT, 600)}}
	task := &btf.Struct{Name: "rxe_task", Size: 72, Members: []btf.Member{member("state", u32T, 40), member("arg", voidP, 48)}}
	if v612 {
		task = &btf.Struct{Name: "rxe_task", Size: 80, Members: []btf.Member{member("state", u32T, 32), member("qp", ptr(rxeqp), 40)}}
	}
	skb := &btf.Struct{Name: "sk_buff", Size: 232, Members: []btf.Member{member("cb", &btf.Array{Type: u8T, Nelems: 48}, 40)}}
	pkt := &btf.Struct{Name: "rxe_pkt_info", Size: 48, Members: []btf.Member{member("qp", ptr(rxeqp), 8), member("hdr", ptr(u8T), 24)}}
	cq := &btf.Struct{Name: "rxe_cq", Size: 368, Members: []btf.Member{member("is_user", boolT, 318)}}
	ibwc := &btf.Struct{Name: "ib_wc", Size: 64, Members: []btf.Member{member("status", u32T, 8), member("qp", ptr(ibqp), 24)}}
	uwc := &btf.Struct{Name: "ib_uverbs_wc", Size: 48, Members: []btf.Member{member("status", u32T, 8), member("qp_num", u32T, 28)}}
	cqe := &btf.Struct{Name: "rxe_cqe", Size: 72, Members: []btf.Member{
		member("", &btf.Union{Size: 64, Members: []btf.Member{member("ibwc", ibwc, 0), member("uibwc", uwc, 0)}}, 0)}}
	f := fakeBTF{}.add(ibqp, rxeqp, task, skb, pkt, cq, ibwc, uwc, cqe,
		fn("rxe_post_send", btf.FuncParam{Name: "ibqp", Type: ptr(ibqp)}, btf.FuncParam{Name: "wr", Type: voidP}),
		fn("rxe_sched_task", btf.FuncParam{Name: "task", Type: ptr(task)}),
		fn("rxe_rcv", btf.FuncParam{Name: "skb", Type: ptr(skb)}),
		fn("rxe_xmit_packet", btf.FuncParam{Name: "qp", Type: ptr(rxeqp)}, btf.FuncParam{Name: "pkt", Type: ptr(pkt)}),
		fn("rxe_cq_post", btf.FuncParam{Name: "cq", Type: ptr(cq)}, btf.FuncParam{Name: "cqe", Type: ptr(cqe)}, btf.FuncParam{Name: "solicited", Type: u32T}),
		fn("rxe_do_task", btf.FuncParam{Name: "t", Type: voidP}),
	)
	if v612 {
		f.add(fn("rxe_requester", btf.FuncParam{Name: "qp", Type: ptr(rxeqp)}))
	} else {
		f.add(fn("rxe_requester", btf.FuncParam{Name: "arg", Type: voidP}))
	}
	return f
}

func TestPlanRXE(t *testing.T) {
	funcs := []string{"rxe_post_send", "rxe_sched_task", "rxe_requester", "rxe_rcv", "rxe_xmit_packet", "rxe_cq_post", "rxe_do_task", "rxe_sender"}
	for _, v612 := range []bool{false, true} {
		qpNum, toQP := int32(156), int32(48)
		if v612 {
			qpNum, toQP = 172, 40
		}
		plans := planRXE(rxeBTF(v612), funcs)
		want := []*qpnSource{
			{Arg: 0, Off: qpNum},
			{Arg: 0, Derefs: []int32{toQP}, Off: qpNum},
			{Arg: 0, Off: qpNum},
			{Arg: 0, Derefs: []int32{40 + 24}, Off: 4, BE24: true},
			{Arg: 0, Off: qpNum},
			nil, nil, nil,
		}
		for i, p := range plans {
			if p.ID != uint16(i) || p.Func != funcs[i] {
				t.Fatalf("plan %d is %d %s", i, p.ID, p.Func)
			}
			if diff := cmp.Diff(want[i], p.QP); diff != "" {
				t.Errorf("6.12=%v %s: QP source (-want +got):\n%s (%s)", v612, p.Func, diff, p.How)
			}
		}
		wantCQE := &cqeSource{CQArg: 0, CQEArg: 1, IsUser: 318, UStatus: 8, UQPN: 28, KStatus: 8, KQP: 24, IBQPNum: qpNum}
		if diff := cmp.Diff(wantCQE, plans[5].CQE); diff != "" {
			t.Errorf("rxe_cq_post (-want +got):\n%s", diff)
		}
		if !strings.Contains(plans[6].How, "no argument leads to a QP") || !strings.Contains(plans[7].How, "rxe_sender: not found") {
			t.Errorf("unresolvable plans: %q / %q", plans[6].How, plans[7].How)
		}
	}
	if p := planRXE(nil, []string{"rxe_rcv"}); p[0].QP != nil || !strings.Contains(p[0].How, "no rdma_rxe BTF") {
		t.Errorf("no BTF: %+v", p[0])
	}
}

// TestPlanRXESplit: on Debian, ib_qp and sk_buff live in vmlinux BTF, not in
// rdma_rxe's split BTF; the plan must find them through the chain.
func TestPlanRXESplit(t *testing.T) {
	all := rxeBTF(true)
	mod, base := fakeBTF{}, fakeBTF{}
	for name, ts := range all {
		if name == "ib_qp" || name == "sk_buff" {
			base[name] = ts
		} else {
			mod[name] = ts
		}
	}
	funcs := []string{"rxe_post_send", "rxe_rcv"}
	if p := planRXE(mod, funcs); p[0].QP != nil || p[1].QP != nil {
		t.Fatalf("module BTF alone resolved ib_qp/sk_buff: %+v", p)
	}
	for _, p := range planRXE(chain{mod, base}, funcs) {
		if p.QP == nil {
			t.Errorf("%s: %s", p.Func, p.How)
		}
	}
}

func TestMemberOffsetAnonymous(t *testing.T) {
	// vm_area_struct on 6.x: vm_start/vm_end inside an anonymous union's
	// anonymous struct.
	inner := &btf.Struct{Size: 16, Members: []btf.Member{member("vm_start", u32T, 0), member("vm_end", u32T, 8)}}
	vma := &btf.Struct{Name: "vm_area_struct", Size: 200, Members: []btf.Member{
		member("", &btf.Union{Size: 16, Members: []btf.Member{member("", inner, 0), member("vm_rcu", u32T, 0)}}, 0),
		member("vm_mm", voidP, 16), member("vm_pgoff", u32T, 160)}}
	f := fakeBTF{}.add(vma)
	for path, want := range map[string]int32{"vm_start": 0, "vm_end": 8, "vm_pgoff": 160} {
		if got, err := structOffset(f, "vm_area_struct", path); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", path, got, err, want)
		}
	}
	if _, err := structOffset(f, "vm_area_struct", "nope"); !errors.Is(err, errNoMember) {
		t.Errorf("missing member: %v", err)
	}
	if _, err := structOffset(f, "file", "f_inode"); err == nil {
		t.Error("missing struct accepted")
	}
}

// TestKernelOffsetsHost resolves the uverbs programs' offsets in the running
// kernel's own BTF (any BTF kernel has struct file, inode, vm_area_struct).
func TestKernelOffsetsHost(t *testing.T) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		if labtest.InLab() {
			t.Fatalf("the lab kernel has no BTF: %v", err)
		}
		t.Skipf("no kernel BTF here: %v", err)
	}
	ko, errs := kernelOffsetsFrom(spec)
	if len(errs) > 0 {
		t.Fatalf("kernel BTF lacks offsets: %v", errs)
	}
	for name, v := range map[string]int32{"f_inode": ko.FileInode, "i_rdev": ko.InodeRdev, "vm_start": ko.VMStart,
		"vm_end": ko.VMEnd, "vm_pgoff": ko.VMPgoff} {
		if v < 0 || v > 1024 {
			t.Errorf("%s offset %d", name, v)
		}
	}
	if ko.VMEnd != ko.VMStart+8 {
		t.Errorf("vm_end %d is not right after vm_start %d", ko.VMEnd, ko.VMStart)
	}
}

func TestModuleSymbols(t *testing.T) {
	const kallsyms = `ffffffffc0a01000 t rxe_requester	[rdma_rxe]
ffffffffc0a02000 T rxe_rcv	[rdma_rxe]
ffffffffc0a03000 d rxe_dev_ops	[rdma_rxe]
ffffffffc0a04000 t ib_uverbs_write	[ib_uverbs]
ffffffff81000000 T vfs_write
`
	syms, err := moduleSymbols(strings.NewReader(kallsyms), "rdma_rxe")
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(syms, map[string]bool{"rxe_requester": true, "rxe_rcv": true}) {
		t.Errorf("rdma_rxe functions = %v", syms)
	}
	core, _ := moduleSymbols(strings.NewReader(kallsyms), "")
	if !core["vfs_write"] || core["rxe_rcv"] {
		t.Errorf("core functions = %v", core)
	}
}

func TestParseTPFormat(t *testing.T) {
	// The shape of events/rdma_cma/cm_event_handler/format (drivers/infiniband/core/cma_trace.h).
	const format = `name: cm_event_handler
ID: 1573
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:u32 cm_id;	offset:8;	size:4;	signed:0;
	field:u32 tos;	offset:12;	size:4;	signed:0;
	field:unsigned long event;	offset:16;	size:8;	signed:0;
	field:int status;	offset:24;	size:4;	signed:1;
	field:unsigned char srcaddr[28];	offset:28;	size:28;	signed:0;
	field:unsigned char dstaddr[28];	offset:56;	size:28;	signed:0;

print fmt: "cm.id=%u src=%pISpc dst=%pISpc tos=%u %s (%lu/%d)", REC->cm_id, REC->srcaddr, REC->dstaddr, REC->tos, rdma_show_cm_event(REC->event), REC->event, REC->status
`
	fields, err := parseTPFormat(strings.NewReader(format))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := cmEventFieldsFrom(fields)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(testCMFields, cf); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if _, err := cmEventFieldsFrom(map[string]tpField{"event": {Offset: 16, Size: 8}}); err == nil {
		t.Error("format without status accepted")
	}
	if _, err := parseTPFormat(strings.NewReader("field:int x;\toffset:abc;\tsize:4;")); err == nil {
		t.Error("bad offset accepted")
	}
	if _, err := parseTPFormat(strings.NewReader("name: x\n")); err == nil {
		t.Error("format without fields accepted")
	}
}
