// Copyright 2026 The rdmago Authors.

package lab

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// RewriteSuites rewrites the suite names of an APT sources file from the
// release codename from to codename to ("bookworm" -> "trixie", and
// "bookworm-security" -> "trixie-security"). To may be a suite of its own
// ("trixie-backports"): it replaces the release's main suite, and the
// other suites go to its release ("bookworm-security" -> "trixie-security").
// It understands the deb822 format
// (*.sources: "Suites:" fields) and the one-line format (sources.list: "deb
// [opts] URI SUITE COMPONENTS"). Nothing else, mirrors included, is changed:
// the result points at the same mirrors as the system's own configuration.
// It also reports whether any suite was rewritten.
func RewriteSuites(src []byte, from, to string) ([]byte, bool) {
	suite := regexp.MustCompile(`^` + regexp.QuoteMeta(from) + `(-[a-z]+)?$`)
	release, _, _ := strings.Cut(to, "-") // "trixie" of "trixie-backports"
	changed := false
	rewrite := func(word string) string {
		if m := suite.FindStringSubmatch(word); m != nil {
			changed = true
			if m[1] == "" {
				return to
			}
			return release + m[1]
		}
		return word
	}
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(src)))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(strings.ToLower(trimmed), "suites:"):
			words := strings.Fields(trimmed[len("suites:"):])
			for i, w := range words {
				words[i] = rewrite(w)
			}
			line = "Suites: " + strings.Join(words, " ")
		case strings.HasPrefix(trimmed, "deb ") || strings.HasPrefix(trimmed, "deb-src "):
			f := strings.Fields(trimmed)
			i := 1
			if i < len(f) && strings.HasPrefix(f[i], "[") {
				for i < len(f) && !strings.HasSuffix(f[i], "]") {
					i++
				}
				i++
			}
			// f[i] is the URI, f[i+1] the suite.
			if i+1 < len(f) {
				f[i+1] = rewrite(f[i+1])
				line = strings.Join(f, " ")
			}
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	return []byte(out.String()), changed
}

// SystemCodename is VERSION_CODENAME from /etc/os-release ("bookworm").
func SystemCodename() (string, error) {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "", fmt.Errorf("read os release: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VERSION_CODENAME="); ok {
			return strings.Trim(v, `"'`), nil
		}
	}
	return "", fmt.Errorf("/etc/os-release has no VERSION_CODENAME: is this Debian?")
}

// systemSources returns the system's APT source files, by name.
func systemSources() (map[string][]byte, error) {
	out := map[string][]byte{}
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	lists, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	files = append(files, lists...)
	if _, err := os.Stat("/etc/apt/sources.list"); err == nil {
		files = append(files, "/etc/apt/sources.list")
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read apt sources: %w", err)
		}
		out[f] = b
	}
	return out, nil
}
