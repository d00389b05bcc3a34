// Copyright 2026 The rdmago Authors.

package rxe

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

// TestBindAndInvalidateWQE checks the WQEs of BIND_MW, LOCAL_INV and
// SEND_WITH_INV against rdma-core's rxe convert_send_wr: the window in union
// wr.mw, the rkey to invalidate in union ex in host byte order (where an
// immediate goes big-endian), no SGE and no length for the local operations.
func TestBindAndInvalidateWQE(t *testing.T) {
	sq := &SendQueue{Q: NewMemQueue(4, SendWQEHeader+64), MaxSGE: 2}
	mw := abi.RxeWRMW{Addr: 0x1000, Length: 64, MRLKey: 0x1234, MWRKey: 0x5600, RKey: 0x5601, Access: abi.IB_UVERBS_ACCESS_REMOTE_READ}
	wrs := []SendWR{
		{ID: 1, Opcode: abi.IB_WR_BIND_MW, MW: mw},
		{ID: 2, Opcode: abi.IB_WR_LOCAL_INV, InvalidateRKey: 0x5601},
		{ID: 3, Opcode: abi.IB_WR_SEND_WITH_INV, InvalidateRKey: 0xabcdef12, SGL: []abi.SGE{{Addr: 0x2000, Length: 8, LKey: 7}}},
	}
	for i := range wrs {
		if err := sq.Post(&wrs[i]); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	w := (*abi.RxeSendWQE)(sq.Q.Slot(0))
	if got := *(*abi.RxeWRMW)(unsafePointer(&w.WR.WR)); got != mw || w.WR.Opcode != abi.IB_WR_BIND_MW || w.DMA.Length != 0 || w.DMA.NumSGE != 0 || w.IOVA != 0 {
		t.Errorf("bind WQE: mw %+v opcode %d length %d sges %d iova %#x", got, w.WR.Opcode, w.DMA.Length, w.DMA.NumSGE, w.IOVA)
	}
	w = (*abi.RxeSendWQE)(sq.Q.Slot(1))
	if w.WR.ImmData != 0x5601 || w.DMA.Length != 0 {
		t.Errorf("local inv WQE: ex %#x length %d", w.WR.ImmData, w.DMA.Length)
	}
	w = (*abi.RxeSendWQE)(sq.Q.Slot(2))
	var ex [4]byte
	binary.NativeEndian.PutUint32(ex[:], w.WR.ImmData)
	if binary.NativeEndian.Uint32(ex[:]) != 0xabcdef12 || w.DMA.Length != 8 || w.DMA.NumSGE != 1 {
		t.Errorf("send with inv WQE: ex %#x length %d sges %d", w.WR.ImmData, w.DMA.Length, w.DMA.NumSGE)
	}
	// A bind with an SGE is refused, as rdma-core's validate_send_wr does.
	if err := sq.Post(&SendWR{Opcode: abi.IB_WR_BIND_MW, MW: mw, SGL: []abi.SGE{{Length: 4}}}); err == nil {
		t.Error("bind with an SGE posted")
	}
}

func unsafePointer(p *[120]uint8) unsafe.Pointer { return unsafe.Pointer(p) }
