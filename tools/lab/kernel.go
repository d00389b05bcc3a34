// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// KernelSeries maps the lab's kernel names to the Debian suite whose
// linux-image-amd64 provides them: a release codename (its -updates and
// -security suites come with it), or a suite of its own such as
// "trixie-backports", taken alone.
var KernelSeries = map[string]string{
	"5.10": "bullseye",         // Debian 11, the oldest whose packages are still served
	"6.1":  "bookworm",         // Debian 12
	"6.12": "trixie",           // Debian 13
	"7.3":  "trixie-backports", // the newest kernel Debian ships (newer than unstable's 7.2)
}

// KernelNames lists KernelSeries' names, oldest first, for messages.
func KernelNames() string {
	names := slices.Collect(maps.Keys(KernelSeries))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Compare(kernelOrder(a), kernelOrder(b))
	})
	return strings.Join(names, ", ")
}

// kernelOrder makes "5.10" < "6.1" < "6.12" < "7.3".
func kernelOrder(series string) int {
	maj, min, _ := strings.Cut(series, ".")
	a, _ := strconv.Atoi(maj)
	b, _ := strconv.Atoi(min)
	return a*1000 + b
}

// seriesOf reports whether release (uname -r, "7.3.4+bpo-amd64") is of
// series ("7.3"): a suite that moved on to a newer kernel no longer
// provides the series the lab asked for.
func seriesOf(release, series string) bool {
	rest, ok := strings.CutPrefix(release, series)
	return ok && (rest == "" || !('0' <= rest[0] && rest[0] <= '9'))
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
	if strings.Contains(codename, "-") {
		// A suite of its own (backports) loses to its release's
		// -security and -updates suites unless pinned above them.
		pin := fmt.Sprintf("Package: *\nPin: release n=%s\nPin-Priority: 990\n", codename)
		if err := os.WriteFile(filepath.Join(dir, "preferences.d", "suite.pref"), []byte(pin), 0o644); err != nil {
			return nil, fmt.Errorf("private apt: %w", err)
		}
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
		return nil, fmt.Errorf("unknown kernel %q: the lab knows %s", series, KernelNames())
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
	if !seriesOf(rel, series) {
		if k := cachedOfSeries(); k != nil {
			fmt.Fprintf(log, "rdmalab: %s now provides linux-image-%s, not %s; using cached %s\n", codename, rel, series, k.Release)
			return k, nil
		}
		return nil, fmt.Errorf("find the %s kernel: %s now provides linux-image-%s: name that series in the lab's KernelSeries", series, codename, rel)
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
	// Since 7.x (trixie-backports) linux-image-REL is empty and depends on
	// linux-binary-REL (vmlinuz), linux-modules-REL and linux-base-REL
	// (config, modules.builtin), each under usr/lib/modules/REL.
	for _, pkg := range []string{"linux-binary-", "linux-modules-", "linux-base-"} {
		if _, err := a.run(ctx, "", "apt-cache", "show", pkg+rel); err != nil {
			continue // the older packaging: all of it in linux-image-REL
		}
		if _, err := a.run(ctx, tmp, "apt-get", "-q", "-o", "APT::Sandbox::User=root", "download", pkg+rel); err != nil {
			return fmt.Errorf("download kernel %s: %w: %w", rel, errDownload, err)
		}
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	x := filepath.Join(tmp, "x")
	for _, deb := range debs {
		if _, err := a.run(ctx, tmp, "dpkg-deb", "-x", deb, x); err != nil {
			return fmt.Errorf("unpack kernel: %w", err)
		}
	}
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		return err
	}
	// first is the first of paths (under x) that exists.
	first := func(paths ...string) (string, bool) {
		for _, p := range paths {
			if _, err := os.Stat(filepath.Join(x, p)); err == nil {
				return filepath.Join(x, p), true
			}
		}
		return "", false
	}
	vmlinuz, ok := first("boot/vmlinuz-"+rel, "usr/lib/modules/"+rel+"/vmlinuz", "lib/modules/"+rel+"/vmlinuz")
	if !ok {
		return fmt.Errorf("unpack kernel: no boot/vmlinuz-%s nor usr/lib/modules/%[1]s/vmlinuz in %d packages", rel, len(debs))
	}
	if err := os.Rename(vmlinuz, filepath.Join(out, "vmlinuz")); err != nil {
		return fmt.Errorf("unpack kernel: %w", err)
	}
	if config, ok := first("boot/config-"+rel, "usr/lib/modules/"+rel+"/config", "lib/modules/"+rel+"/config"); ok {
		_ = os.Rename(config, filepath.Join(out, "config"))
	}
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
