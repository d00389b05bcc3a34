// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The wire of librdmacm's stream rsockets (rdma-core librdmacm/rsocket.c and
// docs/rsocket, as rdma-core 44 has them), written from that description.

// ErrProtocol is matched (errors.Is) by every error that reports a peer
// breaking the rsocket protocol: bad connection data, a message type that
// does not exist, more data than it was given credits or buffer space for.
// The connection is closed when it happens.
var ErrProtocol = errors.New("rsocket protocol violation")

func protoErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrProtocol}, args...)...)
}

const (
	rsVersion = 1 // rs_conn_data.version

	connFlagNet   = 1 << 0 // RS_CONN_FLAG_NET: the sender is big-endian
	connFlagIOMap = 1 << 1 // RS_CONN_FLAG_IOMAP: target_iomap_size is valid

	connDataLen = 40 // sizeof(struct rs_conn_data)
	sgeLen      = 16 // sizeof(struct rs_sge)
	sglSize     = 2  // RS_SGL_SIZE: entries in a target SGL

	sndLowat     = 2048  // RS_SNDLOWAT
	olapStart    = 2048  // RS_OLAP_START_SIZE
	maxTransfer  = 65536 // RS_MAX_TRANSFER
	qpMinSize    = 16    // RS_QP_MIN_SIZE
	qpMaxSize    = 0xFFFE
	qpCtrlSize   = 4 // RS_QP_CTRL_SIZE: control messages in flight
	maxCtrlMsg   = sgeLen
	maxMsgData   = 1<<29 - 1
	maxSGLLength = 1 << 16 // a peer's target SGL longer than this is refused
)

// Message types: the top 3 bits of the immediate data (rs_msg_op).
const (
	opData    = 0 // RS_OP_DATA: bits 28:0 are the bytes written
	opWrite   = 2 // RS_OP_WRITE: local only, never on the wire
	opSGL     = 4 // RS_OP_SGL: credit update; bits 28:0 the new credit limit
	opIOMapSG = 6 // RS_OP_IOMAP_SGL: a remote iomap entry changed
	opCtrl    = 7 // RS_OP_CTRL: bits 28:0 a control code
)

// Control codes (RS_CTRL_*).
const (
	ctrlDisconnect = 0
	ctrlKeepalive  = 1
	ctrlShutdown   = 2
)

func msgSet(op, data uint32) uint32 { return op<<29 | data }
func msgOp(imm uint32) uint32       { return imm >> 29 }
func msgData(imm uint32) uint32     { return imm & maxMsgData }

func opName(op uint32) string {
	switch op {
	case opData:
		return "data"
	case opSGL:
		return "credit update"
	case opIOMapSG:
		return "iomap update"
	case opCtrl:
		return "control"
	}
	return fmt.Sprintf("reserved type %d", op)
}

// rsSGE is struct rs_sge: a piece of remote memory.
type rsSGE struct {
	Addr   uint64
	Key    uint32
	Length uint32
}

// connData is struct rs_conn_data, the private data of the connection
// request and of the accept. On the wire every field is big-endian.
type connData struct {
	Version   uint8
	Flags     uint8
	Credits   uint16 // initial receive credits (the sender's receive queue size)
	IOMapSize uint8  // target_iomap_size, rs_value_to_scale(n, 8)
	TargetSGL rsSGE  // where the peer writes credit updates: address, rkey and number of entries
	DataBuf   rsSGE  // the first receive buffer: address, rkey and length in bytes
}

// marshal writes d into b (at least connDataLen bytes).
func (d *connData) marshal(b []byte) {
	_ = b[connDataLen-1]
	b[0], b[1] = d.Version, d.Flags
	binary.BigEndian.PutUint16(b[2:], d.Credits)
	b[4], b[5], b[6] = 0, 0, 0
	b[7] = d.IOMapSize
	putSGE(b[8:], d.TargetSGL, binary.BigEndian)
	putSGE(b[24:], d.DataBuf, binary.BigEndian)
}

func putSGE(b []byte, s rsSGE, bo binary.ByteOrder) {
	bo.PutUint64(b[0:], s.Addr)
	bo.PutUint32(b[8:], s.Key)
	bo.PutUint32(b[12:], s.Length)
}

func getSGE(b []byte, bo binary.ByteOrder) rsSGE {
	return rsSGE{Addr: bo.Uint64(b[0:]), Key: bo.Uint32(b[8:]), Length: bo.Uint32(b[12:])}
}

// parseConnData decodes and checks a peer's rs_conn_data (b is the CM's
// private data, zero-padded by the CM message). Everything in it is the
// peer's word: the version must be 1, the peer must grant credits, publish
// a target SGL of at least one entry and a non-empty first buffer.
func parseConnData(b []byte) (connData, error) {
	var d connData
	if len(b) < connDataLen {
		return d, protoErr("connection private data of %d bytes, want at least %d (struct rs_conn_data): the peer is not an rsocket", len(b), connDataLen)
	}
	d.Version, d.Flags = b[0], b[1]
	d.Credits = binary.BigEndian.Uint16(b[2:])
	d.IOMapSize = b[7]
	d.TargetSGL = getSGE(b[8:], binary.BigEndian)
	d.DataBuf = getSGE(b[24:], binary.BigEndian)
	switch {
	case d.Version != rsVersion:
		return d, protoErr("connection data version %d, want %d: the peer is not an rsocket or speaks another version", d.Version, rsVersion)
	case d.Credits == 0:
		return d, protoErr("the peer grants 0 receive credits: it could never be sent data")
	case d.TargetSGL.Length == 0 || d.TargetSGL.Length > maxSGLLength:
		return d, protoErr("the peer's target SGL has %d entries, want 1-%d", d.TargetSGL.Length, maxSGLLength)
	case d.DataBuf.Length == 0:
		return d, protoErr("the peer publishes an empty first receive buffer")
	case d.DataBuf.Length > maxMsgData:
		return d, protoErr("the peer's first receive buffer of %d bytes exceeds %d", d.DataBuf.Length, maxMsgData)
	}
	return d, nil
}

// hostIsNet reports whether this machine is big-endian (rs_host_is_net).
var hostIsNet = binary.NativeEndian.Uint16([]byte{0, 1}) == 1

// sgeOrder is the byte order a peer with connection flags flags expects the
// SGEs we write into its target SGL in: its own.
func sgeOrder(flags uint8) binary.ByteOrder {
	if flags&connFlagNet != 0 {
		return binary.BigEndian
	}
	return binary.LittleEndian
}
