// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
)

// ioctlRecord builds a big ioctl record: the header and attributes in data
// and in the extension, with slot buffers read at entry (in) or return (out).
func ioctlRecord(r record, obj, method uint16, attrs []abi.IoctlAttr, in, out map[int][]byte) []byte {
	hdr := abi.IoctlHdr{Length: uint16(sizeofIoctlHdr + len(attrs)*sizeofIoctlAttr), ObjectID: obj, MethodID: method,
		NumAttrs: uint16(len(attrs)), DriverID: abi.RDMA_DRIVER_RXE}
	data, _ := binary.Append(nil, ne, hdr)
	data, _ = binary.Append(data, ne, attrs)
	r.kind, r.a0, r.data = KindVerbsIoctl, uint64(abi.RDMA_VERBS_IOCTL), data
	r.flags |= flagData | flagExt
	b := append(r.bytes(), make([]byte, bigRecSize-recSize)...)
	copy(b[extAttrs:extSlots], data[sizeofIoctlHdr:])
	var inMask, outMask uint32
	for i, buf := range in {
		inMask |= 1 << i
		copy(b[extSlots+i*ioctlSlotLen:], buf)
	}
	for i, buf := range out {
		outMask |= 1 << i
		copy(b[extSlots+i*ioctlSlotLen:], buf)
	}
	ne.PutUint32(b[extMaskIn:], inMask)
	ne.PutUint32(b[extMaskOut:], outMask)
	return b
}

func mustDecodeBytes(t *testing.T, b []byte) Event {
	t.Helper()
	e, err := DecodeEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

const validOut = abi.UVERBS_ATTR_F_VALID_OUTPUT

func TestIoctlLines(t *testing.T) {
	f := &Formatter{Names: ABINames{}, Devices: map[uint32]string{231<<20 | 192: "rxe0"}, Start: 1e9}
	base := record{ts: 1e9, dur: 2000, pid: 50, comm: "ibv_rc_pingpong", dev: 231<<20 | 192, flags: flagReturned}
	capIn := le(abi.QPCap{MaxSendWR: 1, MaxRecvWR: 500, MaxSendSGE: 1, MaxRecvSGE: 1})
	capOut := le(abi.QPCap{MaxSendWR: 1, MaxRecvWR: 500, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 416})
	modify := make([]byte, 128)
	ne.PutUint32(modify[64:], 3) // qp_handle
	ne.PutUint32(modify[68:], abi.IB_QP_STATE|abi.IB_QP_AV|abi.IB_QP_PATH_MTU|abi.IB_QP_DEST_QPN|abi.IB_QP_RQ_PSN)
	ne.PutUint32(modify[76:], 0x123) // rq_psn
	ne.PutUint32(modify[84:], 18)    // dest_qp_num
	modify[96] = abi.IB_QPS_RTR
	modify[98] = abi.IB_MTU_1024
	copy(modify[0:16], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 2}) // dgid
	modify[24], modify[25], modify[30] = 1, 1, 1                                       // sgid_index, hop_limit, is_global

	tests := []struct {
		name string
		b    []byte
		want string
	}{{
		"qp create",
		ioctlRecord(base, abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_CREATE, []abi.IoctlAttr{
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_HANDLE, Data: 3},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_PD_HANDLE, Data: 0},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_SEND_CQ_HANDLE, Data: 1},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_RECV_CQ_HANDLE, Data: 2},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_USER_HANDLE, Len: 8, Data: 0x55aa},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_CAP, Len: 20, Data: 0x7000},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_TYPE, Len: 1, Data: abi.IB_QPT_RC},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_FLAGS, Len: 4, Data: 0},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_RESP_CAP, Len: 20, Flags: validOut, Data: 0x7100},
			{AttrID: abi.UVERBS_ATTR_CREATE_QP_RESP_QP_NUM, Len: 4, Flags: validOut, Data: 0x7200},
			{AttrID: abi.UVERBS_ATTR_UHW_OUT, Len: 32, Flags: validOut, Data: 0x7300},
		}, map[int][]byte{5: capIn}, map[int][]byte{8: capOut, 9: le(uint32(17)), 10: make([]byte, 32)}),
		"0.000000 ibv_rc_pingpong[50] uverbs/rxe0 ioctl QP.CREATE attrs=11 type=RC pd=0 send_cq=1 recv_cq=2 " +
			"max_send_wr=1 max_recv_wr=500 max_send_sge=1 max_recv_sge=1 max_inline=0 -> ok 2us qp=3 qpn=17 " +
			"max_send_wr=1 max_recv_wr=500 max_send_sge=1 max_recv_sge=1 max_inline=416",
	}, {
		"modify qp through INVOKE_WRITE, extended",
		ioctlRecord(base, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE, []abi.IoctlAttr{
			{AttrID: abi.UVERBS_ATTR_WRITE_CMD, Len: 8, Data: abi.IB_USER_VERBS_CMD_FLAG_EXTENDED | abi.IB_USER_VERBS_EX_CMD_MODIFY_QP},
			{AttrID: abi.UVERBS_ATTR_CORE_IN, Len: 120, Data: 0x7000},
			{AttrID: abi.UVERBS_ATTR_CORE_OUT, Len: 8, Flags: validOut, Data: 0x7100},
		}, map[int][]byte{1: modify}, map[int][]byte{2: make([]byte, 8)}),
		"0.000000 ibv_rc_pingpong[50] uverbs/rxe0 MODIFY_QP_EX via=ioctl attrs=3 qp=3 qpn=17 mask=0x101181 state=RTR " +
			"dgid=::ffff:10.77.0.2 sgid_index=1 hop_limit=1 mtu=1024 rq_psn=291 dest_qpn=18 -> ok 2us",
	}, {
		"dealloc pd through INVOKE_WRITE: an inline body",
		ioctlRecord(base, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_INVOKE_WRITE, []abi.IoctlAttr{
			{AttrID: abi.UVERBS_ATTR_WRITE_CMD, Len: 8, Data: abi.IB_USER_VERBS_CMD_DEALLOC_PD},
			{AttrID: abi.UVERBS_ATTR_CORE_IN, Len: 4, Data: 6},
		}, nil, nil),
		"0.000000 ibv_rc_pingpong[50] uverbs/rxe0 DEALLOC_PD via=ioctl attrs=2 pd=6 -> ok 2us",
	}, {
		"cq create with a channel",
		ioctlRecord(base, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE, []abi.IoctlAttr{
			{AttrID: abi.UVERBS_ATTR_CREATE_CQ_HANDLE, Data: 1},
			{AttrID: abi.UVERBS_ATTR_CREATE_CQ_CQE, Len: 4, Data: 501},
			{AttrID: abi.UVERBS_ATTR_CREATE_CQ_USER_HANDLE, Len: 8, Data: 0x55aa},
			{AttrID: abi.UVERBS_ATTR_CREATE_CQ_COMP_CHANNEL, Data: 5},
			{AttrID: abi.UVERBS_ATTR_CREATE_CQ_COMP_VECTOR, Len: 4, Data: 0},
			{AttrID: abi.UVERBS_ATTR_CREATE_CQ_RESP_CQE, Len: 4, Flags: validOut, Data: 0x7000},
		}, nil, map[int][]byte{5: le(uint32(511))}),
		"0.000000 ibv_rc_pingpong[50] uverbs/rxe0 ioctl CQ.CREATE attrs=6 cqe=501 comp_channel=5 comp_vector=0 -> ok 2us cq=1 cqe=511",
	}, {
		"gid table",
		ioctlRecord(base, abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE, []abi.IoctlAttr{
			{AttrID: abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, Len: 8, Data: 32},
			{AttrID: abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, Len: 32 * 16, Flags: validOut, Data: 0x7000},
			{AttrID: abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, Len: 8, Flags: validOut, Data: 0x7100},
		}, nil, map[int][]byte{1: append(
			le(abi.GIDEntry{GID: gidWords([16]byte{0: 0xfe, 1: 0x80, 15: 7}), GIDIndex: 0, PortNum: 1, GIDType: abi.IB_UVERBS_GID_TYPE_ROCE_V2}),
			le(abi.GIDEntry{GID: gidWords([16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 15: 1}), GIDIndex: 1, PortNum: 1,
				GIDType: abi.IB_UVERBS_GID_TYPE_ROCE_V2})...), 2: le(uint64(2))}),
		"0.000000 ibv_rc_pingpong[50] uverbs/rxe0 ioctl DEVICE.QUERY_GID_TABLE attrs=3 entry_size=32 -> ok 2us " +
			"entries=2 gid0=fe80::7/RoCEv2 gid1=::ffff:10.77.0.1/RoCEv2",
	}, {
		"advise mr: a synchronous prefetch of two ranges",
		ioctlRecord(base, abi.UVERBS_OBJECT_MR, abi.UVERBS_METHOD_ADVISE_MR, []abi.IoctlAttr{
			{AttrID: abi.UVERBS_ATTR_ADVISE_MR_PD_HANDLE, Data: 2},
			{AttrID: abi.UVERBS_ATTR_ADVISE_MR_ADVICE, Len: 8, Data: abi.IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE},
			{AttrID: abi.UVERBS_ATTR_ADVISE_MR_FLAGS, Len: 4, Data: abi.IB_UVERBS_ADVISE_MR_FLAG_FLUSH},
			{AttrID: abi.UVERBS_ATTR_ADVISE_MR_SGE_LIST, Len: 32, Data: 0x7000},
		}, map[int][]byte{3: append(le(abi.SGE{Addr: 0x7f0000001000, Length: 4096, LKey: 0x1234}),
			le(abi.SGE{Addr: 0x7f0000100000, Length: 8192, LKey: 0x1234})...)}, nil),
		"0.000000 ibv_rc_pingpong[50] uverbs/rxe0 ioctl MR.ADVISE_MR attrs=4 pd=2 advice=PREFETCH_WRITE flags=0x1 num_sge=2 " +
			"sge0=0x7f0000001000+4096/0x1234 sge1=0x7f0000100000+8192/0x1234 -> ok 2us",
	}, {
		"qp destroy",
		ioctlRecord(base, abi.UVERBS_OBJECT_QP, abi.UVERBS_METHOD_QP_DESTROY, []abi.IoctlAttr{
			{AttrID: abi.UVERBS_ATTR_DESTROY_QP_HANDLE, Data: 3},
			{AttrID: abi.UVERBS_ATTR_DESTROY_QP_RESP, Len: 4, Flags: validOut, Data: 0x7000},
		}, nil, map[int][]byte{1: le(uint32(0))}),
		"0.000000 ibv_rc_pingpong[50] uverbs/rxe0 ioctl QP.DESTROY attrs=2 qp=3 qpn=17 -> ok 2us events=0",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.Line(mustDecodeBytes(t, tt.b)); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}

	// The write path's doorbell on the same QP shows its QPN; another
	// process's handle 3 does not.
	post := record{ts: 1e9, pid: 50, comm: "ibv_rc_pingpong", dev: 231<<20 | 192, kind: KindVerbsWrite, flags: flagReturned | flagData,
		data: cmd(abi.IB_USER_VERBS_CMD_POST_SEND, 8, 0, uint64(0), uint32(3), uint32(0))}
	if got, want := f.Line(mustDecode(t, post)), "0.000000 ibv_rc_pingpong[50] uverbs/rxe0 POST_SEND qp=3 qpn=17 wr_count=0 -> ok 0us"; got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	post.pid = 51
	if got, want := f.Line(mustDecode(t, post)), "0.000000 ibv_rc_pingpong[51] uverbs/rxe0 POST_SEND qp=3 wr_count=0 -> ok 0us"; got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}

	// A failed creation shows no response (the handle written back would be stale).
	failed := ioctlRecord(record{flags: flagReturned, ret: -12, pid: 50}, abi.UVERBS_OBJECT_CQ, abi.UVERBS_METHOD_CQ_CREATE,
		[]abi.IoctlAttr{{AttrID: abi.UVERBS_ATTR_CREATE_CQ_HANDLE, Data: 1}, {AttrID: abi.UVERBS_ATTR_CREATE_CQ_CQE, Len: 4, Data: 1 << 30}}, nil, nil)
	if got, want := f.Line(mustDecodeBytes(t, failed)), "0.000000 [50] uverbs ioctl CQ.CREATE attrs=2 cqe=1073741824 -> ENOMEM (-12) 0us"; got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

// gidWords packs 16 GID bytes as ib_uverbs_gid_entry's two u64.
func gidWords(g [16]byte) [2]uint64 {
	return [2]uint64{ne.Uint64(g[:8]), ne.Uint64(g[8:])}
}

func TestRestartErrno(t *testing.T) {
	f := &Formatter{}
	r := record{ret: -512, pid: 3, comm: "rping", kind: KindUCMWrite, flags: flagReturned | flagData,
		data: le(uint32(abi.RDMA_USER_CM_CMD_GET_EVENT), uint16(8), uint16(336), uint64(0x1000))}
	want := "0.000000 rping[3] ucma GET_EVENT -> ERESTARTSYS (-512, interrupted by a signal: EINTR, or restarted under SA_RESTART) 0us"
	if got := f.Line(mustDecode(t, r)); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	for errno, name := range map[int64]string{513: "ERESTARTNOINTR", 514: "ERESTARTNOHAND", 516: "ERESTART_RESTARTBLOCK", 4: "EINTR", 515: "ENOIOCTLCMD"} {
		r.ret = -errno
		if d := f.Describe(mustDecode(t, r)); d.Result != name {
			t.Errorf("errno %d: %q, want %s", errno, d.Result, name)
		}
	}
}

// TestCutRecordsShowNoZeros: fields past what a write() record holds are
// left out, not shown as zeros.
func TestCutRecordsShowNoZeros(t *testing.T) {
	f := &Formatter{}
	// QUERY_PORT's response is 40 bytes; the record keeps 24 (state is at 34).
	qp := record{kind: KindVerbsWrite, flags: flagReturned | flagData | flagResp, pid: 1,
		data: cmd(abi.IB_USER_VERBS_CMD_QUERY_PORT, 4, 10, uint64(0x1000), uint8(1)), resp: make([]byte, 24)}
	if got, want := f.Line(mustDecode(t, qp)), "0.000000 [1] uverbs QUERY_PORT port=1 -> ok 0us"; got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	// MODIFY_QP_EX: 104 bytes of the body after both headers; port (104)
	// and timeout (105) are past them.
	modify := make([]byte, 112)
	ne.PutUint32(modify[64:], 3)
	ne.PutUint32(modify[68:], abi.IB_QP_STATE|abi.IB_QP_PORT|abi.IB_QP_TIMEOUT)
	modify[96] = abi.IB_QPS_INIT
	ex := uint32(abi.IB_USER_VERBS_CMD_FLAG_EXTENDED)
	r := record{kind: KindVerbsWrite, flags: flagReturned | flagData, pid: 1,
		data: append(cmd(ex|abi.IB_USER_VERBS_EX_CMD_MODIFY_QP, 15, 1, uint64(0x10), uint32(0), uint32(0)), modify...)}
	if got, want := f.Line(mustDecode(t, r)), "0.000000 [1] uverbs MODIFY_QP_EX qp=3 mask=0x221 state=INIT -> ok 0us"; got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}
