// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/rdmago/rdmago/internal/abi"
)

// TestRunIoctlBig runs the ioctl entry and the big return program on a
// hand-made QP.CREATE request: the attribute array, the input buffer read at
// entry, the handle the "kernel" wrote into the array and the outputs it
// marked valid, read at return.
func TestRunIoctlBig(t *testing.T) {
	h, mem, addr, entry, ret := bigHarness(t, verbsIoctlEntry)
	bo := binary.NativeEndian

	// 18 attributes: more than the record keeps (16).
	const n = 18
	hdr := abi.IoctlHdr{Length: uint16(sizeofIoctlHdr + n*sizeofIoctlAttr), ObjectID: abi.UVERBS_OBJECT_QP,
		MethodID: abi.UVERBS_METHOD_QP_CREATE, NumAttrs: n, DriverID: abi.RDMA_DRIVER_RXE}
	attrs := make([]abi.IoctlAttr, n)
	attrs[0] = abi.IoctlAttr{AttrID: abi.UVERBS_ATTR_CREATE_QP_HANDLE}                            // IDR NEW
	attrs[1] = abi.IoctlAttr{AttrID: abi.UVERBS_ATTR_CREATE_QP_TYPE, Len: 1, Data: abi.IB_QPT_RC} // inline
	attrs[2] = abi.IoctlAttr{AttrID: abi.UVERBS_ATTR_CREATE_QP_CAP, Len: 20, Data: addr + 1024}   // PTR_IN
	attrs[3] = abi.IoctlAttr{AttrID: abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, Len: 4, Data: addr + 2048}
	attrs[4] = abi.IoctlAttr{AttrID: abi.UVERBS_ATTR_UHW_OUT, Len: 200, Data: addr + 3072} // longer than a slot
	attrs[5] = abi.IoctlAttr{AttrID: 99, Len: 16, Data: 8}                                 // unreadable pointer
	for i := 6; i < n; i++ {
		attrs[i] = abi.IoctlAttr{AttrID: uint16(100 + i), Len: 12, Data: addr + 1024}
	}
	buf, _ := binary.Append(nil, bo, hdr)
	buf, _ = binary.Append(buf, bo, attrs)
	copy(mem, buf)
	cap := abi.QPCap{MaxSendWR: 10, MaxRecvWR: 20, MaxSendSGE: 1, MaxRecvSGE: 2, MaxInlineData: 64}
	capb, _ := binary.Append(nil, bo, cap)
	copy(mem[1024:], capb)
	bo.PutUint32(mem[2048:], 0xdead) // not yet written: must not be taken at entry
	for i := range 200 {
		mem[3072+i] = byte(i)
	}

	const rdmaVerbsIoctl = 0xc0181b01
	h.run(entry, regs(0, 0, rdmaVerbsIoctl, addr))
	// The "kernel": handle 7 into attribute 0, QPN 17 and the driver
	// response written and marked valid; the input buffer changes after
	// entry (the record keeps what the kernel was given).
	bo.PutUint64(mem[sizeofIoctlHdr+0*sizeofIoctlAttr+8:], 7)
	bo.PutUint32(mem[2048:], 17)
	for _, i := range []int{3, 4} {
		off := sizeofIoctlHdr + i*sizeofIoctlAttr + 4
		bo.PutUint16(mem[off:], bo.Uint16(mem[off:])|abi.UVERBS_ATTR_F_VALID_OUTPUT)
	}
	bo.PutUint32(mem[1024:], 999)
	h.run(ret, regs(0))
	e, ok := h.next()
	if !ok {
		t.Fatal("no ioctl event")
	}
	if e.Kind != KindVerbsIoctl || e.A0 != rdmaVerbsIoctl || e.A1 != addr || !e.Returned {
		t.Fatalf("event %+v", e)
	}
	if len(e.IoctlAttrs) != ioctlMaxAttrs || len(e.IoctlBufs) != ioctlMaxAttrs {
		t.Fatalf("%d attrs, %d bufs; want %d", len(e.IoctlAttrs), len(e.IoctlBufs), ioctlMaxAttrs)
	}
	if a := e.IoctlAttrs[0]; a.AttrID != abi.UVERBS_ATTR_CREATE_QP_HANDLE || a.Data != 7 {
		t.Errorf("attr 0 %+v, want the handle 7 the kernel wrote", a)
	}
	if e.IoctlBufs[0] != nil || e.IoctlBufs[1] != nil {
		t.Errorf("inline attributes have buffers: % x, % x", e.IoctlBufs[0], e.IoctlBufs[1])
	}
	if !bytes.Equal(e.IoctlBufs[2], capb) {
		t.Errorf("cap buffer % x, want % x (as at entry)", e.IoctlBufs[2], capb)
	}
	if b := e.IoctlBufs[3]; len(b) != 4 || bo.Uint32(b) != 17 {
		t.Errorf("qp_num buffer % x, want 17 read at return", b)
	}
	if b := e.IoctlBufs[4]; len(b) != ioctlSlotLen || b[0] != 0 || b[ioctlSlotLen-1] != ioctlSlotLen-1 {
		t.Errorf("driver response: %d bytes % x, want the first %d", len(b), b, ioctlSlotLen)
	}
	if e.IoctlBufs[5] != nil {
		t.Errorf("unreadable pointer gave % x", e.IoctlBufs[5])
	}
	if b := e.IoctlBufs[15]; len(b) != 12 || bo.Uint32(b) != 10 {
		t.Errorf("attr 15 buffer % x", b)
	}

	// A failed call reads nothing at return: the handle stays as at entry.
	bo.PutUint64(mem[sizeofIoctlHdr+8:], 0)
	h.run(entry, regs(0, 0, rdmaVerbsIoctl, addr))
	bo.PutUint64(mem[sizeofIoctlHdr+8:], 9)
	h.run(ret, regs(uint64(1<<64-22)))
	if e, ok = h.next(); !ok || e.Ret != -22 || e.IoctlAttrs[0].Data != 0 || e.IoctlBufs[3] != nil {
		t.Errorf("failed ioctl: ok %v ret %d attr0 %+v buf3 % x", ok, e.Ret, e.IoctlAttrs[0], e.IoctlBufs[3])
	}

	// A header on an unreadable address: no attributes.
	h.run(entry, regs(0, 0, rdmaVerbsIoctl, 8))
	h.run(ret, regs(0))
	if e, ok = h.next(); !ok || e.Data != nil || e.IoctlAttrs != nil {
		t.Errorf("unreadable ioctl: ok %v data % x attrs %v", ok, e.Data, e.IoctlAttrs)
	}
}

// TestRunUCMABig: the ucma entry keeps the first ucmDataMax bytes of a
// command (a CONNECT's private_data_len lies past recDataLen).
func TestRunUCMABig(t *testing.T) {
	h, mem, addr, entry, ret := bigHarness(t, ucmaWriteEntry)
	bo := binary.NativeEndian
	for i := range 1024 {
		mem[i] = byte(i * 7)
	}
	bo.PutUint32(mem[0:], 6) // CONNECT: no response rule
	for _, count := range []uint64{300, 2000} {
		h.run(entry, regs(0, 0, addr, count))
		h.run(ret, regs(count))
		e, ok := h.next()
		want := min(int(count), ucmDataMax)
		if !ok || e.Kind != KindUCMWrite || !bytes.Equal(e.Data, mem[:want]) || e.Resp != nil {
			t.Errorf("count %d: ok %v kind %v data %d bytes, want %d", count, ok, e.Kind, len(e.Data), want)
		}
	}
	// GET_EVENT (12) still reads its response.
	bo.PutUint32(mem[0:], 12)
	bo.PutUint64(mem[8:], addr+2048)
	bo.PutUint32(mem[2048+12:], 9)
	h.run(entry, regs(0, 0, addr, 16))
	h.run(ret, regs(16))
	if e, ok := h.next(); !ok || len(e.Data) != 16 || bo.Uint32(e.Resp[12:]) != 9 {
		t.Errorf("GET_EVENT: ok %v data %d resp % x", ok, len(e.Data), e.Resp)
	}
}

// bigHarness prepares a run of a big-record entry program and retBigProg on
// this (locked) thread, with a page of user memory at addr.
func bigHarness(t *testing.T, build func(filter, kernelOffsets) (asm.Instructions, error)) (
	h *runHarness, mem []byte, addr uint64, entry, ret asm.Instructions) {
	t.Helper()
	if !regsSupported {
		t.Skip("no pt_regs layout for this architecture")
	}
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	h = newRunHarness(t)
	mem, addr = userMem(t)
	var err error
	if entry, err = build(filter{}, unknownOffsets); err != nil {
		t.Fatal(err)
	}
	if ret, err = retBigProg(testUCMResp); err != nil {
		t.Fatal(err)
	}
	return h, mem, addr, entry, ret
}
