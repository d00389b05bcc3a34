// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// GuestInitPackage is the Go package built into the guest's /init.
const GuestInitPackage = "github.com/rdmago/rdmago/tools/lab/guestinit"

// BuildGuestInit compiles the guest init (static, CGO_ENABLED=0, linux/amd64)
// and returns the binary. It needs the Go toolchain and the rdmago module: run
// rdmalab from inside the repository.
func BuildGuestInit(ctx context.Context, dir string) ([]byte, error) {
	out := filepath.Join(dir, "init")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, GuestInitPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	cmd.Dir = moduleDir()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("build the guest init (run rdmalab inside the rdmago module): %w: %s", err, strings.TrimSpace(errb.String()))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("build the guest init: %w", err)
	}
	return b, nil
}

// moduleDir is the root of the rdmago source tree rdmalab was built from, so
// the guest init can be built whatever the current directory; "" (the
// current directory) when the sources are not where the binary says.
func moduleDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	d := filepath.Dir(filepath.Dir(filepath.Dir(file))) // tools/lab/initramfs.go
	b, err := os.ReadFile(filepath.Join(d, "go.mod"))
	if err != nil || !strings.Contains(string(b), "module github.com/rdmago/rdmago\n") {
		return ""
	}
	return d
}

// Initramfs builds (or finds in the cache) the initramfs for kernel k: the
// guest init as /init, the lab's modules in load order, and the directories
// init mounts on. It returns the path of the gzipped newc archive.
func Initramfs(ctx context.Context, k *Kernel, log io.Writer) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "initramfs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("initramfs cache: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", fmt.Errorf("initramfs cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	initBin, err := BuildGuestInit(ctx, tmp)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(initBin)
	fmt.Fprintf(h, "\x00%s\x00%s\x00", k.Release, strings.Join(GuestModules, ","))
	path := filepath.Join(dir, k.Release+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".cpio.gz")
	if _, err := os.Stat(path); err == nil {
		now := time.Now()
		os.Chtimes(path, now, now) // marks it used, for pruning
		return path, nil
	}

	tree, err := OpenModuleTree(k.Modules)
	if err != nil {
		return "", err
	}
	mods, missing, err := tree.Resolve(GuestModules)
	if err != nil {
		return "", err
	}
	if len(missing) > 0 {
		fmt.Fprintf(log, "rdmalab: kernel %s has no module %s (neither file nor built in); continuing without\n", k.Release, strings.Join(missing, ", "))
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err := writeInitramfs(zw, initBin, mods); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	f := filepath.Join(tmp, "initramfs.cpio.gz")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("initramfs: %w", err)
	}
	// Drop images not used for a week. Images of other inits stay: several
	// checkouts (worktrees) may share this cache and boot at the same time.
	old, _ := filepath.Glob(filepath.Join(dir, "*.cpio.gz"))
	for _, o := range old {
		if fi, err := os.Stat(o); err == nil && time.Since(fi.ModTime()) > 7*24*time.Hour {
			os.Remove(o)
		}
	}
	if err := os.Rename(f, path); err != nil {
		return "", fmt.Errorf("initramfs: %w", err)
	}
	return path, nil
}

// writeInitramfs writes the archive's entries (uncompressed) to w.
func writeInitramfs(w io.Writer, initBin []byte, mods []*Module) error {
	c := NewCPIOWriter(w)
	for _, d := range []string{"dev", "proc", "sys", "tmp", "host", "root", "etc", "lib", "lib/modules", "lib/modules/rdmalab"} {
		if err := c.Dir(d, 0o755); err != nil {
			return err
		}
	}
	if err := c.CharDev("dev/console", 0o600, 5, 1); err != nil {
		return err
	}
	if err := c.CharDev("dev/null", 0o666, 1, 3); err != nil {
		return err
	}
	if err := c.File("init", 0o755, initBin); err != nil {
		return err
	}
	var order strings.Builder
	for _, m := range mods {
		name := m.Name + ".ko"
		if err := c.File("lib/modules/rdmalab/"+name, 0o644, m.Data); err != nil {
			return err
		}
		order.WriteString(name + "\n")
	}
	if err := c.File("lib/modules/rdmalab/order", 0o644, []byte(order.String())); err != nil {
		return err
	}
	if err := c.File("etc/rdmalab-release", 0o644, []byte("rdmago lab guest\n")); err != nil {
		return err
	}
	return c.Close()
}
