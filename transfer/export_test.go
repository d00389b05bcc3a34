package transfer

import (
	"github.com/rdmago/rdmago/internal/sys"
)

// Hooks for the external tests (package transfer_test), which use
// transfer/transfertest and so cannot be in package transfer.

// ParallelHashMin is the smallest slot the receiver hashes in a second
// goroutine.
const ParallelHashMin = parallelHashMin

// SetWriteFault makes r run f before each write into a partial file; an
// error f returns is the write's.
func SetWriteFault(r *Receiver, f func(name string, off int64, n int) error) { r.writeFault = f }

// SetNoHardLinks makes r commit files as on a file system without hard
// links, and runs before (when set) just before its rename, with the
// target's base name.
func SetNoHardLinks(r *Receiver, before func(to string)) {
	r.noLink = true
	r.rename = func(dirfd int, from, to string) error {
		if before != nil {
			before(to)
		}
		return sys.RenameNoReplace(dirfd, from, to)
	}
}

// SetHashChunkHook makes f run after each piece of a resumed prefix is
// hashed, at r's end and s's.
func SetHashChunkHook(r *Receiver, s *Sender, f func()) { r.hashHook, s.hashHook = f, f }

// Handshakes is how many of r's connections are in their handshake (counted
// against MaxHandshakes).
func Handshakes(r *Receiver) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.hands)
}

// CRC32CCombine is crc32cCombine.
func CRC32CCombine(crc1, crc2 uint32, len2 int64) uint32 { return crc32cCombine(crc1, crc2, len2) }
