package transfer

import (
	"github.com/rdmago/rdmago/internal/escape"
)

// Escape returns s fit to print on a terminal: every rune that is not
// graphic (C0 and C1 controls such as newline, carriage return and ESC,
// format characters such as the bidirectional overrides, line and paragraph
// separators) is written as a Go escape (\n, \x1b, \u202e), and every byte
// that is not UTF-8 as \xNN. Printable text comes back unchanged, and
// escaping twice changes nothing. Names and texts from the wire (ERROR,
// RESULT, FILE) go through it wherever they are printed, so a peer cannot
// forge or erase lines of output.
func Escape(s string) string { return escape.Text(s) }
