// Copyright 2026 The rdmago Authors.

package lab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	// ModDir is the directory of the module the package belongs to when
	// that is a nested one (./examples, with a go.mod of its own), where
	// its go commands run; "" for the main module's.
	ModDir string
}

// TestTags are the build tags of the lab's test binaries: rdmalab selects
// the packages' example_lab_test.go files, examples that need an RDMA
// device, so that they run (their output checked) only here.
const TestTags = "rdmalab"

// listPackages resolves package patterns with `go list`: the main
// module's in one go command, those of a nested module (see nestedModule)
// in one run in that module's directory.
func listPackages(ctx context.Context, patterns []string) ([]testPkg, error) {
	var mods []string
	byMod := map[string][]string{}
	for _, p := range patterns {
		dir, rel := nestedModule(p)
		if _, ok := byMod[dir]; !ok {
			mods = append(mods, dir)
		}
		byMod[dir] = append(byMod[dir], rel)
	}
	var pkgs []testPkg
	for _, dir := range mods {
		args := append([]string{"list", "-tags", TestTags, "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}"}, byMod[dir]...)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(byMod[dir], " "), err, strings.TrimSpace(errb.String()))
		}
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			if len(f) != 4 {
				continue
			}
			pkgs = append(pkgs, testPkg{ImportPath: f[0], Dir: f[1], HasTests: f[2] != "0" || f[3] != "0", ModDir: dir})
		}
	}
	return pkgs, nil
}

// nestedModule returns, for a relative package pattern that lies in a
// nested module (a directory below this one with a go.mod of its own, such
// as ./examples), that module's directory and the pattern relative to it:
// "./examples/..." gives "examples", "./...". Any other pattern is the
// main module's: "" and the pattern itself.
func nestedModule(pattern string) (dir, rel string) {
	if pattern != "." && !strings.HasPrefix(pattern, "./") {
		return "", pattern
	}
	lit, _, _ := strings.Cut(pattern, "...")
	for d := filepath.Clean(lit); d != "." && d != "/" && d != ".."; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.mod")) {
			r, err := filepath.Rel(d, pattern)
			if err != nil {
				return "", pattern
			}
			if r == "." {
				return d, "."
			}
			return d, "./" + filepath.ToSlash(r)
		}
	}
	return "", pattern
}

// RunTests is `rdmalab test`: it builds each package's test binary on the
// host (CGO_ENABLED=0), boots the lab once, runs every binary bare in every
// node (working directory: the package's directory), and prints go test's
// summary lines to w. A pattern in a nested module (./examples/...) is
// built in that module's directory. When a guest's kernel crashes (an oops or a panic on
// its console) it stops the lab at once, prints the crash, and runs the
// packages that had not finished once more in a fresh boot (runBoots). It
// reports whether everything passed.
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

	extra := opts.Shares
	if UnderTmp(bindir) {
		extra = append(extra, bindir) // a cache under /tmp: share it, /tmp is the guest's own
	}
	shares, err := Shares(extra)
	if err != nil {
		return false, err
	}
	opts.Shares = shares

	// The guests boot while the test binaries build: both take seconds.
	type booted struct {
		l     *Lab
		begin time.Time
		err   error
	}
	var first chan booted
	if slices.ContainsFunc(pkgs, func(p testPkg) bool { return p.HasTests }) {
		first = make(chan booted, 1)
		go func() {
			begin := time.Now()
			l, err := Start(ctx, opts.Options)
			first <- booted{l, begin, err}
		}()
	}
	ok := buildTests(ctx, pkgs, bindir, w)
	if !slices.ContainsFunc(pkgs, func(p testPkg) bool { return p.Bin != "" }) {
		if first != nil {
			if b := <-first; b.l != nil {
				b.l.Close()
			}
		}
		for _, p := range pkgs {
			fmt.Fprintf(w, "?   \t%s\t[no test files]\n", p.ImportPath)
		}
		return ok, nil
	}
	boot := func() (testLab, time.Time, error) {
		b := booted{begin: time.Now()}
		if first != nil {
			b, first = <-first, nil
		} else {
			b.l, b.err = Start(ctx, opts.Options)
		}
		if b.err != nil {
			return nil, b.begin, b.err
		}
		if opts.V {
			fmt.Fprintf(w, "rdmalab: %d node(s), kernel %s, ready in %.1fs\n", b.l.Nodes(), b.l.GuestKernel(), b.l.Boot.Seconds())
		}
		return b.l, b.begin, nil
	}
	ran, err := runBoots(opts, pkgs, boot, w)
	return ok && ran, err
}

// buildTests builds the test binary of each package of pkgs that has tests
// into dir (CGO_ENABLED=0, linux/amd64), setting its Bin; it reports build
// failures to w and whether there were none. One go command builds them
// all (it builds in parallel and loads the packages once); a package that
// command made no binary for is built alone, which shows its own build
// error or finds it has no tests after all.
func buildTests(ctx context.Context, pkgs []testPkg, dir string, w io.Writer) bool {
	env := append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	// go test -c -o DIR/ names each binary after its package's last
	// element: those must differ.
	byName := map[string]int{}
	for _, p := range pkgs {
		if p.HasTests {
			byName[filepath.Base(p.ImportPath)]++
		}
	}
	var paths []string
	for _, p := range pkgs {
		if p.HasTests && p.ModDir == "" && byName[filepath.Base(p.ImportPath)] == 1 {
			paths = append(paths, p.ImportPath)
		}
	}
	all := filepath.Join(dir, "all")
	if len(paths) > 1 {
		if err := os.Mkdir(all, 0o755); err == nil {
			cmd := exec.CommandContext(ctx, "go", append([]string{"test", "-c", "-tags", TestTags, "-o", all + "/"}, paths...)...)
			cmd.Env = env
			_ = cmd.Run() // failures show below, package by package
		}
	}
	ok := true
	for i := range pkgs {
		p := &pkgs[i]
		if !p.HasTests {
			continue
		}
		if p.ModDir == "" && byName[filepath.Base(p.ImportPath)] == 1 {
			if bin := filepath.Join(all, filepath.Base(p.ImportPath)+".test"); fileExists(bin) {
				p.Bin = bin
				continue
			}
		}
		bin := filepath.Join(dir, strconv.Itoa(i)+"-"+filepath.Base(p.ImportPath)+".test")
		cmd := exec.CommandContext(ctx, "go", "test", "-c", "-tags", TestTags, "-o", bin, p.ImportPath)
		cmd.Env, cmd.Dir = env, p.ModDir
		var errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &errb, &errb
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(w, "%sFAIL\t%s [build failed]\n", errb.String(), p.ImportPath)
			ok = false
			continue
		}
		if !fileExists(bin) {
			p.HasTests = false // e.g. only _test.go files without tests
			continue
		}
		p.Bin = bin
	}
	return ok
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// testLab is what runBoots needs of a booted lab: a *Lab (a fake in tests).
type testLab interface {
	Nodes() int
	GuestKernel() string
	Run(steps []labproto.StepMsg, outs []Output) ([]Result, error)
	Close() error
}

// runBoots runs the test binaries of pkgs (those with Bin set; the others
// are reported as having no test files) in order, in a lab boot(). When a
// guest's kernel crashes it prints the crash, then runs the packages that
// had not finished, the one that was running included, once more in a
// fresh boot; a package that finished, passed or failed, is never run
// again, and a second crash fails the run. It reports whether every
// package ran and passed.
func runBoots(opts TestOptions, pkgs []testPkg, boot func() (testLab, time.Time, error), w io.Writer) (bool, error) {
	ok := true
	queue := pkgs
	for crashes := 0; ; crashes++ {
		n, err := runBoot(opts, queue, boot, w)
		if err == nil {
			return ok && n.ok, nil
		}
		ok = ok && n.ok
		queue = queue[n.done:]
		var crash *Crash
		if !errors.As(err, &crash) {
			if n.running != nil {
				// runPkg printed the error and the package's FAIL.
				failRest(w, queue[1:], "[lab failed]")
				return false, nil
			}
			if crashes == 0 {
				return false, err // the lab did not boot: an error, as always
			}
			fmt.Fprintf(w, "rdmalab: the fresh boot failed: %v\n", err)
			failRest(w, queue, "[lab failed]")
			return false, nil
		}
		during := "while the lab booted"
		if n.running != nil {
			during = "during " + n.running.ImportPath
		}
		kernel := crash.Kernel
		if kernel == "" {
			kernel = opts.Kernel
		}
		fmt.Fprint(w, crash.Report("rdmalab: "))
		if opts.Nodes > 1 {
			fmt.Fprintf(w, "rdmalab:   the other node was stopped at once\n")
		}
		if crashes == 0 {
			fmt.Fprintf(w, "rdmalab: *** guest kernel crashed %s %s; rerunning %d packages in a fresh boot (kernel %s, %d node(s)) ***\n",
				crash.Where(), during, countRunnable(queue), kernel, opts.Nodes)
			continue
		}
		fmt.Fprintf(w, "rdmalab: *** guest kernel crashed again, %s %s, in the fresh boot: not retried ***\n", crash.Where(), during)
		if n.running != nil {
			fmt.Fprintf(w, "FAIL\t%s [guest kernel crashed]\n", n.running.ImportPath)
			queue = queue[1:]
		}
		failRest(w, queue, "[not run: the guest kernel crashed]")
		return false, nil
	}
}

// bootResult is how far one boot of runBoot got.
type bootResult struct {
	booted  bool     // the lab booted
	done    int      // packages of the queue finished (or skipped) in this boot
	running *testPkg // the package whose step a lab error stopped, if any
	ok      bool     // every finished package passed
}

// runBoot boots the lab and runs queue's packages in it until one of its
// steps ends with a lab error (a crashed, hung or lost guest), which it
// returns.
func runBoot(opts TestOptions, queue []testPkg, boot func() (testLab, time.Time, error), w io.Writer) (bootResult, error) {
	res := bootResult{ok: true}
	l, begin, err := boot()
	if err != nil {
		return res, err
	}
	res.booted = true
	defer l.Close()
	for i := range queue {
		p := &queue[i]
		if !p.HasTests {
			fmt.Fprintf(w, "?   \t%s\t[no test files]\n", p.ImportPath)
			res.done++
			continue
		}
		if p.Bin == "" {
			res.done++
			continue // build failed, reported above
		}
		passed, err := runPkg(opts, l, p, begin, w)
		if err != nil {
			res.running = p
			return res, err
		}
		res.ok = res.ok && passed
		res.done++
	}
	if err := l.Close(); err != nil {
		var crash *Crash
		if errors.As(err, &crash) {
			// Every package had finished: their results stand.
			fmt.Fprint(w, crash.Report("rdmalab: "))
			fmt.Fprintf(w, "rdmalab: the guest kernel crashed after the last package had finished; the results above stand\n")
		} else {
			fmt.Fprintf(w, "rdmalab: %v\n", err)
		}
	}
	return res, nil
}

// runPkg runs p's test binary in every node of l. It reports whether it
// passed; an error is the lab's (the package's own failures are printed).
func runPkg(opts TestOptions, l testLab, p *testPkg, begin time.Time, w io.Writer) (bool, error) {
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
	var crash *Crash
	if errors.As(err, &crash) {
		return false, err // the kernel's failure, not the package's: runBoots says so
	}
	failed := err != nil
	for i, r := range res {
		if r.Status != 0 {
			failed = true
		}
		if r.Error != "" {
			fmt.Fprintf(bufs[i], "rdmalab: node %d: %s\n", i, r.Error)
		}
	}
	if !failed {
		fmt.Fprintf(w, "ok  \t%s\t%.3fs\n", p.ImportPath, dur.Seconds())
		return true, nil
	}
	if !opts.V {
		for _, b := range bufs {
			w.Write(b.Bytes())
		}
	}
	if err != nil {
		fmt.Fprintf(w, "rdmalab: %v\n", err)
	}
	fmt.Fprintf(w, "FAIL\t%s\t%.3fs\n", p.ImportPath, dur.Seconds())
	return false, err
}

// countRunnable counts the packages of ps with a test binary to run.
func countRunnable(ps []testPkg) int {
	n := 0
	for _, p := range ps {
		if p.HasTests && p.Bin != "" {
			n++
		}
	}
	return n
}

// failRest reports every runnable package of ps as failed for why.
func failRest(w io.Writer, ps []testPkg, why string) {
	for _, p := range ps {
		switch {
		case !p.HasTests:
			fmt.Fprintf(w, "?   \t%s\t[no test files]\n", p.ImportPath)
		case p.Bin != "":
			fmt.Fprintf(w, "FAIL\t%s %s\n", p.ImportPath, why)
		}
	}
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
