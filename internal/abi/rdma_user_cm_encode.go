// Copyright 2026 The rdmago Authors.

package abi

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// Encoding helpers for the rdma_cm write() commands of rdma_user_cm.go: the
// names of commands and events, private data, the param unions, and the
// encoders and decoders of command and response buffers. They perform no
// system call.

var ucmCmdNames = [...]string{
	"CREATE_ID", "DESTROY_ID", "BIND_IP", "RESOLVE_IP", "RESOLVE_ROUTE",
	"QUERY_ROUTE", "CONNECT", "LISTEN", "ACCEPT", "REJECT", "DISCONNECT",
	"INIT_QP_ATTR", "GET_EVENT", "GET_OPTION", "SET_OPTION", "NOTIFY",
	"JOIN_IP_MCAST", "LEAVE_MCAST", "MIGRATE_ID", "QUERY", "BIND",
	"RESOLVE_ADDR", "JOIN_MCAST", "RESOLVE_IB_SERVICE", "WRITE_CM_EVENT",
}

// UCMCmdString names an rdma_ucm command number: "RDMA_USER_CM_CMD_CONNECT",
// or "RDMA_USER_CM_CMD(99)" for a number this file does not know.
func UCMCmdString(cmd uint32) string {
	if cmd < uint32(len(ucmCmdNames)) {
		return "RDMA_USER_CM_CMD_" + ucmCmdNames[cmd]
	}
	return "RDMA_USER_CM_CMD(" + strconv.FormatUint(uint64(cmd), 10) + ")"
}

var cmEventNames = [...]string{
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR",
	"CONNECT_REQUEST", "CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE",
	"REJECTED", "ESTABLISHED", "DISCONNECTED", "DEVICE_REMOVAL",
	"MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE", "TIMEWAIT_EXIT",
	"ADDRINFO_RESOLVED", "ADDRINFO_ERROR", "USER", "INTERNAL",
}

// String returns the C name ("RDMA_CM_EVENT_ESTABLISHED"), or
// "RDMA_CM_EVENT(25)" for a code newer than this port.
func (e CMEventType) String() string {
	if e < CMEventType(len(cmEventNames)) {
		return "RDMA_CM_EVENT_" + cmEventNames[e]
	}
	return "RDMA_CM_EVENT(" + strconv.FormatUint(uint64(e), 10) + ")"
}

// Data returns the private data, PrivateData[:PrivateDataLen].
func (p *UCMConnParam) Data() []byte { return p.PrivateData[:p.PrivateDataLen] }

// SetData copies b into the private data and sets its length.
func (p *UCMConnParam) SetData(b []byte) error {
	return setPrivateData(p.PrivateData[:], &p.PrivateDataLen, b)
}

func setPrivateData(dst []byte, n *uint8, b []byte) error {
	if len(b) > 255 {
		return fmt.Errorf("private data is %d bytes; rdma_cm carries at most 255 (and less per port space, e.g. %d for an RDMA_PS_TCP connect)", len(b), MaxPrivateDataTCPConnect)
	}
	clear(dst)
	copy(dst, b)
	*n = uint8(len(b))
	return nil
}

// Data returns the private data, PrivateData[:PrivateDataLen].
func (p *UCMUDParam) Data() []byte { return p.PrivateData[:p.PrivateDataLen] }

// SetData copies b into the private data and sets its length.
func (p *UCMUDParam) SetData(b []byte) error {
	return setPrivateData(p.PrivateData[:], &p.PrivateDataLen, b)
}

// SetData copies b into the private data and sets its length.
func (r *UCMReject) SetData(b []byte) error {
	return setPrivateData(r.PrivateData[:], &r.PrivateDataLen, b)
}

// EventType returns Event as a CMEventType.
func (e *UCMEventResp) EventType() CMEventType { return CMEventType(e.Event) }

// StatusCode returns Status as the signed value the kernel stored (an int in
// struct rdma_cm_event): 0, a negative errno, or a reject reason.
func (e *UCMEventResp) StatusCode() int32 { return int32(e.Status) }

// ConnParam decodes Param as the conn member of the union (RC events).
func (e *UCMEventResp) ConnParam() UCMConnParam {
	var p UCMConnParam
	mustDecode(e.Param[:], &p)
	return p
}

// UDParam decodes Param as the ud member of the union (RDMA_PS_UDP and
// multicast events).
func (e *UCMEventResp) UDParam() UCMUDParam {
	var p UCMUDParam
	mustDecode(e.Param[:], &p)
	return p
}

// Arg returns the union's arg32 pair as the 64-bit value a WRITE_CM_EVENT
// stored (RDMA_CM_EVENT_USER events; newer than Linux 6.12).
func (e *UCMEventResp) Arg() uint64 { return binary.NativeEndian.Uint64(e.Param[:8]) }

// SetConnParam stores p in Param (the rest of the union is zeroed).
func (e *UCMEventResp) SetConnParam(p *UCMConnParam) {
	e.Param = [SizeofUCMEventParam]byte{}
	mustEncode(e.Param[:], p)
}

// SetUDParam stores p in Param.
func (e *UCMEventResp) SetUDParam(p *UCMUDParam) {
	e.Param = [SizeofUCMEventParam]byte{}
	mustEncode(e.Param[:], p)
}

// SetArg stores arg, the value the event's UCMEventResp.Arg returns.
func (w *UCMWriteCMEvent) SetArg(arg uint64) {
	w.Param = [SizeofUCMEventParam]byte{}
	binary.NativeEndian.PutUint64(w.Param[:], arg)
}

// mustDecode and mustEncode work on fixed-size structs and buffers sized at
// compile time; an error is a bug in this file.
func mustDecode(b []byte, v any) {
	if _, err := binary.Decode(b, binary.NativeEndian, v); err != nil {
		panic("abi: " + err.Error())
	}
}

func mustEncode(b []byte, v any) {
	if _, err := binary.Encode(b, binary.NativeEndian, v); err != nil {
		panic("abi: " + err.Error())
	}
}

// UCMBody is a command struct that EncodeUCMCommand accepts: a pointer to
// one of the UCM* command types. The interface is sealed.
type UCMBody interface{ isUCMBody() }

func (*UCMCreateID) isUCMBody()         {}
func (*UCMDestroyID) isUCMBody()        {}
func (*UCMBindIP) isUCMBody()           {}
func (*UCMBind) isUCMBody()             {}
func (*UCMResolveIP) isUCMBody()        {}
func (*UCMResolveAddr) isUCMBody()      {}
func (*UCMResolveRoute) isUCMBody()     {}
func (*UCMQuery) isUCMBody()            {}
func (*UCMConnect) isUCMBody()          {}
func (*UCMListen) isUCMBody()           {}
func (*UCMAccept) isUCMBody()           {}
func (*UCMReject) isUCMBody()           {}
func (*UCMDisconnect) isUCMBody()       {}
func (*UCMInitQPAttr) isUCMBody()       {}
func (*UCMNotify) isUCMBody()           {}
func (*UCMJoinIPMcast) isUCMBody()      {}
func (*UCMJoinMcast) isUCMBody()        {}
func (*UCMGetEvent) isUCMBody()         {}
func (*UCMSetOption) isUCMBody()        {}
func (*UCMMigrateID) isUCMBody()        {}
func (*UCMResolveIBService) isUCMBody() {}
func (*UCMWriteCMEvent) isUCMBody()     {}

// UCMRespSize returns the smallest response buffer (the header's Out) the
// kernel accepts for command cmd with body, and 0 for commands without a
// response. For QUERY with RDMA_USER_CM_QUERY_PATH it is the fixed part only;
// room for the paths comes on top (72 bytes each, at most 6 are returned).
func UCMRespSize(cmd uint32, body UCMBody) (int, error) {
	switch cmd {
	case RDMA_USER_CM_CMD_CREATE_ID, RDMA_USER_CM_CMD_JOIN_IP_MCAST, RDMA_USER_CM_CMD_JOIN_MCAST:
		return 4, nil // rdma_ucm_create_id_resp
	case RDMA_USER_CM_CMD_DESTROY_ID, RDMA_USER_CM_CMD_LEAVE_MCAST, RDMA_USER_CM_CMD_MIGRATE_ID:
		return 4, nil // rdma_ucm_destroy_id_resp, rdma_ucm_migrate_resp
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		return 208, nil // rdma_ucm_query_route_resp
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return SizeofIBUverbsQPAttr, nil
	case RDMA_USER_CM_CMD_GET_EVENT:
		return MinSizeofUCMEventResp, nil
	case RDMA_USER_CM_CMD_QUERY:
		q, ok := body.(*UCMQuery)
		if !ok {
			return 0, fmt.Errorf("%s takes *abi.UCMQuery, got %T", UCMCmdString(cmd), body)
		}
		switch q.Option {
		case RDMA_USER_CM_QUERY_ADDR, RDMA_USER_CM_QUERY_GID:
			return 280, nil // rdma_ucm_query_addr_resp
		case RDMA_USER_CM_QUERY_PATH:
			return 8, nil // rdma_ucm_query_path_resp
		case RDMA_USER_CM_QUERY_IB_SERVICE:
			return 8, nil // rdma_ucm_query_ib_service_resp
		}
		return 0, fmt.Errorf("%s: option %d is not RDMA_USER_CM_QUERY_ADDR, _PATH, _GID or _IB_SERVICE", UCMCmdString(cmd), q.Option)
	}
	return 0, nil
}

// ucmBodyOK reports whether body is the struct command cmd takes.
func ucmBodyOK(cmd uint32, body UCMBody) (want string, ok bool) {
	switch cmd {
	case RDMA_USER_CM_CMD_CREATE_ID:
		_, ok = body.(*UCMCreateID)
		return "*abi.UCMCreateID", ok
	case RDMA_USER_CM_CMD_DESTROY_ID, RDMA_USER_CM_CMD_LEAVE_MCAST:
		_, ok = body.(*UCMDestroyID)
		return "*abi.UCMDestroyID", ok
	case RDMA_USER_CM_CMD_BIND_IP:
		_, ok = body.(*UCMBindIP)
		return "*abi.UCMBindIP", ok
	case RDMA_USER_CM_CMD_RESOLVE_IP:
		_, ok = body.(*UCMResolveIP)
		return "*abi.UCMResolveIP", ok
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		_, ok = body.(*UCMResolveRoute)
		return "*abi.UCMResolveRoute", ok
	case RDMA_USER_CM_CMD_QUERY_ROUTE, RDMA_USER_CM_CMD_QUERY:
		_, ok = body.(*UCMQuery)
		return "*abi.UCMQuery", ok
	case RDMA_USER_CM_CMD_CONNECT:
		_, ok = body.(*UCMConnect)
		return "*abi.UCMConnect", ok
	case RDMA_USER_CM_CMD_LISTEN:
		_, ok = body.(*UCMListen)
		return "*abi.UCMListen", ok
	case RDMA_USER_CM_CMD_ACCEPT:
		_, ok = body.(*UCMAccept)
		return "*abi.UCMAccept", ok
	case RDMA_USER_CM_CMD_REJECT:
		_, ok = body.(*UCMReject)
		return "*abi.UCMReject", ok
	case RDMA_USER_CM_CMD_DISCONNECT:
		_, ok = body.(*UCMDisconnect)
		return "*abi.UCMDisconnect", ok
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		_, ok = body.(*UCMInitQPAttr)
		return "*abi.UCMInitQPAttr", ok
	case RDMA_USER_CM_CMD_GET_EVENT:
		_, ok = body.(*UCMGetEvent)
		return "*abi.UCMGetEvent", ok
	case RDMA_USER_CM_CMD_SET_OPTION:
		_, ok = body.(*UCMSetOption)
		return "*abi.UCMSetOption", ok
	case RDMA_USER_CM_CMD_NOTIFY:
		_, ok = body.(*UCMNotify)
		return "*abi.UCMNotify", ok
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
		_, ok = body.(*UCMJoinIPMcast)
		return "*abi.UCMJoinIPMcast", ok
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		_, ok = body.(*UCMMigrateID)
		return "*abi.UCMMigrateID", ok
	case RDMA_USER_CM_CMD_BIND:
		_, ok = body.(*UCMBind)
		return "*abi.UCMBind", ok
	case RDMA_USER_CM_CMD_RESOLVE_ADDR:
		_, ok = body.(*UCMResolveAddr)
		return "*abi.UCMResolveAddr", ok
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		_, ok = body.(*UCMJoinMcast)
		return "*abi.UCMJoinMcast", ok
	case RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE:
		_, ok = body.(*UCMResolveIBService)
		return "*abi.UCMResolveIBService", ok
	case RDMA_USER_CM_CMD_WRITE_CM_EVENT:
		_, ok = body.(*UCMWriteCMEvent)
		return "*abi.UCMWriteCMEvent", ok
	}
	return "", false
}

// checkAddrSize checks a size field against the family of its address.
func checkAddrSize(cmd uint32, field string, size uint16, s *SockaddrStorage, optional bool) error {
	if optional && size == 0 {
		return nil
	}
	if want := s.Size(); size == 0 || size != want {
		return fmt.Errorf("%s: %s is %d but the address has family %d (size %d); set it from SockaddrStorageFrom or SockaddrStorage.Size", UCMCmdString(cmd), field, size, s.Family(), want)
	}
	return nil
}

// EncodeUCMCommand returns the complete buffer for one write(2) of command
// cmd (an RDMA_USER_CM_CMD_*) to /dev/infiniband/rdma_cm: the rdma_ucm_cmd_hdr
// with In = the size of body and Out = out, followed by body. out is the size
// of the response buffer at body's Response (or OptVal) address; it must be
// at least UCMRespSize(cmd, body), and 0 for commands without a response. The
// caller stores the response address in body before encoding and keeps that
// memory alive and unmoved until write returns.
//
// It fails when body is not the struct cmd takes, when cmd is unknown or
// GET_OPTION (which kernels do not implement), when out is too small, or when
// an address size field does not match its address.
func EncodeUCMCommand(cmd uint32, body UCMBody, out int) ([]byte, error) {
	return AppendUCMCommand(nil, cmd, body, out)
}

// AppendUCMCommand is EncodeUCMCommand appending to dst.
func AppendUCMCommand(dst []byte, cmd uint32, body UCMBody, out int) ([]byte, error) {
	if cmd == RDMA_USER_CM_CMD_GET_OPTION {
		return dst, fmt.Errorf("%s: the kernel does not implement it (ENOSYS)", UCMCmdString(cmd))
	}
	want, ok := ucmBodyOK(cmd, body)
	if want == "" {
		return dst, fmt.Errorf("%s: not a command of rdma_cm ABI %d", UCMCmdString(cmd), RDMA_USER_CM_ABI_VERSION)
	}
	if !ok {
		return dst, fmt.Errorf("%s takes %s, got %T", UCMCmdString(cmd), want, body)
	}
	minOut, err := UCMRespSize(cmd, body)
	if err != nil {
		return dst, err
	}
	switch {
	case out < 0 || out > 0xffff:
		return dst, fmt.Errorf("%s: response size %d out of range 0..65535", UCMCmdString(cmd), out)
	case minOut == 0 && out != 0:
		return dst, fmt.Errorf("%s has no response; pass a response size of 0, not %d", UCMCmdString(cmd), out)
	case out < minOut:
		return dst, fmt.Errorf("%s: response buffer of %d bytes, the kernel needs at least %d", UCMCmdString(cmd), out, minOut)
	}
	switch b := body.(type) {
	case *UCMBind:
		err = checkAddrSize(cmd, "AddrSize", b.AddrSize, &b.Addr, false)
	case *UCMJoinMcast:
		err = checkAddrSize(cmd, "AddrSize", b.AddrSize, &b.Addr, false)
	case *UCMResolveAddr:
		if err = checkAddrSize(cmd, "SrcSize", b.SrcSize, &b.SrcAddr, true); err == nil {
			err = checkAddrSize(cmd, "DstSize", b.DstSize, &b.DstAddr, false)
		}
	}
	if err != nil {
		return dst, err
	}
	in := binary.Size(body)
	if in < 0 {
		return dst, fmt.Errorf("%s: %T is not a fixed-size struct", UCMCmdString(cmd), body)
	}
	hdr := UCMCmdHdr{Cmd: cmd, In: uint16(in), Out: uint16(out)}
	dst = binary.NativeEndian.AppendUint32(dst, hdr.Cmd)
	dst = binary.NativeEndian.AppendUint16(dst, hdr.In)
	dst = binary.NativeEndian.AppendUint16(dst, hdr.Out)
	return binary.Append(dst, binary.NativeEndian, body)
}

// UCMResp is a fixed-size response struct DecodeUCMResp fills: a pointer to
// UCMCreateIDResp, UCMDestroyIDResp, UCMMigrateResp, UCMQueryRouteResp,
// UCMQueryAddrResp, UCMQueryPathResp, UCMQueryIBServiceResp or UCMEventResp. The interface is sealed.
type UCMResp interface{ isUCMResp() }

func (*UCMCreateIDResp) isUCMResp()       {}
func (*UCMDestroyIDResp) isUCMResp()      {}
func (*UCMMigrateResp) isUCMResp()        {}
func (*UCMQueryRouteResp) isUCMResp()     {}
func (*UCMQueryAddrResp) isUCMResp()      {}
func (*UCMQueryPathResp) isUCMResp()      {}
func (*UCMQueryIBServiceResp) isUCMResp() {}
func (*UCMEventResp) isUCMResp()          {}

// DecodeUCMResp fills resp from the response buffer b the kernel wrote. b
// must be at least as large as the response struct.
func DecodeUCMResp(b []byte, resp UCMResp) error {
	n := binary.Size(resp)
	if n < 0 {
		return fmt.Errorf("rdma_cm response: %T is not a fixed-size struct", resp)
	}
	if len(b) < n {
		return fmt.Errorf("rdma_cm response %T: %d bytes, want %d", resp, len(b), n)
	}
	mustDecode(b[:n], resp)
	return nil
}

// DecodeUCMEventResp decodes an event as GET_EVENT wrote it. b must hold at
// least MinSizeofUCMEventResp bytes; missing trailing fields (reserved, ece)
// read as zero and bytes beyond SizeofUCMEventResp are ignored.
func DecodeUCMEventResp(b []byte) (UCMEventResp, error) {
	var e UCMEventResp
	if len(b) < MinSizeofUCMEventResp {
		return e, fmt.Errorf("rdma_cm event: %d bytes, want at least %d (give GET_EVENT an Out of %d)", len(b), MinSizeofUCMEventResp, SizeofUCMEventResp)
	}
	var full [SizeofUCMEventResp]byte
	copy(full[:], b)
	mustDecode(full[:], &e)
	return e, nil
}

// DecodeUCMInitQPAttrResp decodes the response of INIT_QP_ATTR: the QP
// attributes and, in QPAttrMask, the IB_QP_* mask to pass to MODIFY_QP.
func DecodeUCMInitQPAttrResp(b []byte) (QPAttr, error) {
	var a QPAttr
	if len(b) < SizeofIBUverbsQPAttr {
		return a, fmt.Errorf("rdma_cm init_qp_attr response: %d bytes, want %d", len(b), SizeofIBUverbsQPAttr)
	}
	mustDecode(b[:SizeofIBUverbsQPAttr], &a)
	return a, nil
}

// DecodeUCMQueryPathResp decodes the response of QUERY with
// RDMA_USER_CM_QUERY_PATH: the fixed part and its NumPaths path records. It
// fails if b is too short for the paths the kernel says it wrote.
func DecodeUCMQueryPathResp(b []byte) (UCMQueryPathResp, []IBPathRecData, error) {
	var r UCMQueryPathResp
	if err := DecodeUCMResp(b, &r); err != nil {
		return r, nil, err
	}
	rest := b[8:]
	if uint64(r.NumPaths)*SizeofIBPathRecData > uint64(len(rest)) {
		return r, nil, fmt.Errorf("rdma_cm query path: %d paths need %d bytes after the header, have %d (enlarge the response buffer)", r.NumPaths, uint64(r.NumPaths)*SizeofIBPathRecData, len(rest))
	}
	paths := make([]IBPathRecData, r.NumPaths)
	for i := range paths {
		mustDecode(rest[i*SizeofIBPathRecData:], &paths[i])
	}
	return r, paths, nil
}

// DecodeUCMQueryIBServiceResp decodes the response of QUERY with
// RDMA_USER_CM_QUERY_IB_SERVICE: the fixed part and its NumServiceRecs
// service records. It fails if b is too short for the records the kernel
// says it wrote.
func DecodeUCMQueryIBServiceResp(b []byte) (UCMQueryIBServiceResp, []IBUserServiceRec, error) {
	var r UCMQueryIBServiceResp
	if err := DecodeUCMResp(b, &r); err != nil {
		return r, nil, err
	}
	rest := b[8:]
	if need := uint64(r.NumServiceRecs) * SizeofIBUserServiceRec; need > uint64(len(rest)) {
		return r, nil, fmt.Errorf("rdma_cm query ib service: %d records need %d bytes after the header, have %d (enlarge the response buffer)", r.NumServiceRecs, need, len(rest))
	}
	recs := make([]IBUserServiceRec, r.NumServiceRecs)
	for i := range recs {
		mustDecode(rest[i*SizeofIBUserServiceRec:], &recs[i])
	}
	return r, recs, nil
}
