package abi

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func golden(t testing.TB, name string) []byte {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("golden bytes were made on little-endian x86_64")
	}
	s, ok := ucmGolden[name]
	if !ok {
		t.Fatalf("no golden bytes %q", name)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("golden %q: %v", name, err)
	}
	return b
}

func mustAddrPort(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func TestEncodeUCMCommandGolden(t *testing.T) {
	ipv4Bind, n4, err := SockaddrStorageFrom(mustAddrPort("192.168.122.10:7471"))
	if err != nil {
		t.Fatal(err)
	}
	dst6, n6, err := SockaddrStorageFrom(mustAddrPort("[fe80::1%3]:20079"))
	if err != nil {
		t.Fatal(err)
	}
	src4, ns4, err := SockaddrStorageFrom(mustAddrPort("10.0.0.1:0"))
	if err != nil {
		t.Fatal(err)
	}
	var gid [16]byte
	for i := range gid {
		gid[i] = 0xf0 + byte(i)
	}
	var dstIB SockaddrStorage
	nIB := dstIB.SetIB(SockaddrIBFrom(0xffff, 0x12345, gid, 0x1064e6f, ^uint64(0), 9))
	mc, nmc, err := SockaddrStorageFrom(mustAddrPort("239.1.2.3:0"))
	if err != nil {
		t.Fatal(err)
	}

	conn := UCMConnect{ID: 3, ECE: UCMECE{VendorID: 0x15b3, AttrMod: 0xabcd}}
	conn.ConnParam = UCMConnParam{QPNum: 0x11, ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7, Valid: 1}
	if err := conn.ConnParam.SetData([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	ibs := UCMResolveIBService{ID: 12, IBS: UCMIBService{ServiceID: 0x1122334455667788, Flags: RDMA_USER_CM_IB_SERVICE_FLAG_ID | RDMA_USER_CM_IB_SERVICE_FLAG_NAME}}
	copy(ibs.IBS.ServiceName[:], "rdmago.test")
	wce := UCMWriteCMEvent{ID: 13, Event: uint32(RDMA_CM_EVENT_USER), Status: 0x11223344}
	wce.SetArg(0x55667788aabbccdd)
	rej := UCMReject{ID: 5, Reason: IB_CM_REJ_CONSUMER_DEFINED}
	if err := rej.SetData([]byte("busy")); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		cmd  uint32
		body UCMBody
		out  int
	}{
		{"create_id", RDMA_USER_CM_CMD_CREATE_ID, &UCMCreateID{UID: 0x1122334455667788, Response: 0x7f0012345678, PS: RDMA_PS_TCP, QPType: 2}, 4},
		{"bind", RDMA_USER_CM_CMD_BIND, &UCMBind{ID: 7, AddrSize: n4, Addr: ipv4Bind}, 0},
		{"resolve_addr6", RDMA_USER_CM_CMD_RESOLVE_ADDR, &UCMResolveAddr{ID: 7, TimeoutMS: 2000, DstSize: n6, DstAddr: dst6}, 0},
		{"resolve_addr_ib", RDMA_USER_CM_CMD_RESOLVE_ADDR, &UCMResolveAddr{ID: 8, TimeoutMS: 500, SrcSize: ns4, SrcAddr: src4, DstSize: nIB, DstAddr: dstIB}, 0},
		{"connect", RDMA_USER_CM_CMD_CONNECT, &conn, 0},
		{"accept", RDMA_USER_CM_CMD_ACCEPT, &UCMAccept{UID: 0xcafe, ID: 4, ConnParam: UCMConnParam{QPNum: 0x12, ResponderResources: 4, InitiatorDepth: 2, RNRRetryCount: 7, Valid: 1}}, 0},
		{"reject", RDMA_USER_CM_CMD_REJECT, &rej, 0},
		{"get_event", RDMA_USER_CM_CMD_GET_EVENT, &UCMGetEvent{Response: 0x7f00aabbcc00}, SizeofUCMEventResp},
		{"init_qp_attr", RDMA_USER_CM_CMD_INIT_QP_ATTR, &UCMInitQPAttr{Response: 0x7f00aabbcd00, ID: 3, QPState: 3}, SizeofIBUverbsQPAttr},
		{"set_option", RDMA_USER_CM_CMD_SET_OPTION, &UCMSetOption{OptVal: 0x7f00aabbce00, ID: 3, Level: RDMA_OPTION_ID, OptName: RDMA_OPTION_ID_REUSEADDR, OptLen: 4}, 0},
		{"query_addr", RDMA_USER_CM_CMD_QUERY, &UCMQuery{Response: 0x7f00aabbcf00, ID: 3, Option: RDMA_USER_CM_QUERY_ADDR}, 280},
		{"destroy_id", RDMA_USER_CM_CMD_DESTROY_ID, &UCMDestroyID{Response: 0x7f00aabbd000, ID: 3}, 4},
		{"resolve_ib_service", RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, &ibs, 0},
		{"write_cm_event", RDMA_USER_CM_CMD_WRITE_CM_EVENT, &wce, 0},
		{"join_mcast", RDMA_USER_CM_CMD_JOIN_MCAST, &UCMJoinMcast{Response: 0x1000, UID: 0x2000, ID: 6, JoinFlags: RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, AddrSize: nmc, Addr: mc}, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := golden(t, c.name)
			got, err := EncodeUCMCommand(c.cmd, c.body, c.out)
			if err != nil {
				t.Fatalf("EncodeUCMCommand: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("bytes differ from C at offset %d\n got %x\nwant %x", firstDiff(got, want), got, want)
			}
			// Appending keeps what was there.
			pre := []byte("xy")
			app, err := AppendUCMCommand(pre, c.cmd, c.body, c.out)
			if err != nil || !bytes.Equal(app[:2], pre) || !bytes.Equal(app[2:], want) {
				t.Errorf("AppendUCMCommand = %x, %v", app, err)
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestEncodeUCMCommandErrors(t *testing.T) {
	good4, n4, _ := SockaddrStorageFrom(mustAddrPort("10.0.0.1:1"))
	for _, c := range []struct {
		name string
		cmd  uint32
		body UCMBody
		out  int
		want string
	}{
		{"wrong body", RDMA_USER_CM_CMD_CONNECT, &UCMAccept{}, 0, "takes *abi.UCMConnect, got *abi.UCMAccept"},
		{"nil body", RDMA_USER_CM_CMD_LISTEN, nil, 0, "takes *abi.UCMListen"},
		{"unknown cmd", 99, &UCMListen{}, 0, "RDMA_USER_CM_CMD(99): not a command"},
		{"get option", RDMA_USER_CM_CMD_GET_OPTION, &UCMQuery{}, 0, "ENOSYS"},
		{"short response", RDMA_USER_CM_CMD_GET_EVENT, &UCMGetEvent{}, 100, "at least 324"},
		{"no response", RDMA_USER_CM_CMD_LISTEN, &UCMListen{}, 8, "has no response"},
		{"huge response", RDMA_USER_CM_CMD_GET_EVENT, &UCMGetEvent{}, 1 << 16, "out of range"},
		{"bad query option", RDMA_USER_CM_CMD_QUERY, &UCMQuery{Option: 7}, 280, "option 7"},
		{"addr size zero", RDMA_USER_CM_CMD_BIND, &UCMBind{Addr: good4}, 0, "AddrSize is 0"},
		{"addr size wrong", RDMA_USER_CM_CMD_BIND, &UCMBind{Addr: good4, AddrSize: 28}, 0, "AddrSize is 28"},
		{"dst size missing", RDMA_USER_CM_CMD_RESOLVE_ADDR, &UCMResolveAddr{DstAddr: good4}, 0, "DstSize is 0"},
		{"src size wrong", RDMA_USER_CM_CMD_RESOLVE_ADDR, &UCMResolveAddr{SrcAddr: good4, SrcSize: 48, DstAddr: good4, DstSize: n4}, 0, "SrcSize is 48"},
		{"join size wrong", RDMA_USER_CM_CMD_JOIN_MCAST, &UCMJoinMcast{AddrSize: 3}, 4, "AddrSize is 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := EncodeUCMCommand(c.cmd, c.body, c.out)
			if err == nil {
				t.Fatalf("no error, got %x", b)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func TestUCMRespSize(t *testing.T) {
	// Every response size must equal the Go struct the response decodes into.
	for _, c := range []struct {
		cmd  uint32
		body UCMBody
		resp any
	}{
		{RDMA_USER_CM_CMD_CREATE_ID, &UCMCreateID{}, UCMCreateIDResp{}},
		{RDMA_USER_CM_CMD_JOIN_MCAST, &UCMJoinMcast{}, UCMCreateIDResp{}},
		{RDMA_USER_CM_CMD_JOIN_IP_MCAST, &UCMJoinIPMcast{}, UCMCreateIDResp{}},
		{RDMA_USER_CM_CMD_DESTROY_ID, &UCMDestroyID{}, UCMDestroyIDResp{}},
		{RDMA_USER_CM_CMD_LEAVE_MCAST, &UCMDestroyID{}, UCMDestroyIDResp{}},
		{RDMA_USER_CM_CMD_MIGRATE_ID, &UCMMigrateID{}, UCMMigrateResp{}},
		{RDMA_USER_CM_CMD_QUERY_ROUTE, &UCMQuery{}, UCMQueryRouteResp{}},
		{RDMA_USER_CM_CMD_QUERY, &UCMQuery{Option: RDMA_USER_CM_QUERY_ADDR}, UCMQueryAddrResp{}},
		{RDMA_USER_CM_CMD_QUERY, &UCMQuery{Option: RDMA_USER_CM_QUERY_GID}, UCMQueryAddrResp{}},
		{RDMA_USER_CM_CMD_QUERY, &UCMQuery{Option: RDMA_USER_CM_QUERY_PATH}, UCMQueryPathResp{}},
		{RDMA_USER_CM_CMD_QUERY, &UCMQuery{Option: RDMA_USER_CM_QUERY_IB_SERVICE}, UCMQueryIBServiceResp{}},
	} {
		got, err := UCMRespSize(c.cmd, c.body)
		if want := binary.Size(c.resp); err != nil || got != want {
			t.Errorf("UCMRespSize(%s) = %d, %v; want %d (%T)", UCMCmdString(c.cmd), got, err, want, c.resp)
		}
	}
	if binary.Size(UCMEventResp{}) != SizeofUCMEventResp || binary.Size(IBPathRecData{}) != SizeofIBPathRecData ||
		binary.Size(QPAttr{}) != SizeofIBUverbsQPAttr || binary.Size(IBUserServiceRec{}) != SizeofIBUserServiceRec ||
		binary.Size(UCMCmdHdr{}) != SizeofUCMCmdHdr || binary.Size(UCMEventResp{}.Param) != binary.Size(UCMUDParam{}) {
		t.Error("a Sizeof constant disagrees with its struct")
	}
	for cmd := uint32(0); cmd < uint32(len(ucmCmdNames)); cmd++ {
		if cmd == RDMA_USER_CM_CMD_GET_OPTION {
			continue
		}
		if want, _ := ucmBodyOK(cmd, nil); want == "" {
			t.Errorf("%s has no body type", UCMCmdString(cmd))
		}
	}
}

func TestDecodeUCMEventRespGolden(t *testing.T) {
	e, err := DecodeUCMEventResp(golden(t, "event_conn"))
	if err != nil {
		t.Fatal(err)
	}
	if e.UID != 0x0102030405060708 || e.ID != 9 || e.EventType() != RDMA_CM_EVENT_CONNECT_REQUEST || e.Status != 0 ||
		e.ECE != (UCMECE{VendorID: 0x15b3, AttrMod: 0x77}) {
		t.Errorf("header fields: %+v", e)
	}
	p := e.ConnParam()
	if p.QPNum != 0xabcdef || p.PrivateDataLen != 56 || p.ResponderResources != 16 || p.InitiatorDepth != 8 ||
		p.FlowControl != 1 || p.RetryCount != 7 || p.RNRRetryCount != 6 || p.Valid != 0 {
		t.Errorf("conn param: %+v", p)
	}
	if d := p.Data(); len(d) != 56 || string(d[:8]) != "private!" {
		t.Errorf("private data %q", d)
	}
	// Re-encoding the param reproduces the C bytes.
	e2 := e
	e2.SetConnParam(&p)
	if e2.Param != e.Param {
		t.Error("SetConnParam(ConnParam()) changed Param")
	}

	u, err := DecodeUCMEventResp(golden(t, "event_ud"))
	if err != nil {
		t.Fatal(err)
	}
	if u.UID != 0xfeed || u.ID != 10 || u.EventType() != RDMA_CM_EVENT_ESTABLISHED || u.StatusCode() != -110 {
		t.Errorf("ud header fields: %+v", u)
	}
	ud := u.UDParam()
	if ud.QPNum != 0x345 || ud.QKey != 0x01234567 || string(ud.Data()) != "ud" {
		t.Errorf("ud param: %+v", ud)
	}
	want := AHAttr{DLID: 0xbeef, IsGlobal: 1, PortNum: 1}
	want.GRH = GlobalRoute{FlowLabel: 0x54321, SGIDIndex: 1, HopLimit: 64}
	for i := range want.GRH.DGID {
		want.GRH.DGID[i] = uint8(i)
	}
	if ud.AHAttr != want {
		t.Errorf("ah_attr %+v, want %+v", ud.AHAttr, want)
	}
	var u2 UCMEventResp
	u2.SetUDParam(&ud)
	if u2.Param != u.Param {
		t.Error("SetUDParam(UDParam()) changed Param")
	}
}

func TestDecodeUCMEventRespLengths(t *testing.T) {
	full := golden(t, "event_conn")
	if _, err := DecodeUCMEventResp(full[:MinSizeofUCMEventResp-1]); err == nil || !strings.Contains(err.Error(), "at least 324") {
		t.Errorf("short event: err = %v", err)
	}
	// An old kernel's event (no reserved, no ece) decodes with a zero ECE.
	e, err := DecodeUCMEventResp(full[:MinSizeofUCMEventResp])
	if err != nil {
		t.Fatal(err)
	}
	if e.ECE != (UCMECE{}) || e.ConnParam().QPNum != 0xabcdef {
		t.Errorf("old-kernel event: %+v", e)
	}
	// Trailing bytes are ignored.
	if _, err := DecodeUCMEventResp(append(full, 1, 2, 3)); err != nil {
		t.Error(err)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	for _, n := range []string{"event_conn", "event_ud"} {
		b, _ := hex.DecodeString(ucmGolden[n])
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, MinSizeofUCMEventResp))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeUCMEventResp(b)
		if err != nil {
			if len(b) >= MinSizeofUCMEventResp {
				t.Fatalf("%d bytes rejected: %v", len(b), err)
			}
			return
		}
		_ = e.EventType().String()
		c, u := e.ConnParam(), e.UDParam()
		_, _ = c.Data(), u.Data()
		// Encoding the decoded event reproduces the input's bytes.
		enc, err := binary.Append(nil, binary.NativeEndian, &e)
		if err != nil {
			t.Fatal(err)
		}
		n := min(len(b), SizeofUCMEventResp)
		if !bytes.Equal(enc[:n], b[:n]) || len(enc) != SizeofUCMEventResp {
			t.Fatalf("round trip differs at %d", firstDiff(enc, b))
		}
		e.SetConnParam(&c)
		if e.ConnParam() != c {
			t.Fatal("conn param does not round-trip")
		}
		e.SetUDParam(&u)
		if e.UDParam() != u {
			t.Fatal("ud param does not round-trip")
		}
	})
}

func TestSockaddr(t *testing.T) {
	for _, c := range []struct {
		in   string
		fam  uint16
		size uint16
	}{
		{"192.168.1.2:4791", AF_INET, SizeofSockaddrIn},
		{"[::1]:80", AF_INET6, SizeofSockaddrIn6},
		{"[fe80::1%7]:1", AF_INET6, SizeofSockaddrIn6},
		{"[::ffff:10.0.0.1]:9", AF_INET6, SizeofSockaddrIn6},
	} {
		ap := mustAddrPort(c.in)
		s, n, err := SockaddrStorageFrom(ap)
		if err != nil || n != c.size || s.Family() != c.fam || s.Size() != c.size {
			t.Errorf("%s: size %d family %d err %v", c.in, n, s.Family(), err)
			continue
		}
		if got, err := s.AddrPort(); err != nil || got != ap {
			t.Errorf("%s: storage round trip %v, %v", c.in, got, err)
		}
		s6, err := SockaddrIn6From(ap)
		if err != nil || s6.Family() != c.fam || !bytes.Equal(s6[:], s[:SizeofSockaddrIn6]) {
			t.Errorf("%s: in6 %x, %v", c.in, s6, err)
		}
		if got, err := s6.AddrPort(); err != nil || got != ap {
			t.Errorf("%s: in6 round trip %v, %v", c.in, got, err)
		}
	}
	s4, err := SockaddrInFrom(mustAddrPort("1.2.3.4:258"))
	if want := "020001020102030400000000000000"; err != nil || hex.EncodeToString(s4[:])[:30] != want {
		t.Errorf("sockaddr_in = %x, %v", s4, err)
	}
	if ap, err := s4.AddrPort(); err != nil || ap.String() != "1.2.3.4:258" {
		t.Errorf("sockaddr_in decode %v %v", ap, err)
	}
	if _, err := SockaddrInFrom(mustAddrPort("[::1]:1")); err == nil {
		t.Error("SockaddrInFrom accepted IPv6")
	}
	if _, _, err := SockaddrStorageFrom(mustAddrPort("[fe80::1%eth0]:1")); err == nil || !strings.Contains(err.Error(), "numeric interface index") {
		t.Errorf("named zone: %v", err)
	}
	if _, _, err := SockaddrStorageFrom(netip.AddrPort{}); err == nil {
		t.Error("zero AddrPort accepted")
	}
	var bad SockaddrStorage
	bad[0] = 99
	if _, err := bad.AddrPort(); err == nil || !strings.Contains(err.Error(), "family 99") {
		t.Errorf("family 99: %v", err)
	}
	if _, err := bad.IB(); err == nil {
		t.Error("IB() of family 99")
	}
	if bad.Size() != 0 {
		t.Error("size of family 99")
	}

	var gid [16]byte
	gid[0], gid[15] = 0xfe, 0x01
	ib := SockaddrIBFrom(0x8001, 0xabcde, gid, 0x1060000000000001, 0xffff, 5)
	var st SockaddrStorage
	if n := st.SetIB(ib); n != SizeofSockaddrIB || st.Size() != n {
		t.Errorf("SetIB size %d", n)
	}
	back, err := st.IB()
	if err != nil || back != ib || back.Family() != AF_IB || back.PKey() != 0x8001 || back.FlowInfo() != 0xabcde ||
		back.GID() != gid || back.SID() != 0x1060000000000001 || back.SIDMask() != 0xffff || back.ScopeID() != 5 {
		t.Errorf("sockaddr_ib round trip: %x %v", back, err)
	}
}

func TestDecodeUCMResp(t *testing.T) {
	b := make([]byte, 280)
	binary.NativeEndian.PutUint64(b, 0x1122)
	b[8] = 1
	binary.NativeEndian.PutUint32(b[272:], 3)
	var r UCMQueryAddrResp
	if err := DecodeUCMResp(b, &r); err != nil || r.NodeGUID != 0x1122 || r.PortNum != 1 || r.IBDevIndex != 3 {
		t.Errorf("query addr resp %+v %v", r, err)
	}
	if err := DecodeUCMResp(b[:279], &r); err == nil {
		t.Error("short response accepted")
	}

	p := make([]byte, 8+2*SizeofIBPathRecData)
	binary.NativeEndian.PutUint32(p, 2)
	binary.NativeEndian.PutUint32(p[8:], IB_PATH_PRIMARY|IB_PATH_BIDIRECTIONAL)
	binary.NativeEndian.PutUint32(p[8+SizeofIBPathRecData+8+15*4:], 0xdead)
	h, paths, err := DecodeUCMQueryPathResp(p)
	if err != nil || h.NumPaths != 2 || len(paths) != 2 || paths[0].Flags != IB_PATH_PRIMARY|IB_PATH_BIDIRECTIONAL || paths[1].PathRec[15] != 0xdead {
		t.Errorf("query path resp %+v %+v %v", h, paths, err)
	}
	if _, _, err := DecodeUCMQueryPathResp(p[:len(p)-1]); err == nil {
		t.Error("truncated path list accepted")
	}
	binary.NativeEndian.PutUint32(p, 0xffffffff)
	if _, _, err := DecodeUCMQueryPathResp(p); err == nil {
		t.Error("huge num_paths accepted")
	}
}

func TestPrivateData(t *testing.T) {
	var p UCMConnParam
	if err := p.SetData(make([]byte, 256)); err == nil {
		t.Error("256 bytes of private data accepted")
	}
	if err := p.SetData([]byte("abc")); err != nil || string(p.Data()) != "abc" {
		t.Errorf("SetData: %q %v", p.Data(), err)
	}
	if err := p.SetData([]byte("x")); err != nil || string(p.Data()) != "x" || p.PrivateData[1] != 0 {
		t.Errorf("SetData did not clear the old data: %q", p.PrivateData[:3])
	}
	// Limits, from the IB CM message sizes minus the 36-byte cma_hdr.
	for _, c := range []struct{ got, want int }{
		{MaxPrivateDataTCPConnect, 56}, {MaxPrivateDataTCPAccept, 196}, {MaxPrivateDataReject, 148},
		{MaxPrivateDataUDPConnect, 180}, {MaxPrivateDataUDPAccept, 136}, {MaxPrivateDataIBConnect, 92},
	} {
		if c.got != c.want {
			t.Errorf("limit %d, want %d", c.got, c.want)
		}
	}
}

// The values below were read from rdma/rdma_user_cm.h and rdma/rdma_cma.h.
func TestUCMConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{
		{"RDMA_USER_CM_CMD_CREATE_ID", RDMA_USER_CM_CMD_CREATE_ID, 0},
		{"RDMA_USER_CM_CMD_INIT_QP_ATTR", RDMA_USER_CM_CMD_INIT_QP_ATTR, 11},
		{"RDMA_USER_CM_CMD_QUERY", RDMA_USER_CM_CMD_QUERY, 19},
		{"RDMA_USER_CM_CMD_JOIN_MCAST", RDMA_USER_CM_CMD_JOIN_MCAST, 22},
		{"RDMA_PS_TCP", RDMA_PS_TCP, 0x0106},
		{"RDMA_PS_UDP", RDMA_PS_UDP, 0x0111},
		{"RDMA_PS_IB", RDMA_PS_IB, 0x013f},
		{"RDMA_PS_IPOIB", RDMA_PS_IPOIB, 2},
		{"RDMA_OPTION_ID_ACK_TIMEOUT", RDMA_OPTION_ID_ACK_TIMEOUT, 3},
		{"RDMA_OPTION_IB_PATH", RDMA_OPTION_IB_PATH, 1},
		{"IB_PATH_BIDIRECTIONAL", IB_PATH_BIDIRECTIONAL, 0x28},
		{"AF_IB", AF_IB, 27},
		{"AF_INET6", AF_INET6, 10},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, header says %d", c.name, c.got, c.want)
		}
	}
	if len(ucmCmdNames) != RDMA_USER_CM_CMD_WRITE_CM_EVENT+1 {
		t.Errorf("%d command names", len(ucmCmdNames))
	}
	for _, c := range []struct {
		cmd  uint32
		want string
	}{
		{RDMA_USER_CM_CMD_CREATE_ID, "RDMA_USER_CM_CMD_CREATE_ID"},
		{RDMA_USER_CM_CMD_INIT_QP_ATTR, "RDMA_USER_CM_CMD_INIT_QP_ATTR"},
		{RDMA_USER_CM_CMD_JOIN_MCAST, "RDMA_USER_CM_CMD_JOIN_MCAST"},
		{RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, "RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE"},
		{RDMA_USER_CM_CMD_WRITE_CM_EVENT, "RDMA_USER_CM_CMD_WRITE_CM_EVENT"},
		{25, "RDMA_USER_CM_CMD(25)"},
	} {
		if got := UCMCmdString(c.cmd); got != c.want {
			t.Errorf("UCMCmdString(%d) = %q, want %q", c.cmd, got, c.want)
		}
	}
	for _, c := range []struct {
		e    CMEventType
		want string
	}{
		{RDMA_CM_EVENT_ADDR_RESOLVED, "RDMA_CM_EVENT_ADDR_RESOLVED"},
		{RDMA_CM_EVENT_CONNECT_REQUEST, "RDMA_CM_EVENT_CONNECT_REQUEST"},
		{RDMA_CM_EVENT_ESTABLISHED, "RDMA_CM_EVENT_ESTABLISHED"},
		{RDMA_CM_EVENT_DISCONNECTED, "RDMA_CM_EVENT_DISCONNECTED"},
		{RDMA_CM_EVENT_TIMEWAIT_EXIT, "RDMA_CM_EVENT_TIMEWAIT_EXIT"},
		{RDMA_CM_EVENT_ADDRINFO_RESOLVED, "RDMA_CM_EVENT_ADDRINFO_RESOLVED"},
		{RDMA_CM_EVENT_INTERNAL, "RDMA_CM_EVENT_INTERNAL"},
		{20, "RDMA_CM_EVENT(20)"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("%d.String() = %q, want %q", uint32(c.e), got, c.want)
		}
	}
	if int(RDMA_CM_EVENT_TIMEWAIT_EXIT) != 15 || int(RDMA_CM_EVENT_ESTABLISHED) != 9 || int(RDMA_CM_EVENT_USER) != 18 || len(cmEventNames) != 20 {
		t.Error("event codes disagree with rdma_cma.h")
	}
}

// newUCMBody returns a zero body of the struct command cmd takes.
func newUCMBody(cmd uint32) UCMBody {
	switch cmd {
	case RDMA_USER_CM_CMD_CREATE_ID:
		return new(UCMCreateID)
	case RDMA_USER_CM_CMD_DESTROY_ID, RDMA_USER_CM_CMD_LEAVE_MCAST:
		return new(UCMDestroyID)
	case RDMA_USER_CM_CMD_BIND_IP:
		return new(UCMBindIP)
	case RDMA_USER_CM_CMD_RESOLVE_IP:
		return new(UCMResolveIP)
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		return new(UCMResolveRoute)
	case RDMA_USER_CM_CMD_QUERY_ROUTE, RDMA_USER_CM_CMD_QUERY:
		return new(UCMQuery)
	case RDMA_USER_CM_CMD_CONNECT:
		return new(UCMConnect)
	case RDMA_USER_CM_CMD_LISTEN:
		return new(UCMListen)
	case RDMA_USER_CM_CMD_ACCEPT:
		return new(UCMAccept)
	case RDMA_USER_CM_CMD_REJECT:
		return new(UCMReject)
	case RDMA_USER_CM_CMD_DISCONNECT:
		return new(UCMDisconnect)
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return new(UCMInitQPAttr)
	case RDMA_USER_CM_CMD_GET_EVENT:
		return new(UCMGetEvent)
	case RDMA_USER_CM_CMD_SET_OPTION:
		return new(UCMSetOption)
	case RDMA_USER_CM_CMD_NOTIFY:
		return new(UCMNotify)
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
		return new(UCMJoinIPMcast)
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return new(UCMMigrateID)
	case RDMA_USER_CM_CMD_BIND:
		return new(UCMBind)
	case RDMA_USER_CM_CMD_RESOLVE_ADDR:
		return new(UCMResolveAddr)
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		return new(UCMJoinMcast)
	case RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE:
		return new(UCMResolveIBService)
	case RDMA_USER_CM_CMD_WRITE_CM_EVENT:
		return new(UCMWriteCMEvent)
	}
	return nil
}

// TestLibrdmacmWrites decodes every rdma_cm write librdmacm made in the lab
// (testdata/librdmacm_writes.txt) with the Go structs and re-encodes it with
// EncodeUCMCommand: the bytes must come out the same.
func TestLibrdmacmWrites(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("captured on little-endian x86_64")
	}
	data, err := os.ReadFile("testdata/librdmacm_writes.txt")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint32]int{}
	prog := ""
	for i, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(line, "# "); ok {
			prog = p
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		var hdr UCMCmdHdr
		if _, err := binary.Decode(b, binary.NativeEndian, &hdr); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		body := newUCMBody(hdr.Cmd)
		if body == nil {
			t.Errorf("line %d (%s): librdmacm wrote %s, which abi has no struct for", i+1, prog, UCMCmdString(hdr.Cmd))
			continue
		}
		if want := binary.Size(body); int(hdr.In) != want || len(b) != SizeofUCMCmdHdr+want {
			t.Errorf("line %d (%s): %s with In %d and %d bytes; %T is %d bytes", i+1, prog, UCMCmdString(hdr.Cmd), hdr.In, len(b), body, want)
			continue
		}
		mustDecode(b[SizeofUCMCmdHdr:], body)
		got, err := EncodeUCMCommand(hdr.Cmd, body, int(hdr.Out))
		if err != nil {
			t.Errorf("line %d (%s): %s: re-encoding what librdmacm wrote fails: %v", i+1, prog, UCMCmdString(hdr.Cmd), err)
			continue
		}
		if !bytes.Equal(got, b) {
			t.Errorf("line %d (%s): %s re-encodes differently at byte %d", i+1, prog, UCMCmdString(hdr.Cmd), firstDiff(got, b))
		}
		seen[hdr.Cmd]++
		// A few values that must mean what the Go names say.
		switch c := body.(type) {
		case *UCMCreateID:
			if c.PS == RDMA_PS_IB { // librdmacm's AF_IB probe
				break
			}
			want := map[string]struct {
				ps uint16
				qp uint8
			}{"rping_c": {RDMA_PS_TCP, 2}, "rping_s": {RDMA_PS_TCP, 2}, "udaddy_c": {RDMA_PS_UDP, 4}, "udaddy_s": {RDMA_PS_UDP, 4}}[prog]
			if c.PS != want.ps || c.QPType != want.qp {
				t.Errorf("%s: create_id ps %#x qp_type %d, want %#x %d", prog, c.PS, c.QPType, want.ps, want.qp)
			}
		case *UCMResolveAddr:
			if ap, err := c.DstAddr.AddrPort(); err != nil || !ap.Addr().Is4() || c.DstSize != SizeofSockaddrIn {
				t.Errorf("%s: resolve_addr destination %v (%v), size %d", prog, ap, err, c.DstSize)
			}
		case *UCMConnect:
			// rping (RC) asks for 7 retries; udaddy (UD, a SIDR request) none.
			p := c.ConnParam
			if p.Valid != 1 || p.QPNum == 0 || (prog == "rping_c") != (p.RetryCount == 7 && p.RNRRetryCount == 7) {
				t.Errorf("%s: connect qp %d valid %d retry %d rnr %d", prog, p.QPNum, p.Valid, p.RetryCount, p.RNRRetryCount)
			}
		}
	}
	for _, cmd := range []uint32{
		RDMA_USER_CM_CMD_CREATE_ID, RDMA_USER_CM_CMD_DESTROY_ID, RDMA_USER_CM_CMD_RESOLVE_ROUTE,
		RDMA_USER_CM_CMD_CONNECT, RDMA_USER_CM_CMD_LISTEN, RDMA_USER_CM_CMD_ACCEPT, RDMA_USER_CM_CMD_DISCONNECT,
		RDMA_USER_CM_CMD_INIT_QP_ATTR, RDMA_USER_CM_CMD_GET_EVENT, RDMA_USER_CM_CMD_QUERY,
		RDMA_USER_CM_CMD_BIND, RDMA_USER_CM_CMD_RESOLVE_ADDR,
	} {
		if seen[cmd] == 0 {
			t.Errorf("no %s in the capture", UCMCmdString(cmd))
		}
	}
	t.Logf("re-encoded %d librdmacm writes: %v", func() (n int) {
		for _, v := range seen {
			n += v
		}
		return
	}(), seen)
}

func TestDecodeUCMInitQPAttrResp(t *testing.T) {
	b := golden(t, "init_qp_attr_resp")
	a, err := DecodeUCMInitQPAttrResp(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.QPAttrMask != 0x1a5 || a.QPState != 2 || a.PathMTU != 3 || a.Qkey != 0x01234567 || a.RqPSN != 0xabc ||
		a.DestQPNum != 0x11 || a.QPAccessFlags != 7 || a.AHAttr.GRH.DGID[15] != 0x42 || a.AHAttr.GRH.HopLimit != 1 ||
		a.AHAttr.IsGlobal != 1 || a.AHAttr.PortNum != 1 || a.MaxSendWR != 16 || a.MaxRdAtomic != 4 ||
		a.MaxDestRdAtomic != 8 || a.MinRnrTimer != 12 || a.PortNum != 1 || a.Timeout != 14 || a.RetryCnt != 7 || a.RnrRetry != 6 {
		t.Errorf("decoded %+v", a)
	}
	if _, err := DecodeUCMInitQPAttrResp(b[:143]); err == nil {
		t.Error("143-byte response accepted")
	}
}

func TestUCMUserEventAndIBService(t *testing.T) {
	e, err := DecodeUCMEventResp(golden(t, "event_user"))
	if err != nil {
		t.Fatal(err)
	}
	if e.EventType() != RDMA_CM_EVENT_USER || e.Status != 0x11223344 || e.Arg() != 0x55667788aabbccdd {
		t.Errorf("user event: %v status %#x arg %#x", e.EventType(), e.Status, e.Arg())
	}

	rec := make([]byte, 8+2*SizeofIBUserServiceRec)
	binary.NativeEndian.PutUint32(rec, 2)
	second := rec[8+SizeofIBUserServiceRec:]
	copy(second[48:], "svc") // name
	binary.BigEndian.PutUint64(second[0:], 0x1234)
	h, recs, err := DecodeUCMQueryIBServiceResp(rec)
	if err != nil || h.NumServiceRecs != 2 || len(recs) != 2 || string(recs[1].Name[:3]) != "svc" || binary.BigEndian.Uint64(recs[1].ID[:]) != 0x1234 {
		t.Errorf("ib service resp %+v %d %v", h, len(recs), err)
	}
	if _, _, err := DecodeUCMQueryIBServiceResp(rec[:len(rec)-1]); err == nil {
		t.Error("truncated records accepted")
	}
	if _, _, err := DecodeUCMQueryIBServiceResp(rec[:7]); err == nil {
		t.Error("7-byte response accepted")
	}
}
