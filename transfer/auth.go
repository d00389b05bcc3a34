package transfer

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rdmago/rdmago/internal/escape"
	"github.com/rdmago/rdmago/internal/rdcp"
)

// Authentication with a pre-shared key. Each HELLO carries a fresh random
// nonce; each end then proves it holds the key with
//
//	HMAC-SHA256(key, label || sender's HELLO || receiver's HELLO)
//
// over the encoded messages as sent, with label "rdmacp auth v1 sender\x00"
// or "rdmacp auth v1 receiver\x00". The sender proves first; the receiver
// checks before it answers (and before any memory is exposed), then proves
// itself, and the sender checks before it sends any FILE. The labels stop a
// MAC from being reflected back; the nonces stop replay; covering both
// HELLOs binds the negotiated parameters.
const (
	labelSender   = "rdmacp auth v1 sender\x00"
	labelReceiver = "rdmacp auth v1 receiver\x00"
)

func authMAC(psk []byte, label string, helloS, helloR []byte) [rdcp.MACSize]byte {
	return hmacSHA256(psk, []byte(label), helloS, helloR)
}

// hmacSHA256 is HMAC-SHA256(key, the parts one after the other): what the
// AUTH proofs, the session keys and the session MACs all are.
func hmacSHA256(key []byte, parts ...[]byte) [rdcp.MACSize]byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write(p)
	}
	var out [rdcp.MACSize]byte
	m.Sum(out[:0])
	return out
}

// sendHello sends h with a fresh nonce, flagged HelloPSK when psk is set,
// and returns the message as sent (for authMAC).
func (c *conn) sendHello(ctx context.Context, h *rdcp.Hello, psk []byte) ([]byte, error) {
	if psk != nil {
		h.Flags |= rdcp.HelloPSK
	}
	if _, err := rand.Read(h.Nonce[:]); err != nil {
		return nil, &Error{Code: CodeInternal, Text: fmt.Sprintf("nonce: %v", err)}
	}
	if err := c.send(ctx, h); err != nil {
		return nil, err
	}
	return append([]byte(nil), c.buf...), nil
}

// recvHello waits for the peer's HELLO (where: what it should have come
// before) and returns it with the message as received (for authMAC).
func (c *conn) recvHello(ctx context.Context, where string) (*rdcp.Hello, []byte, error) {
	m, a, err := c.recv(ctx)
	var e *Error
	switch {
	case err != nil && errors.As(err, &e) && !e.Remote && e.Code == CodeProtocol && c.last != nil:
		return nil, nil, protoErrorf("%s: the peer's first message (%s) is not rdmacp's HELLO: is it rdmacp?", e.Text, readText(c.last))
	case err != nil:
		return nil, nil, err
	case m == nil:
		return nil, nil, protoErrorf("unexpected data write %s (immediate %#08x, %d bytes): the peer is not rdmacp", where, a.Imm, a.Len)
	}
	h, ok := m.(*rdcp.Hello)
	if !ok {
		return nil, nil, unexpected(m, where)
	}
	return h, append([]byte(nil), c.last...), nil
}

// readText shows what a peer sent, escaped, for an error: its length and
// its first bytes.
func readText(b []byte) string {
	const show = 40
	n, more := len(b), ""
	if n > show {
		b, more = b[:show], "..."
	}
	return fmt.Sprintf("%d bytes: \"%s\"%s", n, escape.Text(string(b)), more)
}

// recvAuth waits for the peer's AUTH and checks its MAC, made with label
// (the peer's role), against the key. where says what the message should
// have come before; wrong is the error text for a MAC that does not match.
func (c *conn) recvAuth(ctx context.Context, psk []byte, label string, helloS, helloR []byte, where, wrong string) error {
	m, _, err := c.recv(ctx)
	if err != nil {
		return err
	}
	a, ok := m.(*rdcp.Auth)
	if !ok {
		return unexpected(m, where)
	}
	want := authMAC(psk, label, helloS, helloR)
	if !hmac.Equal(a.MAC[:], want[:]) {
		return &Error{Code: CodeAuthFailed, Text: wrong}
	}
	return nil
}

// The session MAC (protocol version 2). With a pre-shared key, both ends
// derive from it and the two HELLOs (whose nonces make it fresh) a session
// key, and from that one key per direction:
//
//	session = HMAC-SHA256(key, "rdmacp session v2\x00" || sender's HELLO || receiver's HELLO)
//	k(dir)  = HMAC-SHA256(session, dir)   dir: "sender to receiver" or "receiver to sender"
//
// Every control message after the AUTH exchange then carries, after its
// header and payload, HMAC-SHA256(k(dir), seq || message), seq the
// message's 64-bit big-endian number in its direction from 0. A message
// injected, altered, replayed, reordered or dropped on the way fails the
// next check and ends the connection (CodeAuthFailed). Data writes carry
// no MAC, but DONE's and RESULT's digests do: data altered on the way
// fails verification.
const labelSession = "rdmacp session v2\x00"

// bind starts the session MAC on c (after AUTH); sender says which end c is.
func (c *conn) bind(psk []byte, helloS, helloR []byte, sender bool) {
	session := authMAC(psk, labelSession, helloS, helloR)
	s2r := hmacSHA256(session[:], []byte("sender to receiver"))
	r2s := hmacSHA256(session[:], []byte("receiver to sender"))
	if sender {
		c.sendKey, c.recvKey = s2r[:], r2s[:]
	} else {
		c.sendKey, c.recvKey = r2s[:], s2r[:]
	}
	c.sendSeq, c.recvSeq = 0, 0
}

func sessionMAC(key []byte, seq uint64, msg []byte) [rdcp.MACSize]byte {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], seq)
	return hmacSHA256(key, n[:], msg)
}

// sealMessage appends the session MAC of message number seq to msg.
func sealMessage(msg, key []byte, seq uint64) ([]byte, error) {
	if len(msg)+rdcp.MACSize > MaxMessageSize {
		return nil, fmt.Errorf("message of %d bytes has no room for its session MAC", len(msg))
	}
	mac := sessionMAC(key, seq, msg)
	return append(msg, mac[:]...), nil
}

// openMessage checks the session MAC that ends b (message number seq) and
// returns the message without it.
func openMessage(b, key []byte, seq uint64) ([]byte, error) {
	if len(b) < rdcp.HeaderSize+rdcp.MACSize {
		return nil, &Error{Code: CodeAuthFailed, Text: fmt.Sprintf("a message of %d bytes has no session MAC: the session is keyed (a pre-shared key), every message after AUTH must carry one", len(b))}
	}
	msg, got := b[:len(b)-rdcp.MACSize], b[len(b)-rdcp.MACSize:]
	want := sessionMAC(key, seq, msg)
	if !hmac.Equal(got, want[:]) {
		return nil, &Error{Code: CodeAuthFailed, Text: fmt.Sprintf("message %d failed its session MAC: injected, altered, replayed or reordered on the way: connection ended", seq)}
	}
	return msg, nil
}
