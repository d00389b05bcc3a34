// Copyright 2026 The rdmago Authors.

package escape

import "testing"

// Text that could move the cursor, end a line or reorder what follows comes
// out escaped; printable text (any script) unchanged.
func TestText(t *testing.T) {
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
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
		// Idempotent: rdmacp escapes err.Error(), whose text is escaped.
		if got := Text(c.want); got != c.want {
			t.Errorf("Text(%q) = %q, want it unchanged", c.want, got)
		}
	}
}
