package transfer

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// Sealed messages open with the same key and number only.
func TestSessionSealOpen(t *testing.T) {
	key, other := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	msg, err := rdcp.Encode(&rdcp.Credit{ID: 3, Consumed: 7})
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealMessage(append([]byte(nil), msg...), key, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := openMessage(sealed, key, 5); err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("open: %q %v", got, err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"other key":    func() ([]byte, error) { return openMessage(sealed, other, 5) },
		"other number": func() ([]byte, error) { return openMessage(sealed, key, 6) },
		"unsealed":     func() ([]byte, error) { return openMessage(msg, key, 5) },
		"altered": func() ([]byte, error) {
			b := append([]byte(nil), sealed...)
			b[rdcp.HeaderSize+3] ^= 1
			return openMessage(b, key, 5)
		},
	} {
		if _, err := open(); !errors.Is(err, ErrAuthFailed) {
			t.Errorf("%s: %v, want ErrAuthFailed", name, err)
		}
	}
	if _, err := sealMessage(make([]byte, MaxMessageSize-rdcp.MACSize+1), key, 0); err == nil {
		t.Error("sealed a message with no room for the MAC")
	}
}

// openMessage never panics, and accepts only what sealMessage made.
func FuzzSessionOpen(f *testing.F) {
	key := bytes.Repeat([]byte{7}, 32)
	msg, _ := rdcp.Encode(&rdcp.Done{ID: 1, Chunks: 2})
	sealed, _ := sealMessage(append([]byte(nil), msg...), key, 0)
	f.Add(sealed, uint64(0))
	f.Add(msg, uint64(0))
	f.Add([]byte{}, uint64(1))
	f.Fuzz(func(t *testing.T, b []byte, seq uint64) {
		got, err := openMessage(b, key, seq)
		if err != nil {
			return
		}
		again, serr := sealMessage(append([]byte(nil), got...), key, seq)
		if serr != nil || !bytes.Equal(again, b) {
			t.Fatalf("opened %x, which does not seal back to the input", b)
		}
		rdcp.Decode(got) // must not panic either
	})
}
