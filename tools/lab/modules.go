// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GuestModules are the kernel modules the lab guest loads, in order; each
// one's dependencies (from its .modinfo) are loaded before it. Modules built
// into a kernel are skipped. crc32 comes first: rdma_rxe needs the "crc32"
// crypto algorithm and the guest has no modprobe to load it on demand.
// sch_netem (no dependencies, a few dozen KiB) lets tests put packet loss,
// delay and reordering on the lab's link (package rtnl's netem qdisc); the
// kernel would otherwise autoload it through modprobe, which the guest lacks.
var GuestModules = []string{
	"crc32_generic", "crc32_pclmul",
	"virtio_pci", "9pnet_virtio", "9p",
	"virtio_net", "veth",
	"rdma_rxe", "ib_uverbs", "rdma_ucm",
	"sch_netem",
}

// ModName normalises a module name the way the kernel does ('-' becomes '_').
func ModName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// ModInfo is the key=value content of a module's .modinfo ELF section.
type ModInfo map[string][]string

// Name is the module's name= (normalised).
func (m ModInfo) Name() string {
	if v := m["name"]; len(v) > 0 {
		return ModName(v[0])
	}
	return ""
}

// Depends is the module's depends= list (normalised).
func (m ModInfo) Depends() []string {
	var out []string
	for _, v := range m["depends"] {
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				out = append(out, ModName(d))
			}
		}
	}
	return out
}

// ParseModInfo reads the .modinfo section of an (uncompressed) module image.
func ParseModInfo(ko []byte) (ModInfo, error) {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil, fmt.Errorf("modinfo: %w", err)
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, errors.New("modinfo: no .modinfo section")
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("modinfo: %w", err)
	}
	mi := ModInfo{}
	for _, kv := range bytes.Split(data, []byte{0}) {
		k, v, ok := bytes.Cut(kv, []byte{'='})
		if !ok {
			continue
		}
		mi[string(k)] = append(mi[string(k)], string(v))
	}
	return mi, nil
}

// Module is one module file chosen for the guest.
type Module struct {
	Name string
	Path string // file in the kernel's module tree (may be .ko.xz/.ko.zst)
	Data []byte // the uncompressed image
	Info ModInfo
}

// ModuleTree indexes a kernel's lib/modules/<release> directory.
type ModuleTree struct {
	Dir     string
	files   map[string]string // module name -> path
	builtin map[string]bool
	cache   map[string]*Module
}

// OpenModuleTree indexes dir (lib/modules/<release>): every *.ko, *.ko.xz,
// *.ko.zst and *.ko.gz below it, and modules.builtin.
func OpenModuleTree(dir string) (*ModuleTree, error) {
	t := &ModuleTree{Dir: dir, files: map[string]string{}, builtin: map[string]bool{}, cache: map[string]*Module{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if n, ok := koName(d.Name()); ok {
			t.files[n] = p
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index modules: %w", err)
	}
	if len(t.files) == 0 {
		return nil, fmt.Errorf("index modules: no *.ko files under %s", dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if n, ok := koName(filepath.Base(strings.TrimSpace(l))); ok {
				t.builtin[n] = true
			}
		}
	}
	return t, nil
}

// koName returns the module name of a file name like "crc32-pclmul.ko.xz".
func koName(base string) (string, bool) {
	for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
		if strings.HasSuffix(base, ext) {
			return ModName(strings.TrimSuffix(base, ext)), true
		}
	}
	return "", false
}

// Builtin reports whether name is built into the kernel (modules.builtin).
func (t *ModuleTree) Builtin(name string) bool { return t.builtin[ModName(name)] }

// Load reads (and if needed decompresses) module name.
func (t *ModuleTree) Load(name string) (*Module, error) {
	name = ModName(name)
	if m, ok := t.cache[name]; ok {
		return m, nil
	}
	p, ok := t.files[name]
	if !ok {
		return nil, fmt.Errorf("module %s: %w", name, fs.ErrNotExist)
	}
	data, err := readModuleFile(p)
	if err != nil {
		return nil, err
	}
	info, err := ParseModInfo(data)
	if err != nil {
		return nil, fmt.Errorf("module %s (%s): %w", name, p, err)
	}
	m := &Module{Name: name, Path: p, Data: data, Info: info}
	t.cache[name] = m
	return m, nil
}

// readModuleFile returns the uncompressed image of a module file. Debian 13
// ships its modules xz-compressed; the kernel could load those itself
// (finit_module MODULE_INIT_COMPRESSED_FILE, CONFIG_MODULE_DECOMPRESS=y), but
// the host must read .modinfo anyway, so it decompresses with the host tool.
func readModuleFile(p string) ([]byte, error) {
	var tool string
	switch {
	case strings.HasSuffix(p, ".ko"):
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read module: %w", err)
		}
		return b, nil
	case strings.HasSuffix(p, ".xz"):
		tool = "xz"
	case strings.HasSuffix(p, ".zst"):
		tool = "zstd"
	case strings.HasSuffix(p, ".gz"):
		tool = "gzip"
	}
	if _, err := exec.LookPath(tool); err != nil {
		pkg := map[string]string{"xz": "xz-utils", "zstd": "zstd", "gzip": "gzip"}[tool]
		return nil, fmt.Errorf("module %s is compressed and %s is not installed: run `apt-get install %s`", p, tool, pkg)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(tool, "-dc", p)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("decompress %s: %w: %s", p, err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// Resolve returns the modules to load for wanted, dependencies first, each
// once. Names that are built in are skipped; names that are neither a file nor
// built in are reported in missing (the caller decides whether that matters).
func (t *ModuleTree) Resolve(wanted []string) (mods []*Module, missing []string, err error) {
	return ResolveOrder(wanted, t.Builtin, t.Load)
}

// ResolveOrder is the dependency ordering of Resolve over abstract lookups, so
// it can be tested without a kernel tree.
func ResolveOrder(wanted []string, builtin func(string) bool, load func(string) (*Module, error)) (mods []*Module, missing []string, err error) {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(name string, chain []string) error
	visit = func(name string, chain []string) error {
		name = ModName(name)
		switch state[name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("module dependency cycle: %s", strings.Join(append(chain, name), " -> "))
		}
		if builtin(name) {
			state[name] = done
			return nil
		}
		m, err := load(name)
		if errors.Is(err, fs.ErrNotExist) {
			state[name] = done
			missing = append(missing, name)
			return nil
		}
		if err != nil {
			return err
		}
		state[name] = visiting
		for _, d := range m.Info.Depends() {
			if err := visit(d, append(chain, name)); err != nil {
				return err
			}
		}
		state[name] = done
		mods = append(mods, m)
		return nil
	}
	for _, w := range wanted {
		if err := visit(w, nil); err != nil {
			return nil, nil, err
		}
	}
	return mods, missing, nil
}
