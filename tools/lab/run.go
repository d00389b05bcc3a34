// Copyright 2026 The rdmago Authors.

package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/rdmago/rdmago/tools/lab/labproto"
)

// RunOptions configure RunCommand.
type RunOptions struct {
	Options
	Bare bool     // run the program in the initramfs root instead of the host root
	Env  []string // extra environment for the command
}

// guestPath is where host path p appears to a command in the guest.
func guestPath(p string, bare bool) string {
	if bare {
		return "/host" + p
	}
	return p
}

// Shares returns the host directories to make writable in the guest
// (Options.Shares): the current directory (unless it is /) plus extra,
// absolute, each once, parents before children. A directory that does not
// exist is an error.
func Shares(extra []string) ([]string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("current directory: %w", err)
	}
	var shares []string
	seen := map[string]bool{}
	for _, s := range append([]string{cwd}, extra...) {
		abs, err := filepath.Abs(s)
		if err != nil {
			return nil, err
		}
		if abs == "/" || seen[abs] {
			continue
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("share %s: not a directory", s)
		}
		seen[abs] = true
		shares = append(shares, abs)
	}
	// Parents before children: a share inside another is mounted on top.
	sort.Slice(shares, func(i, j int) bool { return len(shares[i]) < len(shares[j]) })
	return shares, nil
}

// UnderTmp reports whether host path p is under /tmp, which the guest covers
// with its own tmpfs: a host file there is visible in the guest only through
// a share.
func UnderTmp(p string) bool { return p == "/tmp" || strings.HasPrefix(p, "/tmp/") }

// resolveProgram finds args[0] on the host the way a shell would; the guest
// sees the host's root, so the same path works there.
func resolveProgram(name, cwd string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("program %s: %w", name, err)
		}
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("program %q not found on the host's PATH (the guest runs the host's programs): %w", name, err)
	}
	return filepath.Abs(p)
}

// RunCommand boots the lab and runs args in every node, with the host's
// current directory as the working directory. Output goes to stdout/stderr,
// each line prefixed by its node when there are two. It returns the first
// non-zero exit status across the nodes (in node order).
func RunCommand(ctx context.Context, opts RunOptions, args []string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return 2, fmt.Errorf("no command given: rdmalab run [flags] -- CMD ARGS")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return 2, fmt.Errorf("current directory: %w", err)
	}
	prog, err := resolveProgram(args[0], cwd)
	if err != nil {
		return 127, err
	}
	extra := opts.Shares
	if UnderTmp(prog) {
		// The guest's /tmp is its own: a program there is visible only shared.
		extra = append(extra, filepath.Dir(prog))
	}
	shares, err := Shares(extra)
	if err != nil {
		return 2, err
	}
	opts.Shares = shares
	l, err := Start(ctx, opts.Options)
	if err != nil {
		return 1, err
	}
	defer l.Close()
	if opts.Verbose {
		fmt.Fprintf(opts.Log, "rdmalab: %d node(s) of %s ready in %.1fs\n", l.Nodes(), l.GuestKernel(), l.Boot.Seconds())
	}
	st := labproto.StepMsg{
		Args: append([]string{guestPath(prog, opts.Bare)}, args[1:]...),
		Dir:  guestPath(cwd, opts.Bare),
		Env:  opts.Env,
		Bare: opts.Bare,
	}
	steps := make([]labproto.StepMsg, l.Nodes())
	outs := make([]Output, l.Nodes())
	var mu sync.Mutex
	for i := range steps {
		steps[i] = st
		outs[i] = Output{Stdout: stdout, Stderr: stderr}
		if l.Nodes() > 1 {
			outs[i] = Output{
				Stdout: NewPrefixWriter(stdout, fmt.Sprintf("node%d| ", i), &mu),
				Stderr: NewPrefixWriter(stderr, fmt.Sprintf("node%d| ", i), &mu),
			}
		}
	}
	res, err := l.Run(steps, outs)
	if err != nil {
		var crash *Crash
		if errors.As(err, &crash) {
			fmt.Fprint(stderr, crash.Report("rdmalab: "))
			return 1, fmt.Errorf("the guest kernel crashed %s", crash.Where())
		}
		return 1, err
	}
	status := 0
	for i, r := range res {
		if r.Error != "" {
			fmt.Fprintf(stderr, "rdmalab: node %d: %s\n", i, r.Error)
		}
		if status == 0 && r.Status != 0 {
			status = r.Status
		}
	}
	if err := l.Close(); err != nil {
		return status, err
	}
	return status, nil
}
