package transfer

import (
	"crypto/sha256"
	"hash"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// Verify is how a connection checks what it moves; the receiver's policy
// (Receiver.Verify) decides and announces it in its HELLO.
type Verify uint8

// Verification policies. The zero value is the default, VerifyCRC32C.
const (
	// VerifyCRC32C: the sender writes each chunk's CRC32C (Castagnoli)
	// after its data; the receiver checks it on the bytes it copied out of
	// the window, before it writes them, and asks for a chunk that does
	// not match again (RESEND). The file's checksum is the CRC32C of the
	// whole content, combined from the chunks' without reading them again. CRC32C
	// catches accidents on the way, not an attacker: with a pre-shared key
	// only VerifySHA256 protects the content (DONE's digest carries the
	// session MAC, and SHA-256 cannot be steered).
	VerifyCRC32C Verify = 1
	// VerifySHA256: the SHA-256 of the whole content (what sha256sum
	// prints), computed at both ends and compared after DONE; a mismatch
	// fails the file (the sender may send it again: Sender.Retries).
	VerifySHA256 Verify = 2
	// VerifyNone checks nothing: for measuring the protocol alone.
	VerifyNone Verify = 3
)

// String names the policy as rdmacp's --verify does ("crc32c", ...).
func (v Verify) String() string { return rdcp.Verify(v).String() }

func (v Verify) or() Verify {
	if v == 0 {
		return VerifyCRC32C
	}
	return v
}

// strength orders policies for Sender.Verify: none < crc32c < sha256.
func (v Verify) strength() int {
	switch v {
	case VerifyCRC32C:
		return 1
	case VerifySHA256:
		return 2
	}
	return 0
}

// stride is how far apart a window's slots of slotSize data bytes are
// under v: each chunk's CRC32C follows its data with VerifyCRC32C.
func (v Verify) stride(slotSize int) int { return rdcp.Stride(rdcp.Verify(v), slotSize) }

// crcShift is the linear operator on CRC32C values that appends n zero
// bytes to the message (less the pre- and post-conditioning, which cancel
// in crc32cCombine): a 32×32 matrix over GF(2), one column per bit.
type crcShift [32]uint32

// times applies m to the vector v.
func (m *crcShift) times(v uint32) uint32 {
	var sum uint32
	for i := 0; v != 0; i, v = i+1, v>>1 {
		if v&1 != 0 {
			sum ^= m[i]
		}
	}
	return sum
}

// square sets m to s·s.
func (m *crcShift) square(s *crcShift) {
	for i := range m {
		m[i] = s.times(s[i])
	}
}

// compose sets m to a·b (b first, then a).
func (m *crcShift) compose(a, b *crcShift) {
	var r crcShift
	for i := range r {
		r[i] = a.times(b[i])
	}
	*m = r
}

// newCRCShift is the operator for n zero bytes (zlib's crc32_combine
// method, with the reflected Castagnoli polynomial): start from one zero
// bit, square to 2, 4, 8 bits (one byte), then multiply in the squares
// that make up n.
func newCRCShift(n int64) crcShift {
	var id crcShift
	for i := range id {
		id[i] = 1 << i
	}
	op := id
	if n <= 0 {
		return op
	}
	var odd, even crcShift
	odd[0] = 0x82F63B78 // reflected Castagnoli polynomial: one zero bit
	for i := 1; i < 32; i++ {
		odd[i] = 1 << (i - 1)
	}
	even.square(&odd) // two zero bits
	odd.square(&even) // four
	sq := &even
	sq.square(&odd) // eight: one byte
	other := &odd
	for {
		if n&1 != 0 {
			op.compose(sq, &op)
		}
		n >>= 1
		if n == 0 {
			return op
		}
		other.square(sq)
		sq, other = other, sq
	}
}

// combine is the CRC32C of A‖B from crc1 = CRC32C(A) and crc2 = CRC32C(B),
// m being the operator for B's length.
func (m *crcShift) combine(crc1, crc2 uint32) uint32 { return m.times(crc1) ^ crc2 }

// crc32cCombine is the CRC32C of A‖B from crc1 = CRC32C(A), crc2 =
// CRC32C(B) and len2 = len(B), without the data.
func crc32cCombine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	op := newCRCShift(len2)
	return op.combine(crc1, crc2)
}

// fileSum is a file's checksum under a connection's verification, fed
// chunk by chunk in file order.
type fileSum struct {
	v        Verify
	h        hash.Hash // VerifySHA256
	crc      uint32    // VerifyCRC32C
	shift    crcShift  // appends shiftLen bytes (the usual chunk length)
	shiftLen int64
}

func newFileSum(v Verify) *fileSum {
	s := &fileSum{v: v.or()}
	if s.v == VerifySHA256 {
		s.h = sha256.New()
	}
	return s
}

func (s *fileSum) reset() {
	s.crc = 0
	if s.h != nil {
		s.h.Reset()
	}
}

// add sums the next chunk: data itself with SHA-256, its CRC32C crc
// (already computed) otherwise.
func (s *fileSum) add(data []byte, crc uint32) {
	switch s.v {
	case VerifySHA256:
		s.h.Write(data)
	case VerifyCRC32C:
		s.addCRC(crc, int64(len(data)))
	}
}

// addCRC appends n bytes whose CRC32C is crc to the CRC so far.
func (s *fileSum) addCRC(crc uint32, n int64) {
	switch {
	case n == s.shiftLen:
		s.crc = s.shift.combine(s.crc, crc)
	case s.shiftLen == 0:
		s.shift, s.shiftLen = newCRCShift(n), n
		s.crc = s.shift.combine(s.crc, crc)
	default:
		s.crc = crc32cCombine(s.crc, crc, n)
	}
}

// digest is the checksum in its wire form (Checksum).
func (s *fileSum) digest() (d [DigestSize]byte) {
	switch s.v {
	case VerifySHA256:
		s.h.Sum(d[:0])
	case VerifyCRC32C:
		d = rdcp.CRCDigest(s.crc)
	}
	return d
}

// result records the checksum in res.
func (s *fileSum) result(res *FileResult) {
	res.Verify = s.v
	switch s.v {
	case VerifySHA256:
		s.h.Sum(res.Digest[:0])
	case VerifyCRC32C:
		res.CRC32C = s.crc
	}
}

// wireDigest is res's checksum in its wire form (what DONE and RESULT
// carry): the SHA-256, the CRC32C (CRCDigest), or zero.
func (res *FileResult) wireDigest() [DigestSize]byte {
	switch res.Verify {
	case VerifySHA256:
		return res.Digest
	case VerifyCRC32C:
		return rdcp.CRCDigest(res.CRC32C)
	}
	return [DigestSize]byte{}
}
