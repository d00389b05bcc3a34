// Copyright 2026 The rdmago Authors.

package abi

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// tail is a flexible array member (driver_data[], attrs[], sge[], data[]) of a
// registered struct: C puts it at the end of the fixed part, so its C offset
// must equal the size of the Go struct.
type tail struct {
	cName  string // registered struct
	field  string // C member path, e.g. "dma.sge"
	offset uintptr
}

// overlay is a member of a C union (or an anonymous nested struct) ported as
// its own Go struct, to be laid over the byte array that ports the union.
type overlay struct {
	cName   string // "struct.union.member"
	goVal   any
	base    uintptr // offset of the member in the outer struct
	size    uintptr
	offsets map[string]uintptr // relative to base
}

var (
	abiTails    []tail
	abiOverlays []overlay
)

func registerTails(t ...tail)       { abiTails = append(abiTails, t...) }
func registerOverlays(o ...overlay) { abiOverlays = append(abiOverlays, o...) }

func layoutByName(name string) (layout, bool) {
	for _, l := range abiLayouts {
		if l.cName == name {
			return l, true
		}
	}
	return layout{}, false
}

func TestFlexibleArrayTails(t *testing.T) {
	if len(abiTails) == 0 {
		t.Fatal("no tails registered")
	}
	for _, tl := range abiTails {
		l, ok := layoutByName(tl.cName)
		if !ok {
			t.Errorf("tail %s.%s: struct not registered", tl.cName, tl.field)
			continue
		}
		if got := reflect.TypeOf(l.goVal).Size(); got != tl.offset {
			t.Errorf("%s.%s starts at C offset %d but the Go struct ends at %d", tl.cName, tl.field, tl.offset, got)
		}
	}
}

func TestUnionOverlays(t *testing.T) {
	if len(abiOverlays) == 0 {
		t.Fatal("no overlays registered")
	}
	for _, o := range abiOverlays {
		typ := reflect.TypeOf(o.goVal)
		if typ.Size() != o.size {
			t.Errorf("%s (%s): Go size %d, C size %d", o.cName, typ.Name(), typ.Size(), o.size)
		}
		gf := goFields(typ)
		for n, off := range o.offsets {
			f, ok := gf[normName(n)]
			if !ok {
				t.Errorf("%s: C field %q has no Go field", o.cName, n)
				continue
			}
			if f.Offset != off {
				t.Errorf("%s.%s: Go offset %d, C offset %d", o.cName, n, f.Offset, off)
			}
		}
		// The outer struct's field that ports the union must sit at base and
		// be large enough to hold this member.
		parts := strings.Split(o.cName, ".")
		outer, ok := layoutByName(parts[0])
		if !ok {
			t.Errorf("%s: outer struct not registered", o.cName)
			continue
		}
		f, ok := goFields(reflect.TypeOf(outer.goVal))[normName(parts[1])]
		if !ok {
			t.Errorf("%s: outer struct has no Go field %q", o.cName, parts[1])
			continue
		}
		if f.Offset != o.base {
			t.Errorf("%s: Go field %s at %d, C member at %d", o.cName, f.Name, f.Offset, o.base)
		}
		if f.Type.Size() < o.size {
			t.Errorf("%s: Go field %s has %d bytes, member needs %d", o.cName, f.Name, f.Type.Size(), o.size)
		}
	}
}

// The ring header offsets quoted in rxe's documentation and rdma-core's
// provider, spelled out once more because the data path depends on them.
func TestRxeQueueBufLayout(t *testing.T) {
	var q RxeQueueBuf
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"log2_elem_size", unsafe.Offsetof(q.Log2ElemSize), 0},
		{"index_mask", unsafe.Offsetof(q.IndexMask), 4},
		{"producer_index", unsafe.Offsetof(q.ProducerIndex), 128},
		{"consumer_index", unsafe.Offsetof(q.ConsumerIndex), 256},
		{"data", unsafe.Sizeof(q), 384},
		{"send wqe sge[]", unsafe.Sizeof(RxeSendWQE{}), 208},
		{"recv wqe sge[]", unsafe.Sizeof(RxeRecvWQE{}), 40},
		{"send wqe dma", unsafe.Offsetof(RxeSendWQE{}.DMA), 184},
		{"send wqe iova", unsafe.Offsetof(RxeSendWQE{}.IOVA), 152},
	} {
		if c.got != c.want {
			t.Errorf("%s at %d, want %d", c.name, c.got, c.want)
		}
	}
}

func TestIoctlNumber(t *testing.T) {
	// _IOWR(0x1b, 1, 24) as strace prints it for ibv_devinfo: 0xc0181b01.
	if _IOC_DIRSHIFT == 30 && RDMA_VERBS_IOCTL != 0xc0181b01 {
		t.Errorf("RDMA_VERBS_IOCTL = %#x, want 0xc0181b01", RDMA_VERBS_IOCTL)
	}
	if got := (RDMA_VERBS_IOCTL >> _IOC_SIZESHIFT) & 0x1fff; got != 24 {
		t.Errorf("size field %d, want sizeof(ib_uverbs_ioctl_hdr)=24", got)
	}
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The doorbell rdma-core's rxe provider writes (post_send_db): a POST_SEND
// with no work requests, 8 words in, 1 word out. Bytes little endian.
func TestGoldenDoorbell(t *testing.T) {
	type cmd struct {
		Hdr  CmdHdr
		Body PostSend
	}
	h, err := NewCmdHdr(IB_USER_VERBS_CMD_POST_SEND, int(unsafe.Sizeof(PostSend{})), int(unsafe.Sizeof(PostSendResp{})))
	if err != nil {
		t.Fatal(err)
	}
	c := cmd{Hdr: h, Body: PostSend{Response: 0x1122334455667788, QPHandle: 5, WqeSize: uint32(unsafe.Sizeof(SendWR{}))}}
	want := unhex(t, `1c000000 0800 0100
		8877665544332211 05000000 00000000 00000000 38000000`)
	if got := Bytes(&c); !bytes.Equal(got, want) {
		t.Errorf("doorbell\n got %x\nwant %x", got, want)
	}
}

// CREATE_CQ as rdma-core's rxe provider sends it: 32-byte core command, no
// driver input; 8-byte core response plus rxe's 16-byte mminfo.
func TestGoldenCreateCQ(t *testing.T) {
	type cmd struct {
		Hdr  CmdHdr
		Body CreateCQ
	}
	h, err := NewCmdHdr(IB_USER_VERBS_CMD_CREATE_CQ, 32, 8+16)
	if err != nil {
		t.Fatal(err)
	}
	c := cmd{Hdr: h, Body: CreateCQ{Response: 0x7f0000001000, UserHandle: 3, CQE: 64, CompChannel: -1}}
	want := unhex(t, `12000000 0a00 0600
		0010000000 7f0000 0300000000000000 40000000 00000000 ffffffff 00000000`)
	if got := Bytes(&c); !bytes.Equal(got, want) {
		t.Errorf("create_cq\n got %x\nwant %x", got, want)
	}
}

func TestGoldenExCreateCQHeaders(t *testing.T) {
	h, x, err := NewExCmdHdr(IB_USER_VERBS_EX_CMD_CREATE_CQ, 32, 0, 16, 16, 0xabc0)
	if err != nil {
		t.Fatal(err)
	}
	type both struct {
		H CmdHdr
		X ExCmdHdr
	}
	b := both{h, x}
	want := unhex(t, `12000080 0400 0200  c0ab000000000000 0000 0200 00000000`)
	if got := Bytes(&b); !bytes.Equal(got, want) {
		t.Errorf("ex hdr\n got %x\nwant %x", got, want)
	}
	if _, _, err := NewExCmdHdr(1, 12, 0, 0, 0, 0); err == nil {
		t.Error("NewExCmdHdr accepted a length that is not a multiple of 8")
	}
	if _, err := NewCmdHdr(1, 6, 0); err == nil {
		t.Error("NewCmdHdr accepted a length that is not a multiple of 4")
	}
}

// QUERY_PORT over ioctl as rdma-core builds it (ibv_cmd_query_port): port
// number inline, response pointer, driver id of rxe.
func TestGoldenIoctlQueryPort(t *testing.T) {
	type cmd struct {
		Hdr   IoctlHdr
		Attrs [2]IoctlAttr
	}
	c := cmd{
		Hdr: IoctlHdr{Length: IoctlLength(2), ObjectID: UVERBS_OBJECT_DEVICE, MethodID: UVERBS_METHOD_QUERY_PORT, NumAttrs: 2, DriverID: RDMA_DRIVER_RXE},
		Attrs: [2]IoctlAttr{
			AttrConstIn(UVERBS_ATTR_QUERY_PORT_PORT_NUM, 1),
			AttrPtr(UVERBS_ATTR_QUERY_PORT_RESP, 0x5000, int(unsafe.Sizeof(QueryPortRespEx{}))),
		},
	}
	want := unhex(t, `3800 0000 0200 0200 0000000000000000 0e000000 00000000
		0000 0800 0100 0000 0100000000000000
		0100 3000 0100 0000 0050000000000000`)
	if got := Bytes(&c); !bytes.Equal(got, want) {
		t.Errorf("query_port ioctl\n got %x\nwant %x", got, want)
	}
}

func TestAttrEncodings(t *testing.T) {
	a := AttrInline(7, []byte{1, 2, 3})
	want := unhex(t, `0700 0300 0100 0000 0102030000000000`)
	if got := Bytes(&a); !bytes.Equal(got, want) {
		t.Errorf("inline attr\n got %x\nwant %x", got, want)
	}
	o := AttrFD(0, -1).Optional()
	want = unhex(t, `0000 0000 0000 0000 ffffffffffffffff`)
	if got := Bytes(&o); !bytes.Equal(got, want) {
		t.Errorf("optional fd attr\n got %x\nwant %x", got, want)
	}
	if o.Valid() {
		t.Error("fresh attribute reported valid output")
	}
	o.Flags |= UVERBS_ATTR_F_VALID_OUTPUT
	if !o.Valid() {
		t.Error("valid-output flag not seen")
	}
}

// Values of enums that come from include/rdma/ib_verbs.h (not UAPI) checked
// against the kernel BTF and libibverbs' IBV_* spellings.
func TestKernelEnumValues(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"IB_WC_REM_ACCESS_ERR", IB_WC_REM_ACCESS_ERR, 10},
		{"IB_WC_RNR_RETRY_EXC_ERR", IB_WC_RNR_RETRY_EXC_ERR, 13},
		{"IB_WC_GENERAL_ERR", IB_WC_GENERAL_ERR, 21},
		{"IB_WC_RECV", IB_WC_RECV, 128},
		{"IB_WC_RECV_RDMA_WITH_IMM", IB_WC_RECV_RDMA_WITH_IMM, 129},
		{"IB_QPS_ERR", IB_QPS_ERR, 6},
		{"IB_QP_DEST_QPN", IB_QP_DEST_QPN, 1 << 20},
		{"IB_QP_RATE_LIMIT", IB_QP_RATE_LIMIT, 1 << 25},
		{"IB_EVENT_WQ_FATAL", IB_EVENT_WQ_FATAL, 19},
		{"IB_SEND_INLINE", IB_SEND_INLINE, 8},
		{"IB_WR_ATOMIC_WRITE", IB_WR_ATOMIC_WRITE, 15},
		{"RDMA_DRIVER_RXE", RDMA_DRIVER_RXE, 14},
		{"RDMA_DRIVER_SIW", RDMA_DRIVER_SIW, 18},
		{"IB_USER_VERBS_CMD_OPEN_QP", IB_USER_VERBS_CMD_OPEN_QP, 40},
		{"IB_USER_VERBS_EX_CMD_MODIFY_CQ", IB_USER_VERBS_EX_CMD_MODIFY_CQ, 57},
		{"UVERBS_ATTR_UHW_OUT", UVERBS_ATTR_UHW_OUT, 0x1001},
		{"UVERBS_METHOD_QUERY_GID_ENTRY", UVERBS_METHOD_QUERY_GID_ENTRY, 6},
		{"UVERBS_OBJECT_ASYNC_EVENT", UVERBS_OBJECT_ASYNC_EVENT, 16},
		{"IB_UVERBS_ACCESS_OPTIONAL_RANGE", IB_UVERBS_ACCESS_OPTIONAL_RANGE, 0x3ff00000},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
}
