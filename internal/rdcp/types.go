package rdcp

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Code says what went wrong, in RESULT and ERROR. Its values are
// transfer.Code's (package transfer's test asserts each equals).
type Code uint16

// Codes.
const (
	CodeOK            Code = 0
	CodeProtocol      Code = 1
	CodeVersion       Code = 2
	CodeAuthRequired  Code = 3
	CodeAuthFailed    Code = 4
	CodeBadName       Code = 5
	CodeExists        Code = 6
	CodeTooLarge      Code = 7
	CodeTooMany       Code = 8
	CodeNoSpace       Code = 9
	CodePermission    Code = 10
	CodeIO            Code = 11
	CodeDigest        Code = 12
	CodeBusy          Code = 13
	CodeAborted       Code = 14
	CodeInternal      Code = 15
	CodeNotDir        Code = 16
	CodeShutdown      Code = 17
	CodeHandshakeBusy Code = 18
	CodeVerify        Code = 19
)

// Verify is the receiver's verification policy in its HELLO; its values are
// transfer.Verify's.
type Verify uint8

// Verification policies (zero: the default, VerifyCRC32C).
const (
	VerifyCRC32C Verify = 1
	VerifySHA256 Verify = 2
	VerifyNone   Verify = 3
)

var verifyNames = [...]string{VerifyCRC32C: "crc32c", VerifySHA256: "sha256", VerifyNone: "none"}

func (v Verify) String() string {
	if v == 0 {
		return "default (crc32c)"
	}
	if int(v) < len(verifyNames) && verifyNames[v] != "" {
		return verifyNames[v]
	}
	return fmt.Sprintf("verify %d", uint8(v))
}

// Error is a decoder's complaint: CodeProtocol (malformed) or CodeVersion
// (another wire format). Package transfer turns it into a transfer.Error.
type Error struct {
	Code Code
	Text string
}

func (e *Error) Error() string {
	what := "protocol error"
	if e.Code == CodeVersion {
		what = "version mismatch"
	}
	if e.Text == "" {
		return what
	}
	return what + ": " + e.Text
}

// Is matches any *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is.
var (
	ErrProtocol = &Error{Code: CodeProtocol}
	ErrVersion  = &Error{Code: CodeVersion}
)

func protoErrorf(format string, args ...any) *Error {
	return &Error{Code: CodeProtocol, Text: fmt.Sprintf(format, args...)}
}

// castagnoli is the CRC32C table; crc32 uses the CPU's instructions for it
// where there are some (SSE4.2, ARMv8 CRC).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// CRC32C is the CRC32C (Castagnoli) of b, as hash/crc32 computes it.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// CRCDigest is the wire form of a file's CRC32C in a Digest field: its
// big-endian bytes first, the rest zero.
func CRCDigest(crc uint32) (d [DigestSize]byte) {
	binary.BigEndian.PutUint32(d[:], crc)
	return d
}

// CRCOfDigest is the CRC32C in a digest field of CRCDigest's form.
func CRCOfDigest(d [DigestSize]byte) uint32 { return binary.BigEndian.Uint32(d[:]) }

// Stride is how far apart a window's slots of slotSize data bytes are under
// v: each chunk's CRC32C follows its data with VerifyCRC32C (and zero).
func Stride(v Verify, slotSize int) int {
	if v == 0 || v == VerifyCRC32C {
		return slotSize + ChunkCRCSize
	}
	return slotSize
}
