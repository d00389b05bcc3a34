// Copyright 2026 The rdmago Authors.

// Package escape makes text from outside the program (a peer on the wire,
// a guest's console) safe to print on a terminal. It is the one place that
// decides what is escaped: transfer (peer errors) and rdmacp (names)
// and tools/lab (guest console lines, kernel crash reports) use it.
package escape

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text returns s fit to print on a terminal: every rune that is not
// graphic (C0 and C1 controls such as newline, carriage return and ESC,
// format characters such as the bidirectional overrides, line and paragraph
// separators) is written as a Go escape (\n, \x1b, \u202e), and every byte
// that is not UTF-8 as \xNN. Printable text comes back unchanged. Names and
// texts from the wire (ERROR, RESULT, FILE) go through it wherever they are
// printed, so a peer cannot forge or erase lines of output.
func Text(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsGraphic(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	// Rune by rune, not strconv.QuoteToGraphic on the whole: that would
	// also escape \ and ", changing printable text (and Text would no
	// longer be idempotent: a remote Error's text is escaped again where
	// rdmacp prints err.Error()).
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsGraphic(r) && (r != utf8.RuneError || n > 1) {
			b.WriteString(s[i : i+n])
		} else {
			q := strconv.QuoteToGraphic(s[i : i+n]) // \n, \x1b, \u202e, \xff
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
