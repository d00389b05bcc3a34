package transfer

import (
	"context"
	"errors"
	"fmt"
	"github.com/rdmago/rdmago/internal/rdcp"
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
//   - checks each chunk's CRC32C before writing it and asks for a corrupted
//     chunk again (or, with VerifySHA256, the SHA-256 of the whole content;
//     see Verify), checks the file's checksum against the sender's, fsyncs,
//     sets mode (permission bits) and modification time, renames into
//     place, fsyncs the directory, and only then answers RESULT ok.
//
// A file that fails verification or cannot be written is removed; a transfer
// cut short (the connection broke, the sender aborted) leaves its partial
// copy to resume from (Sender.Resume). Nothing ever appears under NAME unverified.
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
	// Verify is the receiver's verification policy (zero: VerifyCRC32C),
	// announced in its HELLO; a sender may refuse it (Sender.Verify).
	Verify Verify
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
	// rename, for tests, replaces renameNoReplace (nil: it).
	rename func(dirfd int, from, to string) error
	// hashHook, for tests, runs after each piece of a resumed prefix is
	// hashed.
	hashHook func()
}

var errNoLink = errors.New("hard links disabled (test)")

// FileResult is what happened to one file or directory.
type FileResult struct {
	ID     uint32
	Name   string
	Kind   Kind
	Size   int64 // the whole file
	Offset int64 // where the data started (resumed prefix)
	Bytes  int64 // data moved over the connection (chunks written again not counted)
	// Verify is the connection's verification; Digest the content's
	// SHA-256 (VerifySHA256 only), CRC32C its CRC32C (VerifyCRC32C only).
	Verify Verify
	Digest [DigestSize]byte
	CRC32C uint32
	// Resent counts chunks the receiver asked for again (RESEND).
	Resent int
	// Verified: the receiver checked the checksum (none with VerifyNone)
	// and the file is in place (for directories: created or present).
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
	rc := &recvConn{r: r, c: newConn(t, r.idle(), r.hashHook), rep: &ConnReport{}}
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
	pool     *chunkPool
	copies   [][]byte // free buffers chunks are copied out of the window into
	// per slot of the current window: recvXfer's slot states, the chunk
	// each holds, the CRC32C of a checked chunk, the RESENDs asked for it.
	state   []uint8
	chunkOf []uint64
	crcs    []uint32
	tries   []uint8
	umask   uint32 // the process's, when the connection started

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
	defer rc.closePool()
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
		case *rdcp.File:
			if err := rc.file(ctx, m); err != nil {
				return err
			}
		case *rdcp.Bye:
			return rc.c.send(ctx, &rdcp.Bye{})
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
	if hs.Role != rdcp.RoleSender {
		return protoErrorf("HELLO from a %v: the connecting end must be a sender", hs.Role)
	}
	if hs.MinVersion > rdcp.ProtocolVersion || hs.MaxVersion < rdcp.ProtocolVersion {
		return versionError(hs)
	}
	if hs.Verify != 0 {
		return protoErrorf("HELLO from a sender with verification %v: the receiver's policy decides (the sender's must be 0)", hs.Verify)
	}
	if rc.r.PSK != nil && hs.Flags&rdcp.HelloPSK == 0 {
		return &Error{Code: CodeAuthRequired, Text: "this receiver requires a pre-shared key (Receiver.PSK) and the sender has none (Sender.PSK)"}
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
	hr := &rdcp.Hello{Role: rdcp.RoleReceiver, MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion,
		Verify: rdcp.Verify(rc.r.Verify.or()), Slots: uint32(rc.slots), SlotSize: uint32(rc.slotSize)}
	helloR, err := rc.c.sendHello(ctx, hr, rc.r.PSK)
	if err != nil {
		return err
	}
	if rc.r.PSK == nil {
		return nil
	}
	if err := rc.c.recvAuth(ctx, rc.r.PSK, labelSender, helloS, helloR,
		"before AUTH (this receiver requires a pre-shared key)",
		"the sender's pre-shared key differs from the receiver's (Sender.PSK, Receiver.PSK): both ends must use the same key"); err != nil {
		return err
	}
	if err := rc.c.send(ctx, &rdcp.Auth{MAC: authMAC(rc.r.PSK, labelReceiver, helloS, helloR)}); err != nil {
		return err
	}
	rc.c.bind(rc.r.PSK, helloS, helloR, false)
	return nil
}

// versionError is the refusal of a sender's HELLO whose versions do not
// include this receiver's, saying which end to upgrade.
func versionError(hs *rdcp.Hello) error {
	speaks := fmt.Sprintf("protocol version %d", hs.MinVersion)
	if hs.MinVersion != hs.MaxVersion {
		speaks = fmt.Sprintf("protocol versions %d..%d", hs.MinVersion, hs.MaxVersion)
	}
	what := "the sender"
	if hs.MinVersion > rdcp.ProtocolVersion {
		what = "the receiver"
	}
	return &Error{Code: CodeVersion, Text: fmt.Sprintf("the sender speaks %s, this receiver %d: use matching rdmacp versions (upgrade rdmacp on %s)", speaks, rdcp.ProtocolVersion, what)}
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
