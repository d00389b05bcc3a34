// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/uverbs/internal/rxe"
)

// WC and SGE are copied to and from the rings as-is: their layout must be the
// ABI's.
func TestPublicLayoutsMatchABI(t *testing.T) {
	for _, c := range []struct {
		name     string
		pub, abi reflect.Type
	}{
		{"WC", reflect.TypeOf(WC{}), reflect.TypeOf(abi.WC{})},
		{"SGE", reflect.TypeOf(SGE{}), reflect.TypeOf(abi.SGE{})},
	} {
		if c.pub.Size() != c.abi.Size() {
			t.Errorf("%s: size %d, ABI %d", c.name, c.pub.Size(), c.abi.Size())
		}
		var offs []uintptr
		for i := 0; i < c.abi.NumField(); i++ {
			if f := c.abi.Field(i); f.Name != "_" && f.Name != "Reserved" {
				offs = append(offs, f.Offset)
			}
		}
		var pubOffs []uintptr
		for i := 0; i < c.pub.NumField(); i++ {
			if f := c.pub.Field(i); f.Name != "_" {
				pubOffs = append(pubOffs, f.Offset)
			}
		}
		if !reflect.DeepEqual(offs, pubOffs) {
			t.Errorf("%s: field offsets %v, ABI %v", c.name, pubOffs, offs)
		}
	}
}

func TestWCStatusNames(t *testing.T) {
	seen := map[string]bool{}
	for s := WCSuccess; s <= WCGeneralErr; s++ {
		name, why := s.String(), s.Explain()
		if !strings.HasPrefix(name, "IBV_WC_") || why == "" || seen[why] {
			t.Errorf("status %d: %q / %q", uint32(s), name, why)
		}
		seen[why] = true
	}
	if got := WCRemAccessErr.String(); got != "IBV_WC_REM_ACCESS_ERR" {
		t.Errorf("WCRemAccessErr = %q", got)
	}
	if !strings.Contains(WCRNRRetryExcErr.Explain(), "receive") {
		t.Errorf("RNR explanation %q does not mention receives", WCRNRRetryExcErr.Explain())
	}
	// A status the peer can cause (rxe completes a receive that a too
	// large SEND overflowed with LOC_QP_OP_ERR) names the peer as well as
	// this side.
	for _, s := range []WCStatus{WCLocQPOpErr, WCLocLenErr} {
		if why := s.Explain(); !strings.Contains(why, "the peer sent a message larger than the posted receive buffer") {
			t.Errorf("%v explanation %q does not name the peer's oversized message", s, why)
		}
	}
	if why := WCLocQPOpErr.Explain(); !strings.Contains(why, "local QP") {
		t.Errorf("%v explanation %q no longer names the local QP", WCLocQPOpErr, why)
	}
	if got := WCStatus(99).String(); got != "WCStatus(99)" {
		t.Errorf("unknown status prints %q", got)
	}
	wc := WC{WRID: 7, Status: WCWRFlushErr, Opcode: WCSend}
	if !wc.IsFlush() || wc.Err() == nil || !strings.Contains(wc.Err().Error(), "IBV_WC_WR_FLUSH_ERR") {
		t.Errorf("flush completion: IsFlush %v, Err %v", wc.IsFlush(), wc.Err())
	}
	if (&WC{}).Err() != nil {
		t.Error("successful completion has an error")
	}
}

// kernelSend plays rxe's requester and completer for a fake QP: it consumes
// every send WQE and, for signaled ones, writes a successful completion into
// cq.
func kernelSend(t testing.TB, qp *QP, cq *CQ) int {
	n := 0
	sq := qp.sq.Q
	for !sq.Empty() {
		w := (*abi.RxeSendWQE)(sq.ConsumerSlot())
		if w.WR.SendFlags&abi.IB_SEND_SIGNALED != 0 {
			if cq.ring.Q.Full() {
				t.Fatal("fake kernel: CQ overflow")
			}
			var op uint32
			switch w.WR.Opcode {
			case abi.IB_WR_SEND, abi.IB_WR_SEND_WITH_IMM:
				op = abi.IB_WC_SEND
			case abi.IB_WR_RDMA_WRITE, abi.IB_WR_RDMA_WRITE_WITH_IMM:
				op = abi.IB_WC_RDMA_WRITE
			case abi.IB_WR_RDMA_READ:
				op = abi.IB_WC_RDMA_READ
			}
			*(*abi.WC)(cq.ring.Q.ProducerSlot()) = abi.WC{WrID: w.WR.WrID, Opcode: op, ByteLen: w.DMA.Length, QPNum: qp.num}
			cq.ring.Q.Produce()
		}
		sq.Consume()
		n++
	}
	return n
}

func TestPostSendListOneDoorbell(t *testing.T) {
	qp := fakeQP(QPTypeRC, 16, 16, 2, 64)
	cq := fakeCQ(32)
	buf := make([]byte, 64)
	wrs := []SendWR{
		{ID: 1, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{{Addr: 0x1000, Length: 10, LKey: 1}}},
		{ID: 2, Opcode: WRRDMAWrite, SGL: []SGE{{Addr: 0x2000, Length: 20, LKey: 1}, {Addr: 0x3000, Length: 5, LKey: 2}}, RemoteAddr: 0xabc000, RKey: 9},
		{ID: 3, Opcode: WRSendWithImm, Flags: SendSignaled | SendInline, Inline: buf[:33], Imm: 0x01020304},
	}
	if err := qp.PostSend(wrs...); err != nil {
		t.Fatal(err)
	}
	if qp.Doorbells() != 1 {
		t.Fatalf("%d doorbells for a list of 3, want 1", qp.Doorbells())
	}
	// Inspect the third WQE before the fake kernel consumes them.
	w := (*abi.RxeSendWQE)(qp.sq.Q.Slot(2))
	if w.WR.WrID != 3 || w.DMA.Length != 33 || w.WR.SendFlags != abi.IB_SEND_SIGNALED|abi.IB_SEND_INLINE {
		t.Errorf("third WQE: %+v", w.WR)
	}
	if imm := (*[4]byte)(unsafe.Pointer(&w.WR.ImmData)); *imm != [4]byte{1, 2, 3, 4} {
		t.Errorf("imm bytes %x, want 01020304", *imm)
	}
	if got := kernelSend(t, qp, cq); got != 3 {
		t.Fatalf("kernel saw %d WQEs", got)
	}
	wcs := make([]WC, 8)
	n := cq.Poll(wcs)
	if n != 2 || wcs[0].WRID != 1 || wcs[1].WRID != 3 || wcs[0].Opcode != WCSend || wcs[0].ByteLen != 10 {
		t.Fatalf("polled %d: %+v", n, wcs[:n])
	}
	if cq.Poll(wcs) != 0 {
		t.Error("CQ not empty after polling everything")
	}
}

func TestPostSendErrors(t *testing.T) {
	qp := fakeQP(QPTypeRC, 3, 3, 1, 0)
	ok := SendWR{Opcode: WRSend, SGL: []SGE{{Length: 1}}}
	err := qp.PostSend(ok, ok, ok, ok)
	var pe *PostError
	if !errors.As(err, &pe) || pe.Index != 3 || !errors.Is(err, ErrQueueFull) {
		t.Fatalf("4 sends into a 3-deep queue: %v", err)
	}
	if qp.Doorbells() != 1 {
		t.Errorf("the 3 posted requests got %d doorbells, want 1", qp.Doorbells())
	}
	qp.sq.Q.Consume()
	for _, c := range []struct {
		name string
		wr   SendWR
		want error
	}{
		{"flush on an old kernel", SendWR{Opcode: WRFlush}, ErrNotSupported},
		{"atomic write on an old kernel", SendWR{Opcode: WRAtomicWrite}, ErrNotSupported},
		{"unknown opcode", SendWR{Opcode: 42}, ErrNotSupported},
		{"too many SGEs", SendWR{Opcode: WRSend, SGL: make([]SGE, 2)}, rxe.ErrTooManySGE},
		{"misaligned atomic", SendWR{Opcode: WRAtomicFetchAndAdd, RemoteAddr: 3, SGL: []SGE{{Length: 8}}}, rxe.ErrBadAtomic},
	} {
		before := qp.Doorbells()
		if err := qp.PostSend(c.wr); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if qp.Doorbells() != before {
			t.Errorf("%s: rang the doorbell for nothing", c.name)
		}
	}
	ud := fakeQP(QPTypeUD, 4, 4, 1, 0)
	if err := ud.PostSend(SendWR{Opcode: WRSend}); !errors.Is(err, errNoAH) {
		t.Errorf("UD send without AH: %v", err)
	}
	if err := ud.PostSend(SendWR{Opcode: WRRDMAWrite, AH: &AH{num: 1}}); err == nil {
		t.Error("RDMA WRITE accepted on a UD QP")
	}
	ud.state.Store(uint32(QPSReset))
	if err := ud.PostRecv(RecvWR{}); err == nil {
		t.Error("receive accepted in RESET")
	}
}

func TestPostRecvRing(t *testing.T) {
	qp := fakeQP(QPTypeRC, 4, 3, 2, 0)
	for round := 0; round < 20; round++ {
		err := qp.PostRecv(RecvWR{ID: uint64(round), SGL: []SGE{{Addr: 0x100, Length: 64, LKey: 5}}})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		w := (*abi.RxeRecvWQE)(qp.rq.Q.ConsumerSlot())
		if w.WrID != uint64(round) || w.DMA.Length != 64 || w.DMA.NumSGE != 1 {
			t.Fatalf("round %d: WQE %+v", round, *w)
		}
		qp.rq.Q.Consume()
	}
	if qp.Doorbells() != 0 {
		t.Errorf("receives rang %d doorbells, want none", qp.Doorbells())
	}
}

// Zero allocations on the data path: post (one and a list) and poll.
func TestDataPathAllocs(t *testing.T) {
	qp := fakeQP(QPTypeRC, 64, 64, 2, 64)
	cq := fakeCQ(256)
	wcs := make([]WC, 16)
	list := make([]SendWR, 4)
	for i := range list {
		list[i] = SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{{Addr: 0x1000, Length: 64, LKey: 1}}, RemoteAddr: 0x2000, RKey: 3}
	}
	inline := make([]byte, 32)
	allocs := testing.AllocsPerRun(200, func() {
		if err := qp.PostSend(SendWR{ID: 9, Opcode: WRSend, Flags: SendSignaled, SGL: []SGE{{Addr: 0x1000, Length: 8, LKey: 1}}}); err != nil {
			panic(err)
		}
		if err := qp.PostSend(list...); err != nil {
			panic(err)
		}
		if err := qp.PostSend(SendWR{ID: 10, Opcode: WRSend, Flags: SendSignaled | SendInline, Inline: inline}); err != nil {
			panic(err)
		}
		if err := qp.PostRecv(RecvWR{ID: 1, SGL: []SGE{{Addr: 0x3000, Length: 64, LKey: 1}}}); err != nil {
			panic(err)
		}
		qp.rq.Q.Consume()
		kernelSend(t, qp, cq)
		for cq.Poll(wcs) > 0 {
		}
	})
	if allocs != 0 {
		t.Errorf("post+poll allocates %.1f times per run, want 0", allocs)
	}
}

func TestPollImmediateByteOrder(t *testing.T) {
	cq := fakeCQ(4)
	wc := abi.WC{WrID: 5, Opcode: abi.IB_WC_RECV_RDMA_WITH_IMM, WcFlags: abi.IB_WC_WITH_IMM, SrcQP: 0x22}
	copy((*[4]byte)(unsafe.Pointer(&wc.ImmData))[:], []byte{0xca, 0xfe, 0xf0, 0x0d}) // network order on the wire
	*(*abi.WC)(cq.ring.Q.ProducerSlot()) = wc
	cq.ring.Q.Produce()
	out := make([]WC, 2)
	if n := cq.Poll(out); n != 1 {
		t.Fatalf("polled %d", n)
	}
	if out[0].Imm != 0xcafef00d || !out[0].Opcode.IsRecv() || out[0].SrcQP != 0x22 || out[0].Opcode.String() != "IBV_WC_RECV_RDMA_WITH_IMM" {
		t.Errorf("completion %+v", out[0])
	}
}

func TestPollN(t *testing.T) {
	cq := fakeCQ(8)
	go func() {
		for i := 0; i < 3; i++ {
			time.Sleep(time.Millisecond)
			*(*abi.WC)(cq.ring.Q.ProducerSlot()) = abi.WC{WrID: uint64(i)}
			cq.ring.Q.Produce()
		}
	}()
	wcs := make([]WC, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, err := cq.PollN(ctx, wcs, 3); n != 3 || err != nil || wcs[2].WRID != 2 {
		t.Fatalf("PollN: %d %v %+v", n, err, wcs)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if n, err := cq.PollN(short, wcs, 1); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PollN on an idle CQ: %d %v", n, err)
	}
}

// Commands written through the fd, read back byte for byte.
func TestCommandBytes(t *testing.T) {
	c, r := testContext(t)
	cq := &CQ{ctx: c, handle: 7}
	if err := cq.Arm(true); err != nil {
		t.Fatal(err)
	}
	want := []byte{23, 0, 0, 0, 4, 0, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0}
	if got := readCmd(t, r); !bytes.Equal(got, want) {
		t.Errorf("req_notify_cq\n got % x\nwant % x", got, want)
	}
	qp := &QP{ctx: c, handle: 3, num: 0x55, typ: QPTypeRC}
	gid := GIDFromAddr(netipMust("10.0.0.2"))
	if err := qp.Connect(Dest{QPN: 0x123456, PSN: 0xabcdef, GID: gid}, 0x1111, nil); err != nil {
		t.Fatal(err)
	}
	rtr := readCmd(t, r)
	if len(rtr) != 8+112 {
		t.Fatalf("modify qp is %d bytes, want 120", len(rtr))
	}
	le := binary.LittleEndian
	m := rtr[8:]
	for _, f := range []struct {
		name      string
		got, want uint64
	}{
		{"command", uint64(le.Uint32(rtr)), abi.IB_USER_VERBS_CMD_MODIFY_QP},
		{"in_words", uint64(le.Uint16(rtr[4:])), 30},
		{"dest.hop_limit", uint64(m[25]), 64},
		{"dest.is_global", uint64(m[30]), 1},
		{"dest.port_num", uint64(m[31]), 1},
		{"qp_handle", uint64(le.Uint32(m[64:])), 3},
		{"attr_mask", uint64(le.Uint32(m[68:])), abi.IB_QP_STATE | abi.IB_QP_AV | abi.IB_QP_PATH_MTU | abi.IB_QP_DEST_QPN | abi.IB_QP_RQ_PSN | abi.IB_QP_MAX_DEST_RD_ATOMIC | abi.IB_QP_MIN_RNR_TIMER},
		{"rq_psn", uint64(le.Uint32(m[76:])), 0xabcdef},
		{"dest_qp_num", uint64(le.Uint32(m[84:])), 0x123456},
		{"qp_state", uint64(m[96]), abi.IB_QPS_RTR},
		{"path_mtu", uint64(m[98]), abi.IB_MTU_1024},
		{"max_dest_rd_atomic", uint64(m[102]), 1},
		{"min_rnr_timer", uint64(m[103]), 12},
	} {
		if f.got != f.want {
			t.Errorf("RTR %s = %#x, want %#x", f.name, f.got, f.want)
		}
	}
	if !bytes.Equal(m[:16], gid[:]) {
		t.Errorf("dgid % x, want % x", m[:16], gid[:])
	}
	rts := readCmd(t, r)[8:]
	if rts[96] != abi.IB_QPS_RTS || le.Uint32(rts[80:]) != 0x1111 || rts[105] != 14 || rts[106] != 7 || rts[107] != 7 {
		t.Errorf("RTS command % x", rts)
	}
	if qp.State() != QPSRTS {
		t.Errorf("state %v after Connect", qp.State())
	}
}

func netipMust(s string) netipAddr { return mustAddr(s) }

func BenchmarkPostPoll(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(map[int]string{1: "list1", 4: "list4", 16: "list16"}[n], func(b *testing.B) {
			qp := fakeQP(QPTypeRC, 64, 64, 1, 0)
			cq := fakeCQ(64)
			list := make([]SendWR, n)
			for i := range list {
				list[i] = SendWR{ID: uint64(i), Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{{Addr: 0x1000, Length: 4096, LKey: 1}}, RemoteAddr: 0x2000, RKey: 3}
			}
			wcs := make([]WC, 16)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := qp.PostSend(list...); err != nil {
					b.Fatal(err)
				}
				kernelSend(b, qp, cq)
				for got := 0; got < n; {
					got += cq.Poll(wcs)
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds()/1e6, "Mwr/s")
		})
	}
}

func TestAHAttrABI(t *testing.T) {
	a := AHAttr{GRH: GlobalRoute{DGID: GIDFromAddr(mustAddr("10.0.0.9")), FlowLabel: 0x12345, SGIDIndex: 3, HopLimit: 64, TrafficClass: 0x20},
		DLID: 7, SL: 2, SrcPathBits: 1, StaticRate: 4, IsGlobal: true, Port: 1}
	k := a.toABI()
	if k.IsGlobal != 1 || k.PortNum != 1 || k.GRH.SGIDIndex != 3 || k.GRH.FlowLabel != 0x12345 || k.DLID != 7 || GID(k.GRH.DGID) != a.GRH.DGID {
		t.Errorf("to ib_uverbs_ah_attr: %+v", k)
	}
	if back := ahAttrFromABI(&k); back != a {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, a)
	}
	// The qp_dest form (MODIFY_QP, QUERY_QP) carries the same address.
	d := a.dest()
	if back := ahFromDest(&d); back != a {
		t.Errorf("qp_dest round trip:\n got %+v\nwant %+v", back, a)
	}
	if ahAttrFromABI(&abi.AHAttr{}).IsGlobal {
		t.Error("is_global 0 read as global")
	}
}

func TestConnectOptionsDefaults(t *testing.T) {
	v, err := (*ConnectOptions)(nil).values()
	want := connectValues{port: 1, hopLimit: 64, mtu: MTU1024, minRNRTimer: 12, maxDestRdAtomic: 1, timeout: 14, retryCnt: 7, rnrRetry: 7, maxRdAtomic: 1}
	if err != nil || v != want {
		t.Errorf("nil ConnectOptions: %+v %v, want %+v", v, err, want)
	}
	v, err = (&ConnectOptions{Port: 2, SGIDIndex: 3, RetryCnt: NoRetry, RNRRetry: 3, Timeout: TimeoutInfinite, MinRNRTimer: RNRTimer655ms, MaxRdAtomic: NoRdAtomic, MaxDestRdAtomic: 16}).values()
	want = connectValues{port: 2, sgidIndex: 3, hopLimit: 64, mtu: MTU1024, maxDestRdAtomic: 16, rnrRetry: 3}
	if err != nil || v != want {
		t.Errorf("explicit ConnectOptions: %+v %v, want %+v", v, err, want)
	}
	for _, o := range []ConnectOptions{{RetryCnt: 8}, {RNRRetry: -2}, {Port: 256}, {SGIDIndex: -1}, {Timeout: 32}} {
		if _, err := o.values(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
