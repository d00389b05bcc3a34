package transfer

import (
	"bytes"
	"crypto/hmac"
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
