// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// KernelSeries maps the lab's kernel names to the Debian release whose
// linux-image-amd64 provides them.
var KernelSeries = map[string]string{
	"6.1":  "bookworm", // Debian 12
	"6.12": "trixie",   // Debian 13
}

// DefaultKernel is the kernel series used when none is asked for.
const DefaultKernel = "6.1"

// Kernel is an unpacked Debian kernel in the cache.
type Kernel struct {
	Series  string // "6.1"
	Release string // uname -r, e.g. "6.1.0-56-amd64"
	Dir     string // cache directory of this release
	Vmlinuz string
	Modules string // lib/modules/<release>
}

// CacheDir is where the lab keeps kernels, APT state and built images:
// $XDG_CACHE_HOME/rdmago or ~/.cache/rdmago.
func CacheDir() (string, error) {
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("lab cache directory: %w", err)
	}
	return filepath.Join(d, "rdmago"), nil
}

func kernelFromDir(dir string) (*Kernel, error) {
	if _, err := os.Stat(filepath.Join(dir, "ready")); err != nil {
		return nil, err
	}
	series, _ := os.ReadFile(filepath.Join(dir, "series"))
	rel := filepath.Base(dir)
	return &Kernel{
		Series:  strings.TrimSpace(string(series)),
		Release: rel,
		Dir:     dir,
		Vmlinuz: filepath.Join(dir, "vmlinuz"),
		Modules: filepath.Join(dir, "modules"),
	}, nil
}

// CachedKernels lists the kernels already unpacked in the cache.
func CachedKernels() ([]*Kernel, error) {
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "kernels", "*"))
	sort.Strings(dirs)
	var out []*Kernel
	for _, d := range dirs {
		if k, err := kernelFromDir(d); err == nil {
			out = append(out, k)
		}
	}
	return out, nil
}

// apt runs APT commands against either the system's configuration or, for
// another Debian release, a private one (APT_CONFIG) whose sources are the
// system's own with the suite names rewritten.
type apt struct {
	env     []string // extra environment (APT_CONFIG=...), nil for the system
	private string   // private APT directory, "" for the system
	log     io.Writer
}

func newAPT(cache, codename string, log io.Writer) (*apt, error) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return nil, errors.New("apt-get not found: the lab fetches Debian kernels with APT (run it on Debian 12 or 13)")
	}
	sys, err := SystemCodename()
	if err != nil {
		return nil, err
	}
	if sys == codename {
		return &apt{log: log}, nil
	}
	dir := filepath.Join(cache, "apt", codename)
	for _, d := range []string{"state/lists/partial", "cache/archives/partial", "sources", "preferences.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("private apt: %w", err)
		}
	}
	srcs, err := systemSources()
	if err != nil {
		return nil, err
	}
	any := false
	for name, b := range srcs {
		out, changed := RewriteSuites(b, sys, codename)
		if !changed {
			continue
		}
		any = true
		base := filepath.Base(name)
		if base == "sources.list" {
			base = "system.list"
		}
		if err := os.WriteFile(filepath.Join(dir, "sources", base), out, 0o644); err != nil {
			return nil, fmt.Errorf("private apt: %w", err)
		}
	}
	if !any {
		return nil, fmt.Errorf("no APT source of this system names %q: cannot derive %s sources from /etc/apt/sources.list.d", sys, codename)
	}
	status := filepath.Join(dir, "status")
	if _, err := os.Stat(status); err != nil {
		if err := os.WriteFile(status, nil, 0o644); err != nil {
			return nil, fmt.Errorf("private apt: %w", err)
		}
	}
	conf := fmt.Sprintf(`Dir::State %q;
Dir::State::status %q;
Dir::Cache %q;
Dir::Etc::SourceList %q;
Dir::Etc::SourceParts %q;
Dir::Etc::Preferences %q;
Dir::Etc::PreferencesParts %q;
APT::Sandbox::User "root";
`, filepath.Join(dir, "state"), status, filepath.Join(dir, "cache"), filepath.Join(dir, "none.list"),
		filepath.Join(dir, "sources"), filepath.Join(dir, "none.pref"), filepath.Join(dir, "preferences.d"))
	cf := filepath.Join(dir, "apt.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("private apt: %w", err)
	}
	return &apt{env: []string{"APT_CONFIG=" + cf}, private: dir, log: log}, nil
}

func (a *apt) run(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), a.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

func (a *apt) update(ctx context.Context) error {
	fmt.Fprintf(a.log, "rdmalab: apt-get update%s\n", map[bool]string{true: " (private " + a.private + ")", false: ""}[a.private != ""])
	_, err := a.run(ctx, "", "apt-get", "-q", "-o", "APT::Sandbox::User=root", "update")
	return err
}

// resolve returns the release that linux-image-amd64 currently depends on.
func (a *apt) resolve(ctx context.Context) (string, error) {
	if a.private != "" {
		lists, _ := filepath.Glob(filepath.Join(a.private, "state", "lists", "*Packages*"))
		if len(lists) == 0 {
			if err := a.update(ctx); err != nil {
				return "", err
			}
		}
	}
	rel, err := a.dependsOf(ctx)
	if err != nil && os.Geteuid() == 0 {
		// A machine whose package lists were never fetched knows no kernel.
		if uerr := a.update(ctx); uerr != nil {
			return "", fmt.Errorf("%w (and apt-get update failed: %v)", err, uerr)
		}
		rel, err = a.dependsOf(ctx)
	}
	return rel, err
}

func (a *apt) dependsOf(ctx context.Context) (string, error) {
	out, err := a.run(ctx, "", "apt-cache", "depends", "linux-image-amd64")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if pkg, ok := strings.CutPrefix(l, "Depends: linux-image-"); ok && !strings.HasPrefix(pkg, "<") {
			return strings.TrimSuffix(pkg, "-unsigned"), nil
		}
	}
	return "", errors.New("apt-cache depends linux-image-amd64 names no linux-image-* package (run `apt-get update` as root)")
}

// GetKernel returns the kernel of series ("6.1", "6.12"), downloading and
// unpacking it into the cache when the release linux-image-amd64 currently
// names is not there yet. Without APT access it falls back to the newest
// cached release of the series.
func GetKernel(ctx context.Context, series string, log io.Writer) (*Kernel, error) {
	if series == "" {
		series = DefaultKernel
	}
	codename, ok := KernelSeries[series]
	if !ok {
		return nil, fmt.Errorf("unknown kernel %q: the lab knows 6.1 (Debian 12) and 6.12 (Debian 13)", series)
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	kdir := filepath.Join(cache, "kernels")
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		return nil, fmt.Errorf("kernel cache: %w", err)
	}
	lock, err := lockFile(filepath.Join(kdir, ".lock"))
	if err != nil {
		return nil, err
	}
	defer lock.Close()

	cachedOfSeries := func() *Kernel {
		ks, _ := CachedKernels()
		var best *Kernel
		for _, k := range ks {
			if k.Series == series {
				best = k
			}
		}
		return best
	}

	a, err := newAPT(cache, codename, log)
	var rel string
	if err == nil {
		rel, err = a.resolve(ctx)
	}
	if err != nil {
		if k := cachedOfSeries(); k != nil {
			fmt.Fprintf(log, "rdmalab: cannot ask APT for the current %s kernel (%v); using cached %s\n", series, err, k.Release)
			return k, nil
		}
		return nil, fmt.Errorf("find the %s kernel: %w", series, err)
	}
	if k, err := kernelFromDir(filepath.Join(kdir, rel)); err == nil {
		return k, nil
	}
	fmt.Fprintf(log, "rdmalab: fetching kernel %s (linux-image-%s) into %s\n", series, rel, kdir)
	err = fetchKernel(ctx, a, kdir, series, rel)
	if errors.Is(err, errDownload) {
		// The package lists may be older than the mirror, which has moved on
		// to a newer kernel: refresh, ask again, retry once.
		if uerr := a.update(ctx); uerr != nil {
			return nil, fmt.Errorf("%w (and apt-get update failed: %v)", err, uerr)
		}
		if rel, err = a.resolve(ctx); err != nil {
			return nil, fmt.Errorf("find the %s kernel: %w", series, err)
		}
		if k, err := kernelFromDir(filepath.Join(kdir, rel)); err == nil {
			return k, nil
		}
		err = fetchKernel(ctx, a, kdir, series, rel)
	}
	if err != nil {
		return nil, err
	}
	return kernelFromDir(filepath.Join(kdir, rel))
}

// errDownload marks a failed apt-get download.
var errDownload = errors.New("apt-get download failed")

func fetchKernel(ctx context.Context, a *apt, kdir, series, rel string) error {
	tmp, err := os.MkdirTemp(kdir, ".fetch-")
	if err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	download := func() error {
		var errs []error
		for _, pkg := range []string{"linux-image-" + rel + "-unsigned", "linux-image-" + rel} {
			_, err := a.run(ctx, tmp, "apt-get", "-q", "-o", "APT::Sandbox::User=root", "download", pkg)
			if err == nil {
				return nil
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	if err := download(); err != nil {
		return fmt.Errorf("download kernel %s: %w: %w", rel, errDownload, err)
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != 1 {
		return fmt.Errorf("download kernel %s: expected one .deb, found %d", rel, len(debs))
	}
	x := filepath.Join(tmp, "x")
	if _, err := a.run(ctx, tmp, "dpkg-deb", "-x", debs[0], x); err != nil {
		return fmt.Errorf("unpack kernel: %w", err)
	}
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(x, "boot", "vmlinuz-"+rel), filepath.Join(out, "vmlinuz")); err != nil {
		return fmt.Errorf("unpack kernel: no boot/vmlinuz-%s in the package: %w", rel, err)
	}
	_ = os.Rename(filepath.Join(x, "boot", "config-"+rel), filepath.Join(out, "config"))
	moved := false
	for _, m := range []string{"lib/modules/" + rel, "usr/lib/modules/" + rel} {
		if err := os.Rename(filepath.Join(x, m), filepath.Join(out, "modules")); err == nil {
			moved = true
			break
		}
	}
	if !moved {
		return fmt.Errorf("unpack kernel: no lib/modules/%s in the package", rel)
	}
	if err := os.WriteFile(filepath.Join(out, "series"), []byte(series+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "ready"), nil, 0o644); err != nil {
		return err
	}
	dst := filepath.Join(kdir, rel)
	_ = os.RemoveAll(dst)
	if err := os.Rename(out, dst); err != nil {
		return fmt.Errorf("kernel cache: %w", err)
	}
	return nil
}
