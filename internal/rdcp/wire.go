package rdcp

import (
	"encoding/binary"
	"fmt"
	"time"
	"unicode/utf8"
)

// Wire format. Every control message is a 12-byte header followed by a
// payload, all integers big-endian:
//
//	offset size field
//	0      4    magic   "RDCP" (0x52444350)
//	4      2    version WireVersion (1)
//	6      2    type    MsgType
//	8      4    length  payload bytes that follow (the message is 12+length)
//
// A message is exactly HeaderSize+length bytes and at most MaxMessageSize.
// Fixed-size payloads must have exactly their size; reserved fields must be
// zero; variable parts (names, texts) carry their own length, which must
// account for every remaining byte. Decoders reject anything else.
const (
	Magic          uint32 = 0x52444350 // "RDCP"
	WireVersion    uint16 = 1
	HeaderSize            = 12
	MaxMessageSize        = 2048
	MaxPayload            = MaxMessageSize - HeaderSize

	// ProtocolVersion is the file protocol version this package speaks,
	// negotiated in HELLO. Version 2 added KEEPALIVE and, with a pre-shared
	// key, the session MAC on every message after AUTH (sealMessage).
	// Version 3 added the receiver's verification policy in its HELLO
	// (Verify), the CRC32C after each chunk's data (ChunkCRCSize) and
	// RESEND. A peer of another version is told which end to upgrade.
	ProtocolVersion uint16 = 3

	// MaxText is the longest RESULT or ERROR text, in bytes.
	MaxText = 1024
	// MaxSlots is the most slots a window may have: the immediate carries the
	// slot index in its top 12 bits.
	MaxSlots = 1 << immSlotBits
	// MaxSlotSize is the largest slot.
	MaxSlotSize = 64 << 20
	// MaxWindow is the largest window (slots × slot size).
	MaxWindow = 1 << 30
	// NonceSize and MACSize are the sizes of the HELLO nonce and AUTH MAC.
	NonceSize = 32
	MACSize   = 32
	// DigestSize is the size of a SHA-256 digest.
	DigestSize = 32
	// ChunkCRCSize is the CRC32C (big-endian) that follows each chunk's
	// data in its write when the connection verifies with VerifyCRC32C.
	ChunkCRCSize = 4
	// MaxChunkResends is how many times the receiver asks for one chunk
	// again (RESEND) before it gives the file up as corrupted.
	MaxChunkResends = 4
)

// MsgType is the type of a control message.
type MsgType uint16

// Message types.
const (
	MsgHello        MsgType = 1  // version negotiation, window wishes, PSK challenge
	MsgAuth         MsgType = 2  // PSK response (HMAC-SHA256 over both HELLOs)
	MsgFile         MsgType = 3  // sender: the next file or directory
	MsgWindow       MsgType = 4  // receiver: where to write this transfer's data
	MsgResumeOffset MsgType = 5  // receiver: verified partial length; sender: where it starts
	MsgCredit       MsgType = 6  // receiver: chunks consumed so far (slots free again)
	MsgDone         MsgType = 7  // sender: every chunk written, SHA-256 of the content
	MsgResult       MsgType = 8  // receiver: verified and in place, or why not
	MsgError        MsgType = 9  // either: fatal, the connection ends
	MsgBye          MsgType = 10 // either: orderly end
	MsgKeepAlive    MsgType = 11 // either: still working (hashing a long prefix), no payload
	MsgResend       MsgType = 12 // receiver: a chunk failed its CRC32C, write it again (version 3)
)

var msgTypeNames = [...]string{
	MsgHello: "HELLO", MsgAuth: "AUTH", MsgFile: "FILE", MsgWindow: "WINDOW",
	MsgResumeOffset: "RESUME-OFFSET", MsgCredit: "CREDIT", MsgDone: "DONE",
	MsgResult: "RESULT", MsgError: "ERROR", MsgBye: "BYE", MsgKeepAlive: "KEEPALIVE",
	MsgResend: "RESEND",
}

func (t MsgType) String() string {
	if int(t) < len(msgTypeNames) && msgTypeNames[t] != "" {
		return msgTypeNames[t]
	}
	return fmt.Sprintf("type %d", uint16(t))
}

// Message is one decoded control message: *Hello, *Auth, *File, *Window,
// *ResumeOffset, *Credit, *Done, *Result, *ErrorMsg, *Bye, *KeepAlive or
// *Resend.
type Message interface {
	Type() MsgType
	// appendPayload appends the encoded payload.
	appendPayload(b []byte) []byte
}

// Role says which end sent a HELLO.
type Role uint8

// Roles.
const (
	RoleSender   Role = 1
	RoleReceiver Role = 2
)

func (r Role) String() string {
	switch r {
	case RoleSender:
		return "sender"
	case RoleReceiver:
		return "receiver"
	}
	return fmt.Sprintf("role %d", uint8(r))
}

// HelloFlags are HELLO's flags.
type HelloFlags uint8

// HelloPSK says the end holds a pre-shared key and requires AUTH.
const HelloPSK HelloFlags = 1

// Hello opens a connection, first from the sender, then the receiver's answer.
// The sender offers [MinVersion, MaxVersion] and the window it would like
// (zero: the receiver's default); the receiver answers with the version it
// picked in both fields, the largest window it will offer and (version 3)
// its verification policy in Verify, which the sender accepts or refuses.
// A receiver's Verify zero means the default, VerifyCRC32C. A sender's
// Verify is zero: the byte was reserved before version 3, and an older
// receiver must still be able to read the HELLO to answer with its version.
//
//	0 role u8 | 1 flags u8 | 2 min version u16 | 4 max version u16 | 6 verify u8
//	7 reserved u8 | 8 slots u32 | 12 slot size u32 | 16 nonce [32]
type Hello struct {
	Role       Role
	Flags      HelloFlags
	MinVersion uint16
	MaxVersion uint16
	Verify     Verify
	Slots      uint32
	SlotSize   uint32
	Nonce      [NonceSize]byte
}

const helloSize = 16 + NonceSize

func (*Hello) Type() MsgType { return MsgHello }
func (m *Hello) appendPayload(b []byte) []byte {
	b = append(b, byte(m.Role), byte(m.Flags))
	b = binary.BigEndian.AppendUint16(b, m.MinVersion)
	b = binary.BigEndian.AppendUint16(b, m.MaxVersion)
	b = append(b, byte(m.Verify), 0)
	b = binary.BigEndian.AppendUint32(b, m.Slots)
	b = binary.BigEndian.AppendUint32(b, m.SlotSize)
	return append(b, m.Nonce[:]...)
}

// DecodeHello decodes a HELLO payload.
func DecodeHello(p []byte) (*Hello, error) {
	if len(p) != helloSize {
		return nil, malformed(MsgHello, "payload is %d bytes, want %d", len(p), helloSize)
	}
	m := &Hello{
		Role:       Role(p[0]),
		Flags:      HelloFlags(p[1]),
		MinVersion: binary.BigEndian.Uint16(p[2:]),
		MaxVersion: binary.BigEndian.Uint16(p[4:]),
		Verify:     Verify(p[6]),
		Slots:      binary.BigEndian.Uint32(p[8:]),
		SlotSize:   binary.BigEndian.Uint32(p[12:]),
	}
	copy(m.Nonce[:], p[16:])
	switch {
	case m.Role != RoleSender && m.Role != RoleReceiver:
		return nil, malformed(MsgHello, "unknown role %d", p[0])
	case m.Flags&^HelloPSK != 0:
		return nil, malformed(MsgHello, "unknown flags %#x", p[1])
	case m.MinVersion == 0 || m.MinVersion > m.MaxVersion:
		return nil, malformed(MsgHello, "version range %d..%d is empty", m.MinVersion, m.MaxVersion)
	case m.Verify > VerifyNone:
		return nil, malformed(MsgHello, "unknown verification %d", p[6])
	case p[7] != 0:
		return nil, malformed(MsgHello, "reserved field is not zero")
	case m.Slots > MaxSlots:
		return nil, malformed(MsgHello, "%d slots exceed the maximum %d", m.Slots, MaxSlots)
	case m.SlotSize > MaxSlotSize:
		return nil, malformed(MsgHello, "slot size %d exceeds the maximum %d", m.SlotSize, MaxSlotSize)
	}
	return m, nil
}

// Auth proves knowledge of the pre-shared key: HMAC-SHA256 keyed with it over
// a role label and both HELLO messages (see authMAC).
type Auth struct {
	MAC [MACSize]byte
}

func (*Auth) Type() MsgType                   { return MsgAuth }
func (m *Auth) appendPayload(b []byte) []byte { return append(b, m.MAC[:]...) }

// DecodeAuth decodes an AUTH payload.
func DecodeAuth(p []byte) (*Auth, error) {
	if len(p) != MACSize {
		return nil, malformed(MsgAuth, "payload is %d bytes, want %d", len(p), MACSize)
	}
	m := &Auth{}
	copy(m.MAC[:], p)
	return m, nil
}

// Kind is what a FILE message announces.
type Kind uint8

// Kinds.
const (
	KindFile Kind = 1 // a regular file, data follows
	KindDir  Kind = 2 // a directory, no data
)

func (k Kind) String() string {
	switch k {
	case KindFile:
		return "file"
	case KindDir:
		return "directory"
	}
	return fmt.Sprintf("kind %d", uint8(k))
}

// FileFlags are FILE's flags.
type FileFlags uint8

// FileResume asks the receiver for the verified length of a partial copy.
const FileResume FileFlags = 1

// File announces the next transfer. ID numbers transfers of a connection,
// increasing from 1. Name is relative, '/'-separated and passes CheckName.
// Mode holds permission bits only (at most 0o7777; the receiver applies
// 0o777 of them). MTime is in nanoseconds since the Unix epoch. Directories
// have Size 0 and no flags.
//
//	0 id u32 | 4 kind u8 | 5 flags u8 | 6 name length u16 | 8 mode u32
//	12 size u64 | 20 mtime i64 | 28 name
type File struct {
	ID    uint32
	Kind  Kind
	Flags FileFlags
	Mode  uint32
	Size  uint64
	MTime int64
	Name  string
}

const fileFixed = 28

func (*File) Type() MsgType { return MsgFile }
func (m *File) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.ID)
	b = append(b, byte(m.Kind), byte(m.Flags))
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Name)))
	b = binary.BigEndian.AppendUint32(b, m.Mode)
	b = binary.BigEndian.AppendUint64(b, m.Size)
	b = binary.BigEndian.AppendUint64(b, uint64(m.MTime))
	return append(b, m.Name...)
}

// ModTime is MTime as a time.Time.
func (m *File) ModTime() time.Time { return time.Unix(0, m.MTime) }

// DecodeFile decodes a FILE payload, including the name check.
func DecodeFile(p []byte) (*File, error) {
	if len(p) < fileFixed {
		return nil, malformed(MsgFile, "payload is %d bytes, want at least %d", len(p), fileFixed)
	}
	m := &File{
		ID:    binary.BigEndian.Uint32(p[0:]),
		Kind:  Kind(p[4]),
		Flags: FileFlags(p[5]),
		Mode:  binary.BigEndian.Uint32(p[8:]),
		Size:  binary.BigEndian.Uint64(p[12:]),
		MTime: int64(binary.BigEndian.Uint64(p[20:])),
	}
	nameLen := int(binary.BigEndian.Uint16(p[6:]))
	if nameLen != len(p)-fileFixed {
		return nil, malformed(MsgFile, "name length %d does not match the %d bytes that follow", nameLen, len(p)-fileFixed)
	}
	m.Name = string(p[fileFixed:])
	switch {
	case m.ID == 0:
		return nil, malformed(MsgFile, "transfer id 0")
	case m.Kind != KindFile && m.Kind != KindDir:
		return nil, malformed(MsgFile, "unknown kind %d", p[4])
	case m.Flags&^FileResume != 0:
		return nil, malformed(MsgFile, "unknown flags %#x", p[5])
	case m.Mode&^0o7777 != 0:
		return nil, malformed(MsgFile, "mode %#o has bits other than permissions", m.Mode)
	case m.Size > 1<<62:
		return nil, malformed(MsgFile, "size %d is out of range", m.Size)
	case m.Kind == KindDir && (m.Size != 0 || m.Flags != 0):
		return nil, malformed(MsgFile, "a directory with a size or flags")
	}
	if err := CheckName(m.Name); err != nil {
		return nil, malformed(MsgFile, "%v", err)
	}
	return m, nil
}

// Window tells the sender where this transfer's data goes: Slots slots of
// SlotSize bytes of data each, back to back at Addr in the receiver's
// memory, writable with RKey until the transfer ends. With VerifyCRC32C
// each slot also holds the chunk's CRC32C after its data: slots are then
// SlotSize+ChunkCRCSize bytes apart (Stride), and chunk k of n bytes is
// one write of n+ChunkCRCSize bytes at slot k mod Slots.
//
//	0 id u32 | 4 slots u32 | 8 slot size u32 | 12 rkey u32 | 16 addr u64
type Window struct {
	ID       uint32
	Slots    uint32
	SlotSize uint32
	RKey     uint32
	Addr     uint64
}

const windowSize = 24

func (*Window) Type() MsgType { return MsgWindow }
func (m *Window) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.ID)
	b = binary.BigEndian.AppendUint32(b, m.Slots)
	b = binary.BigEndian.AppendUint32(b, m.SlotSize)
	b = binary.BigEndian.AppendUint32(b, m.RKey)
	return binary.BigEndian.AppendUint64(b, m.Addr)
}

// DecodeWindow decodes a WINDOW payload.
func DecodeWindow(p []byte) (*Window, error) {
	if len(p) != windowSize {
		return nil, malformed(MsgWindow, "payload is %d bytes, want %d", len(p), windowSize)
	}
	m := &Window{
		ID:       binary.BigEndian.Uint32(p[0:]),
		Slots:    binary.BigEndian.Uint32(p[4:]),
		SlotSize: binary.BigEndian.Uint32(p[8:]),
		RKey:     binary.BigEndian.Uint32(p[12:]),
		Addr:     binary.BigEndian.Uint64(p[16:]),
	}
	switch {
	case m.ID == 0:
		return nil, malformed(MsgWindow, "transfer id 0")
	case m.Slots == 0 || m.Slots > MaxSlots:
		return nil, malformed(MsgWindow, "%d slots, want 1..%d", m.Slots, MaxSlots)
	case m.SlotSize == 0 || m.SlotSize > MaxSlotSize:
		return nil, malformed(MsgWindow, "slot size %d, want 1..%d", m.SlotSize, MaxSlotSize)
	case uint64(m.Slots)*uint64(m.SlotSize) > MaxWindow:
		return nil, malformed(MsgWindow, "window of %d×%d bytes exceeds %d", m.Slots, m.SlotSize, MaxWindow)
	case m.Addr+uint64(m.Slots)*uint64(m.SlotSize) < m.Addr:
		return nil, malformed(MsgWindow, "window at %#x wraps around", m.Addr)
	}
	return m, nil
}

// ResumeOffset negotiates where data starts. The receiver sends it in answer
// to every FILE of a regular file: Offset is the length of the partial copy
// it holds (0 when none or when resume was not asked) and Digest the
// checksum of those bytes (SHA-256 with VerifySHA256, else CRC32C: see
// Checksum). When Offset is not zero the sender answers with its own
// ResumeOffset: the same Offset and Digest when its first Offset bytes sum
// the same, else Offset 0 (start over).
//
//	0 id u32 | 4 reserved u32 | 8 offset u64 | 16 digest [32]
type ResumeOffset struct {
	ID     uint32
	Offset uint64
	Digest [DigestSize]byte
}

const resumeSize = 16 + DigestSize

func (*ResumeOffset) Type() MsgType { return MsgResumeOffset }
func (m *ResumeOffset) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.ID)
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint64(b, m.Offset)
	return append(b, m.Digest[:]...)
}

// DecodeResumeOffset decodes a RESUME-OFFSET payload.
func DecodeResumeOffset(p []byte) (*ResumeOffset, error) {
	if len(p) != resumeSize {
		return nil, malformed(MsgResumeOffset, "payload is %d bytes, want %d", len(p), resumeSize)
	}
	m := &ResumeOffset{
		ID:     binary.BigEndian.Uint32(p[0:]),
		Offset: binary.BigEndian.Uint64(p[8:]),
	}
	copy(m.Digest[:], p[16:])
	switch {
	case m.ID == 0:
		return nil, malformed(MsgResumeOffset, "transfer id 0")
	case binary.BigEndian.Uint32(p[4:]) != 0:
		return nil, malformed(MsgResumeOffset, "reserved field is not zero")
	case m.Offset > 1<<62:
		return nil, malformed(MsgResumeOffset, "offset %d is out of range", m.Offset)
	}
	return m, nil
}

// Credit says the receiver has consumed the first Consumed chunks of the
// transfer: their slots may be written again. Credits only grow.
//
//	0 id u32 | 4 reserved u32 | 8 consumed u64
type Credit struct {
	ID       uint32
	Consumed uint64
}

const creditSize = 16

func (*Credit) Type() MsgType { return MsgCredit }
func (m *Credit) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.ID)
	b = binary.BigEndian.AppendUint32(b, 0)
	return binary.BigEndian.AppendUint64(b, m.Consumed)
}

// DecodeCredit decodes a CREDIT payload.
func DecodeCredit(p []byte) (*Credit, error) {
	if len(p) != creditSize {
		return nil, malformed(MsgCredit, "payload is %d bytes, want %d", len(p), creditSize)
	}
	m := &Credit{ID: binary.BigEndian.Uint32(p[0:]), Consumed: binary.BigEndian.Uint64(p[8:])}
	switch {
	case m.ID == 0:
		return nil, malformed(MsgCredit, "transfer id 0")
	case binary.BigEndian.Uint32(p[4:]) != 0:
		return nil, malformed(MsgCredit, "reserved field is not zero")
	}
	return m, nil
}

// DoneFlags are DONE's flags.
type DoneFlags uint32

// DoneAborted says the sender stopped early (it could not read its file, or
// the receiver already failed the transfer); Digest is then meaningless.
const DoneAborted DoneFlags = 1

// Done ends a transfer's data: Chunks chunks were written (each once,
// RESENDs not counted), and Digest is the checksum of the whole content,
// including a resumed prefix, in the connection's verification (Checksum:
// zero with VerifyNone).
//
//	0 id u32 | 4 flags u32 | 8 chunks u64 | 16 digest [32]
type Done struct {
	ID     uint32
	Flags  DoneFlags
	Chunks uint64
	Digest [DigestSize]byte
}

const doneSize = 16 + DigestSize

func (*Done) Type() MsgType { return MsgDone }
func (m *Done) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.ID)
	b = binary.BigEndian.AppendUint32(b, uint32(m.Flags))
	b = binary.BigEndian.AppendUint64(b, m.Chunks)
	return append(b, m.Digest[:]...)
}

// DecodeDone decodes a DONE payload.
func DecodeDone(p []byte) (*Done, error) {
	if len(p) != doneSize {
		return nil, malformed(MsgDone, "payload is %d bytes, want %d", len(p), doneSize)
	}
	m := &Done{
		ID:     binary.BigEndian.Uint32(p[0:]),
		Flags:  DoneFlags(binary.BigEndian.Uint32(p[4:])),
		Chunks: binary.BigEndian.Uint64(p[8:]),
	}
	copy(m.Digest[:], p[16:])
	switch {
	case m.ID == 0:
		return nil, malformed(MsgDone, "transfer id 0")
	case m.Flags&^DoneAborted != 0:
		return nil, malformed(MsgDone, "unknown flags %#x", uint32(m.Flags))
	}
	return m, nil
}

// Result is the receiver's verdict on a transfer: CodeOK when the content
// summed to Digest (Checksum), was synced and renamed into place; otherwise
// the code and a message saying what went wrong. Digest is what the
// receiver computed (zero when it got no DONE).
//
//	0 id u32 | 4 code u16 | 6 text length u16 | 8 digest [32] | 40 text
type Result struct {
	ID     uint32
	Code   Code
	Digest [DigestSize]byte
	Text   string
}

const resultFixed = 8 + DigestSize

func (*Result) Type() MsgType { return MsgResult }
func (m *Result) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.ID)
	b = binary.BigEndian.AppendUint16(b, uint16(m.Code))
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Text)))
	b = append(b, m.Digest[:]...)
	return append(b, m.Text...)
}

// DecodeResult decodes a RESULT payload.
func DecodeResult(p []byte) (*Result, error) {
	if len(p) < resultFixed {
		return nil, malformed(MsgResult, "payload is %d bytes, want at least %d", len(p), resultFixed)
	}
	m := &Result{ID: binary.BigEndian.Uint32(p[0:]), Code: Code(binary.BigEndian.Uint16(p[4:]))}
	copy(m.Digest[:], p[8:])
	n := int(binary.BigEndian.Uint16(p[6:]))
	if n != len(p)-resultFixed {
		return nil, malformed(MsgResult, "text length %d does not match the %d bytes that follow", n, len(p)-resultFixed)
	}
	if m.ID == 0 {
		return nil, malformed(MsgResult, "transfer id 0")
	}
	var err error
	if m.Text, err = decodeText(p[resultFixed:]); err != nil {
		return nil, malformed(MsgResult, "%v", err)
	}
	return m, nil
}

// ErrorMsg is a fatal error: the sender of it closes the connection next.
//
//	0 code u16 | 2 text length u16 | 4 text
type ErrorMsg struct {
	Code Code
	Text string
}

const errorFixed = 4

func (*ErrorMsg) Type() MsgType { return MsgError }
func (m *ErrorMsg) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(m.Code))
	b = binary.BigEndian.AppendUint16(b, uint16(len(m.Text)))
	return append(b, m.Text...)
}

// DecodeError decodes an ERROR payload.
func DecodeError(p []byte) (*ErrorMsg, error) {
	if len(p) < errorFixed {
		return nil, malformed(MsgError, "payload is %d bytes, want at least %d", len(p), errorFixed)
	}
	m := &ErrorMsg{Code: Code(binary.BigEndian.Uint16(p[0:]))}
	n := int(binary.BigEndian.Uint16(p[2:]))
	if n != len(p)-errorFixed {
		return nil, malformed(MsgError, "text length %d does not match the %d bytes that follow", n, len(p)-errorFixed)
	}
	if m.Code == CodeOK {
		return nil, malformed(MsgError, "code 0 (ok) in an error")
	}
	var err error
	if m.Text, err = decodeText(p[errorFixed:]); err != nil {
		return nil, malformed(MsgError, "%v", err)
	}
	return m, nil
}

// Bye ends a connection in order; it has no payload.
type Bye struct{}

func (*Bye) Type() MsgType                 { return MsgBye }
func (*Bye) appendPayload(b []byte) []byte { return b }

// DecodeBye decodes a BYE payload.
func DecodeBye(p []byte) (*Bye, error) {
	if len(p) != 0 {
		return nil, malformed(MsgBye, "payload is %d bytes, want 0", len(p))
	}
	return &Bye{}, nil
}

// Resend asks the sender to write chunk Chunk of the transfer again: its
// data did not match the CRC32C that followed it. Only a receiver that
// verifies with VerifyCRC32C sends it, at most MaxChunkResends times per
// chunk, for a chunk it has not credited; the sender writes the chunk
// again from its staging slot, to the same slot, with the same immediate.
//
//	0 id u32 | 4 reserved u32 | 8 chunk u64
type Resend struct {
	ID    uint32
	Chunk uint64
}

const resendSize = 16

func (*Resend) Type() MsgType { return MsgResend }
func (m *Resend) appendPayload(b []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, m.ID)
	b = binary.BigEndian.AppendUint32(b, 0)
	return binary.BigEndian.AppendUint64(b, m.Chunk)
}

// DecodeResend decodes a RESEND payload.
func DecodeResend(p []byte) (*Resend, error) {
	if len(p) != resendSize {
		return nil, malformed(MsgResend, "payload is %d bytes, want %d", len(p), resendSize)
	}
	m := &Resend{ID: binary.BigEndian.Uint32(p[0:]), Chunk: binary.BigEndian.Uint64(p[8:])}
	switch {
	case m.ID == 0:
		return nil, malformed(MsgResend, "transfer id 0")
	case binary.BigEndian.Uint32(p[4:]) != 0:
		return nil, malformed(MsgResend, "reserved field is not zero")
	case m.Chunk > 1<<62:
		return nil, malformed(MsgResend, "chunk %d is out of range", m.Chunk)
	}
	return m, nil
}

// KeepAlive says the end is still working (hashing a long partial copy for
// --resume) so the peer's idle timeout does not end the connection; it has
// no payload and no answer.
type KeepAlive struct{}

func (*KeepAlive) Type() MsgType                 { return MsgKeepAlive }
func (*KeepAlive) appendPayload(b []byte) []byte { return b }

// DecodeKeepAlive decodes a KEEPALIVE payload.
func DecodeKeepAlive(p []byte) (*KeepAlive, error) {
	if len(p) != 0 {
		return nil, malformed(MsgKeepAlive, "payload is %d bytes, want 0", len(p))
	}
	return &KeepAlive{}, nil
}

func decodeText(b []byte) (string, error) {
	if len(b) > MaxText {
		return "", fmt.Errorf("text of %d bytes exceeds %d", len(b), MaxText)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("text is not UTF-8")
	}
	return string(b), nil
}

// Header is the fixed message header.
type Header struct {
	Magic   uint32
	Version uint16
	Type    MsgType
	Length  uint32
}

// DecodeHeader decodes and checks the header at the start of b: magic,
// version, and a length that fits MaxPayload. It does not look at the payload.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, protoErrorf("malformed message: %d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	h := Header{
		Magic:   binary.BigEndian.Uint32(b[0:]),
		Version: binary.BigEndian.Uint16(b[4:]),
		Type:    MsgType(binary.BigEndian.Uint16(b[6:])),
		Length:  binary.BigEndian.Uint32(b[8:]),
	}
	switch {
	case h.Magic != Magic:
		return h, protoErrorf("malformed message: bad magic %#08x (not an rdmacp peer?)", h.Magic)
	case h.Version != WireVersion:
		return h, &Error{Code: CodeVersion, Text: fmt.Sprintf("wire format version %d, this end speaks %d: use the same rdmacp version on both ends", h.Version, WireVersion)}
	case h.Length > MaxPayload:
		return h, protoErrorf("malformed %v: payload of %d bytes exceeds %d", h.Type, h.Length, MaxPayload)
	}
	return h, nil
}

// Decode decodes one whole control message. b must be exactly one message:
// a valid header and the payload its length announces, nothing more.
func Decode(b []byte) (Message, error) {
	h, err := DecodeHeader(b)
	if err != nil {
		return nil, err
	}
	if int(h.Length) != len(b)-HeaderSize {
		return nil, malformed(h.Type, "header announces %d payload bytes, got %d", h.Length, len(b)-HeaderSize)
	}
	p := b[HeaderSize:]
	switch h.Type {
	case MsgHello:
		return DecodeHello(p)
	case MsgAuth:
		return DecodeAuth(p)
	case MsgFile:
		return DecodeFile(p)
	case MsgWindow:
		return DecodeWindow(p)
	case MsgResumeOffset:
		return DecodeResumeOffset(p)
	case MsgCredit:
		return DecodeCredit(p)
	case MsgDone:
		return DecodeDone(p)
	case MsgResult:
		return DecodeResult(p)
	case MsgError:
		return DecodeError(p)
	case MsgBye:
		return DecodeBye(p)
	case MsgKeepAlive:
		return DecodeKeepAlive(p)
	case MsgResend:
		return DecodeResend(p)
	}
	return nil, protoErrorf("malformed message: unknown type %d", uint16(h.Type))
}

// Append appends m's encoding (header and payload) to dst. It fails when the
// message would exceed MaxMessageSize or a field is out of its range (the
// encoder checks what the decoder checks for lengths, so a peer is never sent
// what it must reject for size).
func Append(dst []byte, m Message) ([]byte, error) {
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, Magic)
	dst = binary.BigEndian.AppendUint16(dst, WireVersion)
	dst = binary.BigEndian.AppendUint16(dst, uint16(m.Type()))
	dst = binary.BigEndian.AppendUint32(dst, 0)
	switch m := m.(type) {
	case *File:
		if len(m.Name) > MaxNameLen {
			return dst[:start], fmt.Errorf("encode FILE: name of %d bytes exceeds %d", len(m.Name), MaxNameLen)
		}
	case *Result:
		if len(m.Text) > MaxText {
			return dst[:start], fmt.Errorf("encode RESULT: text of %d bytes exceeds %d", len(m.Text), MaxText)
		}
	case *ErrorMsg:
		if len(m.Text) > MaxText {
			return dst[:start], fmt.Errorf("encode ERROR: text of %d bytes exceeds %d", len(m.Text), MaxText)
		}
	}
	dst = m.appendPayload(dst)
	n := len(dst) - start - HeaderSize
	if n > MaxPayload {
		return dst[:start], fmt.Errorf("encode %v: payload of %d bytes exceeds %d", m.Type(), n, MaxPayload)
	}
	binary.BigEndian.PutUint32(dst[start+8:], uint32(n))
	return dst, nil
}

// Encode returns m's encoding; see Append.
func Encode(m Message) ([]byte, error) { return Append(nil, m) }

func malformed(t MsgType, format string, args ...any) error {
	return protoErrorf("malformed %v: %s", t, fmt.Sprintf(format, args...))
}

// The 32-bit immediate of each data write: the slot index in the top 12 bits,
// the chunk's sequence number (modulo 2^20) in the low 20.
const (
	immSlotBits = 12
	immSeqBits  = 32 - immSlotBits
	ImmSeqMask  = 1<<immSeqBits - 1
)

// EncodeImm is the immediate for chunk seq written into slot.
func EncodeImm(slot int, seq uint64) uint32 {
	return uint32(slot)<<immSeqBits | uint32(seq&ImmSeqMask)
}

// DecodeImm splits an immediate into slot and sequence (modulo 2^20).
func DecodeImm(imm uint32) (slot int, seq uint32) {
	return int(imm >> immSeqBits), imm & ImmSeqMask
}

// TruncText shortens s to at most MaxText bytes on a rune boundary and
// replaces invalid UTF-8, so any error text can go into RESULT or ERROR.
func TruncText(s string) string {
	s = string([]rune(s)) // replaces invalid UTF-8 with U+FFFD
	if len(s) <= MaxText {
		return s
	}
	n := MaxText - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
