// Copyright 2026 The rdmago Authors.

package transfer

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// isEscape knows os.Root's refusal by identity, not by its text.
func TestIsEscapeByIdentity(t *testing.T) {
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Open("../outside")
	if err == nil || !isEscape(fmt.Errorf("open partial: %w", err)) {
		t.Errorf("os.Root's escape error %v not recognised", err)
	}
	if isEscape(errors.New("path escapes from parent")) {
		t.Error("an error with the same text is taken for os.Root's")
	}
	if isEscape(os.ErrNotExist) || isEscape(nil) {
		t.Error("other errors taken for an escape")
	}
}

// Peer text inside a remote error comes out escaped (the cases of what is
// escaped are internal/escape's).
func TestEscapeText(t *testing.T) {
	e := &Error{Code: CodeIO, Text: "x\n\rrdmacp: from a: 7 of 7 items verified\x1b[K", Remote: true}
	if got, want := e.Error(), `peer: I/O error: x\n\rrdmacp: from a: 7 of 7 items verified\x1b[K`; got != want {
		t.Errorf("remote error prints as %q, want %q", got, want)
	}
}
