package transfer

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
)

// MinPSKLen is the shortest pre-shared key accepted, in bytes.
const MinPSKLen = 16

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

func authMAC(psk []byte, label string, helloS, helloR []byte) [MACSize]byte {
	m := hmac.New(sha256.New, psk)
	m.Write([]byte(label))
	m.Write(helloS)
	m.Write(helloR)
	var out [MACSize]byte
	m.Sum(out[:0])
	return out
}

// ReadPSKFile reads a pre-shared key: the file's bytes less one trailing
// newline (so `head -c 32 /dev/urandom | base64 > key` works). Both ends
// must use the same key.
func ReadPSKFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read pre-shared key: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) < MinPSKLen {
		return nil, fmt.Errorf("pre-shared key %s has %d bytes, want at least %d: make one with `head -c 32 /dev/urandom | base64 > %s`", path, len(b), MinPSKLen, path)
	}
	return b, nil
}

// sendHello sends h with a fresh nonce, flagged HelloPSK when psk is set,
// and returns the message as sent (for authMAC).
func (c *conn) sendHello(ctx context.Context, h *Hello, psk []byte) ([]byte, error) {
	if psk != nil {
		h.Flags |= HelloPSK
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
func (c *conn) recvHello(ctx context.Context, where string) (*Hello, []byte, error) {
	m, _, err := c.recv(ctx)
	if err != nil {
		return nil, nil, err
	}
	h, ok := m.(*Hello)
	if !ok {
		return nil, nil, unexpected(m, where)
	}
	return h, append([]byte(nil), c.last...), nil
}

// recvAuth waits for the peer's AUTH and checks its MAC, made with label
// (the peer's role), against the key. where says what the message should
// have come before; wrong is the error text for a MAC that does not match.
func (c *conn) recvAuth(ctx context.Context, psk []byte, label string, helloS, helloR []byte, where, wrong string) error {
	m, _, err := c.recv(ctx)
	if err != nil {
		return err
	}
	a, ok := m.(*Auth)
	if !ok {
		return unexpected(m, where)
	}
	want := authMAC(psk, label, helloS, helloR)
	if !hmac.Equal(a.MAC[:], want[:]) {
		return &Error{Code: CodeAuthFailed, Text: wrong}
	}
	return nil
}
