// Copyright 2026 The rdmago Authors.

package trace

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
)

// ucmaRecord builds a big ucma record whose extension holds the whole command.
func ucmaRecord(r record, command []byte) []byte {
	r.kind, r.a0, r.data = KindUCMWrite, uint64(len(command)), command
	r.flags |= flagData | flagExt
	b := append(r.bytes(), make([]byte, bigRecSize-recSize)...)
	n := copy(b[extUCMData:extUCMData+ucmDataMax], command)
	ne.PutUint32(b[extUCMLen:], uint32(n))
	return b
}

// ucmCmd is an rdma_ucm_cmd_hdr and body.
func ucmCmd(cmd uint32, body any, out uint16) []byte {
	b, _ := binary.Append(nil, ne, abi.UCMCmdHdr{Cmd: cmd, In: uint16(binary.Size(body)), Out: out})
	b, _ = binary.Append(b, ne, body)
	return b
}

func sin(port uint16, ip ...byte) []byte {
	b := make([]byte, 16)
	ne.PutUint16(b, abi.AF_INET)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[4:], ip)
	return b
}

func sin6(port uint16, ip [16]byte) []byte {
	b := make([]byte, 28)
	ne.PutUint16(b, abi.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], port)
	copy(b[8:], ip[:])
	return b
}

func sib(gid [16]byte, sid uint64) []byte {
	b := make([]byte, abi.SizeofSockaddrIB)
	ne.PutUint16(b, abi.AF_IB)
	copy(b[8:], gid[:])
	binary.BigEndian.PutUint64(b[24:], sid)
	return b
}

func TestUCMLines(t *testing.T) {
	f := &Formatter{}
	base := record{dur: 5000, pid: 8, comm: "ucmatose", flags: flagReturned}
	var storage = func(b []byte) (s abi.SockaddrStorage) { copy(s[:], b); return s }
	v6 := [16]byte{0: 0xfd, 1: 0x00, 15: 2}
	gid := [16]byte{0: 0xfe, 1: 0x80, 15: 9}

	tests := []struct {
		name string
		b    []byte
		want string
	}{{
		"resolve addr, IPv6 with a source",
		ucmaRecord(base, ucmCmd(abi.RDMA_USER_CM_CMD_RESOLVE_ADDR, abi.UCMResolveAddr{ID: 4, TimeoutMS: 2000, SrcSize: 28, DstSize: 28,
			SrcAddr: storage(sin6(0, [16]byte{0: 0xfd, 15: 1})), DstAddr: storage(sin6(7471, v6))}, 0)),
		"0.000000 ucmatose[8] ucma RESOLVE_ADDR id=4 src=[fd00::1]:0 dst=[fd00::2]:7471 timeout_ms=2000 -> ok 5us",
	}, {
		"resolve addr, IPv4 without a source",
		ucmaRecord(base, ucmCmd(abi.RDMA_USER_CM_CMD_RESOLVE_ADDR, abi.UCMResolveAddr{ID: 4, TimeoutMS: 500, DstSize: 16,
			DstAddr: storage(sin(7471, 10, 77, 0, 2))}, 0)),
		"0.000000 ucmatose[8] ucma RESOLVE_ADDR id=4 dst=10.77.0.2:7471 timeout_ms=500 -> ok 5us",
	}, {
		"bind AF_IB",
		ucmaRecord(base, ucmCmd(abi.RDMA_USER_CM_CMD_BIND, abi.UCMBind{ID: 1, AddrSize: 48, Addr: storage(sib(gid, 0x1060000+7471))}, 0)),
		"0.000000 ucmatose[8] ucma BIND id=1 addr=ib[fe80::9]:0x1061d2f -> ok 5us",
	}, {
		"join mcast",
		ucmaRecord(base, ucmCmd(abi.RDMA_USER_CM_CMD_JOIN_MCAST, abi.UCMJoinMcast{ID: 2, AddrSize: 16,
			JoinFlags: abi.RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, Addr: storage(sin(0, 239, 1, 2, 3))}, 4)),
		"0.000000 ucmatose[8] ucma JOIN_MCAST id=2 addr=239.1.2.3:0 join=SENDONLY_FULLMEMBER -> ok 5us",
	}, {
		"accept with private data",
		ucmaRecord(base, ucmCmd(abi.RDMA_USER_CM_CMD_ACCEPT, abi.UCMAccept{ID: 3, ConnParam: abi.UCMConnParam{QPNum: 0x11,
			PrivateDataLen: 56, ResponderResources: 4, InitiatorDepth: 2, RetryCount: 7, RNRRetryCount: 6, SRQ: 1}}, 0)),
		"0.000000 ucmatose[8] ucma ACCEPT id=3 qp_num=17 private_data_len=56 responder_resources=4 initiator_depth=2 " +
			"retry_count=7 rnr_retry_count=6 srq=1 -> ok 5us",
	}, {
		"connect UD",
		ucmaRecord(base, ucmCmd(abi.RDMA_USER_CM_CMD_CONNECT, abi.UCMConnect{ID: 3, ConnParam: abi.UCMConnParam{QPNum: 0x12,
			QKey: 0x11111111}}, 0)),
		"0.000000 ucmatose[8] ucma CONNECT id=3 qp_num=18 qkey=0x11111111 private_data_len=0 responder_resources=0 " +
			"initiator_depth=0 retry_count=0 rnr_retry_count=0 -> ok 5us",
	}, {
		"init qp attr with its answer",
		func() []byte {
			r := base
			r.flags |= flagResp
			r.resp = le(uint32(abi.IB_QP_STATE|abi.IB_QP_AV), uint32(abi.IB_QPS_RTR))
			return ucmaRecord(r, ucmCmd(abi.RDMA_USER_CM_CMD_INIT_QP_ATTR, abi.UCMInitQPAttr{ID: 5, QPState: abi.IB_QPS_RTR}, 144))
		}(),
		"0.000000 ucmatose[8] ucma INIT_QP_ATTR id=5 state=RTR -> ok 5us mask=0x81 state=RTR",
	}, {
		"event with an error status",
		func() []byte {
			r := base
			r.flags |= flagResp
			r.resp = le(uint64(1), uint32(2), uint32(abi.RDMA_CM_EVENT_UNREACHABLE), int32(-110))
			return ucmaRecord(r, ucmCmd(abi.RDMA_USER_CM_CMD_GET_EVENT, abi.UCMGetEvent{Response: 0x1000}, 336))
		}(),
		"0.000000 ucmatose[8] ucma GET_EVENT -> ok 5us event=UNREACHABLE status=-110 id=2 err=ETIMEDOUT",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := f.Line(mustDecodeBytes(t, tt.b)); got != tt.want {
				t.Errorf("\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestSockaddr covers what sockaddr shows of each family and of short
// buffers (the CM tracepoint copies 28 bytes, too few for a sockaddr_ib).
func TestSockaddr(t *testing.T) {
	v4, err := abi.SockaddrIn6From(netip.MustParseAddrPort("10.77.0.1:4791"))
	if err != nil {
		t.Fatal(err)
	}
	v6, err := abi.SockaddrIn6From(netip.MustParseAddrPort("[fe80::1%3]:20079"))
	if err != nil {
		t.Fatal(err)
	}
	ib := sib([16]byte{0: 0xfe, 1: 0x80, 15: 9}, 0x1061d2f)
	for _, tc := range []struct {
		b    []byte
		want string
	}{
		{v4[:], "10.77.0.1:4791"},
		{v4[:8], "10.77.0.1:4791"},
		{v4[:7], ""},
		{v6[:], "[fe80::1%3]:20079"},
		{v6[:23], ""},
		{ib, "ib[fe80::9]:0x1061d2f"},
		{ib[:28], "AF_IB"},
		{make([]byte, 28), ""}, // AF_UNSPEC
	} {
		if got := sockaddr(tc.b); got != tc.want {
			t.Errorf("sockaddr(% x) = %q, want %q", tc.b, got, tc.want)
		}
	}
}
