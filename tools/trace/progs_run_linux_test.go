// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
)

// The kprobe and tracepoint programs cannot be test-run (BPF_PROG_TEST_RUN
// does not support those types) and the host has no RDMA to attach them to.
// BPF_PROG_TYPE_SYSCALL programs can be test-run with any context bytes, run
// in the calling thread and have the helpers these programs use, so the
// same instructions are loaded as a syscall program and fed a hand-made
// struct pt_regs (or tracepoint record): that executes the real bytecode in
// the real kernel, reading real user memory of this process.

type runHarness struct {
	t    *testing.T
	maps map[string]*ebpf.Map
	rd   *ringbuf.Reader
}

func newRunHarness(t *testing.T) *runHarness {
	maps := testMaps(t)
	rd, err := ringbuf.NewReader(maps[mapEvents])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	h := &runHarness{t: t, maps: maps, rd: rd}
	// Probe once whether syscall programs work here.
	if _, err := h.load(asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}); err != nil {
		labtest.Missing(t, "BPF_PROG_TYPE_SYSCALL unavailable (Linux 5.14+): %v", err)
	}
	return h
}

func (h *runHarness) load(insns asm.Instructions) (*ebpf.Program, error) {
	for ref := range insns.ReferenceOffsets() {
		if m, ok := h.maps[ref]; ok {
			if err := insns.AssociateMap(ref, m); err != nil {
				return nil, err
			}
		}
	}
	return ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "rdmatrace_run", Type: ebpf.Syscall, Flags: unix.BPF_F_SLEEPABLE,
		License: "GPL", Instructions: insns,
	})
}

// run executes insns once with ctx as its context.
func (h *runHarness) run(insns asm.Instructions, ctx []byte) {
	h.t.Helper()
	prog, err := h.load(insns)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			h.t.Fatalf("load: %+v", ve)
		}
		h.t.Fatalf("load: %v", err)
	}
	defer prog.Close()
	if _, err := prog.Run(&ebpf.RunOptions{Context: ctx}); err != nil {
		h.t.Fatalf("run: %v", err)
	}
}

// next returns the next record, or ok=false when none arrives soon.
func (h *runHarness) next() (Event, bool) {
	h.t.Helper()
	h.rd.SetDeadline(time.Now().Add(50 * time.Millisecond))
	rec, err := h.rd.Read()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return Event{}, false
	}
	if err != nil {
		h.t.Fatal(err)
	}
	e, err := DecodeEvent(rec.RawSample)
	if err != nil {
		h.t.Fatal(err)
	}
	return e, true
}

// regs is a fake struct pt_regs with the given arguments.
func regs(ret uint64, args ...uint64) []byte {
	b := make([]byte, 256)
	for i, a := range args {
		binary.NativeEndian.PutUint64(b[regArgOffsets[i]:], a)
	}
	binary.NativeEndian.PutUint64(b[regRetOffset:], ret)
	return b
}

// userMem is page-aligned memory outside the Go heap the programs read with
// bpf_probe_read_user.
func userMem(t *testing.T) ([]byte, uint64) {
	m, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(m) })
	return m, uint64(uintptr(unsafe.Pointer(&m[0])))
}

func myComm(t *testing.T) string {
	b, err := os.ReadFile("/proc/thread-self/comm")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestRunVerbsWrite(t *testing.T) {
	if !regsSupported {
		t.Skip("no pt_regs layout for this architecture")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := newRunHarness(t)
	mem, addr := userMem(t)
	pid, tid := uint32(os.Getpid()), uint32(unix.Gettid())

	// ib_uverbs_cmd_hdr{command=3 (ALLOC_PD), in_words=4, out_words=1}, then
	// ib_uverbs_alloc_pd{response} pointing at mem[2048], where the "kernel"
	// left pd_handle=0x2a.
	bo := binary.NativeEndian
	bo.PutUint32(mem[0:], 3)
	bo.PutUint16(mem[4:], 4)
	bo.PutUint16(mem[6:], 1)
	bo.PutUint64(mem[8:], addr+2048)
	bo.PutUint32(mem[2048:], 0x2a)
	bo.PutUint32(mem[2052:], 0xdeadbeef) // beyond out_words: must not be read

	entry, err := verbsWriteEntry(KindVerbsWrite, filter{PID: pid}, unknownOffsets)
	if err != nil {
		t.Fatal(err)
	}
	ret, err := retProg(testUCMResp)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	h.run(entry, regs(0, 0, addr, 16))
	if _, ok := h.next(); ok {
		t.Fatal("the entry program alone produced an event")
	}
	time.Sleep(time.Millisecond)
	h.run(ret, regs(16))
	e, ok := h.next()
	if !ok {
		t.Fatal("no event after the return program")
	}
	if e.Kind != KindVerbsWrite || e.PID != pid || e.TID != tid || e.Comm != myComm(t) {
		t.Errorf("event identity: kind %v pid %d tid %d comm %q; want uverbs %d %d %q", e.Kind, e.PID, e.TID, e.Comm, pid, tid, myComm(t))
	}
	if !e.Returned || e.Ret != 16 || e.A0 != 16 {
		t.Errorf("returned %v ret %d count %d, want true 16 16", e.Returned, e.Ret, e.A0)
	}
	if e.Dur < uint64(time.Millisecond) || e.Dur > uint64(time.Since(before)) {
		t.Errorf("duration %v, want between 1ms and %v", time.Duration(e.Dur), time.Since(before))
	}
	if len(e.Data) != recDataLen || bo.Uint32(e.Data) != 3 || bo.Uint64(e.Data[8:]) != addr+2048 {
		t.Errorf("data % x", e.Data)
	}
	if len(e.Resp) != recRespLen || bo.Uint32(e.Resp) != 0x2a || bo.Uint32(e.Resp[4:]) != 0 {
		t.Errorf("resp % x, want 2a 00 00 00 then zeros (out_words=1 reads 4 bytes)", e.Resp)
	}
	if e.Dev != 0 {
		t.Errorf("dev %#x with unknown offsets", e.Dev)
	}

	// Extended command: out_words counts 8-byte words, response pointer in
	// ib_uverbs_ex_cmd_hdr (first u64 after the header). A failure (-EINVAL)
	// must carry the errno and read no response.
	bo.PutUint32(mem[0:], abi.IB_USER_VERBS_CMD_FLAG_EXTENDED|2)
	bo.PutUint16(mem[6:], 2)
	h.run(entry, regs(0, 0, addr, 40))
	h.run(ret, regs(uint64(1<<64-22)))
	e, ok = h.next()
	if !ok || e.Ret != -22 || e.Resp != nil {
		t.Errorf("failed command: ok %v ret %d resp %x", ok, e.Ret, e.Resp)
	}
	h.run(entry, regs(0, 0, addr, 40))
	h.run(ret, regs(40))
	e, ok = h.next()
	if !ok || bo.Uint32(e.Resp) != 0x2a || bo.Uint32(e.Resp[4:]) != 0xdeadbeef || bo.Uint64(e.Resp[16:]) != 0 {
		t.Errorf("extended command response: ok %v resp % x, want 16 bytes", ok, e.Resp)
	}

	// A filter for another pid or comm records nothing.
	for _, f := range []filter{{PID: pid + 1}, {Comm: "not-this-one"}} {
		other, err := verbsWriteEntry(KindVerbsWrite, f, unknownOffsets)
		if err != nil {
			t.Fatal(err)
		}
		h.run(other, regs(0, 0, addr, 16))
		h.run(ret, regs(16))
		if e, ok := h.next(); ok {
			t.Errorf("filter %+v let through %+v", f, e)
		}
	}
	// The comm filter matching this thread records.
	mine, err := verbsWriteEntry(KindVerbsWrite, filter{Comm: myComm(t)}, unknownOffsets)
	if err != nil {
		t.Fatal(err)
	}
	h.run(mine, regs(0, 0, addr, 16))
	h.run(ret, regs(16))
	if _, ok := h.next(); !ok {
		t.Error("comm filter for this thread recorded nothing")
	}

	// A header on an unreadable address: recorded without data.
	h.run(entry, regs(0, 0, 8, 16))
	h.run(ret, regs(16))
	if e, ok := h.next(); !ok || e.Data != nil {
		t.Errorf("unreadable buffer: ok %v data %x", ok, e.Data)
	}
}

func TestRunUCMAndIoctl(t *testing.T) {
	if !regsSupported {
		t.Skip("no pt_regs layout for this architecture")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	h := newRunHarness(t)
	mem, addr := userMem(t)
	bo := binary.NativeEndian
	ret, err := retProg(testUCMResp)
	if err != nil {
		t.Fatal(err)
	}

	// rdma_ucm_cmd_hdr{cmd=12 (GET_EVENT), in=8, out=336} + {response}: the
	// rule for 12 reads 24 bytes of rdma_ucm_event_resp.
	bo.PutUint32(mem[0:], 12)
	bo.PutUint16(mem[4:], 8)
	bo.PutUint16(mem[6:], 336)
	bo.PutUint64(mem[8:], addr+1024)
	bo.PutUint64(mem[1024:], 0x1111)    // uid
	bo.PutUint32(mem[1032:], 7)         // id
	bo.PutUint32(mem[1036:], 9)         // event ESTABLISHED
	bo.PutUint32(mem[1040:], 0xfffffff) // status
	entry, err := verbsWriteEntry(KindUCMWrite, filter{}, unknownOffsets)
	if err != nil {
		t.Fatal(err)
	}
	h.run(entry, regs(0, 0, addr, 16))
	h.run(ret, regs(16))
	e, ok := h.next()
	if !ok || e.Kind != KindUCMWrite || bo.Uint64(e.Resp) != 0x1111 || bo.Uint32(e.Resp[12:]) != 9 {
		t.Errorf("ucma GET_EVENT: ok %v kind %v resp % x", ok, e.Kind, e.Resp)
	}
	// A command without a rule reads no response.
	bo.PutUint32(mem[0:], 5)
	h.run(entry, regs(0, 0, addr, 16))
	h.run(ret, regs(16))
	if e, ok := h.next(); !ok || e.Resp != nil {
		t.Errorf("ucma command 5: ok %v resp %x", ok, e.Resp)
	}

	// ib_uverbs_ioctl(filp, cmd, arg): header {length, object_id=3, method_id=0x1000, num_attrs=2}.
	bo.PutUint16(mem[0:], 56)
	bo.PutUint16(mem[2:], 3)
	bo.PutUint16(mem[4:], 0x1000)
	bo.PutUint16(mem[6:], 2)
	io, err := verbsIoctlEntry(filter{}, unknownOffsets)
	if err != nil {
		t.Fatal(err)
	}
	const rdmaVerbsIoctl = 0xc0181b01
	retBig, err := retBigProg(testUCMResp)
	if err != nil {
		t.Fatal(err)
	}
	h.run(io, regs(0, 0, 0xffffffff00000000|rdmaVerbsIoctl, addr))
	h.run(retBig, regs(0))
	e, ok = h.next()
	if !ok || e.Kind != KindVerbsIoctl || e.A0 != rdmaVerbsIoctl || bo.Uint16(e.Data[2:]) != 3 || bo.Uint16(e.Data[4:]) != 0x1000 || e.Ret != 0 {
		t.Errorf("ioctl: ok %v %+v", ok, e)
	}
}

func TestRunCMEvent(t *testing.T) {
	h := newRunHarness(t)
	prog, err := cmEventProg(testCMFields)
	if err != nil {
		t.Fatal(err)
	}
	ctx := make([]byte, 128)
	bo := binary.NativeEndian
	bo.PutUint32(ctx[8:], 77)          // cm_id
	bo.PutUint32(ctx[12:], 0)          // tos
	bo.PutUint64(ctx[16:], 4)          // event CONNECT_REQUEST
	bo.PutUint32(ctx[24:], 0xffffff92) // status -110
	src := []byte{2, 0, 0x12, 0x34, 10, 0, 0, 1}
	copy(ctx[28:], src)
	copy(ctx[56:], []byte{2, 0, 0x56, 0x78, 10, 0, 0, 2})
	h.run(prog, ctx)
	e, ok := h.next()
	if !ok {
		t.Fatal("no cm event")
	}
	if e.Kind != KindCMEvent || e.A0 != 4 || int32(e.A1) != -110 || bo.Uint32(e.Data) != 77 {
		t.Errorf("cm event %+v", e)
	}
	if string(e.Data[8:16]) != string(src) || e.Data[36+3] != 0x78 {
		t.Errorf("addresses % x", e.Data[8:64])
	}
}

func TestRunRXECounter(t *testing.T) {
	if !regsSupported {
		t.Skip("no pt_regs layout for this architecture")
	}
	h := newRunHarness(t)
	// Kernel reads of a NULL or user pointer fail: the hit is counted under
	// qpnUnknown, once per run, and the error bit stays clear.
	prog, err := rxeCounter(3, &qpnSource{Arg: 0, Derefs: []int32{8}, Off: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		h.run(prog, regs(0, uint64(i)*0x1000))
	}
	var n uint64
	if err := h.maps[mapRXECounts].Lookup([2]uint32{3, qpnUnknown}, &n); err != nil || n != 3 {
		t.Errorf("count for {3, unknown} = %d, %v; want 3", n, err)
	}
	cq, err := rxeCounter(4, nil, &cqeSource{CQArg: 0, CQEArg: 1, IsUser: 8, UStatus: 8, UQPN: 28, KStatus: 8, KQP: 24, IBQPNum: 100})
	if err != nil {
		t.Fatal(err)
	}
	h.run(cq, regs(0, 0, 0))
	if err := h.maps[mapRXECounts].Lookup([2]uint32{4, qpnUnknown}, &n); err != nil || n != 1 {
		t.Errorf("count for {4, unknown} = %d, %v; want 1", n, err)
	}
}

// TestRunRXEDataPath loads the programs that record completions and read
// WQEs at the doorbell (the verifier must take them) and runs them on
// pointers the kernel cannot read: they count the hit and record nothing.
func TestRunRXEDataPath(t *testing.T) {
	if !regsSupported {
		t.Skip("no pt_regs layout for this architecture")
	}
	h := newRunHarness(t)
	for _, p := range []rxePlan{
		{ID: 5, CQE: &cqeSource{CQArg: 0, CQEArg: 1, IsUser: 8, UStatus: 8, UQPN: 28, KStatus: 8, KQP: 24, IBQPNum: 100, UWC: 0}},
		{ID: 6, QP: &qpnSource{Arg: 0, Off: 100}, WQE: &wqeSource{QPArg: 0, SQQueue: 600, QueueBuf: 8}},
	} {
		insns, err := rxeProgFor(p, false)
		if err != nil {
			t.Fatal(err)
		}
		h.run(insns, regs(0, 0x1000, 0x2000))
		var n uint64
		if err := h.maps[mapRXECounts].Lookup([2]uint32{uint32(p.ID), qpnUnknown}, &n); err != nil || n != 1 {
			t.Errorf("probe %d: count for unknown = %d, %v; want 1", p.ID, n, err)
		}
		if e, ok := h.next(); ok {
			t.Errorf("probe %d recorded %+v from unreadable pointers", p.ID, e)
		}
	}
}
