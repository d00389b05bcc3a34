package transfer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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
//   - refuses unsafe names (absolute, with "." or ".." components or
//     control characters, too long) and resolves the rest inside Dir with
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
	// PSK, when set, is required of every sender (both ends prove it: HMAC-SHA256 over both HELLOs).
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
	// Resent counts chunks the receiver asked for again (RESEND), in the
	// receiver's results (ConnReport); a Send counts them in Report.Resent.
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
