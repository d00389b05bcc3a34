// Copyright 2026 The rdmago Authors.

// Package netlink is the small netlink core shared by rdmago's route (rtnl) and
// RDMA (rdmanl) clients: message framing, attribute encoding and decoding, and a
// request/response connection over an AF_NETLINK socket (see netlink(7)).
//
// Encoding and decoding are pure functions over bytes so they can be tested on
// any host against golden bytes; only Conn (conn.go) talks to the kernel, through
// internal/sys (off Linux, Dial fails with ErrNotSupported).
package netlink

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Netlink protocols, the proto argument of Dial (include/uapi/linux/netlink.h).
const (
	NETLINK_ROUTE = 0
	NETLINK_RDMA  = 20
)

// HeaderLen is sizeof(struct nlmsghdr).
const HeaderLen = 16

// Netlink header flags and message types (include/uapi/linux/netlink.h).
const (
	NLM_F_REQUEST     = 0x1
	NLM_F_MULTI       = 0x2
	NLM_F_ACK         = 0x4
	NLM_F_ROOT        = 0x100
	NLM_F_MATCH       = 0x200
	NLM_F_DUMP        = NLM_F_ROOT | NLM_F_MATCH
	NLM_F_EXCL        = 0x200
	NLM_F_CREATE      = 0x400
	NLM_F_CAPPED      = 0x100
	NLM_F_ACK_TLVS    = 0x200
	NLMSG_NOOP        = 0x1
	NLMSG_ERROR       = 0x2
	NLMSG_DONE        = 0x3
	NLMSGERR_ATTR_MSG = 1

	NLA_F_NESTED        = 0x8000
	NLA_F_NET_BYTEORDER = 0x4000
	nlaTypeMask         = ^uint16(NLA_F_NESTED | NLA_F_NET_BYTEORDER)
)

// Header is struct nlmsghdr.
type Header struct {
	Len   uint32
	Type  uint16
	Flags uint16
	Seq   uint32
	PID   uint32
}

// Message is one netlink message: its header and the payload after it.
type Message struct {
	Header Header
	Data   []byte
}

func align4(n int) int { return (n + 3) &^ 3 }

// Marshal returns the message's wire form; Header.Len is computed.
func (m Message) Marshal() []byte {
	n := HeaderLen + len(m.Data)
	b := make([]byte, align4(n))
	binary.NativeEndian.PutUint32(b[0:], uint32(n))
	binary.NativeEndian.PutUint16(b[4:], m.Header.Type)
	binary.NativeEndian.PutUint16(b[6:], m.Header.Flags)
	binary.NativeEndian.PutUint32(b[8:], m.Header.Seq)
	binary.NativeEndian.PutUint32(b[12:], m.Header.PID)
	copy(b[HeaderLen:], m.Data)
	return b
}

// ParseMessages splits a datagram into messages.
func ParseMessages(b []byte) ([]Message, error) {
	var msgs []Message
	for len(b) > 0 {
		if len(b) < HeaderLen {
			return nil, fmt.Errorf("netlink: %d trailing bytes, short of a %d-byte header", len(b), HeaderLen)
		}
		var h Header
		h.Len = binary.NativeEndian.Uint32(b[0:])
		h.Type = binary.NativeEndian.Uint16(b[4:])
		h.Flags = binary.NativeEndian.Uint16(b[6:])
		h.Seq = binary.NativeEndian.Uint32(b[8:])
		h.PID = binary.NativeEndian.Uint32(b[12:])
		if h.Len < HeaderLen || int(h.Len) > len(b) {
			return nil, fmt.Errorf("netlink: message length %d out of range (have %d bytes)", h.Len, len(b))
		}
		msgs = append(msgs, Message{Header: h, Data: b[HeaderLen:h.Len]})
		next := align4(int(h.Len))
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
	}
	return msgs, nil
}

// Error is a negative errno returned by the kernel in an NLMSG_ERROR message,
// with the extended-ack text when the kernel gave one. It unwraps to the errno
// (a syscall.Errno on Linux), so errors.Is(err, unix.EEXIST) works.
type Error struct {
	Errno error  // the errno, as syscall.Errno
	Msg   string // extended ack message, may be empty
}

func (e *Error) Error() string {
	if e.Msg != "" {
		return e.Errno.Error() + ": " + e.Msg
	}
	return e.Errno.Error()
}

func (e *Error) Unwrap() error { return e.Errno }

// parseError decodes an NLMSG_ERROR payload: the (negative) error code, the
// echoed request header (capped or not), and optional extended-ack attributes.
// It returns code 0 for an ACK.
func parseError(m Message) (code int32, msg string, err error) {
	if len(m.Data) < 4 {
		return 0, "", errors.New("netlink: short NLMSG_ERROR")
	}
	code = int32(binary.NativeEndian.Uint32(m.Data))
	if m.Header.Flags&NLM_F_ACK_TLVS == 0 || len(m.Data) < 4+HeaderLen {
		return code, "", nil
	}
	off := 4 + HeaderLen
	if m.Header.Flags&NLM_F_CAPPED == 0 {
		off = 4 + align4(int(binary.NativeEndian.Uint32(m.Data[4:])))
	}
	if off > len(m.Data) {
		return code, "", nil
	}
	attrs, aerr := ParseAttrs(m.Data[off:])
	if aerr != nil {
		return code, "", nil
	}
	for _, a := range attrs {
		if a.Type == NLMSGERR_ATTR_MSG {
			msg = a.String()
		}
	}
	return code, msg, nil
}

// Attr is one netlink attribute (struct nlattr + payload). Type has the
// NLA_F_NESTED and NLA_F_NET_BYTEORDER bits cleared.
type Attr struct {
	Type uint16
	Data []byte
}

// ParseAttrs decodes a run of attributes.
func ParseAttrs(b []byte) ([]Attr, error) {
	var attrs []Attr
	for len(b) > 0 {
		if len(b) < 4 {
			return nil, fmt.Errorf("netlink: %d trailing bytes, short of an attribute header", len(b))
		}
		n := int(binary.NativeEndian.Uint16(b[0:]))
		t := binary.NativeEndian.Uint16(b[2:])
		if n < 4 || n > len(b) {
			return nil, fmt.Errorf("netlink: attribute %d length %d out of range (have %d bytes)", t&nlaTypeMask, n, len(b))
		}
		attrs = append(attrs, Attr{Type: t & nlaTypeMask, Data: b[4:n]})
		next := align4(n)
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
	}
	return attrs, nil
}

// Uint8 returns the attribute as a u8 (0 if it is too short).
func (a Attr) Uint8() uint8 {
	if len(a.Data) < 1 {
		return 0
	}
	return a.Data[0]
}

// Uint16 returns the attribute as a host-endian u16.
func (a Attr) Uint16() uint16 {
	if len(a.Data) < 2 {
		return 0
	}
	return binary.NativeEndian.Uint16(a.Data)
}

// Uint32 returns the attribute as a host-endian u32.
func (a Attr) Uint32() uint32 {
	if len(a.Data) < 4 {
		return 0
	}
	return binary.NativeEndian.Uint32(a.Data)
}

// Uint64 returns the attribute as a host-endian u64.
func (a Attr) Uint64() uint64 {
	if len(a.Data) < 8 {
		return uint64(a.Uint32())
	}
	return binary.NativeEndian.Uint64(a.Data)
}

// String returns the attribute as a string, without the trailing NULs.
func (a Attr) String() string {
	d := a.Data
	for len(d) > 0 && d[len(d)-1] == 0 {
		d = d[:len(d)-1]
	}
	return string(d)
}

// Encoder builds a run of attributes. The zero value is ready to use.
type Encoder struct {
	b []byte
}

func (e *Encoder) put(typ uint16, data []byte) {
	n := 4 + len(data)
	hdr := make([]byte, 4)
	binary.NativeEndian.PutUint16(hdr[0:], uint16(n))
	binary.NativeEndian.PutUint16(hdr[2:], typ)
	e.b = append(e.b, hdr...)
	e.b = append(e.b, data...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

// Bytes adds an attribute with a raw payload.
func (e *Encoder) Bytes(typ uint16, v []byte) { e.put(typ, v) }

// Uint8 adds a u8 attribute.
func (e *Encoder) Uint8(typ uint16, v uint8) { e.put(typ, []byte{v}) }

// Uint32 adds a host-endian u32 attribute.
func (e *Encoder) Uint32(typ uint16, v uint32) {
	e.put(typ, binary.NativeEndian.AppendUint32(nil, v))
}

// Uint64 adds a host-endian u64 attribute.
func (e *Encoder) Uint64(typ uint16, v uint64) {
	e.put(typ, binary.NativeEndian.AppendUint64(nil, v))
}

// String adds a NUL-terminated string attribute (NLA_NUL_STRING / NLA_STRING).
func (e *Encoder) String(typ uint16, s string) { e.put(typ, append([]byte(s), 0)) }

// Nested adds an attribute whose payload is the attributes fn encodes. Like
// iproute2 it leaves NLA_F_NESTED clear; callers that need it pass it in typ.
func (e *Encoder) Nested(typ uint16, fn func(*Encoder)) {
	var in Encoder
	fn(&in)
	e.put(typ, in.b)
}

// Encode returns the encoded attributes.
func (e *Encoder) Encode() []byte { return e.b }

func nativeUint32(b []byte) uint32 { return binary.NativeEndian.Uint32(b) }
