package rdcp

import (
	"fmt"
	"path"
	"strings"
)

// Name limits. A name is the relative, '/'-separated path of a file or
// directory under the receiver's destination.
const (
	// MaxNameLen is the longest name, in bytes.
	MaxNameLen = 1024
	// MaxComponentLen is the longest component: 255 (NAME_MAX) less room for
	// the partial file's "." prefix and PartialSuffix.
	MaxComponentLen = 255 - 1 - len(PartialSuffix)
	// PartialSuffix ends the name of a partial copy: NAME arrives as
	// ".NAME.rdmacp-partial" in the same directory, is synced and renamed to
	// NAME once verified, and stays there for --resume if the transfer breaks.
	PartialSuffix = ".rdmacp-partial"
)

// CheckName reports whether name is safe to create under a destination
// directory: not empty, relative, no "", "." or ".." component (so no leading,
// trailing or doubled '/'), no NUL or other control character, no component
// ending in PartialSuffix, within MaxNameLen and MaxComponentLen. Symbolic
// links inside the destination are the receiver's business (it resolves names
// with os.Root, which refuses to leave the directory).
func CheckName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty name")
	case len(name) > MaxNameLen:
		return fmt.Errorf("name of %d bytes exceeds %d", len(name), MaxNameLen)
	case name[0] == '/':
		return fmt.Errorf("name %q is absolute", name)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return fmt.Errorf("name %q contains control character %#02x", name, c)
		}
	}
	for c := range strings.SplitSeq(name, "/") {
		switch {
		case c == "":
			return fmt.Errorf("name %q has an empty component", name)
		case c == "." || c == "..":
			return fmt.Errorf("name %q has a %q component", name, c)
		case len(c) > MaxComponentLen:
			return fmt.Errorf("name %q has a component of %d bytes (limit %d)", name, len(c), MaxComponentLen)
		case strings.HasSuffix(c, PartialSuffix):
			return fmt.Errorf("name %q ends a component in %q, reserved for partial copies", name, PartialSuffix)
		}
	}
	return nil
}

// PartialName is where NAME is written until it is verified:
// "DIR/.BASE.rdmacp-partial" for "DIR/BASE".
func PartialName(name string) string {
	dir, base := path.Split(name)
	return dir + "." + base + PartialSuffix
}
