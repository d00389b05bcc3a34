package transfer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/rdmago/rdmago/internal/escape"
	"github.com/rdmago/rdmago/internal/rdcp"
)

// Code says what went wrong, on the wire (RESULT, ERROR) and in *Error.
type Code uint16

// Codes. New versions may add codes; an unknown code is still an error.
const (
	CodeOK           Code = 0
	CodeProtocol     Code = 1  // a malformed, oversized or out-of-order message
	CodeVersion      Code = 2  // no common protocol version
	CodeAuthRequired Code = 3  // one end has a pre-shared key, the other not
	CodeAuthFailed   Code = 4  // the pre-shared keys differ
	CodeBadName      Code = 5  // the name is not a safe relative path
	CodeExists       Code = 6  // the destination exists (and Receiver.Force is not set)
	CodeTooLarge     Code = 7  // the file exceeds the receiver's size limit
	CodeTooMany      Code = 8  // more files than the receiver accepts on one connection
	CodeNoSpace      Code = 9  // the receiver's disk (or quota) is full
	CodePermission   Code = 10 // the receiver may not write there
	CodeIO           Code = 11 // a read or write failed
	CodeDigest       Code = 12 // the checksum of what arrived differs from the sender's (or a chunk kept failing its CRC32C)
	CodeBusy         Code = 13 // another connection is writing the same name
	CodeAborted      Code = 14 // the sender stopped the transfer
	CodeInternal     Code = 15 // a bug or resource failure (memory registration, ...)
	CodeNotDir       Code = 16 // a path component is not a directory, or the target is one
	CodeShutdown     Code = 17 // the receiver is shutting down
	// CodeHandshakeBusy refuses a connection before anything else happens:
	// the receiver already has as many connections in their handshake as
	// it allows (Receiver.MaxHandshakes). Unlike CodeBusy it means "come
	// back in a moment": Sender.DialSend connects again. Receivers before
	// it sent CodeBusy (which a sender does not retry); senders before it
	// fail with "error code 18" and the receiver's text.
	CodeHandshakeBusy Code = 18
	// CodeVerify: the sender refused the receiver's verification policy
	// (Sender.Verify asks for more than Receiver.Verify).
	CodeVerify Code = 19
)

var codeNames = [...]string{
	CodeOK: "ok", CodeProtocol: "protocol error", CodeVersion: "version mismatch",
	CodeAuthRequired: "authentication required", CodeAuthFailed: "authentication failed",
	CodeBadName: "unsafe name", CodeExists: "file exists", CodeTooLarge: "file too large",
	CodeTooMany: "too many files", CodeNoSpace: "no space left", CodePermission: "permission denied",
	CodeIO: "I/O error", CodeDigest: "digest mismatch", CodeBusy: "busy",
	CodeAborted: "aborted by sender", CodeInternal: "internal error",
	CodeNotDir: "not a directory", CodeShutdown: "receiver shutting down",
	CodeHandshakeBusy: "busy with handshakes", CodeVerify: "verification refused",
}

func (c Code) String() string {
	if int(c) < len(codeNames) && codeNames[c] != "" {
		return codeNames[c]
	}
	return fmt.Sprintf("error code %d", uint16(c))
}

// Error is a protocol-level failure: a Code and a text saying what happened.
// Remote is set when the peer reported it (in RESULT or ERROR).
//
// errors.Is(err, ErrExists) and friends compare codes only.
type Error struct {
	Code   Code
	Text   string
	Remote bool
}

// Error says what happened; the text is escaped: it may come from
// the peer.
func (e *Error) Error() string {
	where := ""
	if e.Remote {
		where = "peer: "
	}
	if e.Text == "" {
		return where + e.Code.String()
	}
	return where + e.Code.String() + ": " + escape.Text(e.Text)
}

// Is matches any *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrProtocol     = &Error{Code: CodeProtocol}
	ErrVersion      = &Error{Code: CodeVersion}
	ErrAuthRequired = &Error{Code: CodeAuthRequired}
	ErrAuthFailed   = &Error{Code: CodeAuthFailed}
	ErrBadName      = &Error{Code: CodeBadName}
	ErrExists       = &Error{Code: CodeExists}
	ErrTooLarge     = &Error{Code: CodeTooLarge}
	ErrTooMany      = &Error{Code: CodeTooMany}
	ErrNoSpace      = &Error{Code: CodeNoSpace}
	ErrPermission   = &Error{Code: CodePermission}
	ErrIO           = &Error{Code: CodeIO}
	ErrDigest       = &Error{Code: CodeDigest}
	ErrBusy         = &Error{Code: CodeBusy}
	ErrAborted      = &Error{Code: CodeAborted}
	ErrInternal     = &Error{Code: CodeInternal}
	ErrNotDir       = &Error{Code: CodeNotDir}
	ErrShutdown     = &Error{Code: CodeShutdown}
	// ErrHandshakeBusy is the receiver refusing a connection because its
	// handshake cap is full; see CodeHandshakeBusy and Sender.DialSend.
	ErrHandshakeBusy = &Error{Code: CodeHandshakeBusy}
	// ErrVerify is a sender refusing the receiver's verification policy.
	ErrVerify = &Error{Code: CodeVerify}
)

// Transport-level sentinels. Transports wrap their failures with these so
// the core and the command can say what happened.
var (
	// ErrPeerGone means the connection broke: the peer closed it, crashed or
	// became unreachable. Partial files stay on the receiver to resume from (Sender.Resume).
	ErrPeerGone = errors.New("peer gone")
	// ErrRemoteAccess means a write hit memory the peer did not expose (or no
	// longer exposes); the connection is broken.
	ErrRemoteAccess = errors.New("remote access error")
	// ErrTransportClosed means the local end was closed.
	ErrTransportClosed = errors.New("transport closed")
)

// Window limits: Sender and Receiver Slots and SlotSize are checked against
// them.
const (
	// MaxSlots is the most slots a window may have (the immediate of
	// each write carries the slot index in 12 bits).
	MaxSlots = 4096
	// MaxSlotSize is the largest slot, in bytes.
	MaxSlotSize = 64 << 20
	// MaxWindow is the largest window (slots × slot size), in bytes.
	MaxWindow = 1 << 30
)

// DigestSize is the size of FileResult.Digest (a SHA-256).
const DigestSize = 32

// fromWire turns the wire decoders' errors into *Error.
func fromWire(err error) error {
	var we *rdcp.Error
	if errors.As(err, &we) {
		return &Error{Code: Code(we.Code), Text: we.Text}
	}
	return err
}

func protoErrorf(format string, args ...any) *Error {
	return &Error{Code: CodeProtocol, Text: fmt.Sprintf(format, args...)}
}

// fileErrorCode maps a local file-system error to the code a RESULT carries.
func fileErrorCode(err error) Code {
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno) && (errno == syscall.ENOSPC || errno == syscall.EDQUOT):
		return CodeNoSpace
	case errors.As(err, &errno) && (errno == syscall.ENOTDIR || errno == syscall.EISDIR):
		return CodeNotDir
	case errors.As(err, &errno) && errno == syscall.EROFS:
		return CodePermission
	case errors.Is(err, fs.ErrPermission):
		return CodePermission
	case errors.Is(err, fs.ErrExist):
		return CodeExists
	case errors.As(err, &errno) && (errno == syscall.ENAMETOOLONG || errno == syscall.ELOOP):
		return CodeBadName
	case isEscape(err):
		return CodeBadName
	}
	return CodeIO
}

// isEscape reports whether err is os.Root refusing a path that leaves the
// root (through "..", an absolute symlink, or a symlink pointing outside).
// os does not export that error, but returns one value for it, which
// errPathEscapes learns once: errors.Is then matches it by identity, not by
// its text.
func isEscape(err error) bool {
	esc := errPathEscapes()
	return esc != nil && errors.Is(err, esc)
}

// errPathEscapes is os.Root's unexported error for a path that leaves the
// root, learnt by asking a Root for ".." (refused before any file-system
// access); nil if that cannot be done.
var errPathEscapes = sync.OnceValue(func() error {
	r, err := os.OpenRoot(os.TempDir())
	if err != nil {
		return nil
	}
	defer r.Close()
	_, err = r.Lstat("..")
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return nil
	}
	return pe.Err
})
