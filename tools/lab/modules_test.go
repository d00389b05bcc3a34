// Copyright 2026 The rdmago Authors.

package lab

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeKO returns a minimal ELF64 relocatable object whose only content is a
// .modinfo section holding the given key=value strings, like a kernel module.
func fakeKO(kv ...string) []byte {
	modinfo := []byte(strings.Join(kv, "\x00") + "\x00")
	shstr := []byte("\x00.modinfo\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	modOff := ehsize
	strOff := modOff + len(modinfo)
	shOff := (strOff + len(shstr) + 7) &^ 7
	b := make([]byte, shOff+3*shentsize)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1 // ELFCLASS64, little endian, EV_CURRENT
	le := binary.LittleEndian
	le.PutUint16(b[16:], 1)  // ET_REL
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[40:], uint64(shOff))
	le.PutUint16(b[52:], ehsize)
	le.PutUint16(b[58:], shentsize)
	le.PutUint16(b[60:], 3) // shnum
	le.PutUint16(b[62:], 2) // shstrndx
	copy(b[modOff:], modinfo)
	copy(b[strOff:], shstr)
	sh := func(i int, name, typ uint32, off, size int) {
		s := b[shOff+i*shentsize:]
		le.PutUint32(s[0:], name)
		le.PutUint32(s[4:], typ)
		le.PutUint64(s[24:], uint64(off))
		le.PutUint64(s[32:], uint64(size))
		le.PutUint64(s[48:], 1)
	}
	sh(1, 1, 1, modOff, len(modinfo)) // .modinfo, SHT_PROGBITS
	sh(2, 10, 3, strOff, len(shstr))  // .shstrtab, SHT_STRTAB
	return b
}

func TestParseModInfo(t *testing.T) {
	ko := fakeKO("license=GPL", "depends=ib_core,ib-uverbs,udp_tunnel", "name=rdma-rxe", "alias=rdma-link-rxe", "alias=other")
	mi, err := ParseModInfo(ko)
	if err != nil {
		t.Fatal(err)
	}
	if mi.Name() != "rdma_rxe" {
		t.Errorf("name %q", mi.Name())
	}
	if got, want := mi.Depends(), []string{"ib_core", "ib_uverbs", "udp_tunnel"}; !reflect.DeepEqual(got, want) {
		t.Errorf("depends %q, want %q", got, want)
	}
	if len(mi["alias"]) != 2 {
		t.Errorf("aliases %q", mi["alias"])
	}
	empty, err := ParseModInfo(fakeKO("depends=", "name=crc32_generic"))
	if err != nil || len(empty.Depends()) != 0 {
		t.Errorf("empty depends: %v %q", err, empty.Depends())
	}
	if _, err := ParseModInfo([]byte("not an elf file at all, not at all")); err == nil {
		t.Error("garbage parsed as a module")
	}
}

func TestResolveOrder(t *testing.T) {
	deps := map[string]string{
		"rdma_rxe":      "ib_core,ib_uverbs,udp_tunnel,ip6_udp_tunnel",
		"ib_uverbs":     "ib_core",
		"ib_core":       "",
		"udp_tunnel":    "",
		"rdma_ucm":      "rdma_cm,ib_uverbs,ib_core",
		"rdma_cm":       "iw_cm,ib_core,ib_cm,configfs",
		"iw_cm":         "ib_core",
		"ib_cm":         "ib_core",
		"configfs":      "",
		"crc32_generic": "",
	}
	builtin := map[string]bool{"ip6_udp_tunnel": true}
	load := func(n string) (*Module, error) {
		d, ok := deps[n]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return &Module{Name: n, Info: ModInfo{"depends": {d}}}, nil
	}
	mods, missing, err := ResolveOrder([]string{"crc32-generic", "nosuch", "rdma_rxe", "ib_uverbs", "rdma_ucm"},
		func(n string) bool { return builtin[n] }, load)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
	}
	want := []string{"crc32_generic", "ib_core", "ib_uverbs", "udp_tunnel", "rdma_rxe", "iw_cm", "ib_cm", "configfs", "rdma_cm", "rdma_ucm"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("order\n got %v\nwant %v", names, want)
	}
	if !reflect.DeepEqual(missing, []string{"nosuch"}) {
		t.Errorf("missing %v", missing)
	}
	// Every module comes after its dependencies.
	pos := map[string]int{}
	for i, n := range names {
		pos[n] = i
	}
	for _, n := range names {
		for _, d := range strings.Split(deps[n], ",") {
			if p, ok := pos[d]; ok && p > pos[n] {
				t.Errorf("%s loads before its dependency %s", n, d)
			}
		}
	}

	deps["ib_core"] = "rdma_rxe"
	if _, _, err := ResolveOrder([]string{"rdma_rxe"}, func(string) bool { return false }, load); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("a dependency cycle gave %v", err)
	}
	boom := errors.New("boom")
	if _, _, err := ResolveOrder([]string{"x"}, func(string) bool { return false }, func(string) (*Module, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("load error not returned: %v", err)
	}
}

func TestModuleTree(t *testing.T) {
	dir := t.TempDir()
	write := func(p string, b []byte) {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko", fakeKO("depends=ib_core", "name=rdma_rxe"))
	write("kernel/drivers/infiniband/core/ib_core.ko", fakeKO("depends=", "name=ib_core"))
	write("kernel/arch/x86/crypto/crc32-pclmul.ko", fakeKO("depends=", "name=crc32_pclmul"))
	write("modules.builtin", []byte("kernel/drivers/virtio/virtio_pci.ko\nkernel/lib/crc32.ko\n"))
	tree, err := OpenModuleTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	mods, missing, err := tree.Resolve([]string{"crc32_pclmul", "virtio_pci", "rdma_rxe", "veth"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range mods {
		names = append(names, m.Name)
		if !bytes.HasPrefix(m.Data, []byte("\x7fELF")) {
			t.Errorf("%s: data is not the module image", m.Name)
		}
	}
	if want := []string{"crc32_pclmul", "ib_core", "rdma_rxe"}; !reflect.DeepEqual(names, want) {
		t.Errorf("modules %v, want %v", names, want)
	}
	if !reflect.DeepEqual(missing, []string{"veth"}) {
		t.Errorf("missing %v, want [veth] (virtio_pci is built in)", missing)
	}
}

// TestCompressedModule reads an xz-compressed module the way Debian 13 ships
// them, when the host has xz.
func TestCompressedModule(t *testing.T) {
	if _, err := lookPath("xz"); err != nil {
		t.Skip("xz not installed (apt-get install xz-utils)")
	}
	dir := t.TempDir()
	raw := fakeKO("depends=", "name=veth")
	p := filepath.Join(dir, "veth.ko")
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runCmd("xz", p); err != nil {
		t.Fatalf("xz: %v %s", err, out)
	}
	tree, err := OpenModuleTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tree.Load("veth")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m.Data, raw) || !strings.HasSuffix(m.Path, ".ko.xz") || m.Info.Name() != "veth" {
		t.Errorf("decompressed module differs (path %s)", m.Path)
	}
}

func lookPath(name string) (string, error) { return exec.LookPath(name) }

func runCmd(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}
