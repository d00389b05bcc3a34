package transfer

// One file of a connection: names, the partial (temporary) file, resuming.

import (
	"context"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// recvFile is the state of one transfer.
type recvFile struct {
	m        *rdcp.File
	res      FileResult
	f        *os.File
	partial  string
	sum      *fileSum
	keep     int64 // the partial copy's verified, contiguous length (-1: all of it)
	start    time.Time
	reported bool
}

// file handles one FILE. It returns only fatal errors; everything about the
// file itself goes into its RESULT.
func (rc *recvConn) file(ctx context.Context, m *rdcp.File) (err error) {
	if m.ID <= rc.lastID {
		return protoErrorf("FILE with transfer id %d after %d: ids must increase", m.ID, rc.lastID)
	}
	rc.lastID = m.ID
	rc.nfiles++
	if rc.nfiles > rc.r.maxFiles() {
		return &Error{Code: CodeTooMany, Text: fmt.Sprintf("more than %d files on one connection: send the rest on another", rc.r.maxFiles())}
	}
	x := &recvFile{m: m, start: time.Now(), partial: rdcp.PartialName(m.Name), keep: -1,
		res: FileResult{ID: m.ID, Name: m.Name, Kind: Kind(m.Kind), Size: int64(m.Size)}}
	defer func() {
		if x.f != nil {
			// Cut short (connection broken, fatal error): keep the partial
			// copy, durable, for --resume: its verified prefix (chunks
			// after a missing one may be written already).
			if x.keep >= 0 {
				x.f.Truncate(x.keep)
			}
			x.f.Sync()
			x.f.Close()
		}
		if !x.reported {
			if x.res.Err == nil {
				x.res.Err = err
			}
			rc.report(x)
		}
	}()
	if m.Size > uint64(rc.r.maxFileSize()) {
		return rc.reject(ctx, x, CodeTooLarge, "%s is %d bytes; this receiver accepts at most %d", m.Name, m.Size, rc.r.maxFileSize())
	}
	if !rc.r.lock(m.Name) {
		return rc.reject(ctx, x, CodeBusy, "another sender is writing %s right now", m.Name)
	}
	defer rc.r.unlock(m.Name)

	if m.Kind == rdcp.KindDir {
		if err := rc.root.MkdirAll(m.Name, fs.FileMode(m.Mode&0o777|0o700)); err != nil {
			return rc.rejectErr(ctx, x, "create directory", err)
		}
		return rc.result(ctx, x, CodeOK, "")
	}

	if fi, err := rc.root.Lstat(m.Name); err == nil {
		if fi.IsDir() {
			return rc.reject(ctx, x, CodeNotDir, "%s is a directory on the receiver", m.Name)
		}
		if !rc.r.Force {
			return rc.reject(ctx, x, CodeExists, "%s already exists on the receiver: remove it, or let the receiver replace files (Receiver.Force)", m.Name)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rc.rejectErr(ctx, x, "look up", err)
	}
	if dir := path.Dir(m.Name); dir != "." {
		if err := rc.root.MkdirAll(dir, 0o755); err != nil {
			return rc.rejectErr(ctx, x, "create directory for", err)
		}
	}
	f, err := rc.root.OpenFile(x.partial, os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return rc.rejectErr(ctx, x, "create partial copy of", err)
	}
	x.f = f
	x.sum = newFileSum(rc.r.Verify)

	// Resume: offer the partial copy's length and checksum.
	var offer rdcp.ResumeOffset
	offer.ID = m.ID
	if m.Flags&rdcp.FileResume != 0 {
		if off, d, err := rc.rehash(ctx, f, int64(m.Size), x.sum); err == nil && off > 0 {
			offer.Offset = uint64(off)
			offer.Digest = d
		}
	}
	if offer.Offset == 0 {
		if err := f.Truncate(0); err != nil {
			return rc.rejectErr(ctx, x, "truncate partial copy of", err)
		}
		x.sum.reset()
	}
	if err := rc.c.send(ctx, &offer); err != nil {
		return err
	}
	startAt := int64(offer.Offset)
	if offer.Offset > 0 {
		mm, _, err := rc.c.recv(ctx)
		if err != nil {
			return err
		}
		ro, ok := mm.(*rdcp.ResumeOffset)
		switch {
		case !ok:
			return unexpected(mm, fmt.Sprintf("while waiting for the sender's RESUME-OFFSET of transfer %d", m.ID))
		case ro.ID != m.ID:
			return protoErrorf("RESUME-OFFSET for transfer %d during transfer %d", ro.ID, m.ID)
		case ro.Offset == 0:
			startAt = 0
			x.sum.reset()
			if err := f.Truncate(0); err != nil {
				return rc.rejectErr(ctx, x, "truncate partial copy of", err)
			}
		case ro.Offset != offer.Offset || ro.Digest != offer.Digest:
			return protoErrorf("sender's RESUME-OFFSET %d does not confirm the offered %d", ro.Offset, offer.Offset)
		}
	}
	x.res.Offset = startAt
	return rc.data(ctx, x, startAt)
}

// rehash sums the partial copy into sum (which it leaves dirty on error)
// and returns its length and checksum to offer: the SHA-256 with
// VerifySHA256, else the CRC32C, summed in pieces on the pool. A partial
// longer than size is no prefix and gives 0.
func (rc *recvConn) rehash(ctx context.Context, f *os.File, size int64, sum *fileSum) (int64, [DigestSize]byte, error) {
	var d [DigestSize]byte
	fi, err := f.Stat()
	if err != nil {
		return 0, d, err
	}
	n := fi.Size()
	if !fi.Mode().IsRegular() || n > size {
		return 0, d, nil
	}
	if sum.h != nil {
		if rc.buf == nil {
			rc.buf = make([]byte, 1<<20)
		}
		if _, err := hashPrefix(ctx, rc.c, sum.h, io.NewSectionReader(f, 0, n), n, rc.buf); err != nil {
			return 0, d, err
		}
		return n, sum.digest(), nil
	}
	bufs := make([][]byte, poolWorkers(rc.slots))
	for i := range bufs {
		bufs[i] = make([]byte, prefixPiece+rdcp.ChunkCRCSize)
	}
	crc, err := prefixCRC(ctx, rc.c, rc.chunkPool(), f, 0, n, bufs)
	if err != nil {
		return 0, d, err
	}
	sum.crc = crc
	return n, rdcp.CRCDigest(crc), nil
}

// hashPrefix hashes the first n bytes of r into h, sending KEEPALIVEs on c
// meanwhile (a long prefix takes longer than the peer's idle timeout). It
// returns how many bytes it hashed.
func hashPrefix(ctx context.Context, c *conn, h hash.Hash, r io.Reader, n int64, buf []byte) (int64, error) {
	var done int64
	for done < n {
		k, err := io.ReadFull(r, buf[:min(int64(len(buf)), n-done)])
		h.Write(buf[:k])
		done += int64(k)
		if err != nil {
			return done, err
		}
		if c.hashHook != nil {
			c.hashHook()
		}
		if err := c.keepAlive(ctx); err != nil {
			return done, err
		}
	}
	return done, nil
}
