package transfer

// Writing, verifying and committing: checksums, fsync, rename, RESULT.

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
)

func (rc *recvConn) write(x *recvFile, b []byte, off int64) error {
	if rc.r.writeFault != nil {
		if err := rc.r.writeFault(x.m.Name, off, len(b)); err != nil {
			return &os.PathError{Op: "write", Path: x.partial, Err: err}
		}
	}
	_, err := x.f.WriteAt(b, off)
	return err
}

// discard closes and removes the partial copy.
func (rc *recvConn) discard(x *recvFile) {
	if x.f != nil {
		x.f.Close()
		x.f = nil
	}
	rc.root.Remove(x.partial)
}

// done verifies and commits after DONE.
func (rc *recvConn) done(ctx context.Context, x *recvFile, d *rdcp.Done, chunks, consumed uint64, failed bool) error {
	m := x.m
	if failed {
		return nil // RESULT already sent
	}
	if d.Flags&rdcp.DoneAborted != 0 {
		if x.keep >= 0 {
			x.f.Truncate(x.keep)
		}
		x.f.Sync()
		return rc.reject(ctx, x, CodeAborted, "the sender stopped sending %s; %d bytes are kept to resume from (Sender.Resume)", m.Name, x.res.Offset+x.res.Bytes)
	}
	if d.Chunks != chunks || consumed != chunks {
		return protoErrorf("DONE of transfer %d after %d chunks; %d arrived, %d expected", m.ID, d.Chunks, consumed, chunks)
	}
	x.sum.result(&x.res)
	if got := x.res.wireDigest(); got != d.Digest {
		rc.discard(x)
		if x.res.Verify == VerifyCRC32C {
			want := rdcp.CRCOfDigest(d.Digest)
			return rc.reject(ctx, x, CodeDigest, "%s arrived with CRC32C %08x, the sender's is %08x; the copy was removed: send it again", m.Name, x.res.CRC32C, want)
		}
		return rc.reject(ctx, x, CodeDigest, "%s arrived with SHA-256 %x, the sender's is %x; the copy was removed: send it again", m.Name, got, d.Digest)
	}
	f := x.f
	if err := f.Sync(); err != nil {
		rc.discard(x)
		return rc.rejectErr(ctx, x, "sync", err)
	}
	// The sender's permission bits, less the receiver's umask (as if the
	// file had been created with them).
	if err := f.Chmod(fs.FileMode(m.Mode & 0o777 &^ rc.umask)); err != nil {
		rc.discard(x)
		return rc.rejectErr(ctx, x, "chmod", err)
	}
	f.Close()
	x.f = nil
	mt := m.ModTime()
	if err := rc.root.Chtimes(x.partial, mt, mt); err != nil {
		rc.discard(x)
		return rc.rejectErr(ctx, x, "set times of", err)
	}
	if err := rc.commit(x.partial, m.Name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Raced with another writer of NAME: keep the verified copy.
			return rc.reject(ctx, x, CodeExists, "%s appeared on the receiver during the transfer; the verified copy is kept as %s: let the receiver replace files (Receiver.Force) to replace it", m.Name, x.partial)
		}
		return rc.rejectErr(ctx, x, "rename into place", err)
	}
	if dir, err := rc.root.Open(path.Dir(m.Name)); err == nil {
		dir.Sync()
		dir.Close()
	}
	return rc.result(ctx, x, CodeOK, "")
}

// commit renames partial to name, refusing to replace an existing name
// unless Force is set: without Force it hard-links (which fails if name
// exists) and unlinks the partial, or on file systems without hard links
// renames with RENAME_NOREPLACE, so a file created concurrently under name
// is never overwritten.
func (rc *recvConn) commit(partial, name string) error {
	if rc.r.Force {
		return rc.root.Rename(partial, name)
	}
	err := errNoLink
	if !rc.r.noLink {
		err = rc.root.Link(partial, name)
	}
	if err == nil {
		rc.root.Remove(partial)
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	return rc.renameNoReplace(partial, name)
}

// renameNoReplace renames partial to name (both in one directory) unless
// name exists: renameat2(RENAME_NOREPLACE) on the directory opened through
// the root, so no symbolic link is followed.
func (rc *recvConn) renameNoReplace(partial, name string) error {
	dir, err := rc.root.Open(path.Dir(name))
	if err != nil {
		return err
	}
	defer dir.Close()
	raw, err := dir.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	if err := raw.Control(func(fd uintptr) {
		rename := renameNoReplace
		if rc.r.rename != nil {
			rename = rc.r.rename
		}
		rerr = rename(int(fd), path.Base(partial), path.Base(name))
	}); err != nil {
		return err
	}
	if rerr == nil {
		return nil
	}
	if errors.Is(rerr, fs.ErrExist) {
		return &fs.PathError{Op: "rename", Path: name, Err: fs.ErrExist}
	}
	return &fs.PathError{Op: "rename", Path: name, Err: fmt.Errorf("%w (this file system has neither hard links nor rename without replacing: only a receiver that replaces files, Receiver.Force, can write here)", rerr)}
}

// result sends RESULT and records the file's outcome.
func (rc *recvConn) result(ctx context.Context, x *recvFile, code Code, text string) error {
	if code != CodeOK && x.res.Err == nil {
		x.res.Err = &Error{Code: code, Text: text}
	}
	x.res.Verified = code == CodeOK
	rc.report(x)
	return rc.c.send(ctx, &rdcp.Result{ID: x.m.ID, Code: rdcp.Code(code), Digest: x.res.wireDigest(), Text: rdcp.TruncText(text)})
}

func (rc *recvConn) reject(ctx context.Context, x *recvFile, code Code, format string, args ...any) error {
	return rc.result(ctx, x, code, fmt.Sprintf(format, args...))
}

func (rc *recvConn) rejectErr(ctx context.Context, x *recvFile, op string, err error) error {
	if isEscape(err) {
		return rc.result(ctx, x, CodeBadName, fmt.Sprintf("%s leads outside the destination through a symbolic link on the receiver: refused", x.m.Name))
	}
	return rc.result(ctx, x, fileErrorCode(err), fmt.Sprintf("%s %s: %v", op, x.m.Name, err))
}

func (rc *recvConn) report(x *recvFile) {
	if x.reported {
		return
	}
	x.reported = true
	x.res.Duration = time.Since(x.start)
	rc.rep.add(x.res)
	if rc.r.OnFile != nil {
		rc.r.OnFile(x.res)
	}
}

func roundUp(n, to int64) int64 { return (n + to - 1) / to * to }

// parallelHashMin is the chunk size from which SHA-256 runs in a goroutine
// of its own beside the reads, writes and posts (when the process may use
// more than one CPU); smaller chunks are hashed where they are.
const parallelHashMin = 64 << 10

// asyncHash feeds a hash in its own goroutine, in the order of put: the
// SHA-256 of --verify sha256, off the path of the chunks. A buffer put in
// comes back from get (in the same order) once it is in the hash; until
// then it must not change. stop ends the goroutine once every buffer is
// back.
type asyncHash struct {
	in, out chan []byte
	n       int // buffers put and not yet got
}

// newAsyncHash starts hashing into h; at most depth buffers may be in it.
func newAsyncHash(h hash.Hash, depth int) *asyncHash {
	a := &asyncHash{in: make(chan []byte, depth), out: make(chan []byte, depth)}
	go func() {
		for b := range a.in {
			h.Write(b)
			a.out <- b
		}
	}()
	return a
}

func (a *asyncHash) put(b []byte) { a.n++; a.in <- b }

func (a *asyncHash) get() []byte { a.n--; return <-a.out }

func (a *asyncHash) tryGet() ([]byte, bool) {
	select {
	case b := <-a.out:
		a.n--
		return b, true
	default:
		return nil, false
	}
}

func (a *asyncHash) stop() {
	for a.n > 0 {
		a.get()
	}
	close(a.in)
}
