package transfer

// One transfer's window: slots, chunks, the pool, credits.

import (
	"context"
	"fmt"
	"runtime"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// Slot states of a recvXfer.
const (
	slotFree   = iota // no chunk, or one not arrived yet
	slotBusy          // copied out, being checked and written (pool)
	slotResend        // failed its CRC32C, asked for again
	slotDone          // checked and written, not yet credited
)

// recvXfer is the state of one transfer's window. Chunks arrive in order
// (next), except those asked for again; base is the first chunk not yet
// checked and written, credited the last base the sender was told.
type recvXfer struct {
	x           *recvFile
	start       int64 // file offset of chunk 0
	slots       uint64
	slotSize    int64
	trailer     int64 // ChunkCRCSize with VerifyCRC32C, else 0
	remaining   int64
	chunks      uint64
	next        uint64
	base        uint64
	credited    uint64
	batch       uint64     // chunks a CREDIT waits for (unless the sender has no slot left)
	hash        *asyncHash // VerifySHA256 with large chunks and CPUs to spare
	resends     int        // slots in slotResend
	failed      bool
	werr        error      // the write that failed
	pendingDone *rdcp.Done // DONE came while chunks were asked for again
}

func (t *recvXfer) chunkLen(k uint64) int64 {
	return min(t.slotSize, t.remaining-int64(k)*t.slotSize)
}

// data runs the window, then DONE and the verdict. Each chunk is copied out
// of the window (which stays remote-writable, so the peer could rewrite the
// slot between the check and the write: the bytes checked are the bytes
// written), then checked against its CRC32C and written on the pool, or
// with VerifySHA256 hashed while it is written.
func (rc *recvConn) data(ctx context.Context, x *recvFile, pos int64) (err error) {
	m := x.m
	x.keep = pos
	remaining := int64(m.Size) - pos
	if remaining <= 0 {
		mm, _, err := rc.c.recv(ctx)
		if err != nil {
			return err
		}
		d, ok := mm.(*rdcp.Done)
		if !ok || d.ID != m.ID {
			return unexpected(mm, fmt.Sprintf("while waiting for DONE of transfer %d", m.ID))
		}
		return rc.done(ctx, x, d, 0, 0, false)
	}
	slotSize := int64(rc.slotSize)
	if r := roundUp(remaining, 4096); r < slotSize {
		slotSize = r
	}
	chunks := uint64((remaining + slotSize - 1) / slotSize)
	slots := min(uint64(rc.slots), chunks)
	v := rc.r.Verify.or()
	stride := int64(v.stride(int(slotSize)))
	win, rerr := rc.c.t.Register(int(slots)*int(stride), true)
	if rerr != nil {
		return rc.reject(ctx, x, CodeInternal, "cannot register a %d-byte window for %s: %v", int(slots)*int(stride), m.Name, rerr)
	}
	t := &recvXfer{x: x, start: pos, slots: slots, slotSize: slotSize, trailer: stride - slotSize,
		remaining: remaining, chunks: chunks, batch: max(1, slots/4)}
	rc.xfer(int(slots))
	p := rc.chunkPool()
	defer func() {
		// Take in what the pool finished (a broken connection keeps the
		// verified prefix), then say why before withdrawing the window:
		// the sender's next write then fails, and it finds the reason
		// queued.
		for p.n > 0 {
			rc.settle(t, p.wait())
		}
		if t.hash != nil {
			rc.hashed(t)
			t.hash.stop()
		}
		err = rc.c.fail(ctx, err)
		win.Close()
	}()
	rem := win.Remote()
	if err := rc.c.send(ctx, &rdcp.Window{ID: m.ID, Slots: uint32(slots), SlotSize: uint32(slotSize), RKey: rem.RKey, Addr: rem.Addr}); err != nil {
		return err
	}
	mem := win.Bytes()
	if v == VerifySHA256 && slotSize >= parallelHashMin && runtime.GOMAXPROCS(0) > 1 {
		t.hash = newAsyncHash(x.sum.h, len(rc.copies)+1) // stopped by the deferred cleanup above
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Take in finished chunks; when the sender can post no more
		// (every slot uncredited) or DONE waits for them, wait for all.
		for {
			j, ok := p.poll()
			if !ok {
				break
			}
			if err := rc.finish(ctx, t, j); err != nil {
				return err
			}
		}
		if t.next-t.credited >= t.slots || t.pendingDone != nil {
			for p.n > 0 {
				if err := rc.finish(ctx, t, p.wait()); err != nil {
					return err
				}
			}
		}
		if err := rc.credit(ctx, t); err != nil {
			return err
		}
		// Every RESEND is answered (the sender takes them before a
		// RESULT): after DONE, wait for the chunks asked for again, even
		// of a file that failed meanwhile.
		if d := t.pendingDone; d != nil && t.resends == 0 {
			win.Close() // the data is in: stop exposing memory
			rc.hashed(t)
			return rc.done(ctx, x, d, chunks, t.next, t.failed)
		}
		// Receive; while the pool works, only what is there already, and
		// else take in a finished chunk (whose credit may be what the
		// sender waits for).
		var mm rdcp.Message
		var a Arrival
		if p.n > 0 {
			var ok bool
			if mm, a, ok, err = rc.c.poll(ctx); err == nil && !ok {
				if err := rc.finish(ctx, t, p.wait()); err != nil {
					return err
				}
				continue
			}
		} else {
			mm, a, err = rc.c.recv(ctx)
		}
		if err != nil {
			return err
		}
		if mm != nil {
			d, ok := mm.(*rdcp.Done)
			if !ok || d.ID != m.ID || t.pendingDone != nil {
				return unexpected(mm, fmt.Sprintf("during the data of transfer %d", m.ID))
			}
			for p.n > 0 {
				if err := rc.finish(ctx, t, p.wait()); err != nil {
					return err
				}
			}
			if t.resends > 0 && !t.failed && d.Flags&rdcp.DoneAborted == 0 && t.next == chunks {
				t.pendingDone = d // the chunks asked for again follow
				continue
			}
			win.Close() // the data is in: stop exposing memory
			rc.hashed(t)
			return rc.done(ctx, x, d, chunks, t.next, t.failed)
		}
		slot, seq := rdcp.DecodeImm(a.Imm)
		var k uint64
		s := uint64(slot)
		switch {
		case s < slots && rc.state[s] == slotResend && seq == uint32(rc.chunkOf[s]&rdcp.ImmSeqMask):
			k = rc.chunkOf[s] // a chunk asked for again
		case t.next >= chunks:
			return protoErrorf("data write beyond the %d chunks of transfer %d", chunks, m.ID)
		case s != t.next%slots || seq != uint32(t.next&rdcp.ImmSeqMask) || t.next-t.credited >= slots:
			return protoErrorf("data write to slot %d with sequence %d, expected slot %d sequence %d", slot, seq, t.next%slots, t.next&rdcp.ImmSeqMask)
		default:
			k = t.next
		}
		n := t.chunkLen(k)
		if int64(a.Len) != n+t.trailer {
			crc := ""
			if t.trailer > 0 {
				crc = fmt.Sprintf(" and its %d-byte CRC32C", t.trailer)
			}
			return protoErrorf("data write of %d bytes for chunk %d, expected %d%s", a.Len, k, n, crc)
		}
		if k == t.next {
			t.next++
			rc.chunkOf[s] = k
		} else {
			t.resends--
		}
		if t.failed {
			rc.state[s] = slotFree
			continue
		}
		rc.state[s] = slotBusy
		buf, err := rc.copyBuf(ctx, t, p)
		if err != nil {
			return err
		}
		if t.failed { // the chunk that freed the buffer failed the file
			rc.copies = append(rc.copies, buf)
			rc.state[s] = slotFree
			continue
		}
		copy(buf, mem[int64(slot)*stride:][:n+t.trailer])
		p.submit(chunkJob{seq: k, off: t.start + int64(k)*slotSize, buf: buf[:n+t.trailer], n: int(n), crc: t.trailer > 0, x: x})
	}
}

// xfer sizes the connection's per-slot state for a window of slots.
func (rc *recvConn) xfer(slots int) {
	if len(rc.state) < slots {
		rc.state = make([]uint8, rc.slots)
		rc.chunkOf = make([]uint64, rc.slots)
		rc.crcs = make([]uint32, rc.slots)
		rc.tries = make([]uint8, rc.slots)
	}
	clear(rc.state)
	clear(rc.tries)
}

// chunkPool is the connection's pool (started at first use): it holds as
// many jobs as there are copy buffers.
func (rc *recvConn) chunkPool() *chunkPool {
	if rc.pool == nil {
		n := poolWorkers(rc.slots) + 1
		rc.pool = newChunkPool(rc, n)
		rc.copies = make([][]byte, 0, n)
		for range n {
			rc.copies = append(rc.copies, make([]byte, rc.slotSize+rdcp.ChunkCRCSize))
		}
	}
	return rc.pool
}

// copyBuf returns a free copy buffer, waiting for the pool (or the
// SHA-256) to finish a chunk when none is.
func (rc *recvConn) copyBuf(ctx context.Context, t *recvXfer, p *chunkPool) ([]byte, error) {
	for len(rc.copies) == 0 {
		if t.hash != nil {
			if b, ok := t.hash.tryGet(); ok {
				rc.copies = append(rc.copies, b[:cap(b)])
				continue
			}
			if p.n == 0 {
				b := t.hash.get()
				rc.copies = append(rc.copies, b[:cap(b)])
				continue
			}
		}
		if err := rc.finish(ctx, t, p.wait()); err != nil {
			return nil, err
		}
	}
	b := rc.copies[len(rc.copies)-1]
	rc.copies = rc.copies[:len(rc.copies)-1]
	return b, nil
}

// hashed waits until the SHA-256 has every chunk settled so far (their
// buffers are free again).
func (rc *recvConn) hashed(t *recvXfer) {
	for t.hash != nil && t.hash.n > 0 {
		b := t.hash.get()
		rc.copies = append(rc.copies, b[:cap(b)])
	}
}

// closePool stops the connection's pool.
func (rc *recvConn) closePool() {
	if rc.pool != nil {
		rc.pool.close()
	}
}

// settle records a finished chunk: its copy buffer is free again; written
// and checked, it is done, and base moves past every done chunk. It reports
// what needs a message: the chunk failed its check (bad) or its write (j.err).
func (rc *recvConn) settle(t *recvXfer, j chunkJob) {
	s := j.seq % t.slots
	ok := !t.failed && rc.state[s] == slotBusy && j.err == nil && !j.bad
	switch {
	case j.buf == nil:
	case ok && t.hash != nil:
		t.hash.put(j.buf[:j.n]) // back to rc.copies once hashed (copyBuf)
	case ok && t.x.sum.h != nil:
		t.x.sum.h.Write(j.buf[:j.n])
		fallthrough
	default:
		rc.copies = append(rc.copies, j.buf[:cap(j.buf)])
	}
	if t.failed || rc.state[s] != slotBusy {
		return
	}
	switch {
	case j.err != nil:
		rc.state[s] = slotFree
		t.failed = true
		t.werr = j.err // finish reports it
		return
	case j.bad:
		rc.state[s] = slotResend
		rc.tries[s]++
		t.resends++
		return
	}
	rc.state[s] = slotDone
	rc.crcs[s] = j.sum
	for t.base < t.next && rc.state[t.base%t.slots] == slotDone {
		b := t.base % t.slots
		n := t.chunkLen(t.base)
		if t.trailer > 0 {
			t.x.sum.addCRC(rc.crcs[b], n)
		}
		rc.state[b] = slotFree
		rc.tries[b] = 0
		t.x.res.Bytes += n
		rc.rep.Bytes += n
		t.x.keep += n
		t.base++
	}
}

// finish settles a finished chunk and sends what it needs: a RESEND for a
// chunk that failed its CRC32C, or the file's failure (a write failed, or
// a chunk failed MaxChunkResends+1 times).
func (rc *recvConn) finish(ctx context.Context, t *recvXfer, j chunkJob) error {
	failed := t.failed
	rc.settle(t, j)
	if err := rc.credit(ctx, t); err != nil {
		return err
	}
	x := t.x
	s := j.seq % t.slots
	switch {
	case failed:
		return nil
	case t.failed:
		rc.dropFile(t)
		return rc.rejectErr(ctx, x, "write", t.werr)
	case j.bad && rc.state[s] == slotResend:
		x.res.Resent++
		if rc.tries[s] > rdcp.MaxChunkResends {
			rc.state[s] = slotFree // not asked for again
			t.resends--
			t.failed = true
			rc.dropFile(t)
			return rc.reject(ctx, x, CodeDigest, "chunk %d of %s failed its CRC32C %d times in a row: the data is corrupted on the way (or by the sender); the copy was removed", j.seq, x.m.Name, rc.tries[s])
		}
		return rc.c.send(ctx, &rdcp.Resend{ID: x.m.ID, Chunk: j.seq})
	}
	return nil
}

// credit tells the sender how far the chunks are checked and written, every
// batch chunks, or at once when it has no slot left to write.
func (rc *recvConn) credit(ctx context.Context, t *recvXfer) error {
	if t.failed || t.base <= t.credited || t.base >= t.chunks ||
		(t.base-t.credited < t.batch && t.next-t.credited < t.slots) {
		return nil
	}
	t.credited = t.base
	return rc.c.send(ctx, &rdcp.Credit{ID: t.x.m.ID, Consumed: t.base})
}

// dropFile removes the partial copy of a failed transfer once the pool has
// finished with it.
func (rc *recvConn) dropFile(t *recvXfer) {
	for rc.pool != nil && rc.pool.n > 0 {
		rc.settle(t, rc.pool.wait())
	}
	rc.discard(t.x)
}
