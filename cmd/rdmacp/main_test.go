// Copyright 2026 The rdmago Authors.

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/rdcp"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/rdma"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// memNet is an in-memory network: one listener, any number of dialers.
type memNet struct {
	mu    sync.Mutex
	ln    *transfertest.Listener
	ready chan struct{}
	cfg   *rdma.Options // the listener's options
	// failDial, when set, is what Dial returns.
	failDial error
}

func newMemNet() *memNet { return &memNet{ready: make(chan struct{})} }

func (n *memNet) Listen(ctx context.Context, addr string, cfg *rdma.Options) (transfer.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ln = transfertest.NewListener()
	n.ln.Options.MaxSlots = cfg.MaxSlots
	n.cfg = cfg
	close(n.ready)
	return n.ln, nil
}

func (n *memNet) Dialer(addr string, cfg *rdma.Options) transfer.DialFunc {
	return func(ctx context.Context, wait time.Duration) (transfer.Transport, int, error) {
		if n.failDial != nil {
			return nil, 3, n.failDial
		}
		select {
		case <-n.ready: // listening: connect even with no wait left
		default:
			select {
			case <-n.ready:
			case <-time.After(wait):
				return nil, 0, cm.ErrNoListener
			}
		}
		t, err := n.ln.Dial(ctx, &transfertest.Options{MaxSlots: cfg.MaxSlots})
		if err != nil {
			return nil, 0, err
		}
		return t, 0, nil
	}
}

type result struct {
	code           int
	stdout, stderr string
}

func runCmd(ctx context.Context, nw network, args ...string) result {
	var out, errb bytes.Buffer
	code := run(ctx, args, nw, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// TestSendRecvOnce runs both commands with each receiver --verify: the JSON
// reports the checksum of the mode (SHA-256, CRC32C) or none.
func TestSendRecvOnce(t *testing.T) {
	for _, verify := range []string{"sha256", "crc32c", "none"} {
		t.Run(verify, func(t *testing.T) { testSendRecvOnce(t, verify) })
	}
}

func testSendRecvOnce(t *testing.T, verify string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "d", "e"), 0o755)
	big := bytes.Repeat([]byte("0123456789abcdef"), 50000)
	os.WriteFile(filepath.Join(src, "d", "e", "big"), big, 0o600)
	os.WriteFile(filepath.Join(src, "d", "small"), []byte("small"), 0o644)
	dst := t.TempDir()
	nw := newMemNet()
	rc := make(chan result, 1)
	go func() {
		rc <- runCmd(ctx, nw, "recv", "--once", "--json", "--slots", "4", "--slot-size", "64K", "--verify", verify, dst)
	}()
	s := runCmd(ctx, nw, "send", "--json", filepath.Join(src, "d"), "somehost")
	r := <-rc
	if s.code != 0 || r.code != 0 {
		t.Fatalf("send exit %d (%s); recv exit %d (%s)", s.code, s.stderr, r.code, r.stderr)
	}
	var ss sendSummary
	if err := json.Unmarshal([]byte(s.stdout), &ss); err != nil {
		t.Fatalf("send --json: %v: %q", err, s.stdout)
	}
	if !ss.OK || ss.Verified != 4 || ss.Bytes != int64(len(big)+5) || ss.Peer != "somehost:18517" {
		t.Errorf("send summary %+v", ss)
	}
	var bigSum fileSummary
	for _, f := range ss.Files {
		if f.Name == "d/e/big" {
			bigSum = f
		}
	}
	if !bigSum.Verified || bigSum.Seconds <= 0 || bigSum.Verify != verify || ss.Verify != verify {
		t.Errorf("big: %+v (summary verify %q), want verified with %s", bigSum, ss.Verify, verify)
	}
	switch verify {
	case "sha256":
		if want := fmt.Sprintf("%x", sha256.Sum256(big)); bigSum.SHA256 != want || bigSum.CRC32C != "" {
			t.Errorf("big: sha256 %q crc32c %q, want sha256 %s only", bigSum.SHA256, bigSum.CRC32C, want)
		}
	case "crc32c":
		if want := fmt.Sprintf("%08x", rdcp.CRC32C(big)); bigSum.CRC32C != want || bigSum.SHA256 != "" {
			t.Errorf("big: crc32c %q sha256 %q, want crc32c %s only", bigSum.CRC32C, bigSum.SHA256, want)
		}
	case "none":
		if bigSum.CRC32C != "" || bigSum.SHA256 != "" {
			t.Errorf("big: crc32c %q sha256 %q with --verify none", bigSum.CRC32C, bigSum.SHA256)
		}
	}
	var rs recvSummary
	if err := json.Unmarshal([]byte(r.stdout), &rs); err != nil {
		t.Fatalf("recv --json: %v: %q", err, r.stdout)
	}
	if !rs.OK || rs.Verified != 4 || rs.Bytes != ss.Bytes {
		t.Errorf("recv summary %+v", rs)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "d", "e", "big")); !bytes.Equal(b, big) {
		t.Error("big differs")
	}
	// Not a terminal: no progress bar, no chatter on success.
	if strings.Contains(s.stderr, "\r") || s.stderr != "" {
		t.Errorf("send wrote to a non-terminal stderr: %q", s.stderr)
	}
}

func TestSendExitStatusWhenRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "f"), []byte("new"), 0o644)
	dst := t.TempDir()
	os.WriteFile(filepath.Join(dst, "f"), []byte("old"), 0o644)
	nw := newMemNet()
	rc := make(chan result, 1)
	go func() { rc <- runCmd(ctx, nw, "recv", "--once", dst) }()
	s := runCmd(ctx, nw, "send", filepath.Join(src, "f"), "host:1234")
	r := <-rc
	if s.code != 1 || r.code != 1 {
		t.Errorf("exit codes send %d recv %d, want 1 and 1", s.code, r.code)
	}
	if !strings.Contains(s.stderr, "already exists on the receiver") || !strings.Contains(s.stderr, "--force") {
		t.Errorf("send's message does not say what to do: %q", s.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "old" {
		t.Error("overwritten")
	}
}

func TestSendErrorsExplained(t *testing.T) {
	ctx := context.Background()
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, []byte("x"), 0o644)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{cm.ErrNoListener, "start `rdmacp recv DIR` there"},
		{cm.ErrAddrResolution, "interface with an RDMA device"},
		{transfer.ErrPeerGone, "--resume"},
	} {
		nw := newMemNet()
		nw.failDial = tc.err
		r := runCmd(ctx, nw, "send", "--json", f, "h")
		if r.code != 1 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tc.err, r.code, r.stderr, tc.want)
		}
		var ss sendSummary
		if json.Unmarshal([]byte(r.stdout), &ss) != nil || ss.OK || ss.Error == "" || ss.DialRetries != 3 {
			t.Errorf("%v: json %q", tc.err, r.stdout)
		}
	}
}

func TestUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		nil, {"frobnicate"}, {"send"}, {"send", "onlyhost"}, {"recv"}, {"recv", "a", "b"},
		{"send", "--slots", "0", "f", "h"}, {"send", "--slot-size", "12Q", "f", "h"}, {"send", "--ack-timeout", "32", "f", "h"}, {"recv", "--ack-timeout", "-1", "d"}, {"recv", filepath.Join(t.TempDir(), "missing")},
	} {
		if r := runCmd(ctx, newMemNet(), args...); r.code != 2 || r.stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, r.code, r.stderr)
		}
	}
	for _, cmd := range []string{"send", "recv"} {
		if r := runCmd(ctx, newMemNet(), cmd, "-h"); r.code != 0 || !strings.Contains(r.stderr, "--") && !strings.Contains(r.stderr, "-slot-size") {
			t.Errorf("%s -h: exit %d, %q", cmd, r.code, r.stderr)
		}
	}
	c := common{slotSize: 1 << 20, window: 8 << 20, depth: 64}
	if err := c.check(); err != nil || c.slots != 8 {
		t.Errorf("--window 8M --slot-size 1M: slots %d, %v", c.slots, err)
	}
	if r := runCmd(ctx, newMemNet(), "send", "--psk-file", "/nonexistent", "f", "h"); r.code != 1 || !strings.Contains(r.stderr, "pre-shared key") {
		t.Errorf("missing psk file: %+v", r)
	}
}

func TestPSKFlag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	key, other := filepath.Join(dir, "key"), filepath.Join(dir, "other")
	os.WriteFile(key, []byte("aaaaaaaaaaaaaaaaaaaaaaaa\n"), 0o600)
	os.WriteFile(other, []byte("bbbbbbbbbbbbbbbbbbbbbbbb\n"), 0o600)
	src := filepath.Join(dir, "f")
	os.WriteFile(src, []byte("secret"), 0o600)
	for _, tc := range []struct {
		sendKey string
		code    int
	}{{key, 0}, {other, 1}} {
		dst := t.TempDir()
		nw := newMemNet()
		rc := make(chan result, 1)
		go func() { rc <- runCmd(ctx, nw, "recv", "--once", "--psk-file", key, dst) }()
		s := runCmd(ctx, nw, "send", "--psk-file", tc.sendKey, src, "h")
		r := <-rc
		if s.code != tc.code || r.code != tc.code {
			t.Errorf("key %s: exit send %d recv %d, want %d (%s / %s)", filepath.Base(tc.sendKey), s.code, r.code, tc.code, s.stderr, r.stderr)
		}
		if tc.code != 0 && (!strings.Contains(s.stderr, "pre-shared key") || !strings.Contains(s.stderr, "--psk-file")) {
			t.Errorf("wrong key: %q", s.stderr)
		}
	}
	// One end with a key, the other without: both are told the flag.
	for _, tc := range []struct{ sendArgs, recvArgs []string }{
		{nil, []string{"--psk-file", key}},
		{[]string{"--psk-file", key}, nil},
	} {
		nw := newMemNet()
		rc := make(chan result, 1)
		go func() {
			rc <- runCmd(ctx, nw, append(append([]string{"recv", "--once"}, tc.recvArgs...), t.TempDir())...)
		}()
		s := runCmd(ctx, nw, append(append([]string{"send"}, tc.sendArgs...), src, "h")...)
		r := <-rc
		if s.code != 1 || !strings.Contains(s.stderr, "pre-shared key") || !strings.Contains(s.stderr, "--psk-file") {
			t.Errorf("send %v to recv %v: exit %d, stderr %q; want 1 and --psk-file", tc.sendArgs, tc.recvArgs, s.code, s.stderr)
		}
		if r.code != 1 || !strings.Contains(r.stderr, "--psk-file") {
			t.Errorf("recv %v from send %v: exit %d, stderr %q; want 1 and --psk-file", tc.recvArgs, tc.sendArgs, r.code, r.stderr)
		}
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("short"), 0o600)
	if r := runCmd(ctx, newMemNet(), "send", "--psk-file", short, src, "h"); r.code != 1 || !strings.Contains(r.stderr, "at least 16") {
		t.Errorf("short key: %+v", r)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "64K": 64 << 10, "1M": 1 << 20, "1MiB": 1 << 20, "2G": 2 << 30, "3k": 3072, "1MB": 1 << 20} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1Q", "99999999999T"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(0, 0)
	b := newProgress(&buf, true)
	b.now = func() time.Time { return now }
	for i := int64(0); i <= 10; i++ {
		now = now.Add(200 * time.Millisecond)
		b.update(transfer.Progress{Name: "f", Done: i * 1 << 20, Total: 10 << 20, Items: 1})
	}
	line := b.line()
	for _, want := range []string{"100%", "10.0 MiB / 10.0 MiB", "5.0 MiB/s", "1/1 f"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
	b.p.Done = 5 << 20
	if line := b.line(); !strings.Contains(line, "ETA 1s") || !strings.Contains(line, " 50%") {
		t.Errorf("half-way line %q", line)
	}
	b.finish()
	if !strings.HasSuffix(buf.String(), "\n") || !strings.Contains(buf.String(), "\r") {
		t.Errorf("bar output %q", buf.String())
	}
}

// A peer's ERROR text and a file name from the wire reach the receiver's
// terminal escaped: no control character, no invalid UTF-8, no forged line.
func TestPeerTextEscaped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forged := "x\r\x1b[2K\nrdmacp: from somehost: 7 of 7 items verified, 1 MiB in 1s (1 MiB/s)\n\u009b2J\u202e"

	// An ERROR before authentication.
	dst := t.TempDir()
	nw := newMemNet()
	rc := make(chan result, 1)
	go func() { rc <- runCmd(ctx, nw, "recv", "--once", dst) }()
	<-nw.ready
	tr, err := nw.ln.Dial(ctx, &transfertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := rdcp.Append(nil, &rdcp.ErrorMsg{Code: rdcp.CodeIO, Text: forged})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	r := <-rc
	tr.Close()
	checkPrintable(t, "ERROR text", r.stderr)

	// A file name (accepted by CheckName: C1 control, bidi override,
	// invalid UTF-8) refused because it exists.
	name := "n\u009b2J\u202e\xff"
	dst = t.TempDir()
	if err := os.WriteFile(filepath.Join(dst, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "f")
	os.WriteFile(src, []byte("data"), 0o644)
	nw = newMemNet()
	go func() { rc <- runCmd(ctx, nw, "recv", "--once", dst) }()
	<-nw.ready
	tr, err = nw.ln.Dial(ctx, &transfertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(src)
	_, err = (&transfer.Sender{}).Send(ctx, tr, []transfer.Item{{Path: src, Name: name, Kind: transfer.KindFile, Size: 4, Mode: 0o644, ModTime: fi.ModTime()}})
	tr.Close()
	r = <-rc
	if err != nil || !strings.Contains(r.stderr, `n\u009b2J\u202e\xff`) {
		t.Errorf("send: %v; receiver said %q, want the name escaped", err, r.stderr)
	}
	checkPrintable(t, "name", r.stderr)
}

// checkPrintable fails unless out is valid UTF-8 whose only control
// characters are the newlines ending its lines, with one summary line.
func checkPrintable(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: output is not UTF-8: %q", what, out)
	}
	for _, r := range out {
		if r != '\n' && !unicode.IsGraphic(r) {
			t.Errorf("%s: output carries %U: %q", what, r, out)
			break
		}
	}
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "rdmacp: from ") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%s: %d summary lines, want 1: %q", what, n, out)
	}
}

// A receiver whose handshake cap is held (--max-handshakes 1, a peer that
// sent HELLO and never AUTH): send keeps trying for its --wait, then exits
// 1 saying the receiver stayed busy and what to do, counting the retries
// in busy_retries; once the cap frees, send gets through.
func TestSendBusyReceiver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte("aaaaaaaaaaaaaaaaaaaaaaaa\n"), 0o600)
	src := filepath.Join(dir, "f")
	os.WriteFile(src, []byte("data"), 0o644)
	dst := t.TempDir()
	nw := newMemNet()
	rctx, stop := context.WithCancel(ctx)
	rc := make(chan result, 1)
	go func() {
		rc <- runCmd(rctx, nw, "recv", "--psk-file", key, "--max-handshakes", "1", dst)
	}()
	<-nw.ready
	holder, err := nw.ln.Dial(ctx, &transfertest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hello, _ := rdcp.Encode(&rdcp.Hello{Role: rdcp.RoleSender, Flags: rdcp.HelloPSK,
		MinVersion: rdcp.ProtocolVersion, MaxVersion: rdcp.ProtocolVersion})
	if err := holder.Send(ctx, hello); err != nil {
		t.Fatal(err)
	}
	// The receiver's HELLO says the holder was let in: it holds the cap.
	if a, err := holder.Receive(ctx); err != nil {
		t.Fatal(err)
	} else if m, err := rdcp.Decode(a.Msg); err != nil || m.Type() != rdcp.MsgHello {
		t.Fatalf("holder got %v (%v), want HELLO", m, err)
	}

	s := runCmd(ctx, nw, "send", "--json", "--psk-file", key, "--wait", "300ms", src, "h")
	var ss sendSummary
	if jerr := json.Unmarshal([]byte(s.stdout), &ss); jerr != nil || ss.OK || ss.BusyRetries < 1 || ss.Error == "" {
		t.Errorf("busy: json %q (%v), want not ok, busy_retries ≥ 1, an error", s.stdout, jerr)
	}
	if s.code != 1 || !strings.Contains(s.stderr, "stayed busy for the whole wait of 300ms") || !strings.Contains(s.stderr, "--wait") || !strings.Contains(s.stderr, "--max-handshakes") {
		t.Errorf("busy: exit %d, stderr %q; want 1 and what to do", s.code, s.stderr)
	}
	if _, err := os.Stat(filepath.Join(dst, "f")); err == nil {
		t.Error("busy: the file arrived")
	}
	t.Logf("busy: %s", s.stderr)

	holder.Close()
	s = runCmd(ctx, nw, "send", "--json", "--psk-file", key, "--wait", "10s", src, "h")
	ss = sendSummary{}
	if jerr := json.Unmarshal([]byte(s.stdout), &ss); s.code != 0 || jerr != nil || !ss.OK {
		t.Errorf("after the holder left: exit %d, stderr %q, json %q (%v)", s.code, s.stderr, s.stdout, jerr)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "f")); string(b) != "data" {
		t.Errorf("received %q", b)
	}
	stop()
	if r := <-rc; r.code != 0 {
		t.Errorf("recv exit %d: %s", r.code, r.stderr)
	}
}

// A receiver that speaks rsockets: the error says so, the one hint what to
// run there; no hint adds advice that does not apply (--resume, "no
// receiver").
func TestSendForeignReceiver(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	os.WriteFile(f, []byte("x"), 0o644)
	nw := newMemNet()
	nw.failDial = fmt.Errorf("connect to h:18517: %w: the receiver at h:18517 speaks rsockets (rcopy, rstream or a program under librspreload), not rdmacp: it is not an rdmacp receiver (a transfer.Receiver)", rdma.ErrForeignPeer)
	r := runCmd(context.Background(), nw, "send", f, "h")
	if r.code != 1 || !strings.Contains(r.stderr, "speaks rsockets") || strings.Count(r.stderr, "rdmacp:   ") != 1 ||
		!strings.Contains(r.stderr, "rdmacp:   run `rdmacp recv DIR` there") || strings.Contains(r.stderr, "--resume") || strings.Contains(r.stderr, "no rdmacp receiver") {
		t.Errorf("exit %d, stderr %q; want 1, the error, one hint line saying what to run there", r.code, r.stderr)
	}
}

// A sender whose --verify asks for more than the receiver's: the library
// names the fields, rdmacp the flags and values to change.
func TestSendVerifyRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := filepath.Join(t.TempDir(), "f")
	os.WriteFile(src, []byte("x"), 0o644)
	nw := newMemNet()
	rc := make(chan result, 1)
	go func() { rc <- runCmd(ctx, nw, "recv", "--once", "--verify", "none", t.TempDir()) }()
	s := runCmd(ctx, nw, "send", "--verify", "sha256", src, "h")
	<-rc
	if s.code != 1 || !strings.Contains(s.stderr, "verification refused") || !strings.Contains(s.stderr, "start the receiver with --verify sha256, or send with --verify none") {
		t.Errorf("exit %d, stderr %q; want 1 and the --verify values to change", s.code, s.stderr)
	}
}
