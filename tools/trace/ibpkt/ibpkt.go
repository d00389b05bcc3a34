// Copyright 2026 The rdmago Authors.

// Package ibpkt decodes RoCEv2 packets: the InfiniBand transport headers (BTH and
// the extended transport headers RDETH, DETH, XRCETH, FETH, RETH, AtomicETH,
// AETH, AtomicAckETH, ImmDt, IETH) carried in UDP datagrams to port 4791, and the
// Ethernet/VLAN/IPv4/IPv6/UDP frame around them.
//
// Layouts follow the InfiniBand Architecture Specification vol. 1, chapter 9
// ("Transport layer"), and Annex A17 (RoCEv2). This is what Wireshark's
// "infiniband" dissector shows; the Linux equivalent is
// drivers/infiniband/sw/rxe/rxe_hdr.h. Pure Go, no syscalls.
package ibpkt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// UDPPort is the IANA UDP destination port of RoCEv2.
const UDPPort = 4791

// Header sizes in bytes (IBTA vol. 1, 9.2 and 9.3).
const (
	BTHLen          = 12
	RDETHLen        = 4
	DETHLen         = 8
	XRCETHLen       = 4
	FETHLen         = 4
	RETHLen         = 16
	AtomicETHLen    = 28
	AETHLen         = 4
	AtomicAckETHLen = 8
	ImmDtLen        = 4
	IETHLen         = 4
	ICRCLen         = 4
)

// Transport is the transport service, the top three bits of the BTH opcode.
type Transport uint8

// Transport services (IBTA vol. 1, table 38).
const (
	RC  Transport = 0 // reliable connection
	UC  Transport = 1 // unreliable connection
	RD  Transport = 2 // reliable datagram
	UD  Transport = 3 // unreliable datagram
	CNP Transport = 4 // RoCEv2 congestion notification packet
	XRC Transport = 5 // extended reliable connection
)

func (t Transport) String() string {
	switch t {
	case RC:
		return "RC"
	case UC:
		return "UC"
	case RD:
		return "RD"
	case UD:
		return "UD"
	case CNP:
		return "CNP"
	case XRC:
		return "XRC"
	}
	return fmt.Sprintf("Transport(%d)", uint8(t))
}

// Operations: the low five bits of the BTH opcode (IBTA vol. 1, table 38).
const (
	OpSendFirst                    = 0x00
	OpSendMiddle                   = 0x01
	OpSendLast                     = 0x02
	OpSendLastImm                  = 0x03
	OpSendOnly                     = 0x04
	OpSendOnlyImm                  = 0x05
	OpRDMAWriteFirst               = 0x06
	OpRDMAWriteMiddle              = 0x07
	OpRDMAWriteLast                = 0x08
	OpRDMAWriteLastImm             = 0x09
	OpRDMAWriteOnly                = 0x0a
	OpRDMAWriteOnlyImm             = 0x0b
	OpRDMAReadRequest              = 0x0c
	OpRDMAReadResponseFirst        = 0x0d
	OpRDMAReadResponseMiddle       = 0x0e
	OpRDMAReadResponseLast         = 0x0f
	OpRDMAReadResponseOnly         = 0x10
	OpAcknowledge                  = 0x11
	OpAtomicAcknowledge            = 0x12
	OpCompareSwap                  = 0x13
	OpFetchAdd                     = 0x14
	OpSendLastInvalidate           = 0x16
	OpSendOnlyInvalidate           = 0x17
	OpFlush                        = 0x1c // IBTA 1.5 memory placement extensions
	OpAtomicWrite                  = 0x1d // IBTA 1.5 memory placement extensions
	OpCodeCNP                uint8 = 0x81 // RoCEv2 CNP (Annex A17.9.2)
)

var opNames = [32]string{
	OpSendFirst:              "SEND First",
	OpSendMiddle:             "SEND Middle",
	OpSendLast:               "SEND Last",
	OpSendLastImm:            "SEND Last with Immediate",
	OpSendOnly:               "SEND Only",
	OpSendOnlyImm:            "SEND Only with Immediate",
	OpRDMAWriteFirst:         "RDMA WRITE First",
	OpRDMAWriteMiddle:        "RDMA WRITE Middle",
	OpRDMAWriteLast:          "RDMA WRITE Last",
	OpRDMAWriteLastImm:       "RDMA WRITE Last with Immediate",
	OpRDMAWriteOnly:          "RDMA WRITE Only",
	OpRDMAWriteOnlyImm:       "RDMA WRITE Only with Immediate",
	OpRDMAReadRequest:        "RDMA READ Request",
	OpRDMAReadResponseFirst:  "RDMA READ Response First",
	OpRDMAReadResponseMiddle: "RDMA READ Response Middle",
	OpRDMAReadResponseLast:   "RDMA READ Response Last",
	OpRDMAReadResponseOnly:   "RDMA READ Response Only",
	OpAcknowledge:            "Acknowledge",
	OpAtomicAcknowledge:      "ATOMIC Acknowledge",
	OpCompareSwap:            "CmpSwap",
	OpFetchAdd:               "FetchAdd",
	OpSendLastInvalidate:     "SEND Last with Invalidate",
	OpSendOnlyInvalidate:     "SEND Only with Invalidate",
	OpFlush:                  "FLUSH",
	OpAtomicWrite:            "ATOMIC WRITE",
}

// OpCode is the BTH opcode byte.
type OpCode uint8

// Transport returns the transport service of the opcode.
func (o OpCode) Transport() Transport { return Transport(o >> 5) }

// Op returns the operation, the low five bits.
func (o OpCode) Op() uint8 { return uint8(o) & 0x1f }

// Valid reports whether the opcode is defined for its transport.
func (o OpCode) Valid() bool {
	op := o.Op()
	switch o.Transport() {
	case RC:
		return op <= OpFetchAdd || op == OpSendLastInvalidate || op == OpSendOnlyInvalidate ||
			op == OpFlush || op == OpAtomicWrite
	case XRC:
		return op <= OpFetchAdd || op == OpSendLastInvalidate || op == OpSendOnlyInvalidate
	case UC:
		return op <= OpRDMAWriteOnlyImm
	case RD:
		return op <= OpFetchAdd
	case UD:
		return op == OpSendOnly || op == OpSendOnlyImm
	case CNP:
		return uint8(o) == OpCodeCNP
	}
	return false
}

// String is the name IBTA gives the opcode prefixed by its transport, e.g.
// "RC RDMA WRITE Only", or "OpCode(0x15)" for an undefined one.
func (o OpCode) String() string {
	if !o.Valid() {
		return fmt.Sprintf("OpCode(%#02x)", uint8(o))
	}
	if o.Transport() == CNP {
		return "CNP"
	}
	return o.Transport().String() + " " + opNames[o.Op()]
}

// isRequest reports whether a packet with this operation travels requester to
// responder (everything but read responses and acknowledges).
func isRequest(op uint8) bool {
	return op < OpRDMAReadResponseFirst || op > OpAtomicAcknowledge
}

// header bits of the extended transport headers an opcode carries.
const (
	hasRDETH = 1 << iota
	hasDETH
	hasXRCETH
	hasFETH
	hasRETH
	hasAtomicETH
	hasAETH
	hasAtomicAckETH
	hasImmDt
	hasIETH
)

// headers returns which extended headers follow the BTH for opcode o, in the
// order IBTA vol. 1 section 9.2 puts them.
func (o OpCode) headers() int {
	op := o.Op()
	h := 0
	switch o.Transport() {
	case CNP:
		return 0
	case UD:
		h |= hasDETH
	case RD:
		h |= hasRDETH
		if isRequest(op) {
			h |= hasDETH
		}
	case XRC:
		if isRequest(op) {
			h |= hasXRCETH
		}
	}
	switch op {
	case OpRDMAWriteFirst, OpRDMAWriteOnly, OpRDMAWriteOnlyImm, OpRDMAReadRequest, OpAtomicWrite:
		h |= hasRETH
	case OpFlush:
		h |= hasFETH | hasRETH
	case OpCompareSwap, OpFetchAdd:
		h |= hasAtomicETH
	case OpRDMAReadResponseFirst, OpRDMAReadResponseLast, OpRDMAReadResponseOnly, OpAcknowledge:
		h |= hasAETH
	case OpAtomicAcknowledge:
		h |= hasAETH | hasAtomicAckETH
	case OpSendLastInvalidate, OpSendOnlyInvalidate:
		h |= hasIETH
	}
	switch op {
	case OpSendLastImm, OpSendOnlyImm, OpRDMAWriteLastImm, OpRDMAWriteOnlyImm:
		h |= hasImmDt
	}
	return h
}

// BTH is the base transport header (IBTA vol. 1, 9.2.1), 12 bytes.
type BTH struct {
	OpCode   OpCode
	SE       bool   // solicited event
	M        bool   // migration state
	PadCount uint8  // bytes of padding before the ICRC (0-3)
	TVer     uint8  // transport header version, 0
	PKey     uint16 // partition key
	FECN     bool   // RoCEv2 uses the resv8a bits as FECN/BECN
	BECN     bool
	DestQP   uint32 // 24 bits
	AckReq   bool
	PSN      uint32 // 24 bits
}

// Marshal appends the 12 wire bytes of h to b.
func (h BTH) Marshal(b []byte) []byte {
	var w [BTHLen]byte
	w[0] = uint8(h.OpCode)
	w[1] = h.PadCount&3<<4 | h.TVer&0xf
	if h.SE {
		w[1] |= 0x80
	}
	if h.M {
		w[1] |= 0x40
	}
	binary.BigEndian.PutUint16(w[2:], h.PKey)
	if h.FECN {
		w[4] |= 0x80
	}
	if h.BECN {
		w[4] |= 0x40
	}
	binary.BigEndian.PutUint32(w[4:], uint32(w[4])<<24|h.DestQP&0xffffff)
	binary.BigEndian.PutUint32(w[8:], h.PSN&0xffffff)
	if h.AckReq {
		w[8] |= 0x80
	}
	return append(b, w[:]...)
}

func decodeBTH(b []byte) BTH {
	return BTH{
		OpCode:   OpCode(b[0]),
		SE:       b[1]&0x80 != 0,
		M:        b[1]&0x40 != 0,
		PadCount: b[1] >> 4 & 3,
		TVer:     b[1] & 0xf,
		PKey:     binary.BigEndian.Uint16(b[2:]),
		FECN:     b[4]&0x80 != 0,
		BECN:     b[4]&0x40 != 0,
		DestQP:   binary.BigEndian.Uint32(b[4:]) & 0xffffff,
		AckReq:   b[8]&0x80 != 0,
		PSN:      binary.BigEndian.Uint32(b[8:]) & 0xffffff,
	}
}

// RETH is the RDMA extended transport header (9.3.3), 16 bytes.
type RETH struct {
	VA     uint64
	RKey   uint32
	DMALen uint32
}

// AtomicETH is the atomic extended transport header (9.3.4), 28 bytes.
type AtomicETH struct {
	VA      uint64
	RKey    uint32
	SwapAdd uint64 // swap or add data
	Compare uint64
}

// DETH is the datagram extended transport header (9.3.2), 8 bytes.
type DETH struct {
	QKey  uint32
	SrcQP uint32 // 24 bits
}

// AETH is the ACK extended transport header (9.3.5), 4 bytes.
type AETH struct {
	Syndrome uint8
	MSN      uint32 // 24 bits
}

// AETH syndrome kinds, bits 6:5 of the syndrome.
const (
	AETHAck    = 0
	AETHRNRNak = 1
	AETHNak    = 3
)

// Kind is AETHAck, AETHRNRNak, AETHNak (or 2, reserved).
func (a AETH) Kind() uint8 { return a.Syndrome >> 5 & 3 }

// String describes the syndrome: "ACK credits=N", "RNR NAK timer=N",
// "NAK PSN sequence error", ...
func (a AETH) String() string {
	v := a.Syndrome & 0x1f
	switch a.Kind() {
	case AETHAck:
		if v == 0x1f {
			return fmt.Sprintf("ACK msn=%d", a.MSN)
		}
		return fmt.Sprintf("ACK credits=%d msn=%d", v, a.MSN)
	case AETHRNRNak:
		return fmt.Sprintf("RNR NAK timer=%d msn=%d", v, a.MSN)
	case AETHNak:
		names := [...]string{"PSN sequence error", "invalid request", "remote access error",
			"remote operational error", "invalid RD request"}
		if int(v) < len(names) {
			return fmt.Sprintf("NAK %s msn=%d", names[v], a.MSN)
		}
		return fmt.Sprintf("NAK code=%d msn=%d", v, a.MSN)
	}
	return fmt.Sprintf("AETH syndrome=%#02x msn=%d", a.Syndrome, a.MSN)
}

// Packet is a decoded RoCEv2 UDP payload: the BTH, whichever extended headers
// the opcode carries (Has* tell which), the payload and the ICRC.
type Packet struct {
	BTH BTH

	HasRDETH, HasDETH, HasXRCETH, HasFETH, HasRETH, HasAtomicETH bool
	HasAETH, HasAtomicAckETH, HasImmDt, HasIETH                  bool
	RDETH                                                        uint32 // EE context, 24 bits
	DETH                                                         DETH
	XRCSRQ                                                       uint32 // XRCETH: XRC SRQ number, 24 bits
	FETH                                                         uint32
	RETH                                                         RETH
	AtomicETH                                                    AtomicETH
	AETH                                                         AETH
	AtomicAck                                                    uint64 // AtomicAckETH: original remote data
	ImmDt                                                        uint32 // immediate data, as on the wire (big endian value)
	IETH                                                         uint32 // invalidated rkey

	// Payload is the data after the headers, without pad bytes and ICRC. It
	// aliases the decoded buffer.
	Payload []byte
	ICRC    uint32 // as the four bytes read big endian
}

// ErrShort is wrapped by Decode errors for truncated packets.
var ErrShort = errors.New("packet too short")

// Decode parses b, a RoCEv2 UDP payload starting at the BTH and ending with
// the 4-byte ICRC. The returned Packet's Payload aliases b.
func Decode(b []byte) (*Packet, error) {
	if len(b) < BTHLen+ICRCLen {
		return nil, fmt.Errorf("decode BTH: %d bytes, need at least %d: %w", len(b), BTHLen+ICRCLen, ErrShort)
	}
	p := &Packet{BTH: decodeBTH(b)}
	if !p.BTH.OpCode.Valid() {
		return nil, fmt.Errorf("decode BTH: undefined opcode %#02x", uint8(p.BTH.OpCode))
	}
	end := len(b) - ICRCLen
	p.ICRC = binary.BigEndian.Uint32(b[end:])
	off := BTHLen
	h := p.BTH.OpCode.headers()
	take := func(name string, n int) ([]byte, error) {
		if off+n > end {
			return nil, fmt.Errorf("decode %s of %v: need %d bytes at offset %d, have %d: %w",
				name, p.BTH.OpCode, n, off, end-off, ErrShort)
		}
		s := b[off : off+n]
		off += n
		return s, nil
	}
	var err error
	var s []byte
	if h&hasRDETH != 0 {
		if s, err = take("RDETH", RDETHLen); err != nil {
			return nil, err
		}
		p.HasRDETH, p.RDETH = true, binary.BigEndian.Uint32(s)&0xffffff
	}
	if h&hasDETH != 0 {
		if s, err = take("DETH", DETHLen); err != nil {
			return nil, err
		}
		p.HasDETH = true
		p.DETH = DETH{QKey: binary.BigEndian.Uint32(s), SrcQP: binary.BigEndian.Uint32(s[4:]) & 0xffffff}
	}
	if h&hasXRCETH != 0 {
		if s, err = take("XRCETH", XRCETHLen); err != nil {
			return nil, err
		}
		p.HasXRCETH, p.XRCSRQ = true, binary.BigEndian.Uint32(s)&0xffffff
	}
	if h&hasFETH != 0 {
		if s, err = take("FETH", FETHLen); err != nil {
			return nil, err
		}
		p.HasFETH, p.FETH = true, binary.BigEndian.Uint32(s)
	}
	if h&hasRETH != 0 {
		if s, err = take("RETH", RETHLen); err != nil {
			return nil, err
		}
		p.HasRETH = true
		p.RETH = RETH{VA: binary.BigEndian.Uint64(s), RKey: binary.BigEndian.Uint32(s[8:]),
			DMALen: binary.BigEndian.Uint32(s[12:])}
	}
	if h&hasAtomicETH != 0 {
		if s, err = take("AtomicETH", AtomicETHLen); err != nil {
			return nil, err
		}
		p.HasAtomicETH = true
		p.AtomicETH = AtomicETH{VA: binary.BigEndian.Uint64(s), RKey: binary.BigEndian.Uint32(s[8:]),
			SwapAdd: binary.BigEndian.Uint64(s[12:]), Compare: binary.BigEndian.Uint64(s[20:])}
	}
	if h&hasAETH != 0 {
		if s, err = take("AETH", AETHLen); err != nil {
			return nil, err
		}
		p.HasAETH = true
		p.AETH = AETH{Syndrome: s[0], MSN: binary.BigEndian.Uint32(s) & 0xffffff}
	}
	if h&hasAtomicAckETH != 0 {
		if s, err = take("AtomicAckETH", AtomicAckETHLen); err != nil {
			return nil, err
		}
		p.HasAtomicAckETH, p.AtomicAck = true, binary.BigEndian.Uint64(s)
	}
	if h&hasImmDt != 0 {
		if s, err = take("ImmDt", ImmDtLen); err != nil {
			return nil, err
		}
		p.HasImmDt, p.ImmDt = true, binary.BigEndian.Uint32(s)
	}
	if h&hasIETH != 0 {
		if s, err = take("IETH", IETHLen); err != nil {
			return nil, err
		}
		p.HasIETH, p.IETH = true, binary.BigEndian.Uint32(s)
	}
	pad := int(p.BTH.PadCount)
	if off+pad > end {
		return nil, fmt.Errorf("decode %v: pad count %d exceeds the %d payload bytes: %w",
			p.BTH.OpCode, pad, end-off, ErrShort)
	}
	p.Payload = b[off : end-pad]
	return p, nil
}

// Summary is a one-line description in the style of a packet list:
// "RC RDMA WRITE Only QP=0x000011 PSN=5 len=1024 va=0x7f0000001000 rkey=0x1234 dmalen=1024".
func (p *Packet) Summary() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%v QP=%#06x PSN=%d", p.BTH.OpCode, p.BTH.DestQP, p.BTH.PSN)
	if p.BTH.AckReq {
		sb.WriteString(" A")
	}
	if p.BTH.SE {
		sb.WriteString(" SE")
	}
	if p.BTH.FECN {
		sb.WriteString(" FECN")
	}
	if p.BTH.BECN {
		sb.WriteString(" BECN")
	}
	fmt.Fprintf(&sb, " len=%d", len(p.Payload))
	if p.HasDETH {
		fmt.Fprintf(&sb, " qkey=%#x srcQP=%#06x", p.DETH.QKey, p.DETH.SrcQP)
	}
	if p.HasXRCETH {
		fmt.Fprintf(&sb, " xrcsrq=%#x", p.XRCSRQ)
	}
	if p.HasRETH {
		fmt.Fprintf(&sb, " va=%#x rkey=%#x dmalen=%d", p.RETH.VA, p.RETH.RKey, p.RETH.DMALen)
	}
	if p.HasAtomicETH {
		fmt.Fprintf(&sb, " va=%#x rkey=%#x swapadd=%#x compare=%#x", p.AtomicETH.VA, p.AtomicETH.RKey,
			p.AtomicETH.SwapAdd, p.AtomicETH.Compare)
	}
	if p.HasAETH {
		sb.WriteString(" " + p.AETH.String())
	}
	if p.HasAtomicAckETH {
		fmt.Fprintf(&sb, " orig=%#x", p.AtomicAck)
	}
	if p.HasImmDt {
		fmt.Fprintf(&sb, " imm=%#x", p.ImmDt)
	}
	if p.HasIETH {
		fmt.Fprintf(&sb, " inv_rkey=%#x", p.IETH)
	}
	return sb.String()
}
