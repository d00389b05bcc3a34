package transfer

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// Sender sends files over one connection at a time (Send). Its zero value
// is ready.
type Sender struct {
	// PSK, when set, authenticates both ends; the sender then refuses a
	// receiver without one.
	PSK []byte
	// Resume asks the receiver to continue partial copies.
	Resume bool
	// Slots and SlotSize are the window the sender would like (zero: the
	// receiver's default); the receiver may offer less. The sender stages
	// data in the same amount of local memory.
	Slots    int
	SlotSize int
	// Retries is how many more times a file whose content failed
	// verification is sent (from the start).
	Retries int
	// Verify is the least verification this sender accepts (none <
	// crc32c < sha256; zero: whatever the receiver's policy is): a
	// receiver whose policy is less is refused with ErrVerify. The
	// receiver's policy decides what is used.
	Verify Verify
	// IdleTimeout ends the connection when the receiver says nothing for
	// that long (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// Progress, when set, is called as data moves.
	Progress func(Progress)

	// hashHook, for tests, runs after each piece of a resumed prefix is
	// hashed.
	hashHook func()
}

// Progress is where a Send is.
type Progress struct {
	Name     string // the item being sent
	FileDone int64  // bytes of it in place at the receiver's end (incl. resumed)
	FileSize int64
	Done     int64 // bytes of all items (resumed prefixes count as done)
	Total    int64
	Item     int // index of the item
	Items    int
	Finished bool // the item has its result
}

// Report is what a Send (or DialSend) did.
type Report struct {
	Files    []FileResult
	Bytes    int64 // data written over the connection
	Duration time.Duration
	Retries  int
	// Resent counts chunks written again because the receiver found them
	// corrupted (RESEND); Verify is the receiver's policy, as agreed.
	Resent int
	Verify Verify
	// DialRetries and BusyRetries are DialSend's: connection attempts
	// that failed because nobody listened yet (as the DialFunc counts
	// them), and connections the receiver refused busy with handshakes
	// (ErrHandshakeBusy), each followed by another attempt.
	DialRetries int
	BusyRetries int
}

// OK reports whether every item of the Send was verified.
func (r *Report) OK(items int) bool {
	if r == nil || len(r.Files) != items {
		return false
	}
	for _, f := range r.Files {
		if !f.Verified {
			return false
		}
	}
	return true
}

// Send sends items over t in order and ends the connection with BYE. A file
// that fails (exists, no space, unreadable, ...) is reported in its
// FileResult and the rest still go; the error is for what ends the
// connection (the peer went away, authentication, a protocol violation,
// ctx). The caller closes t.
func (s *Sender) Send(ctx context.Context, t Transport, items []Item) (*Report, error) {
	rep, _, err := s.send(ctx, t, items)
	return rep, err
}

// send is Send; refused reports that the receiver turned the connection
// away busy with handshakes (CodeHandshakeBusy in an ERROR before its
// HELLO): nothing was sent, and connecting again later may succeed.
func (s *Sender) send(ctx context.Context, t Transport, items []Item) (rep *Report, refused bool, err error) {
	idle := s.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	sc := &sendConn{s: s, c: newConn(t, idle, s.hashHook), rep: &Report{}, items: items}
	for _, it := range items {
		sc.total += it.Size
	}
	start := time.Now()
	err = sc.run(ctx)
	if sc.stage != nil {
		// After a clean run every item has its RESULT and the BYEs are
		// exchanged: a peer gone before acknowledging our last message
		// (its ACK lost on a lossy link) costs nothing either.
		derr := sc.c.bounded(ctx, t.Drain)
		if err == nil && derr != nil && !errors.Is(derr, ErrPeerGone) {
			err = derr
		}
		sc.stage.Close()
	}
	if sc.workers != nil {
		sc.workers.close()
	}
	sc.rep.Duration = time.Since(start)
	err = sc.c.fail(ctx, sc.c.explain(ctx, err))
	var e *Error
	refused = !sc.greeted && errors.As(err, &e) && e.Remote && e.Code == CodeHandshakeBusy
	return sc.rep, refused, err
}

type sendConn struct {
	s        *Sender
	c        *conn
	rep      *Report
	items    []Item
	slots    int
	slotSize int
	stage    Region
	id       uint32
	total    int64
	done     int64
	item     int
	greeted  bool // the receiver's HELLO came
	verify   Verify
	workers  *chunkPool // reads and sums chunks (pool)
	pbufs    [][]byte   // prefixCRC's buffers
	cur      *sendXfer  // the transfer whose data is being written
	ready    []uint64   // per slot: 1 + the chunk read into it
	tries    []uint8
}

func (sc *sendConn) run(ctx context.Context) error {
	if err := sc.handshake(ctx); err != nil {
		return err
	}
	for i, it := range sc.items {
		sc.item = i
		var res FileResult
		for attempt := 0; ; attempt++ {
			var err error
			res, err = sc.sendItem(ctx, it, sc.s.Resume && attempt == 0)
			res.Retries = attempt
			if err != nil {
				if res.Err == nil {
					res.Err = err
				}
				sc.rep.Files = append(sc.rep.Files, res)
				return err
			}
			if attempt < sc.s.Retries && errors.Is(res.Err, ErrDigest) {
				sc.rep.Retries++
				sc.done -= res.Offset + res.Bytes
				continue
			}
			break
		}
		sc.rep.Files = append(sc.rep.Files, res)
		if !res.Verified {
			sc.done += it.Size - (res.Offset + res.Bytes) // count it, failed, as finished
		}
		sc.progress(it, res.Size, res.Size, true)
	}
	// Every item has its RESULT by now: a receiver that has already gone
	// (its disconnect can overtake our BYE, or its BYE) costs only the
	// courtesy, not the transfer.
	if err := sc.c.send(ctx, &rdcp.Bye{}); err != nil {
		if errors.Is(err, ErrPeerGone) {
			return nil
		}
		return err
	}
	m, _, err := sc.c.recv(ctx)
	if errors.Is(err, ErrPeerGone) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, ok := m.(*rdcp.Bye); !ok {
		return unexpected(m, "while waiting for BYE")
	}
	return nil
}

func (sc *sendConn) handshake(ctx context.Context) error {
	hs := &rdcp.Hello{Role: rdcp.RoleSender, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion,
		Slots: uint32(min(max(sc.s.Slots, 0), MaxSlots)), SlotSize: uint32(min(max(sc.s.SlotSize, 0), MaxSlotSize))}
	helloS, err := sc.c.sendHello(ctx, hs, sc.s.PSK)
	if err != nil {
		return err
	}
	hr, helloR, err := sc.c.recvHello(ctx, "before the receiver's HELLO")
	if err != nil {
		return olderReceiver(err)
	}
	sc.greeted = true
	sc.verify = Verify(hr.Verify).or() // zero: the default
	sc.rep.Verify = sc.verify
	switch {
	case hr.Role != rdcp.RoleReceiver:
		return protoErrorf("HELLO from a %v: the listening end must be a receiver", hr.Role)
	case hr.MinVersion != rdcp.ProtocolVersion || hr.MaxVersion != rdcp.ProtocolVersion:
		return &Error{Code: CodeVersion, Text: fmt.Sprintf("the receiver picked protocol version %d..%d, this sender speaks %d: run the same rdmacp version on both ends", hr.MinVersion, hr.MaxVersion, rdcp.ProtocolVersion)}
	case sc.s.Verify != 0 && Verify(hr.Verify).or().strength() < sc.s.Verify.strength():
		return &Error{Code: CodeVerify, Text: fmt.Sprintf("the receiver verifies with %v, this sender asks for at least %v (Sender.Verify): the receiver's policy (Receiver.Verify) must be %v or stronger, or the sender must accept %v", Verify(hr.Verify).or(), sc.s.Verify, sc.s.Verify, Verify(hr.Verify).or())}
	case hr.Slots == 0 || hr.SlotSize == 0 || uint64(hr.Slots)*uint64(hr.SlotSize) > MaxWindow:
		return protoErrorf("the receiver offers an unusable window of %d×%d bytes", hr.Slots, hr.SlotSize)
	case sc.s.PSK != nil && hr.Flags&rdcp.HelloPSK == 0:
		return &Error{Code: CodeAuthRequired, Text: "this sender has a pre-shared key (Sender.PSK) but the receiver has none (Receiver.PSK): refusing to send to an unauthenticated receiver"}
	case sc.s.PSK == nil && hr.Flags&rdcp.HelloPSK != 0:
		return &Error{Code: CodeAuthRequired, Text: "the receiver requires a pre-shared key (Receiver.PSK) and this sender has none (Sender.PSK)"}
	}
	if (sc.s.Slots > 0 && int64(hr.Slots) > int64(hs.Slots)) || (sc.s.SlotSize > 0 && int64(hr.SlotSize) > int64(hs.SlotSize)) {
		return protoErrorf("the receiver offers a window of %d×%d bytes, more than the %d×%d this sender asked for", hr.Slots, hr.SlotSize, hs.Slots, hs.SlotSize)
	}
	sc.slots, sc.slotSize = int(hr.Slots), int(hr.SlotSize)
	if sc.s.PSK == nil {
		return nil
	}
	if err := sc.c.send(ctx, &rdcp.Auth{MAC: authMAC(sc.s.PSK, labelSender, helloS, helloR)}); err != nil {
		return err
	}
	if err := sc.c.recvAuth(ctx, sc.s.PSK, labelReceiver, helloS, helloR, "before the receiver's AUTH",
		"the receiver's proof of the pre-shared key is wrong (Sender.PSK, Receiver.PSK): both ends must use the same key"); err != nil {
		return err
	}
	sc.c.bind(sc.s.PSK, helloS, helloR, true)
	return nil
}

// olderReceiver explains a receiver's refusal of this sender's protocol
// version (an ERROR before its HELLO): receivers before version 3 say
// "this receiver N".
func olderReceiver(err error) error {
	var e *Error
	if !errors.As(err, &e) || !e.Remote || e.Code != CodeVersion {
		return err
	}
	if i := strings.Index(e.Text, "this receiver "); i >= 0 {
		var v int
		if _, serr := fmt.Sscanf(e.Text[i:], "this receiver %d", &v); serr == nil && v < int(rdcp.ProtocolVersion) {
			return &Error{Code: CodeVersion, Text: fmt.Sprintf("the receiver speaks protocol version %d, this sender %d: upgrade rdmacp on the receiver (it said: %s)", v, rdcp.ProtocolVersion, e.Text)}
		}
	}
	return &Error{Code: CodeVersion, Text: fmt.Sprintf("the receiver refused protocol version %d: run the same rdmacp version on both ends (it said: %s)", rdcp.ProtocolVersion, e.Text)}
}

func (sc *sendConn) progress(it Item, fileDone, fileSize int64, finished bool) {
	if sc.s.Progress == nil {
		return
	}
	sc.s.Progress(Progress{Name: it.Name, FileDone: fileDone, FileSize: fileSize,
		Done: sc.done, Total: sc.total, Item: sc.item, Items: len(sc.items), Finished: finished})
}

// recvCtl receives a control message; data writes are not for senders.
func (sc *sendConn) recvCtl(ctx context.Context) (rdcp.Message, error) {
	m, _, err := sc.c.recv(ctx)
	if err == nil && m == nil {
		return nil, unexpected(nil, "at the sender")
	}
	return m, err
}

// sendItem sends one item. Its error is fatal for the connection; the
// item's own failure is in the FileResult.
func (sc *sendConn) sendItem(ctx context.Context, it Item, resume bool) (res FileResult, err error) {
	sc.id++
	res = FileResult{ID: sc.id, Name: it.Name, Kind: it.Kind}
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()

	if it.Kind == KindDir {
		fm := &rdcp.File{ID: sc.id, Kind: rdcp.KindDir, Mode: uint32(it.Mode.Perm()), MTime: it.ModTime.UnixNano(), Name: it.Name}
		if err := sc.c.send(ctx, fm); err != nil {
			return res, err
		}
		return res, sc.awaitResult(ctx, &res, nil, 0, 0)
	}

	// Open what was planned: no symbolic link swapped in since (O_NOFOLLOW
	// unless the caller named the path), and the same file Plan found.
	flag := os.O_RDONLY
	if !it.follow {
		flag |= oNoFollow
	}
	f, err := os.OpenFile(it.Path, flag, 0)
	if err != nil {
		res.Err = fmt.Errorf("open %s: %w", it.Path, err)
		if isLoop(err) {
			res.Err = fmt.Errorf("open %s: it became a symbolic link after it was planned: not sent", it.Path)
		}
		return res, nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		if err == nil {
			err = fmt.Errorf("not a regular file (%v)", st.Mode().Type())
		}
		res.Err = fmt.Errorf("send %s: %w", it.Path, err)
		return res, nil
	}
	if it.planned != nil && !os.SameFile(it.planned, st) {
		res.Err = fmt.Errorf("send %s: it was replaced by another file after it was planned: not sent", it.Path)
		return res, nil
	}
	size := st.Size()
	res.Size = size
	fm := &rdcp.File{ID: sc.id, Kind: rdcp.KindFile, Mode: uint32(st.Mode().Perm()), Size: uint64(size),
		MTime: st.ModTime().UnixNano(), Name: it.Name}
	if resume {
		fm.Flags |= rdcp.FileResume
	}
	if err := sc.c.send(ctx, fm); err != nil {
		return res, err
	}
	// While the receiver sums its partial copy, sum ours from the start:
	// its RESUME-OFFSET then says how much of that to compare.
	sum := newFileSum(sc.verify)
	var sp *specPrefix
	if resume && size >= prefixPiece && sum.h == nil { // SHA-256 is summed in order, after
		sp = startSpecPrefix(sc.pool(), f, size, sc.prefixBufs(), sc.c.hashHook)
		defer func() {
			if sp != nil {
				sp.limit.Store(0)
				<-sp.done
			}
		}()
	}
	m, err := sc.recvCtl(ctx)
	if err != nil {
		return res, err
	}
	var ro *rdcp.ResumeOffset
	switch m := m.(type) {
	case *rdcp.Result:
		return res, sc.early(&res, m)
	case *rdcp.ResumeOffset:
		ro = m
	default:
		return res, unexpected(m, fmt.Sprintf("while waiting for RESUME-OFFSET of transfer %d", sc.id))
	}
	if ro.ID != sc.id {
		return res, protoErrorf("RESUME-OFFSET for transfer %d during transfer %d", ro.ID, sc.id)
	}
	var pos int64
	if ro.Offset > 0 {
		if !resume || ro.Offset > uint64(size) {
			return res, protoErrorf("the receiver offers to resume %s at %d (size %d) unasked", it.Name, ro.Offset, size)
		}
		// Sum our prefix: resume only if both ends hold the same bytes.
		d, err := sc.prefixSum(ctx, sum, f, int64(ro.Offset), sp)
		sp = nil
		reply := &rdcp.ResumeOffset{ID: sc.id}
		if err == nil && d == ro.Digest {
			pos = int64(ro.Offset)
			reply.Offset, reply.Digest = ro.Offset, ro.Digest
		} else {
			var cerr *Error
			if errors.As(err, &cerr) || errors.Is(err, ErrPeerGone) || ctx.Err() != nil {
				return res, err
			}
			sum.reset()
		}
		if err := sc.c.send(ctx, reply); err != nil {
			return res, err
		}
	}
	if sp != nil { // no prefix to compare
		if err := sp.stop(ctx, sc.c, 0); err != nil && ctx.Err() != nil {
			return res, err
		}
		sp = nil
		sum.reset()
	}
	res.Offset = pos
	sc.done += pos
	return res, sc.stream(ctx, f, st, sum, pos, &res, it)
}

// prefixSum sums the first n bytes of f into sum (SHA-256: serially;
// otherwise CRC32C in pieces on the pool) and returns the digest to compare
// with the receiver's. sp, when set, has summed (or is summing) the whole
// pieces from the start: only the rest is summed here.
func (sc *sendConn) prefixSum(ctx context.Context, sum *fileSum, f *os.File, n int64, sp *specPrefix) ([DigestSize]byte, error) {
	var head int64
	if sp != nil {
		if err := sp.stop(ctx, sc.c, n/prefixPiece); err != nil {
			return [DigestSize]byte{}, err
		}
		var k int64
		k, sum.crc = sp.upTo(n / prefixPiece)
		head = k * prefixPiece
	}
	tail := n - head
	if sum.h != nil {
		k, err := hashPrefix(ctx, sc.c, sum.h, io.NewSectionReader(f, head, tail), tail, make([]byte, 1<<20))
		if err == nil && k != tail {
			err = io.ErrUnexpectedEOF
		}
		return sum.digest(), err
	}
	crc, err := prefixCRC(ctx, sc.c, sc.pool(), f, head, tail, sc.prefixBufs())
	if err != nil {
		return [DigestSize]byte{}, err
	}
	sum.crc = crc32cCombine(sum.crc, crc, tail)
	return rdcp.CRCDigest(sum.crc), nil
}

// pool is the connection's chunk pool, started at first use.
func (sc *sendConn) pool() *chunkPool {
	if sc.workers == nil {
		sc.workers = newChunkPool(nil, max(sc.slots, 1))
	}
	return sc.workers
}

// prefixBufs are the buffers prefixCRC reads a resumed prefix into.
func (sc *sendConn) prefixBufs() [][]byte {
	if sc.pbufs == nil {
		sc.pbufs = make([][]byte, poolWorkers(max(sc.slots, 1)))
		for i := range sc.pbufs {
			sc.pbufs[i] = make([]byte, prefixPiece+rdcp.ChunkCRCSize)
		}
	}
	return sc.pbufs
}

// stream writes the data from pos, then DONE, then waits for the RESULT.
// The pool reads (and, with CRC32C, sums) chunks into their staging slots
// ahead of the posts, as far as the credits allow.
func (sc *sendConn) stream(ctx context.Context, f *os.File, st os.FileInfo, sum *fileSum, pos int64, res *FileResult, it Item) error {
	size := st.Size()
	remaining := size - pos
	var sent, consumed uint64
	var localErr error
	sc.cur = nil
	if remaining > 0 {
		m, err := sc.recvCtl(ctx)
		if err != nil {
			return err
		}
		var w *rdcp.Window
		switch m := m.(type) {
		case *rdcp.Result:
			return sc.early(res, m)
		case *rdcp.Window:
			w = m
		default:
			return unexpected(m, fmt.Sprintf("while waiting for WINDOW of transfer %d", sc.id))
		}
		slots, slotSize := int(w.Slots), int64(w.SlotSize)
		switch {
		case w.ID != sc.id:
			return protoErrorf("WINDOW for transfer %d during transfer %d", w.ID, sc.id)
		case slots > sc.slots || int(slotSize) > sc.slotSize:
			return protoErrorf("WINDOW of %d×%d exceeds the %d×%d the receiver announced", slots, slotSize, sc.slots, sc.slotSize)
		}
		stride := int64(sc.verify.stride(int(slotSize)))
		need := slots * int(stride)
		if sc.stage == nil || len(sc.stage.Bytes()) < need {
			if sc.stage != nil {
				if err := sc.c.bounded(ctx, sc.c.t.Drain); err != nil {
					return err
				}
				sc.stage.Close()
				sc.stage = nil
			}
			stage, err := sc.c.t.Register(need, false)
			if err != nil {
				return &Error{Code: CodeInternal, Text: fmt.Sprintf("register %d bytes of staging memory: %v", need, err)}
			}
			sc.stage = stage
		}
		x := &sendXfer{dst: RemoteRegion{Addr: w.Addr, RKey: w.RKey, Len: uint64(need)},
			slots: slots, slotSize: slotSize, stride: stride, trailer: stride - slotSize, remaining: remaining,
			chunks: uint64((remaining + slotSize - 1) / slotSize), tries: sc.tries[:0]}
		for range slots {
			x.tries = append(x.tries, 0)
		}
		sc.tries = x.tries
		sc.cur = x
		if len(sc.ready) < slots {
			sc.ready = make([]uint64, sc.slots)
		}
		ready := sc.ready[:slots]
		clear(ready)
		mem := sc.stage.Bytes()
		p := sc.pool()
		defer p.drain() // no read into the staging memory after this
		// --verify sha256: hash beside the posts when there are CPUs to
		// spare; a slot is read again only once its chunk is hashed.
		var ah *asyncHash
		var hashed uint64
		if sum.h != nil && slotSize >= parallelHashMin && runtime.GOMAXPROCS(0) > 1 {
			ah = newAsyncHash(sum.h, slots)
			defer ah.stop()
		}
		start := pos
		var issued uint64
		for sent < x.chunks && localErr == nil {
			if err := ctx.Err(); err != nil {
				return err // stop at once: the transport may not need to wait
			}
			// Read ahead into every slot the credits free.
			for issued < x.chunks && issued < consumed+uint64(slots) {
				for ah != nil && issued >= hashed+uint64(slots) {
					ah.get()
					hashed++
				}
				slot := int64(issued % uint64(slots))
				n := x.chunkLen(issued)
				p.submit(chunkJob{seq: issued, off: start + int64(issued)*slotSize, buf: mem[slot*stride : slot*stride+n+x.trailer],
					n: int(n), crc: x.trailer > 0, f: f})
				x.tries[slot] = 0
				issued++
			}
			if sent-consumed >= uint64(slots) {
				m, err := sc.recvCtl(ctx)
				if err != nil {
					return err
				}
				switch m := m.(type) {
				case *rdcp.Credit:
					if err := checkCredit(m, sc.id, consumed, sent); err != nil {
						return err
					}
					consumed = m.Consumed
					continue
				case *rdcp.Resend:
					if err := sc.resend(ctx, m, consumed, sent); err != nil {
						return err
					}
					continue
				case *rdcp.Result:
					// The receiver failed the transfer: stop, then say where.
					if err := sc.early(res, m); err != nil {
						return err
					}
					return sc.c.send(ctx, &rdcp.Done{ID: sc.id, Flags: rdcp.DoneAborted, Chunks: sent})
				default:
					return unexpected(m, fmt.Sprintf("during the data of transfer %d", sc.id))
				}
			}
			slot := int(sent % uint64(slots))
			for ready[slot] != sent+1 && localErr == nil {
				j := p.wait()
				if j.err != nil {
					localErr = fmt.Errorf("read %s at %d: %w (did it shrink while being sent?)", it.Path, j.off, j.err)
					break
				}
				ready[j.seq%uint64(slots)] = j.seq + 1
			}
			if localErr != nil {
				break
			}
			off := int64(slot) * stride
			n := x.chunkLen(sent)
			if err := sc.c.bounded(ctx, func(ctx context.Context) error {
				return sc.c.t.WriteImm(ctx, sc.stage, int(off), int(n+x.trailer), x.dst, uint64(off), rdcp.EncodeImm(slot, sent))
			}); err != nil {
				return fmt.Errorf("write chunk %d of %s: %w", sent, it.Name, err)
			}
			// Sum while the device reads the slot: both only read it, and
			// it is not reused before the receiver's credit.
			var crc uint32
			if x.trailer > 0 {
				crc = binary.BigEndian.Uint32(mem[off+n:])
			}
			if ah != nil {
				ah.put(mem[off : off+n])
			} else {
				sum.add(mem[off:off+n], crc)
			}
			sent++
			pos += n
			res.Bytes += n
			sc.rep.Bytes += n
			sc.done += n
			sc.progress(it, pos, size, false)
		}
		for ah != nil && ah.n > 0 { // the whole content is in the hash
			ah.get()
			hashed++
		}
	}
	if localErr == nil {
		if st2, err := f.Stat(); err != nil || st2.Size() != size || !st2.ModTime().Equal(st.ModTime()) {
			localErr = fmt.Errorf("%s changed while being sent: send it again", it.Path)
		}
	}
	d := &rdcp.Done{ID: sc.id, Chunks: sent}
	if localErr != nil {
		d.Flags = rdcp.DoneAborted
	} else {
		sum.result(res)
		d.Digest = res.wireDigest()
	}
	if err := sc.c.send(ctx, d); err != nil {
		return err
	}
	return sc.awaitResult(ctx, res, localErr, consumed, sent)
}

// sendXfer is where the current transfer's chunks go, for RESENDs.
type sendXfer struct {
	dst       RemoteRegion
	slots     int
	slotSize  int64
	stride    int64 // slotSize + trailer
	trailer   int64 // ChunkCRCSize with CRC32C, else 0
	remaining int64 // data bytes from the first chunk on
	chunks    uint64
	tries     []uint8 // RESENDs of the chunk in each slot
}

// chunkLen is the data length of chunk k.
func (x *sendXfer) chunkLen(k uint64) int64 {
	return min(x.slotSize, x.remaining-int64(k)*x.slotSize)
}

// resend writes chunk m.Chunk again, from its staging slot (which holds it
// until the receiver credits it).
func (sc *sendConn) resend(ctx context.Context, m *rdcp.Resend, consumed, sent uint64) error {
	x := sc.cur
	switch {
	case x == nil || x.trailer == 0 || m.ID != sc.id:
		return protoErrorf("RESEND of chunk %d of transfer %d during transfer %d, which has no CRC32C chunks", m.Chunk, m.ID, sc.id)
	case m.Chunk < consumed || m.Chunk >= sent:
		return protoErrorf("RESEND of chunk %d of transfer %d, which has %d credited of %d sent", m.Chunk, m.ID, consumed, sent)
	}
	slot := int(m.Chunk % uint64(x.slots))
	if x.tries[slot] >= rdcp.MaxChunkResends {
		return protoErrorf("RESEND of chunk %d of transfer %d, asked for again %d times already: at most %d", m.Chunk, m.ID, x.tries[slot], rdcp.MaxChunkResends)
	}
	x.tries[slot]++
	sc.rep.Resent++
	off := int64(slot) * x.stride
	n := x.chunkLen(m.Chunk)
	if err := sc.c.bounded(ctx, func(ctx context.Context) error {
		return sc.c.t.WriteImm(ctx, sc.stage, int(off), int(n+x.trailer), x.dst, uint64(off), rdcp.EncodeImm(slot, m.Chunk))
	}); err != nil {
		return fmt.Errorf("write chunk %d again: %w", m.Chunk, err)
	}
	return nil
}

func checkCredit(m *rdcp.Credit, id uint32, consumed, sent uint64) error {
	if m.ID != id || m.Consumed <= consumed || m.Consumed > sent {
		return protoErrorf("CREDIT of transfer %d for %d chunks; transfer %d has %d credited of %d sent", m.ID, m.Consumed, id, consumed, sent)
	}
	return nil
}

// awaitResult waits for the RESULT of the current transfer, accepting
// credits still on their way.
func (sc *sendConn) awaitResult(ctx context.Context, res *FileResult, localErr error, consumed, sent uint64) error {
	for {
		m, err := sc.recvCtl(ctx)
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *rdcp.Credit:
			if err := checkCredit(m, sc.id, consumed, sent); err != nil {
				return err
			}
			consumed = m.Consumed
		case *rdcp.Resend:
			if localErr != nil && m.ID == sc.id {
				continue // aborted: the receiver learns it from DONE
			}
			if err := sc.resend(ctx, m, consumed, sent); err != nil {
				return err
			}
		case *rdcp.Result:
			return sc.result(res, m, localErr)
		default:
			return unexpected(m, fmt.Sprintf("while waiting for RESULT of transfer %d", sc.id))
		}
	}
}

// early records a RESULT that came before DONE: only a failure may.
func (sc *sendConn) early(res *FileResult, m *rdcp.Result) error {
	if m.Code == rdcp.CodeOK {
		return protoErrorf("RESULT ok for transfer %d before its DONE", m.ID)
	}
	return sc.result(res, m, nil)
}

// result records a RESULT; localErr, when set, is why the sender aborted.
func (sc *sendConn) result(res *FileResult, m *rdcp.Result, localErr error) error {
	if m.ID != sc.id {
		return protoErrorf("RESULT for transfer %d during transfer %d", m.ID, sc.id)
	}
	switch {
	case localErr != nil:
		res.Err = localErr
	case m.Code != rdcp.CodeOK:
		res.Err = &Error{Code: Code(m.Code), Text: m.Text, Remote: true}
	case res.Kind == KindFile && m.Digest != res.wireDigest():
		res.Err = &Error{Code: CodeDigest, Text: fmt.Sprintf("the receiver verified %s as %x, this sender sent %x", res.Name, m.Digest, res.wireDigest())}
	default:
		res.Verified = true
	}
	return nil
}
