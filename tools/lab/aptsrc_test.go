// Copyright 2026 The rdmago Authors.

package lab

import (
	"strings"
	"testing"
)

// The mirror below is a placeholder: the lab never names a real mirror, it
// rewrites whatever the system's own sources say.
func TestRewriteSuitesDeb822(t *testing.T) {
	in := `Types: deb
# comment mentioning bookworm stays
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main contrib
`
	want := `Types: deb
# comment mentioning bookworm stays
URIs: http://mirror.example/debian
Suites: trixie trixie-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: trixie-security
Components: main contrib
`
	out, changed := RewriteSuites([]byte(in), "bookworm", "trixie")
	if !changed || string(out) != want {
		t.Errorf("changed=%v\n%s", changed, out)
	}
}

func TestRewriteSuitesOneLine(t *testing.T) {
	in := "deb http://mirror.example/debian bookworm main\n" +
		"deb [signed-by=/k.gpg arch=amd64] http://mirror.example/debian-security bookworm-security main\n" +
		"deb-src http://mirror.example/debian bookworm-backports main\n" +
		"deb http://other.example/x stable main\n" +
		"# deb http://mirror.example/debian bookworm main\n"
	want := "deb http://mirror.example/debian trixie main\n" +
		"deb [signed-by=/k.gpg arch=amd64] http://mirror.example/debian-security trixie-security main\n" +
		"deb-src http://mirror.example/debian trixie-backports main\n" +
		"deb http://other.example/x stable main\n" +
		"# deb http://mirror.example/debian bookworm main\n"
	out, changed := RewriteSuites([]byte(in), "bookworm", "trixie")
	if !changed || string(out) != want {
		t.Errorf("changed=%v\n got %q\nwant %q", changed, out, want)
	}
}

func TestRewriteSuitesNothingToDo(t *testing.T) {
	in := "Types: deb\nURIs: http://mirror.example/debian\nSuites: bullseye\nComponents: main\n"
	out, changed := RewriteSuites([]byte(in), "bookworm", "trixie")
	if changed || string(out) != in {
		t.Errorf("changed=%v out=%q", changed, out)
	}
	// A suite that merely starts with the codename is not it.
	out, changed = RewriteSuites([]byte("Suites: bookwormish\n"), "bookworm", "trixie")
	if changed || !strings.Contains(string(out), "bookwormish") {
		t.Errorf("bookwormish rewritten: %q", out)
	}
}

// TestRewriteSuitesToBackports: a suite of its own replaces the release's
// main suite; the others go to its release, not to "trixie-backports-security".
func TestRewriteSuitesToBackports(t *testing.T) {
	in := "Suites: bookworm bookworm-updates\n\nSuites: bookworm-security\n"
	want := "Suites: trixie-backports trixie-updates\n\nSuites: trixie-security\n"
	out, changed := RewriteSuites([]byte(in), "bookworm", "trixie-backports")
	if !changed || string(out) != want {
		t.Errorf("changed=%v\n got %q\nwant %q", changed, out, want)
	}
}
