// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"os"
	"runtime"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/google/go-cmp/cmp"

	"github.com/rdmago/rdmago/internal/abi"
)

// TestRunDrops overfills the ring buffer (64 KiB in the harness) with
// POST_SEND records and two INVOKE_WRITE ioctls, without reading: every
// record is either received or counted as dropped, and the drops are named
// after their calls.
func TestRunDrops(t *testing.T) {
	if !regsSupported {
		t.Skip("no pt_regs layout for this architecture")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := newRunHarness(t)
	mem, addr := userMem(t)
	pid := uint32(os.Getpid())
	bo := binary.NativeEndian
	// ib_uverbs_cmd_hdr{POST_SEND, in_words=6, out_words=1}, response pointer.
	bo.PutUint32(mem[0:], abi.IB_USER_VERBS_CMD_POST_SEND)
	bo.PutUint16(mem[4:], 6)
	bo.PutUint16(mem[6:], 1)
	bo.PutUint64(mem[8:], addr+2048)

	// prog loads what a program builder returned.
	prog := func(insns asm.Instructions, err error) *ebpf.Program {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		p, err := h.load(insns)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	entry := prog(verbsWriteEntry(KindVerbsWrite, filter{PID: pid}, unknownOffsets))
	ret := prog(retProg(testUCMResp))
	run := func(p *ebpf.Program, ctx []byte) {
		t.Helper()
		if _, err := p.Run(&ebpf.RunOptions{Context: ctx}); err != nil {
			t.Fatal(err)
		}
	}
	const posts = 400 // 232-byte records: some 280 fit in 64 KiB
	for range posts {
		run(entry, regs(0, 0, addr, 32))
		run(ret, regs(32))
	}
	// An INVOKE_WRITE of MODIFY_QP: ib_uverbs_ioctl_hdr{length, object
	// DEVICE, method INVOKE_WRITE, num_attrs 2}, a CORE_IN attribute, then
	// the WRITE_CMD one.
	ioctlMem := mem[1024:]
	ioctlAddr := addr + 1024
	bo.PutUint16(ioctlMem[0:], 24+2*16)
	bo.PutUint16(ioctlMem[2:], abi.UVERBS_OBJECT_DEVICE)
	bo.PutUint16(ioctlMem[4:], abi.UVERBS_METHOD_INVOKE_WRITE)
	bo.PutUint16(ioctlMem[6:], 2)
	bo.PutUint16(ioctlMem[24:], abi.UVERBS_ATTR_CORE_IN)
	bo.PutUint16(ioctlMem[40:], abi.UVERBS_ATTR_WRITE_CMD)
	bo.PutUint64(ioctlMem[48:], abi.IB_USER_VERBS_CMD_MODIFY_QP)
	ientry := prog(verbsIoctlEntry(filter{PID: pid}, unknownOffsets))
	iret := prog(retBigProg(testUCMResp))
	for range 2 {
		run(ientry, regs(0, 0, uint64(abi.RDMA_VERBS_IOCTL), ioctlAddr))
		run(iret, regs(0))
	}

	received := map[string]uint64{}
	f := &Formatter{Names: ABINames{}}
	for {
		e, ok := h.next()
		if !ok {
			break
		}
		d := f.Describe(e)
		received[d.Subsys+" "+d.Op]++
	}
	tr := &Tracer{maps: h.maps}
	ring, _, err := tr.Lost()
	if err != nil {
		t.Fatal(err)
	}
	ds, err := tr.Dropped()
	if err != nil {
		t.Fatal(err)
	}
	lost := f.LostOps(ds)
	t.Logf("received %v; lost %d: %+v", received, ring, lost)
	if ring == 0 {
		t.Fatalf("nothing lost: the ring did not fill (received %v)", received)
	}
	want := []LostOp{{"uverbs", "POST_SEND", posts - received["uverbs POST_SEND"]}}
	if n := 2 - received["uverbs MODIFY_QP"]; n > 0 {
		want = append(want, LostOp{"uverbs", "MODIFY_QP", n})
	}
	if diff := cmp.Diff(want, lost); diff != "" {
		t.Errorf("lost ops (-want +got):\n%s", diff)
	}
	if ring != posts+2-received["uverbs POST_SEND"]-received["uverbs MODIFY_QP"] {
		t.Errorf("stats count %d drops, want %d - received %v", ring, posts+2, received)
	}
	if s := f.LostReport(ring, 0, ds); s == "" {
		t.Error("empty loss report")
	} else {
		t.Log(s)
	}
}
