package transfer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"time"
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
	// IdleTimeout ends the connection when the receiver says nothing for
	// that long (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// Progress, when set, is called as data moves.
	Progress func(Progress)
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
	sc := &sendConn{s: s, c: newConn(t, idle), rep: &Report{}, items: items}
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
	if err := sc.c.send(ctx, &Bye{}); err != nil {
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
	if _, ok := m.(*Bye); !ok {
		return unexpected(m, "while waiting for BYE")
	}
	return nil
}

func (sc *sendConn) handshake(ctx context.Context) error {
	hs := &Hello{Role: RoleSender, MinVersion: ProtocolVersion, MaxVersion: ProtocolVersion,
		Slots: uint32(min(max(sc.s.Slots, 0), MaxSlots)), SlotSize: uint32(min(max(sc.s.SlotSize, 0), MaxSlotSize))}
	helloS, err := sc.c.sendHello(ctx, hs, sc.s.PSK)
	if err != nil {
		return err
	}
	hr, helloR, err := sc.c.recvHello(ctx, "before the receiver's HELLO")
	if err != nil {
		return err
	}
	sc.greeted = true
	switch {
	case hr.Role != RoleReceiver:
		return protoErrorf("HELLO from a %v: the listening end must be a receiver", hr.Role)
	case hr.MinVersion != ProtocolVersion || hr.MaxVersion != ProtocolVersion:
		return &Error{Code: CodeVersion, Text: fmt.Sprintf("the receiver picked protocol version %d..%d, this sender speaks %d", hr.MinVersion, hr.MaxVersion, ProtocolVersion)}
	case hr.Slots == 0 || hr.SlotSize == 0 || uint64(hr.Slots)*uint64(hr.SlotSize) > MaxWindow:
		return protoErrorf("the receiver offers an unusable window of %d×%d bytes", hr.Slots, hr.SlotSize)
	case sc.s.PSK != nil && hr.Flags&HelloPSK == 0:
		return &Error{Code: CodeAuthRequired, Text: "this sender has a pre-shared key but the receiver has none: start the receiver with the same --psk-file (refusing to send to an unauthenticated receiver)"}
	case sc.s.PSK == nil && hr.Flags&HelloPSK != 0:
		return &Error{Code: CodeAuthRequired, Text: "the receiver requires a pre-shared key: run the sender with --psk-file"}
	}
	if (sc.s.Slots > 0 && int64(hr.Slots) > int64(hs.Slots)) || (sc.s.SlotSize > 0 && int64(hr.SlotSize) > int64(hs.SlotSize)) {
		return protoErrorf("the receiver offers a window of %d×%d bytes, more than the %d×%d this sender asked for", hr.Slots, hr.SlotSize, hs.Slots, hs.SlotSize)
	}
	sc.slots, sc.slotSize = int(hr.Slots), int(hr.SlotSize)
	if sc.s.PSK == nil {
		return nil
	}
	if err := sc.c.send(ctx, &Auth{MAC: authMAC(sc.s.PSK, labelSender, helloS, helloR)}); err != nil {
		return err
	}
	if err := sc.c.recvAuth(ctx, sc.s.PSK, labelReceiver, helloS, helloR, "before the receiver's AUTH",
		"the receiver's proof of the pre-shared key is wrong: use the same --psk-file on both ends"); err != nil {
		return err
	}
	sc.c.bind(sc.s.PSK, helloS, helloR, true)
	return nil
}

func (sc *sendConn) progress(it Item, fileDone, fileSize int64, finished bool) {
	if sc.s.Progress == nil {
		return
	}
	sc.s.Progress(Progress{Name: it.Name, FileDone: fileDone, FileSize: fileSize,
		Done: sc.done, Total: sc.total, Item: sc.item, Items: len(sc.items), Finished: finished})
}

// recvCtl receives a control message; data writes are not for senders.
func (sc *sendConn) recvCtl(ctx context.Context) (Message, error) {
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
		fm := &File{ID: sc.id, Kind: KindDir, Mode: uint32(it.Mode.Perm()), MTime: it.ModTime.UnixNano(), Name: it.Name}
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
	fm := &File{ID: sc.id, Kind: KindFile, Mode: uint32(st.Mode().Perm()), Size: uint64(size),
		MTime: st.ModTime().UnixNano(), Name: it.Name}
	if resume {
		fm.Flags |= FileResume
	}
	if err := sc.c.send(ctx, fm); err != nil {
		return res, err
	}
	m, err := sc.recvCtl(ctx)
	if err != nil {
		return res, err
	}
	var ro *ResumeOffset
	switch m := m.(type) {
	case *Result:
		return res, sc.early(&res, m)
	case *ResumeOffset:
		ro = m
	default:
		return res, unexpected(m, fmt.Sprintf("while waiting for RESUME-OFFSET of transfer %d", sc.id))
	}
	if ro.ID != sc.id {
		return res, protoErrorf("RESUME-OFFSET for transfer %d during transfer %d", ro.ID, sc.id)
	}
	h := sha256.New()
	var pos int64
	if ro.Offset > 0 {
		if !resume || ro.Offset > uint64(size) {
			return res, protoErrorf("the receiver offers to resume %s at %d (size %d) unasked", it.Name, ro.Offset, size)
		}
		// Hash our prefix: resume only if both ends hold the same bytes.
		n, err := hashPrefix(ctx, sc.c, h, f, int64(ro.Offset), make([]byte, 1<<20))
		var sum [DigestSize]byte
		h.Sum(sum[:0])
		reply := &ResumeOffset{ID: sc.id}
		if err == nil && n == int64(ro.Offset) && sum == ro.Digest {
			pos = n
			reply.Offset, reply.Digest = ro.Offset, ro.Digest
		} else {
			h.Reset()
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				res.Err = fmt.Errorf("rewind %s: %w", it.Path, err)
				return res, &Error{Code: CodeAborted, Text: res.Err.Error()}
			}
		}
		if err := sc.c.send(ctx, reply); err != nil {
			return res, err
		}
	}
	res.Offset = pos
	sc.done += pos
	return res, sc.stream(ctx, f, st, h, pos, &res, it)
}

// stream writes the data from pos, then DONE, then waits for the RESULT.
func (sc *sendConn) stream(ctx context.Context, f *os.File, st os.FileInfo, h hash.Hash, pos int64, res *FileResult, it Item) error {
	size := st.Size()
	remaining := size - pos
	var sent, consumed uint64
	var localErr error
	if remaining > 0 {
		m, err := sc.recvCtl(ctx)
		if err != nil {
			return err
		}
		var w *Window
		switch m := m.(type) {
		case *Result:
			return sc.early(res, m)
		case *Window:
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
		need := slots * int(slotSize)
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
		mem := sc.stage.Bytes()
		dst := RemoteRegion{Addr: w.Addr, RKey: w.RKey, Len: uint64(need)}
		chunks := uint64((remaining + slotSize - 1) / slotSize)
		for sent < chunks && localErr == nil {
			if err := ctx.Err(); err != nil {
				return err // stop at once: the transport may not need to wait
			}
			if sent-consumed >= uint64(slots) {
				m, err := sc.recvCtl(ctx)
				if err != nil {
					return err
				}
				switch m := m.(type) {
				case *Credit:
					if err := checkCredit(m, sc.id, consumed, sent); err != nil {
						return err
					}
					consumed = m.Consumed
					continue
				case *Result:
					// The receiver failed the transfer: stop, then say where.
					if err := sc.early(res, m); err != nil {
						return err
					}
					return sc.c.send(ctx, &Done{ID: sc.id, Flags: DoneAborted, Chunks: sent})
				default:
					return unexpected(m, fmt.Sprintf("during the data of transfer %d", sc.id))
				}
			}
			slot := int(sent % uint64(slots))
			off := int64(slot) * slotSize
			n := min(slotSize, remaining-int64(sent)*slotSize)
			buf := mem[off : off+n]
			if _, err := io.ReadFull(f, buf); err != nil {
				localErr = fmt.Errorf("read %s at %d: %w (did it shrink while being sent?)", it.Path, pos, err)
				break
			}
			if err := sc.c.bounded(ctx, func(ctx context.Context) error {
				return sc.c.t.WriteImm(ctx, sc.stage, int(off), int(n), dst, uint64(off), EncodeImm(slot, sent))
			}); err != nil {
				return fmt.Errorf("write chunk %d of %s: %w", sent, it.Name, err)
			}
			// Hash while the device reads the slot: both only read it, and
			// it is not reused before the receiver's credit.
			h.Write(buf)
			sent++
			pos += n
			res.Bytes += n
			sc.rep.Bytes += n
			sc.done += n
			sc.progress(it, pos, size, false)
		}
	}
	if localErr == nil {
		if st2, err := f.Stat(); err != nil || st2.Size() != size || !st2.ModTime().Equal(st.ModTime()) {
			localErr = fmt.Errorf("%s changed while being sent: send it again", it.Path)
		}
	}
	d := &Done{ID: sc.id, Chunks: sent}
	if localErr != nil {
		d.Flags = DoneAborted
	} else {
		h.Sum(res.Digest[:0])
		d.Digest = res.Digest
	}
	if err := sc.c.send(ctx, d); err != nil {
		return err
	}
	return sc.awaitResult(ctx, res, localErr, consumed, sent)
}

func checkCredit(m *Credit, id uint32, consumed, sent uint64) error {
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
		case *Credit:
			if err := checkCredit(m, sc.id, consumed, sent); err != nil {
				return err
			}
			consumed = m.Consumed
		case *Result:
			return sc.result(res, m, localErr)
		default:
			return unexpected(m, fmt.Sprintf("while waiting for RESULT of transfer %d", sc.id))
		}
	}
}

// early records a RESULT that came before DONE: only a failure may.
func (sc *sendConn) early(res *FileResult, m *Result) error {
	if m.Code == CodeOK {
		return protoErrorf("RESULT ok for transfer %d before its DONE", m.ID)
	}
	return sc.result(res, m, nil)
}

// result records a RESULT; localErr, when set, is why the sender aborted.
func (sc *sendConn) result(res *FileResult, m *Result, localErr error) error {
	if m.ID != sc.id {
		return protoErrorf("RESULT for transfer %d during transfer %d", m.ID, sc.id)
	}
	switch {
	case localErr != nil:
		res.Err = localErr
	case m.Code != CodeOK:
		res.Err = &Error{Code: m.Code, Text: m.Text, Remote: true}
	case res.Kind == KindFile && m.Digest != res.Digest:
		res.Err = &Error{Code: CodeDigest, Text: fmt.Sprintf("the receiver verified %s as %x, this sender sent %x", res.Name, m.Digest, res.Digest)}
	default:
		res.Verified = true
	}
	return nil
}
