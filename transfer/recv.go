package transfer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Receiver defaults.
const (
	DefaultSlots       = 16
	DefaultSlotSize    = 1 << 20
	DefaultMaxFiles    = 1 << 17
	DefaultMaxFileSize = 1 << 40
	DefaultMaxConns    = 16
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultHandshakeTimeout bounds HELLO (and AUTH) from a new
	// connection's start.
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultHandshakeGrace is how long a connection in its handshake may
	// stay silent before a new connection can take its place when
	// MaxHandshakes are under way (Receiver.HandshakeGrace). An honest
	// handshake takes a few round trips: milliseconds.
	DefaultHandshakeGrace = time.Second
	// ReportFiles is how many results a ConnReport keeps: the first ones,
	// then failures only; the rest are counted (and given to OnFile).
	ReportFiles = 64
)

// Receiver writes what senders send into Dir. Its zero value (with Dir set)
// is ready; one Receiver serves any number of connections at once (Serve, or
// ServeConn per connection).
//
// For every regular file NAME it receives, it
//   - refuses unsafe names (CheckName) and resolves the rest inside Dir with
//     os.Root, so neither ".." nor a symbolic link can lead outside Dir;
//   - refuses to replace an existing NAME unless Force is set;
//   - writes to ".NAME.rdmacp-partial" beside it, resuming a partial copy
//     there when the sender asks and its prefix hashes the same at both ends;
//   - exposes a window of at most Slots×SlotSize bytes, registered for this
//     transfer only and deregistered when its data is in;
//   - checks the SHA-256 of the content against the sender's, fsyncs, sets
//     mode (permission bits) and modification time, renames into place,
//     fsyncs the directory, and only then answers RESULT ok.
//
// A file that fails verification or cannot be written is removed; a transfer
// cut short (the connection broke, the sender aborted) leaves its partial
// copy for --resume. Nothing ever appears under NAME unverified.
type Receiver struct {
	// Dir is the destination directory; it must exist.
	Dir string
	// Force allows replacing existing files (never directories).
	Force bool
	// PSK, when set, is required of every sender (see authMAC).
	PSK []byte
	// Slots and SlotSize bound each transfer's window (defaults
	// DefaultSlots, DefaultSlotSize); a sender may ask for less.
	Slots    int
	SlotSize int
	// MaxFiles limits FILE messages per connection (default
	// DefaultMaxFiles); MaxFileSize the size of one file; MaxConns the
	// connections served at once (default DefaultMaxConns).
	MaxFiles    int
	MaxFileSize int64
	MaxConns    int
	// MaxHandshakes limits the connections that have not finished HELLO
	// (and AUTH) yet, a share of MaxConns of their own (default a quarter
	// of MaxConns, at least 1): silent peers cannot use up MaxConns. A
	// connection beyond it takes the place of the oldest one that has sent
	// nothing (or nothing since its HELLO) for longer than HandshakeGrace,
	// which is ended with CodeHandshakeBusy; when there is none it is
	// refused at once with CodeHandshakeBusy. Honest senders take that as
	// "connect again shortly" (Sender.DialSend).
	MaxHandshakes int
	// HandshakeTimeout ends a connection that has not finished HELLO (and,
	// with a PSK, AUTH) that long after it started (default
	// DefaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// HandshakeGrace is how long a connection in its handshake may stay
	// silent and keep its place against a new connection (see
	// MaxHandshakes; default DefaultHandshakeGrace; negative: always,
	// until HandshakeTimeout). Silent peers that connect again then hold
	// the handshake places for a grace each, not for HandshakeTimeout.
	HandshakeGrace time.Duration
	// IdleTimeout ends a connection that sends nothing for that long.
	IdleTimeout time.Duration
	// OnFile, when set, is called after each file or directory with its
	// result, from the connection's goroutine.
	OnFile func(FileResult)

	mu    sync.Mutex
	busy  map[string]bool
	nconn int
	hands []*handshaking // connections in their handshake, oldest first

	// writeFault, for tests, runs before each write into a partial file; an
	// error it returns is the write's.
	writeFault func(name string, off int64, n int) error
	// noLink, for tests, commits as on a file system without hard links.
	noLink bool
}

var errNoLink = errors.New("hard links disabled (test)")

// FileResult is what happened to one file or directory.
type FileResult struct {
	ID     uint32
	Name   string
	Kind   Kind
	Size   int64 // the whole file
	Offset int64 // where the data started (resumed prefix)
	Bytes  int64 // data moved over the connection
	Digest [DigestSize]byte
	// Verified: the receiver checked the SHA-256 and the file is in place
	// (for directories: created or present).
	Verified bool
	Retries  int
	Duration time.Duration
	Err      error
}

// ConnReport is what one connection did. Its memory is bounded whatever
// the peer sends: Files keeps the first ReportFiles results, then failures
// only, up to 2×ReportFiles in all; the counters count every FILE.
type ConnReport struct {
	Peer     string // the sender's address, when the transport tells (Peer() string)
	Files    []FileResult
	Items    int // FILE messages answered (files and directories)
	Verified int // of them verified
	Omitted  int // results not kept in Files
	Bytes    int64
	Duration time.Duration
}

// OK reports whether every file and directory of the connection was
// verified (and there was at least one).
func (c *ConnReport) OK() bool {
	return c != nil && c.Items > 0 && c.Verified == c.Items
}

// add counts res and keeps it if there is room.
func (c *ConnReport) add(res FileResult) {
	c.Items++
	if res.Verified {
		c.Verified++
	}
	if len(c.Files) < ReportFiles || (!res.Verified && len(c.Files) < 2*ReportFiles) {
		c.Files = append(c.Files, res)
		return
	}
	c.Omitted++
}

func (r *Receiver) slots() int    { return defInt(r.Slots, DefaultSlots) }
func (r *Receiver) slotSize() int { return defInt(r.SlotSize, DefaultSlotSize) }
func (r *Receiver) maxFiles() int { return defInt(r.MaxFiles, DefaultMaxFiles) }
func (r *Receiver) maxConns() int { return defInt(r.MaxConns, DefaultMaxConns) }
func (r *Receiver) maxHandshakes() int {
	return defInt(r.MaxHandshakes, max(1, r.maxConns()/4))
}
func (r *Receiver) handshakeGrace() time.Duration {
	if r.HandshakeGrace != 0 {
		return r.HandshakeGrace
	}
	return DefaultHandshakeGrace
}
func (r *Receiver) handshakeTimeout() time.Duration {
	if r.HandshakeTimeout > 0 {
		return r.HandshakeTimeout
	}
	return DefaultHandshakeTimeout
}
func (r *Receiver) maxFileSize() int64 {
	if r.MaxFileSize > 0 {
		return r.MaxFileSize
	}
	return DefaultMaxFileSize
}
func (r *Receiver) idle() time.Duration {
	if r.IdleTimeout > 0 {
		return r.IdleTimeout
	}
	return DefaultIdleTimeout
}

func defInt(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// Serve accepts connections from ln and serves each in its own goroutine
// until ctx is done or Accept fails; it waits for the connections it
// started. Connections beyond MaxConns are refused with ERROR busy, those
// beyond MaxHandshakes with ERROR busy with handshakes (CodeHandshakeBusy,
// which senders retry: see Sender.DialSend). onConn,
// when set, is called as each connection ends.
func (r *Receiver) Serve(ctx context.Context, ln Listener, onConn func(*ConnReport, error)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		t, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("accept on %s: %w", ln.Addr(), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer t.Close()
			rep, err := r.ServeConn(ctx, t)
			if onConn != nil {
				onConn(rep, err)
			}
		}()
	}
}

// ServeConn serves one connection until the sender says BYE (nil error),
// something fatal happens, or ctx is done. The caller closes t.
func (r *Receiver) ServeConn(ctx context.Context, t Transport) (*ConnReport, error) {
	rc := &recvConn{r: r, c: newConn(t, r.idle()), rep: &ConnReport{}}
	if p, ok := t.(interface{ Peer() string }); ok {
		rc.rep.Peer = p.Peer()
	}
	start := time.Now()
	defer func() { rc.rep.Duration = time.Since(start) }()
	// Admit the connection, or refuse it without counting it: a refused
	// sender that connects again never finds its own refusal counted. At
	// the handshake cap, take the place of a handshake silent too long.
	now := time.Now()
	r.mu.Lock()
	full := r.nconn >= r.maxConns()
	var evict *handshaking
	if !full && len(r.hands) >= r.maxHandshakes() {
		if evict = r.silentHandshake(now); evict != nil {
			r.hands = slices.DeleteFunc(r.hands, func(h *handshaking) bool { return h == evict })
		}
	}
	handshakes := !full && len(r.hands) >= r.maxHandshakes()
	if !full && !handshakes {
		r.nconn++
		hctx, cancel := context.WithCancelCause(ctx)
		rc.hand = &handshaking{ctx: hctx, cancel: cancel}
		rc.hand.last.Store(now.UnixNano())
		r.hands = append(r.hands, rc.hand)
	}
	r.mu.Unlock()
	if evict != nil {
		silent := now.Sub(time.Unix(0, evict.last.Load())).Round(time.Millisecond)
		evict.cancel(&Error{Code: CodeHandshakeBusy, Text: fmt.Sprintf("this connection's handshake sent nothing for %v while another connection waited for a place: connect again", silent)})
	}
	switch {
	case full:
		return rc.rep, rc.c.fail(ctx, &Error{Code: CodeBusy, Text: fmt.Sprintf("the receiver already serves %d senders: try again later", r.maxConns())})
	case handshakes:
		return rc.rep, rc.c.fail(ctx, &Error{Code: CodeHandshakeBusy, Text: fmt.Sprintf("the receiver already has as many connections in their handshake as it allows (%d): try again shortly", r.maxHandshakes())})
	}
	defer func() {
		r.mu.Lock()
		r.nconn--
		r.mu.Unlock()
	}()
	defer rc.handshakeOver()
	err := rc.c.explain(ctx, rc.run(ctx))
	return rc.rep, rc.c.fail(ctx, err)
}

type recvConn struct {
	r        *Receiver
	c        *conn
	rep      *ConnReport
	root     *os.Root
	slots    int
	slotSize int
	lastID   uint32
	nfiles   int
	buf      []byte // rehash buffer
	chunk    []byte // a chunk copied out of the window, hashed and written
	umask    uint32 // the process's, when the connection started

	hand *handshaking // in Receiver.hands until the handshake is over
}

// handshaking is a connection in its handshake (Receiver.hands): its
// handshake runs within ctx, which a newer connection that takes its place
// cancels with the ERROR to send as cause.
type handshaking struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	last   atomic.Int64 // when it started or its HELLO came (UnixNano)
}

// silentHandshake is the oldest connection in r.hands silent for longer
// than HandshakeGrace at now, or nil. r.mu is held.
func (r *Receiver) silentHandshake(now time.Time) *handshaking {
	grace := r.handshakeGrace()
	if grace < 0 {
		return nil
	}
	for _, h := range r.hands {
		if now.Sub(time.Unix(0, h.last.Load())) > grace {
			return h
		}
	}
	return nil
}

// handshakeOver takes the connection out of Receiver.hands (once).
func (rc *recvConn) handshakeOver() {
	h := rc.hand
	if h == nil {
		return
	}
	rc.hand = nil
	rc.r.mu.Lock()
	rc.r.hands = slices.DeleteFunc(rc.r.hands, func(x *handshaking) bool { return x == h })
	rc.r.mu.Unlock()
	h.cancel(nil)
}

func (rc *recvConn) run(ctx context.Context) error {
	root, err := os.OpenRoot(rc.r.Dir)
	if err != nil {
		return &Error{Code: fileErrorCode(err), Text: fmt.Sprintf("destination directory: %v", err)}
	}
	rc.root = root
	defer root.Close()
	rc.umask = umask()
	// HELLO (and AUTH) within the handshake timeout, whatever the idle
	// timeout: an unauthenticated peer holds a slot only that long.
	hctx, cancel := context.WithTimeout(rc.hand.ctx, rc.r.handshakeTimeout())
	err = rc.handshake(hctx)
	late := ctx.Err() == nil && hctx.Err() != nil
	cancel()
	if err != nil {
		var evicted *Error
		if ctx.Err() == nil && errors.As(context.Cause(rc.hand.ctx), &evicted) {
			return evicted
		}
		if late {
			what := "HELLO"
			if rc.r.PSK != nil {
				what = "HELLO and AUTH"
			}
			return &Error{Code: CodeProtocol, Text: fmt.Sprintf("the handshake (%s) did not finish within %v", what, rc.r.handshakeTimeout())}
		}
		return err
	}
	rc.handshakeOver()
	if p, ok := rc.c.t.(WritePreparer); ok {
		if err := p.PrepareWrites(rc.slots); err != nil {
			return &Error{Code: CodeInternal, Text: fmt.Sprintf("cannot take a window of %d slots: %v", rc.slots, err)}
		}
	}
	for {
		m, _, err := rc.c.recv(ctx)
		if err != nil {
			return err
		}
		switch m := m.(type) {
		case *File:
			if err := rc.file(ctx, m); err != nil {
				return err
			}
		case *Bye:
			return rc.c.send(ctx, &Bye{})
		default:
			return unexpected(m, "while waiting for FILE or BYE")
		}
	}
}

func (rc *recvConn) handshake(ctx context.Context) error {
	hs, helloS, err := rc.c.recvHello(ctx, "before HELLO")
	if err != nil {
		return err
	}
	rc.hand.last.Store(time.Now().UnixNano())
	if hs.Role != RoleSender {
		return protoErrorf("HELLO from a %v: the connecting end must be a sender", hs.Role)
	}
	if hs.MinVersion > ProtocolVersion || hs.MaxVersion < ProtocolVersion {
		return &Error{Code: CodeVersion, Text: fmt.Sprintf("the sender speaks protocol versions %d..%d, this receiver %d: use matching rdmacp versions", hs.MinVersion, hs.MaxVersion, ProtocolVersion)}
	}
	if rc.r.PSK != nil && hs.Flags&HelloPSK == 0 {
		return &Error{Code: CodeAuthRequired, Text: "this receiver requires a pre-shared key: run the sender with --psk-file"}
	}
	rc.slots = min(rc.r.slots(), rc.c.t.MaxSlots(), MaxSlots)
	rc.slotSize = min(rc.r.slotSize(), MaxSlotSize)
	if hs.Slots != 0 {
		rc.slots = min(rc.slots, int(hs.Slots))
	}
	if hs.SlotSize != 0 {
		rc.slotSize = min(rc.slotSize, int(hs.SlotSize))
	}
	for rc.slots > 1 && rc.slots*rc.slotSize > MaxWindow {
		rc.slots--
	}
	if rc.slots < 1 || rc.slots*rc.slotSize > MaxWindow {
		return &Error{Code: CodeInternal, Text: fmt.Sprintf("receiver window %d×%d is unusable", rc.slots, rc.slotSize)}
	}
	hr := &Hello{Role: RoleReceiver, MinVersion: ProtocolVersion, MaxVersion: ProtocolVersion,
		Slots: uint32(rc.slots), SlotSize: uint32(rc.slotSize)}
	helloR, err := rc.c.sendHello(ctx, hr, rc.r.PSK)
	if err != nil {
		return err
	}
	if rc.r.PSK == nil {
		return nil
	}
	if err := rc.c.recvAuth(ctx, rc.r.PSK, labelSender, helloS, helloR,
		"before AUTH (this receiver requires a pre-shared key)",
		"the sender's pre-shared key differs from the receiver's: use the same --psk-file on both ends"); err != nil {
		return err
	}
	if err := rc.c.send(ctx, &Auth{MAC: authMAC(rc.r.PSK, labelReceiver, helloS, helloR)}); err != nil {
		return err
	}
	rc.c.bind(rc.r.PSK, helloS, helloR, false)
	return nil
}

func (r *Receiver) lock(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy[name] {
		return false
	}
	if r.busy == nil {
		r.busy = map[string]bool{}
	}
	r.busy[name] = true
	return true
}

func (r *Receiver) unlock(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.busy, name)
}

// recvFile is the state of one transfer.
type recvFile struct {
	m        *File
	res      FileResult
	f        *os.File
	partial  string
	h        hash.Hash
	start    time.Time
	reported bool
}

// file handles one FILE. It returns only fatal errors; everything about the
// file itself goes into its RESULT.
func (rc *recvConn) file(ctx context.Context, m *File) (err error) {
	if m.ID <= rc.lastID {
		return protoErrorf("FILE with transfer id %d after %d: ids must increase", m.ID, rc.lastID)
	}
	rc.lastID = m.ID
	rc.nfiles++
	if rc.nfiles > rc.r.maxFiles() {
		return &Error{Code: CodeTooMany, Text: fmt.Sprintf("more than %d files on one connection: send the rest on another", rc.r.maxFiles())}
	}
	x := &recvFile{m: m, start: time.Now(), partial: PartialName(m.Name),
		res: FileResult{ID: m.ID, Name: m.Name, Kind: m.Kind, Size: int64(m.Size)}}
	defer func() {
		if x.f != nil {
			// Cut short (connection broken, fatal error): keep the partial
			// copy, durable, for --resume.
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

	if m.Kind == KindDir {
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
			return rc.reject(ctx, x, CodeExists, "%s already exists on the receiver: remove it, or start the receiver with --force", m.Name)
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
	x.h = sha256.New()

	// Resume: offer the partial copy's length and digest.
	var offer ResumeOffset
	offer.ID = m.ID
	if m.Flags&FileResume != 0 {
		if off, err := rc.rehash(ctx, f, int64(m.Size), x.h); err == nil && off > 0 {
			offer.Offset = uint64(off)
			x.h.Sum(offer.Digest[:0])
		}
	}
	if offer.Offset == 0 {
		if err := f.Truncate(0); err != nil {
			return rc.rejectErr(ctx, x, "truncate partial copy of", err)
		}
		x.h.Reset()
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
		ro, ok := mm.(*ResumeOffset)
		switch {
		case !ok:
			return unexpected(mm, fmt.Sprintf("while waiting for the sender's RESUME-OFFSET of transfer %d", m.ID))
		case ro.ID != m.ID:
			return protoErrorf("RESUME-OFFSET for transfer %d during transfer %d", ro.ID, m.ID)
		case ro.Offset == 0:
			startAt = 0
			x.h.Reset()
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

// rehash hashes the partial copy into h (which it leaves dirty on error) and
// returns its length; a partial longer than size is no prefix and gives 0.
func (rc *recvConn) rehash(ctx context.Context, f *os.File, size int64, h hash.Hash) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	n := fi.Size()
	if !fi.Mode().IsRegular() || n > size {
		return 0, nil
	}
	if rc.buf == nil {
		rc.buf = make([]byte, 1<<20)
	}
	if _, err := hashPrefix(ctx, rc.c, h, io.NewSectionReader(f, 0, n), n, rc.buf); err != nil {
		return 0, err
	}
	return n, nil
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
		if hashChunkHook != nil {
			hashChunkHook()
		}
		if err := c.keepAlive(ctx); err != nil {
			return done, err
		}
	}
	return done, nil
}

// hashChunkHook, for tests, runs after each chunk hashPrefix hashes.
var hashChunkHook func()

// data runs the window, then DONE and the verdict.
func (rc *recvConn) data(ctx context.Context, x *recvFile, pos int64) (err error) {
	m := x.m
	remaining := int64(m.Size) - pos
	var chunks, consumed uint64
	failed := false
	if remaining > 0 {
		slotSize := int64(rc.slotSize)
		if r := roundUp(remaining, 4096); r < slotSize {
			slotSize = r
		}
		chunks = uint64((remaining + slotSize - 1) / slotSize)
		slots := min(uint64(rc.slots), chunks)
		win, rerr := rc.c.t.Register(int(slots)*int(slotSize), true)
		if rerr != nil {
			return rc.reject(ctx, x, CodeInternal, "cannot register a %d-byte window for %s: %v", int(slots)*int(slotSize), m.Name, rerr)
		}
		defer func() {
			// Say why before withdrawing the window: the sender's next
			// write then fails, and it finds the reason queued.
			err = rc.c.fail(ctx, err)
			win.Close()
		}()
		rem := win.Remote()
		if err := rc.c.send(ctx, &Window{ID: m.ID, Slots: uint32(slots), SlotSize: uint32(slotSize), RKey: rem.RKey, Addr: rem.Addr}); err != nil {
			return err
		}
		batch := max(1, slots/4)
		var credited uint64
		mem := win.Bytes()
		parallel := runtime.GOMAXPROCS(0) > 1
		hp := startHasher(x.h)
		defer close(hp.in)
	loop:
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			mm, a, err := rc.c.recv(ctx)
			if err != nil {
				return err
			}
			if mm != nil {
				if d, ok := mm.(*Done); ok && d.ID == m.ID {
					win.Close() // the data is in: stop exposing memory
					return rc.done(ctx, x, d, chunks, consumed, failed)
				}
				return unexpected(mm, fmt.Sprintf("during the data of transfer %d", m.ID))
			}
			slot, seq := DecodeImm(a.Imm)
			if consumed >= chunks {
				return protoErrorf("data write beyond the %d chunks of transfer %d", chunks, m.ID)
			}
			if uint64(slot) != consumed%slots || seq != uint32(consumed&immSeqMask) {
				return protoErrorf("data write to slot %d with sequence %d, expected slot %d sequence %d", slot, seq, consumed%slots, consumed&immSeqMask)
			}
			n := min(slotSize, remaining-int64(consumed)*slotSize)
			if int64(a.Len) != n {
				return protoErrorf("data write of %d bytes for chunk %d, expected %d", a.Len, consumed, n)
			}
			consumed++
			if failed {
				continue loop
			}
			// Copy the chunk out of the window first: the window stays
			// remote-writable, so the peer could rewrite the slot between
			// the hash and the write. The bytes hashed are the bytes written.
			if len(rc.chunk) < int(n) {
				rc.chunk = make([]byte, slotSize)
			}
			chunk := rc.chunk[:n]
			copy(chunk, mem[int64(slot)*slotSize:][:n])
			// Hash and write the copy at once (both only read it).
			par := n >= parallelHashMin && parallel
			if par {
				hp.in <- chunk
			} else {
				x.h.Write(chunk)
			}
			werr := rc.write(x, chunk, pos)
			if par {
				<-hp.done
			}
			if werr != nil {
				failed = true
				rc.discard(x)
				if err := rc.rejectErr(ctx, x, "write", werr); err != nil {
					return err
				}
				continue loop
			}
			pos += n
			x.res.Bytes += n
			rc.rep.Bytes += n
			if consumed < chunks && consumed-credited >= batch {
				credited = consumed
				if err := rc.c.send(ctx, &Credit{ID: m.ID, Consumed: consumed}); err != nil {
					return err
				}
			}
		}
	}
	mm, _, err := rc.c.recv(ctx)
	if err != nil {
		return err
	}
	d, ok := mm.(*Done)
	if !ok || d.ID != m.ID {
		return unexpected(mm, fmt.Sprintf("while waiting for DONE of transfer %d", m.ID))
	}
	return rc.done(ctx, x, d, 0, 0, false)
}

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
func (rc *recvConn) done(ctx context.Context, x *recvFile, d *Done, chunks, consumed uint64, failed bool) error {
	m := x.m
	if failed {
		return nil // RESULT already sent
	}
	if d.Flags&DoneAborted != 0 {
		x.f.Sync()
		return rc.reject(ctx, x, CodeAborted, "the sender stopped sending %s; %d bytes are kept for --resume", m.Name, x.res.Offset+x.res.Bytes)
	}
	if d.Chunks != chunks || consumed != chunks {
		return protoErrorf("DONE of transfer %d after %d chunks; %d arrived, %d expected", m.ID, d.Chunks, consumed, chunks)
	}
	x.h.Sum(x.res.Digest[:0])
	if x.res.Digest != d.Digest {
		rc.discard(x)
		return rc.reject(ctx, x, CodeDigest, "%s arrived with SHA-256 %x, the sender's is %x; the copy was removed: send it again", m.Name, x.res.Digest, d.Digest)
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
			return rc.reject(ctx, x, CodeExists, "%s appeared on the receiver during the transfer; the verified copy is kept as %s: start the receiver with --force to replace it", m.Name, x.partial)
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
		rerr = renameNoReplace(int(fd), path.Base(partial), path.Base(name))
	}); err != nil {
		return err
	}
	if rerr == nil {
		return nil
	}
	if errors.Is(rerr, fs.ErrExist) {
		return &fs.PathError{Op: "rename", Path: name, Err: fs.ErrExist}
	}
	return &fs.PathError{Op: "rename", Path: name, Err: fmt.Errorf("%w (this file system has neither hard links nor rename without replacing: start the receiver with --force to replace existing files)", rerr)}
}

// result sends RESULT and records the file's outcome.
func (rc *recvConn) result(ctx context.Context, x *recvFile, code Code, text string) error {
	if code != CodeOK && x.res.Err == nil {
		x.res.Err = &Error{Code: code, Text: text}
	}
	x.res.Verified = code == CodeOK
	rc.report(x)
	return rc.c.send(ctx, &Result{ID: x.m.ID, Code: code, Digest: x.res.Digest, Text: truncText(text)})
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

// parallelHashMin is the chunk size from which the receiver hashes in a
// second goroutine while it writes (when it may use more than one CPU).
const parallelHashMin = 64 << 10

// hasher feeds a hash in its own goroutine: send a chunk on in, and it is
// in the hash when done delivers. Close in to stop it.
type hasher struct {
	in   chan []byte
	done chan struct{}
}

func startHasher(h hash.Hash) hasher {
	hp := hasher{in: make(chan []byte), done: make(chan struct{})}
	go func() {
		for b := range hp.in {
			h.Write(b)
			hp.done <- struct{}{}
		}
	}()
	return hp
}
