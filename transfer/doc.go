// Package transfer is rdmacp's file protocol: files and directories sent
// over RDMA Write into a bounded window, verified end to end, written
// atomically. The core here knows nothing of RDMA; it drives a Transport
// (package transfer/rdma over cm and uverbs, or transfertest.Pipe in tests).
//
// # Protocol
//
// Control messages go by SEND/RECV; each is a 12-byte header (magic "RDCP",
// wire version, type, payload length) and a length-checked payload (at most
// MaxMessageSize bytes in all). Data goes by RDMA_WRITE_WITH_IMM into a window of
// slots the receiver exposes for one transfer at a time. A connection runs:
//
//	sender                                  receiver
//	HELLO(versions, nonce, window wish) →
//	                                      ← HELLO(version, nonce, window limit, verify)
//	AUTH(HMAC sender)                   →          (only with a pre-shared key;
//	                                      ← AUTH(HMAC receiver)  both checked)
//	per item:
//	FILE(id, name, size, mode, mtime, resume?) →
//	                                      ← RESULT(error)              rejected, or
//	                                      ← RESUME-OFFSET(len, checksum of partial)
//	RESUME-OFFSET(len or 0)             →          (only when len > 0)
//	                                      ← WINDOW(slots, slot size, addr, rkey)
//	WRITE_WITH_IMM(slot, seq) × n       →          (at most `slots` uncredited;
//	                                                data then its CRC32C)
//	                                      ← RESEND(chunk)     (its CRC32C failed)
//	WRITE_WITH_IMM(slot, seq)           →          (that chunk again)
//	                                      ← CREDIT(consumed)  (every slots/4)
//	DONE(chunks, checksum)              →
//	                                      ← RESULT(ok, checksum | error)
//	BYE                                 →
//	                                      ← BYE
//
// Either end may send KEEPALIVE (no payload, no answer) while it works
// without talking — hashing a long partial copy to resume — so the
// peer's idle timeout does not end the connection. With a pre-shared key,
// every message after the AUTH exchange ends with a session MAC (protocol
// version 2).
//
// Directories are a FILE of kind directory answered by RESULT at once; an
// empty remainder (an empty file, a complete partial) has no WINDOW.
//
// Chunk k of a transfer goes to slot k mod slots; the immediate carries the
// slot (12 bits) and k mod 2^20, which the receiver checks, with the length,
// against what it expects next. Credits are cumulative, so the sender always
// knows which slots are free and keeps the window full; both ends hold at
// most one window of memory whatever the file size.
//
// The receiver's policy decides how data is verified (Verify, announced in
// its HELLO, protocol version 3; a sender may refuse it). By default
// (VerifyCRC32C) each chunk's write carries the sender's CRC32C after the
// data; the receiver copies the chunk out of the window, checks the copy
// and writes that same copy, on a pool of goroutines beside the one that
// drives the transport, and asks for a chunk that fails again (RESEND, at
// most 4 times) before crediting its slot. The file's
// checksum is the CRC32C of the whole content, combined from the chunks'
// without reading them again. With VerifySHA256 the receiver instead hashes
// what it writes with SHA-256 (what sha256sum prints); with VerifyNone
// nothing is checked. DONE carries the sender's checksum of the whole
// content; only when both agree does the receiver fsync, rename into place,
// and answer RESULT ok with its own, which the sender compares with its
// own: Verified in a FileResult means both checks passed. Resuming (Sender.Resume) compares
// the prefixes by the same checksum: CRC32C summed in pieces on the pool,
// at both ends at once (the sender starts on its file while the receiver
// sums its partial copy), or SHA-256 one end after the other.
// If the receiver fails a transfer midway it answers RESULT at once and
// keeps its window until the sender's DONE (flagged aborted) proves no more
// writes are coming.
//
// Anything malformed, oversized or out of order is answered with ERROR and
// ends that connection; a Receiver keeps serving the others.
//
// # Safety and its limits
//
// Names are relative and checked (not empty, no "", "." or ".." component,
// no control character, at most 1024 bytes and components of at most 239)
// and resolved with os.Root, so
// no name and no symbolic link on the receiver leads outside its directory.
// Memory is exposed per transfer (WINDOW) and withdrawn when its data is in.
// A pre-shared key authenticates both ends before anything else (HMAC-SHA256
// over both HELLOs) and binds the rest of the session: every later control message
// carries a MAC under a key derived from the handshake, so DONE's and
// RESULT's digests cannot be rewritten on the wire, and data altered on the
// way fails verification — with VerifySHA256: a CRC32C can be steered, so
// under the default an attacker on the wire who rewrites data can make it
// pass. It does not encrypt. Without a key, the checksums catch corruption,
// not an attacker who can rewrite both the data and DONE. Modes keep their permission bits only (no
// setuid, setgid or sticky bit); directories keep their mode, not their
// modification time (their contents change it); symbolic links, devices,
// sockets and pipes are not sent.
package transfer
