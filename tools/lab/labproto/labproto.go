// Copyright 2026 The rdmago Authors.

// Package labproto is the wire protocol between the lab host (rdmalab) and the
// guest init, spoken over the guest's second serial port (ttyS1, raw mode).
// The kernel console is ttyS0, so kernel messages never mix into this stream.
//
// A stream starts with Magic from the guest; then frames follow in both
// directions: one type byte, a little-endian uint32 payload length, the
// payload. The exchange is:
//
//	guest: Magic, Hello            host: Config
//	guest: Ready (or Fatal)        host: Step ... (one at a time)
//	guest: Stdout/Stderr ..., Exit host: Quit
//	guest: powers off
package labproto

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Magic opens the guest's stream; the host skips anything before it.
const Magic = "\x00RDMALAB-1\n"

// Frame types.
const (
	Hello  = 'H' // guest -> host: JSON HelloMsg
	Config = 'C' // host -> guest: JSON ConfigMsg
	Ready  = 'R' // guest -> host: JSON ReadyMsg
	Log    = 'L' // guest -> host: a line of the guest init's own log
	Fatal  = 'F' // guest -> host: setup failed (text); the guest powers off
	Step   = 'S' // host -> guest: JSON StepMsg
	Stdout = 'O' // guest -> host: command output
	Stderr = 'E' // guest -> host: command error output
	Exit   = 'X' // guest -> host: JSON ExitMsg, after the step's last output
	Quit   = 'Q' // host -> guest: power off
)

// MaxPayload bounds a frame so a corrupt length cannot exhaust memory.
const MaxPayload = 16 << 20

// HelloMsg tells the host the guest is up.
type HelloMsg struct {
	Kernel  string   // uname -r
	Modules []string // modules loaded, in order
	Errors  []string // modules that failed to load
}

// Share is a host directory mounted writable in the guest.
type Share struct {
	Tag  string // 9p mount_tag
	Path string // host path; mounted at the same path in the host-root view
}

// ConfigMsg is the node's configuration.
type ConfigMsg struct {
	Node     int    // 0 or 1
	Nodes    int    // 1 or 2
	Addr     string // this node's IPv4 address
	Peer     string // the other node's address (Addr with one node)
	Prefix   int    // prefix length of the lab network
	Netdev   string // the netdev rxe sits on: "v0" (veth) or "eth0"
	Veth     bool   // create the veth pair v0/v1 first
	Dev      string // name of the rxe device to create, e.g. "rxe0"
	Shares   []Share
	Hostname string
}

// ReadyMsg reports a finished setup.
type ReadyMsg struct {
	SetupMillis int64
	Log         []string
}

// StepMsg is a command to run. Paths are as the command will see them.
type StepMsg struct {
	Args []string // Args[0] is an absolute path
	Dir  string   // working directory
	Env  []string // added to the lab environment
	Bare bool     // run in the initramfs root instead of chroot into the host root
}

// ExitMsg ends a step.
type ExitMsg struct {
	Status int    // exit status; 128+signal if killed
	Error  string // why the command could not run, if it could not
	Millis int64
}

// Writer writes frames; it is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a frame writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteRaw writes bytes outside any frame (Magic).
func (w *Writer) WriteRaw(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.w.Write(b)
	return err
}

// Frame writes one frame.
func (w *Writer) Frame(typ byte, payload []byte) error {
	if len(payload) > MaxPayload {
		return fmt.Errorf("labproto: frame of %d bytes exceeds %d", len(payload), MaxPayload)
	}
	b := make([]byte, 5+len(payload))
	b[0] = typ
	binary.LittleEndian.PutUint32(b[1:], uint32(len(payload)))
	copy(b[5:], payload)
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err := w.w.Write(b)
	return err
}

// JSON writes a frame with v encoded as JSON.
func (w *Writer) JSON(typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.Frame(typ, b)
}

// ReadFrame reads one frame.
func ReadFrame(r *bufio.Reader) (typ byte, payload []byte, err error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[1:])
	if n > MaxPayload {
		return 0, nil, fmt.Errorf("labproto: frame type %q claims %d bytes", hdr[0], n)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return hdr[0], payload, nil
}

// SkipToMagic discards input up to and including Magic, returning what was
// skipped (boot noise, if any).
func SkipToMagic(r *bufio.Reader) ([]byte, error) {
	var skipped []byte
	m := []byte(Magic)
	matched := 0
	for matched < len(m) {
		c, err := r.ReadByte()
		if err != nil {
			return skipped, err
		}
		switch {
		case c == m[matched]:
			matched++
		case c == m[0]:
			skipped = append(skipped, m[:matched]...)
			matched = 1
		default:
			skipped = append(skipped, m[:matched]...)
			skipped = append(skipped, c)
			matched = 0
		}
	}
	return skipped, nil
}
