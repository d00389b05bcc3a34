// Copyright 2026 The rdmago Authors.

package rxe

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
)

func TestNewMemQueueSizing(t *testing.T) {
	for _, c := range []struct{ n, elem, slots, slotSize int }{
		{1, 48, 2, 64},
		{3, 48, 4, 64},
		{4, 224, 8, 256},
		{255, 256, 256, 256},
		{256, 257, 512, 512},
	} {
		q := NewMemQueue(c.n, c.elem)
		if q.Slots() != c.slots || q.SlotSize() != c.slotSize {
			t.Errorf("NewMemQueue(%d, %d): %d slots of %d, want %d of %d", c.n, c.elem, q.Slots(), q.SlotSize(), c.slots, c.slotSize)
		}
		if q.Free() < c.n {
			t.Errorf("NewMemQueue(%d, %d) holds only %d", c.n, c.elem, q.Free())
		}
	}
}

func TestNewQueueRejectsBadHeaders(t *testing.T) {
	good := NewMemQueue(4, 64).Mem()
	for name, mutate := range map[string]func(h *abi.RxeQueueBuf) []byte{
		"mask not 2^n-1":    func(h *abi.RxeQueueBuf) []byte { h.IndexMask = 6; return good },
		"zero mask":         func(h *abi.RxeQueueBuf) []byte { h.IndexMask = 0; return good },
		"slots past end":    func(h *abi.RxeQueueBuf) []byte { h.IndexMask = 15; return good },
		"huge elements":     func(h *abi.RxeQueueBuf) []byte { h.Log2ElemSize = 30; return good },
		"mapping too small": func(h *abi.RxeQueueBuf) []byte { return good[:HeaderSize+100] },
	} {
		mem := append(make([]uint64, 0, len(good)/8), make([]uint64, len(good)/8)...)
		b := unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), len(good))
		copy(b, good)
		m := mutate((*abi.RxeQueueBuf)(unsafe.Pointer(&b[0])))
		if &m[0] == &good[0] {
			m = b[:len(m)]
		}
		if _, err := NewQueue(m); !errors.Is(err, ErrBadQueue) {
			t.Errorf("%s: NewQueue error %v, want ErrBadQueue", name, err)
		}
	}
}

// The producer/consumer protocol over many wraparounds, one element at a
// time and in bursts that fill the ring.
func TestQueueWraparoundFullEmpty(t *testing.T) {
	q := NewMemQueue(7, 16) // 8 slots, 7 usable
	if !q.Empty() || q.Full() || q.Len() != 0 {
		t.Fatal("new queue not empty")
	}
	next, want := uint64(0), uint64(0)
	for round := 0; round < 50; round++ {
		burst := 1 + round%7
		for i := 0; i < burst; i++ {
			if q.Full() {
				t.Fatalf("round %d: full after %d of %d", round, i, burst)
			}
			*(*uint64)(q.ProducerSlot()) = next
			next++
			q.Produce()
		}
		if q.Len() != burst {
			t.Fatalf("round %d: len %d, want %d", round, q.Len(), burst)
		}
		if burst == 7 && !q.Full() {
			t.Fatalf("round %d: 7 elements in 8 slots but not full", round)
		}
		for !q.Empty() {
			if got := *(*uint64)(q.ConsumerSlot()); got != want {
				t.Fatalf("round %d: consumed %d, want %d", round, got, want)
			}
			want++
			q.Consume()
		}
	}
	if want != next || next < 150 {
		t.Fatalf("consumed %d of %d", want, next)
	}
	// Indices stay masked in shared memory, as the kernel expects.
	h := (*abi.RxeQueueBuf)(unsafe.Pointer(&q.Mem()[0]))
	if h.ProducerIndex > h.IndexMask || h.ConsumerIndex > h.IndexMask {
		t.Errorf("indices %d/%d not masked by %d", h.ProducerIndex, h.ConsumerIndex, h.IndexMask)
	}
}

func TestSendPostFullQueue(t *testing.T) {
	sq := &SendQueue{Q: NewMemQueue(3, SendWQEHeader+16), MaxSGE: 1}
	wr := SendWR{Opcode: abi.IB_WR_SEND}
	for i := 0; i < 3; i++ {
		if err := sq.Post(&wr); err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
	}
	if err := sq.Post(&wr); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("4th post into 4 slots: %v, want ErrQueueFull", err)
	}
	sq.Q.Consume()
	if err := sq.Post(&wr); err != nil {
		t.Fatalf("post after the kernel consumed one: %v", err)
	}
}

// The bytes of an RDMA WRITE WITH IMM WQE with two SGEs at the offsets
// rdma-core's rxe provider writes them (convert_send_wr, init_send_wqe).
func TestSendWQEEncoding(t *testing.T) {
	sq := &SendQueue{Q: NewMemQueue(4, SendWQEHeader+2*16), MaxSGE: 2}
	wr := SendWR{
		ID: 0x1122334455667788, Opcode: abi.IB_WR_RDMA_WRITE_WITH_IMM, Flags: abi.IB_SEND_SIGNALED,
		Imm: 0xdeadbeef, RemoteAddr: 0x7f00aabbcc00, RKey: 0x1234,
		SGL: []abi.SGE{{Addr: 0x1000, Length: 100, LKey: 7}, {Addr: 0x2000, Length: 28, LKey: 8}},
	}
	slot := sq.Q.ProducerSlot()
	if err := sq.Post(&wr); err != nil {
		t.Fatal(err)
	}
	b := unsafe.Slice((*byte)(slot), SendWQEHeader+32)
	le := binary.LittleEndian
	for _, c := range []struct {
		name string
		off  int
		got  uint64
		want uint64
	}{
		{"wr_id", 0, le.Uint64(b[0:]), wr.ID},
		{"opcode", 12, uint64(le.Uint32(b[12:])), abi.IB_WR_RDMA_WRITE_WITH_IMM},
		{"send_flags", 16, uint64(le.Uint32(b[16:])), abi.IB_SEND_SIGNALED},
		{"rdma.remote_addr", 24, le.Uint64(b[24:]), wr.RemoteAddr},
		{"rdma.rkey", 32, uint64(le.Uint32(b[32:])), 0x1234},
		{"iova", 152, le.Uint64(b[152:]), wr.RemoteAddr},
		{"dma.length", 184, uint64(le.Uint32(b[184:])), 128},
		{"dma.resid", 188, uint64(le.Uint32(b[188:])), 128},
		{"dma.cur_sge", 192, uint64(le.Uint32(b[192:])), 0},
		{"dma.num_sge", 196, uint64(le.Uint32(b[196:])), 2},
		{"sge[0].addr", 208, le.Uint64(b[208:]), 0x1000},
		{"sge[0].length", 216, uint64(le.Uint32(b[216:])), 100},
		{"sge[0].lkey", 220, uint64(le.Uint32(b[220:])), 7},
		{"sge[1].addr", 224, le.Uint64(b[224:]), 0x2000},
		{"sge[1].lkey", 236, uint64(le.Uint32(b[236:])), 8},
	} {
		if c.got != c.want {
			t.Errorf("%s @%d = %#x, want %#x", c.name, c.off, c.got, c.want)
		}
	}
	if !bytes.Equal(b[20:24], []byte{0xde, 0xad, 0xbe, 0xef}) {
		t.Errorf("imm_data bytes %x, want network order deadbeef", b[20:24])
	}
	if sq.Q.Len() != 1 {
		t.Errorf("queue length %d after one post", sq.Q.Len())
	}
}

// One SGE, the common case, is stored without copy's call: the same bytes,
// and nothing written past it.
func TestSendWQEOneSGE(t *testing.T) {
	sq := &SendQueue{Q: NewMemQueue(4, SendWQEHeader+2*16), MaxSGE: 2}
	slot := sq.Q.ProducerSlot()
	b := unsafe.Slice((*byte)(slot), SendWQEHeader+32)
	for i := range b {
		b[i] = 0xee // what an earlier WQE left in the slot
	}
	if err := sq.Post(&SendWR{Opcode: abi.IB_WR_RDMA_WRITE, RemoteAddr: 0x9000, RKey: 3,
		SGL: []abi.SGE{{Addr: 0x1000, Length: 100, LKey: 7}}}); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if a, l, k, n, d := le.Uint64(b[208:]), le.Uint32(b[216:]), le.Uint32(b[220:]), le.Uint32(b[196:]), le.Uint32(b[184:]); a != 0x1000 || l != 100 || k != 7 || n != 1 || d != 100 {
		t.Errorf("sge[0] %#x/%d/%d, num_sge %d, dma.length %d; want 0x1000/100/7, 1, 100", a, l, k, n, d)
	}
	if !bytes.Equal(b[224:240], bytes.Repeat([]byte{0xee}, 16)) {
		t.Errorf("bytes past the one SGE changed: %x", b[224:240])
	}
}

func TestSendWQEAtomicUDInline(t *testing.T) {
	sq := &SendQueue{Q: NewMemQueue(8, SendWQEHeader+64), MaxSGE: 1, MaxInline: 64, UD: true}
	le := binary.LittleEndian
	// Compare and swap.
	slot := sq.Q.ProducerSlot()
	err := sq.Post(&SendWR{Opcode: abi.IB_WR_ATOMIC_CMP_AND_SWP, RemoteAddr: 0x8000, RKey: 9, CompareAdd: 5, Swap: 6,
		SGL: []abi.SGE{{Addr: 0x100, Length: 8, LKey: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	b := unsafe.Slice((*byte)(slot), SendWQEHeader+16)
	if le.Uint64(b[24:]) != 0x8000 || le.Uint64(b[32:]) != 5 || le.Uint64(b[40:]) != 6 || le.Uint32(b[48:]) != 9 || le.Uint64(b[152:]) != 0x8000 {
		t.Errorf("atomic WQE wrong: % x", b[24:56])
	}
	if err := sq.Post(&SendWR{Opcode: abi.IB_WR_ATOMIC_FETCH_AND_ADD, RemoteAddr: 0x8004, SGL: []abi.SGE{{Length: 8}}}); !errors.Is(err, ErrBadAtomic) {
		t.Errorf("misaligned atomic: %v", err)
	}
	// UD send.
	slot = sq.Q.ProducerSlot()
	if err := sq.Post(&SendWR{Opcode: abi.IB_WR_SEND, AHNum: 3, RemoteQPN: 0x11, RemoteQKey: 0x1234567}); err != nil {
		t.Fatal(err)
	}
	b = unsafe.Slice((*byte)(slot), SendWQEHeader)
	if le.Uint32(b[24:]) != 0x11 || le.Uint32(b[28:]) != 0x1234567 || le.Uint32(b[36:]) != 3 {
		t.Errorf("ud WQE wrong: % x", b[24:40])
	}
	// UD send on a kernel without AH numbers (5.10): the whole address
	// vector in the WQE, from offset 56 (union wr's ud.av).
	slot = sq.Q.ProducerSlot()
	av := abi.RxeAV{PortNum: 1, NetworkType: abi.RXE_NETWORK_TYPE_IPV4, GRH: abi.RxeGlobalRoute{DGID: [16]byte{15: 7}, SGIDIndex: 1}}
	av.DGIDAddr[0] = 2
	if err := sq.Post(&SendWR{Opcode: abi.IB_WR_SEND, AV: &av, RemoteQPN: 0x11}); err != nil {
		t.Fatal(err)
	}
	b = unsafe.Slice((*byte)(slot), SendWQEHeader)
	if le.Uint32(b[36:]) != 0 || b[56] != 1 || b[57] != abi.RXE_NETWORK_TYPE_IPV4 || b[64+15] != 7 || b[84] != 1 || b[116] != 2 {
		t.Errorf("ud WQE with an AV wrong: % x", b[24:144])
	}
	// Inline.
	slot = sq.Q.ProducerSlot()
	payload := []byte("inline payload")
	if err := sq.Post(&SendWR{Opcode: abi.IB_WR_SEND, Flags: abi.IB_SEND_INLINE, Inline: payload}); err != nil {
		t.Fatal(err)
	}
	b = unsafe.Slice((*byte)(slot), SendWQEHeader+len(payload))
	if !bytes.Equal(b[SendWQEHeader:], payload) || le.Uint32(b[184:]) != uint32(len(payload)) || le.Uint32(b[196:]) != 0 {
		t.Errorf("inline WQE wrong")
	}
	if err := sq.Post(&SendWR{Opcode: abi.IB_WR_SEND, Flags: abi.IB_SEND_INLINE, Inline: make([]byte, 65)}); !errors.Is(err, ErrInlineTooLong) {
		t.Errorf("65-byte inline into max 64: %v", err)
	}
	if err := sq.Post(&SendWR{Opcode: abi.IB_WR_SEND, SGL: make([]abi.SGE, 2)}); !errors.Is(err, ErrTooManySGE) {
		t.Errorf("2 SGEs into max 1: %v", err)
	}
}

func TestRecvAndPoll(t *testing.T) {
	rq := &RecvQueue{Q: NewMemQueue(4, RecvWQEHeader+32), MaxSGE: 2}
	slot := rq.Q.ProducerSlot()
	if err := rq.Post(42, []abi.SGE{{Addr: 0x10, Length: 1000, LKey: 3}, {Addr: 0x20, Length: 24, LKey: 4}}); err != nil {
		t.Fatal(err)
	}
	w := (*abi.RxeRecvWQE)(slot)
	sge := unsafe.Slice((*abi.SGE)(unsafe.Add(slot, RecvWQEHeader)), 2)
	if w.WrID != 42 || w.DMA.Length != 1024 || w.DMA.Resid != 1024 || w.DMA.NumSGE != 2 || sge[1].LKey != 4 {
		t.Errorf("recv WQE %+v sge %+v", *w, sge)
	}

	cq := &CQ{Q: NewMemQueue(4, 64)}
	if err := CheckCQ(cq.Q); err != nil {
		t.Fatal(err)
	}
	var wc abi.WC
	if cq.Poll(&wc) {
		t.Fatal("polled an empty CQ")
	}
	// The kernel side: write two CQEs and publish them.
	for i := uint64(1); i <= 2; i++ {
		*(*abi.WC)(cq.Q.ProducerSlot()) = abi.WC{WrID: i, Opcode: abi.IB_WC_RECV, ByteLen: 100 * uint32(i)}
		cq.Q.Produce()
	}
	for i := uint64(1); i <= 2; i++ {
		if !cq.Poll(&wc) || wc.WrID != i || wc.ByteLen != 100*uint32(i) {
			t.Fatalf("poll %d: %+v", i, wc)
		}
	}
	if cq.Poll(&wc) {
		t.Fatal("polled past the producer")
	}
	if err := CheckCQ(NewMemQueue(4, 32)); err == nil {
		t.Error("32-byte CQ slots accepted")
	}
}
