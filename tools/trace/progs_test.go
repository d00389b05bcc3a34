// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
)

var testOffsets = kernelOffsets{FileInode: 32, InodeRdev: 76, VMStart: 0, VMEnd: 8, VMPgoff: 160}

var testCMFields = cmEventFields{
	CMID:    tpField{Offset: 8, Size: 4},
	Tos:     tpField{Offset: 12, Size: 4},
	Event:   tpField{Offset: 16, Size: 8},
	Status:  tpField{Offset: 24, Size: 4, Signed: true},
	SrcAddr: tpField{Offset: 28, Size: 28},
	DstAddr: tpField{Offset: 56, Size: 28},
}

var testUCMResp = []respRead{{Cmd: 0, PtrOff: 16, Size: 4}, {Cmd: 12, PtrOff: 8, Size: 24}}

type namedProg struct {
	name  string
	tp    bool // tracepoint, else kprobe
	insns asm.Instructions
}

// allTestPrograms builds every program shape the tracer can load.
func allTestPrograms(t *testing.T) []namedProg {
	t.Helper()
	var out []namedProg
	add := func(name string, tp bool, insns asm.Instructions, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
		out = append(out, namedProg{name, tp, insns})
	}
	for _, f := range []filter{{}, {PID: 4242}, {Comm: "rping"}, {PID: 1, Comm: "ib_write_bw"}} {
		for _, ko := range []kernelOffsets{testOffsets, unknownOffsets} {
			i, err := verbsWriteEntry(KindVerbsWrite, f, ko)
			add("write", false, i, err)
			i, err = verbsWriteEntry(KindUCMWrite, f, ko)
			add("ucma", false, i, err)
			i, err = verbsIoctlEntry(f, ko)
			add("ioctl", false, i, err)
			i, err = ucmaWriteEntry(f, ko)
			add("ucma-big", false, i, err)
			i, err = verbsMmapEntry(f, ko)
			add("mmap", false, i, err)
		}
	}
	i, err := retProg(testUCMResp)
	add("ret", false, i, err)
	i, err = retProg(nil)
	add("ret-noucm", false, i, err)
	i, err = retBigProg(testUCMResp)
	add("ret-big", false, i, err)
	i, err = cmEventProg(testCMFields)
	add("cm", true, i, err)
	i, err = cmEventProg(cmEventFields{Event: tpField{Offset: 12, Size: 4}, Status: tpField{Offset: 16, Size: 4}})
	add("cm-minimal", true, i, err)
	i, err = rxeCounter(1, &qpnSource{Arg: 0, Off: 100}, nil)
	add("rxe-qp", false, i, err)
	i, err = rxeCounter(2, &qpnSource{Arg: 0, Derefs: []int32{40, 8}, Off: 100}, nil)
	add("rxe-deref", false, i, err)
	i, err = rxeCounter(3, &qpnSource{Arg: 0, Derefs: []int32{64}, Off: 4, BE24: true}, nil)
	add("rxe-bth", false, i, err)
	i, err = rxeCounter(4, nil, &cqeSource{CQArg: 0, CQEArg: 1, IsUser: 317, UStatus: 8, UQPN: 28, KStatus: 8, KQP: 24, IBQPNum: 100})
	add("rxe-cqe", false, i, err)
	i, err = rxeCounter(5, nil, nil)
	add("rxe-none", false, i, err)
	return out
}

// TestProgramsMarshal assembles every program to bytecode: jumps must
// resolve, every path must end in exit, and only the shared maps are referenced.
func TestProgramsMarshal(t *testing.T) {
	for _, p := range allTestPrograms(t) {
		var buf bytes.Buffer
		if err := p.insns.Marshal(&buf, hostOrder()); err != nil {
			t.Errorf("%s: Marshal: %v", p.name, err)
			continue
		}
		if buf.Len()%8 != 0 || buf.Len() == 0 {
			t.Errorf("%s: %d bytes of bytecode", p.name, buf.Len())
		}
		if n := p.insns.Size() / 8; n > 4096 {
			t.Errorf("%s: %d instructions, over the 4096 of unprivileged limits", p.name, n)
		}
		last := p.insns[len(p.insns)-1]
		if last.OpCode.JumpOp() != asm.Exit {
			t.Errorf("%s: last instruction %v is not exit", p.name, last)
		}
		syms, err := p.insns.SymbolOffsets()
		if err != nil {
			t.Errorf("%s: %v", p.name, err)
		}
		for ref := range p.insns.ReferenceOffsets() {
			switch ref {
			case mapInflight, mapEvents, mapStats, mapRXECounts, mapBigInflight, mapScratch, mapDrops:
			default:
				if _, ok := syms[ref]; !ok {
					t.Errorf("%s: reference %q is neither a map nor a label", p.name, ref)
				}
			}
		}
	}
}

// hostOrder is the byte order asm wants spelled out (amd64 and arm64 are
// little endian).
func hostOrder() binary.ByteOrder {
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

func TestBuildErrors(t *testing.T) {
	if _, err := verbsWriteEntry(KindVerbsWrite, filter{Comm: strings.Repeat("x", 16)}, testOffsets); err == nil {
		t.Error("16-byte comm filter accepted")
	}
	if _, err := cmEventProg(cmEventFields{Event: tpField{Offset: 16, Size: 2}, Status: tpField{Offset: 24, Size: 4}}); err == nil {
		t.Error("2-byte event field accepted")
	}
	if _, err := cmEventProg(cmEventFields{Event: tpField{Offset: 14, Size: 4}, Status: tpField{Offset: 24, Size: 4}}); err == nil {
		t.Error("misaligned event field accepted")
	}
	if _, err := retProg([]respRead{{Cmd: 1, PtrOff: recDataLen - 4, Size: 4}}); err == nil {
		t.Error("response pointer outside the data accepted")
	}
	if _, err := rxeCounter(1, &qpnSource{Arg: 9}, nil); err == nil {
		t.Error("argument 9 accepted")
	}
}
