// Copyright 2026 The rdmago Authors.

package lab

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmago/rdmago/tools/lab/labproto"
)

// TestOptions configure RunTests.
type TestOptions struct {
	Options
	Run      string   // -run regexp
	TestArgs []string // further test binary flags (-test.count=1, ...)
	V        bool     // -v: stream test output
}

type testPkg struct {
	ImportPath string
	Dir        string
	HasTests   bool
	Bin        string
}

// listPackages resolves package patterns with `go list`.
func listPackages(ctx context.Context, patterns []string) ([]testPkg, error) {
	args := append([]string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}"}, patterns...)
	cmd := exec.CommandContext(ctx, "go", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(patterns, " "), err, strings.TrimSpace(errb.String()))
	}
	var pkgs []testPkg
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			continue
		}
		pkgs = append(pkgs, testPkg{ImportPath: f[0], Dir: f[1], HasTests: f[2] != "0" || f[3] != "0"})
	}
	return pkgs, nil
}

// RunTests is `rdmalab test`: it builds each package's test binary on the
// host (CGO_ENABLED=0), boots the lab once, runs every binary bare in every
// node (working directory: the package's directory), and prints go test's
// summary lines to w. It reports whether everything passed.
func RunTests(ctx context.Context, opts TestOptions, patterns []string, w io.Writer) (bool, error) {
	if len(patterns) == 0 {
		patterns = []string{"."}
	}
	if opts.Timeout == 0 {
		opts.Timeout = 20 * time.Minute
	}
	pkgs, err := listPackages(ctx, patterns)
	if err != nil {
		return false, err
	}
	cache, err := CacheDir()
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Join(cache, "testbin"), 0o755); err != nil {
		return false, err
	}
	// Leftovers of runs that were killed.
	olds, _ := filepath.Glob(filepath.Join(cache, "testbin", "run-*"))
	for _, o := range olds {
		if fi, err := os.Stat(o); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.RemoveAll(o)
		}
	}
	// Not under /tmp: the guest's own /tmp covers the host's there.
	bindir, err := os.MkdirTemp(filepath.Join(cache, "testbin"), "run-")
	if err != nil {
		return false, err
	}
	defer os.RemoveAll(bindir)

	ok := true
	var torun []*testPkg
	for i := range pkgs {
		p := &pkgs[i]
		if !p.HasTests {
			continue
		}
		p.Bin = filepath.Join(bindir, strconv.Itoa(i)+"-"+filepath.Base(p.ImportPath)+".test")
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", p.Bin, p.ImportPath)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &errb, &errb
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(w, "%sFAIL\t%s [build failed]\n", errb.String(), p.ImportPath)
			ok = false
			continue
		}
		if _, err := os.Stat(p.Bin); err != nil {
			p.HasTests = false // e.g. only _test.go files without tests
			continue
		}
		torun = append(torun, p)
	}
	if len(torun) == 0 {
		for _, p := range pkgs {
			fmt.Fprintf(w, "?   \t%s\t[no test files]\n", p.ImportPath)
		}
		return ok, nil
	}

	extra := opts.Shares
	if UnderTmp(bindir) {
		extra = append(extra, bindir) // a cache under /tmp: share it, /tmp is the guest's own
	}
	shares, err := Shares(extra)
	if err != nil {
		return false, err
	}
	opts.Shares = shares
	begin := time.Now()
	l, err := Start(ctx, opts.Options)
	if err != nil {
		return false, err
	}
	defer l.Close()
	if opts.V {
		fmt.Fprintf(w, "rdmalab: %d node(s), kernel %s, ready in %.1fs\n", l.Nodes(), l.GuestKernel(), l.Boot.Seconds())
	}
	labErr := error(nil)
	for _, p := range pkgs {
		if !p.HasTests {
			fmt.Fprintf(w, "?   \t%s\t[no test files]\n", p.ImportPath)
			continue
		}
		if p.Bin == "" || !contains(torun, p.ImportPath) {
			continue // build failed, reported above
		}
		if labErr != nil {
			fmt.Fprintf(w, "FAIL\t%s [lab failed]\n", p.ImportPath)
			continue
		}
		remaining := opts.Timeout - time.Since(begin) - 30*time.Second
		if remaining < 10*time.Second {
			remaining = 10 * time.Second
		}
		args := []string{"/host" + p.Bin, "-test.paniconexit0", "-test.timeout=" + remaining.Round(time.Second).String()}
		if opts.V {
			args = append(args, "-test.v=true")
		}
		if opts.Run != "" {
			args = append(args, "-test.run="+opts.Run)
		}
		args = append(args, opts.TestArgs...)
		st := labproto.StepMsg{Args: args, Dir: "/host" + p.Dir, Bare: true}
		steps := make([]labproto.StepMsg, l.Nodes())
		outs := make([]Output, l.Nodes())
		bufs := make([]*bytes.Buffer, l.Nodes())
		var mu sync.Mutex
		for i := range steps {
			steps[i] = st
			bufs[i] = &bytes.Buffer{}
			var dst io.Writer = bufs[i]
			if opts.V {
				dst = w
			}
			if l.Nodes() > 1 {
				dst = NewPrefixWriter(dst, fmt.Sprintf("node%d| ", i), &mu)
			} else if opts.V {
				dst = &lockedWriter{mu: &mu, w: dst}
			}
			outs[i] = Output{Stdout: dst, Stderr: dst}
		}
		t0 := time.Now()
		res, err := l.Run(steps, outs)
		dur := time.Since(t0)
		failed := err != nil
		for i, r := range res {
			if r.Status != 0 {
				failed = true
			}
			if r.Error != "" {
				fmt.Fprintf(bufs[i], "rdmalab: node %d: %s\n", i, r.Error)
			}
		}
		if failed {
			ok = false
			if !opts.V {
				for _, b := range bufs {
					w.Write(b.Bytes())
				}
			}
			if err != nil {
				fmt.Fprintf(w, "rdmalab: %v\n", err)
				labErr = err
			}
			fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", p.ImportPath, dur.Seconds())
		} else {
			fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", p.ImportPath, dur.Seconds())
		}
	}
	if err := l.Close(); err != nil && labErr == nil {
		fmt.Fprintf(w, "rdmalab: %v\n", err)
	}
	return ok && labErr == nil, nil
}

func contains(ps []*testPkg, path string) bool {
	for _, p := range ps {
		if p.ImportPath == path {
			return true
		}
	}
	return false
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
