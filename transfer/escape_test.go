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

// Text that could move the cursor, end a line or reorder what follows comes
// out escaped; printable text (any script) unchanged.
func TestEscapeText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain name.txt", "plain name.txt"},
		{"héllo 世界 ✓", "héllo 世界 ✓"},
		{"a\nrdmacp: 7 of 7 items verified", `a\nrdmacp: 7 of 7 items verified`},
		{"x\r\x1b[2Ky", `x\r\x1b[2Ky`},
		{"csi\u009b2J", `csi\u009b2J`},
		{"bidi\u202etxt.exe", `bidi\u202etxt.exe`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"tab\tdel\x7f", `tab\tdel\x7f`},
		{"line\u2028sep", `line\u2028sep`},
		{"back\\slash \"q\"\x00", `back\slash "q"\x00`},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
		// Idempotent: rdmacp escapes err.Error(), whose text is escaped.
		if got := Escape(c.want); got != c.want {
			t.Errorf("Escape(%q) = %q, want it unchanged", c.want, got)
		}
	}
	e := &Error{Code: CodeIO, Text: "x\n\rrdmacp: from a: 7 of 7 items verified\x1b[K", Remote: true}
	if got, want := e.Error(), `peer: I/O error: x\n\rrdmacp: from a: 7 of 7 items verified\x1b[K`; got != want {
		t.Errorf("remote error prints as %q, want %q", got, want)
	}
}
