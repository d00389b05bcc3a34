// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
)

// postSendEvent is a POST_SEND doorbell (wr_count 0) of pid on QP handle 3
// whose record carries the WQE digest of wqe, with the ring's producer
// index prod after it.
func postSendEvent(pid uint32, wqe abi.RxeSendWQE, prod uint32) Event {
	data := make([]byte, recDataLen)
	bo := binary.NativeEndian
	bo.PutUint32(data[0:], abi.IB_USER_VERBS_CMD_POST_SEND)
	bo.PutUint16(data[4:], 8)
	bo.PutUint16(data[6:], 1)
	bo.PutUint32(data[16:], 3) // qp_handle
	w, _ := binary.Append(nil, bo, &wqe)
	copy(data[wqeDigestOff:], w[:wqeHeadLen])
	bo.PutUint32(data[wqeDMALenOff:], wqe.DMA.Length)
	bo.PutUint32(data[wqeProdOff:], prod)
	return Event{Kind: KindVerbsWrite, TS: 2e6, PID: pid, TID: pid, Comm: "rping", Returned: true, Dur: 4000,
		Data: data, WQE: data[wqeDigestOff:]}
}

func createQPEvent(pid uint32, handle, qpn uint32) Event {
	data := make([]byte, recDataLen)
	bo := binary.NativeEndian
	bo.PutUint32(data[0:], abi.IB_USER_VERBS_CMD_CREATE_QP)
	resp := make([]byte, recRespLen)
	bo.PutUint32(resp[0:], handle)
	bo.PutUint32(resp[4:], qpn)
	return Event{Kind: KindVerbsWrite, TS: 1e6, PID: pid, TID: pid, Comm: "rping", Returned: true, Dur: 1000,
		Data: data, Resp: resp}
}

func completionEvent(wc abi.WC) Event {
	b, _ := binary.Append(nil, binary.NativeEndian, &wc)
	return Event{Kind: KindCompletion, TS: 3e6, PID: 12, TID: 12, Comm: "ksoftirqd/0", Data: b}
}

// TestDataPathLines: a doorbell shows the WR it rang for, and a completion
// is shown in the name of its QP's owner, not of the task rxe posted it in.
func TestDataPathLines(t *testing.T) {
	f := &Formatter{Names: ABINames{}}
	f.Line(createQPEvent(812, 3, 17))
	var wqe abi.RxeSendWQE
	wqe.WR.WrID = 0x2a
	wqe.WR.Opcode = abi.IB_WR_RDMA_WRITE
	wqe.WR.SendFlags = abi.IB_SEND_SIGNALED
	binary.NativeEndian.PutUint64(wqe.WR.WR[0:], 0x7f0012340000) // remote_addr
	binary.NativeEndian.PutUint32(wqe.WR.WR[8:], 0x857)          // rkey
	wqe.DMA.Length = 64
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{postSendEvent(812, wqe, 5),
			"0.002000 rping[812] uverbs POST_SEND qp=3 qpn=17 wr=RDMA_WRITE len=64 va=0x7f0012340000 rkey=0x857 flags=signaled wr_id=0x2a -> ok 4us"},
		// Three WRs on one doorbell: the last is shown, and how many.
		{postSendEvent(812, wqe, 8),
			"0.002000 rping[812] uverbs POST_SEND qp=3 qpn=17 wr=RDMA_WRITE len=64 va=0x7f0012340000 rkey=0x857 flags=signaled wr_id=0x2a posted=3 -> ok 4us"},
		{completionEvent(abi.WC{WrID: 0x2a, Opcode: abi.IB_WC_RDMA_WRITE, ByteLen: 64, QPNum: 17}),
			"0.003000 rping[812] cq COMPLETION opcode=RDMA_WRITE status=SUCCESS len=64 qpn=17 wr_id=0x2a"},
		{completionEvent(abi.WC{WrID: 7, Opcode: abi.IB_WC_RECV, Status: abi.IB_WC_WR_FLUSH_ERR, QPNum: 99}),
			"0.003000 ksoftirqd/0[12] cq COMPLETION opcode=RECV status=WR_FLUSH_ERR len=0 qpn=99 wr_id=0x7"},
	} {
		if got := f.Line(tc.e); got != tc.want {
			t.Errorf("line\n got %s\nwant %s", got, tc.want)
		}
	}
}
