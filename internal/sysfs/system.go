// Copyright 2026 The rdmago Authors.

package sysfs

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Netdev is what /sys/class/net/NAME says about a network interface.
type Netdev struct {
	Name      string `json:"name"`
	Index     int    `json:"ifindex"`
	MTU       int    `json:"mtu"`
	OperState string `json:"operstate"` // "up", "down", "lowerlayerdown", "unknown", ...
	Flags     uint32 `json:"flags"`     // IFF_*
	Carrier   int    `json:"carrier"`   // 1, 0, or -1 when unknown (sysfs refuses to tell while the link is down)
	Address   string `json:"address,omitempty"`
}

// IFF_UP is the administrative "up" flag of a netdev (include/uapi/linux/if.h).
const IFF_UP = 0x1

// AdminUp reports whether the interface is administratively up.
func (n Netdev) AdminUp() bool { return n.Flags&IFF_UP != 0 }

// Netdev reads /sys/class/net/NAME.
func (f FS) Netdev(name string) (Netdev, error) {
	if name == "" || strings.Contains(name, "/") {
		return Netdev{}, fmt.Errorf("network device name %q is not valid", name)
	}
	base := "/sys/class/net/" + name
	if !f.Exists(base) {
		return Netdev{}, fmt.Errorf("network device %q: %w", name, fs.ErrNotExist)
	}
	n := Netdev{Name: name, Carrier: -1}
	if v, err := parseUint(f.readOpt(base+"/ifindex"), 31); err == nil {
		n.Index = int(v)
	}
	if v, err := parseUint(f.readOpt(base+"/mtu"), 31); err == nil {
		n.MTU = int(v)
	}
	if v, err := parseUint(f.readOpt(base+"/flags"), 32); err == nil {
		n.Flags = uint32(v)
	}
	if v, err := parseUint(f.readOpt(base+"/carrier"), 8); err == nil {
		n.Carrier = int(v)
	}
	n.OperState = f.readOpt(base + "/operstate")
	n.Address = f.readOpt(base + "/address")
	return n, nil
}

// Modules returns the loadable modules the kernel has loaded, from
// /proc/modules, by name (with '-' written '_', as the kernel does).
func (f FS) Modules() (map[string]bool, error) {
	fh, err := os.Open(f.Path("/proc/modules"))
	if err != nil {
		return nil, fmt.Errorf("loaded modules: %w", err)
	}
	defer fh.Close()
	m := map[string]bool{}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if name, _, ok := strings.Cut(sc.Text(), " "); ok {
			m[ModuleName(name)] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("loaded modules: %w", err)
	}
	return m, nil
}

// ModuleName normalises a module name the way the kernel does ('-' → '_').
func ModuleName(s string) string { return strings.ReplaceAll(s, "-", "_") }

// ModuleState says whether a kernel module is usable.
type ModuleState int

// Module states.
const (
	ModuleMissing  ModuleState = iota // neither loaded nor built in
	ModuleLoaded                      // listed in /proc/modules
	ModuleBuiltin                     // built into the kernel
	ModuleKnown                       // in /sys/module, so loaded or built in
	ModuleLoadable                    // not loaded, but a .ko exists under /lib/modules/RELEASE
)

func (s ModuleState) String() string {
	return [...]string{"missing", "loaded", "built in", "present", "not loaded"}[s]
}

// Present reports whether the module's code is in the kernel.
func (s ModuleState) Present() bool {
	return s == ModuleLoaded || s == ModuleBuiltin || s == ModuleKnown
}

// Module says whether module name is loaded or built in, given the loaded
// list from Modules and the kernel release (for modules.builtin and the
// module tree; "" skips those).
func (f FS) Module(name string, loaded map[string]bool, release string) ModuleState {
	name = ModuleName(name)
	if loaded[name] {
		return ModuleLoaded
	}
	if release != "" {
		if b, err := os.ReadFile(f.Path("/lib/modules/" + release + "/modules.builtin")); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				base := l[strings.LastIndex(l, "/")+1:]
				if ModuleName(strings.TrimSuffix(base, ".ko")) == name {
					return ModuleBuiltin
				}
			}
		}
	}
	if f.Exists("/sys/module/" + name) {
		return ModuleKnown
	}
	if release != "" && f.moduleFile(release, name) {
		return ModuleLoadable
	}
	return ModuleMissing
}

// moduleFile reports whether /lib/modules/RELEASE/modules.dep names a
// module file called name (compressed or not).
func (f FS) moduleFile(release, name string) bool {
	b, err := os.ReadFile(f.Path("/lib/modules/" + release + "/modules.dep"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		file, _, _ := strings.Cut(l, ":")
		base := file[strings.LastIndex(file, "/")+1:]
		for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
			if strings.HasSuffix(base, ext) && ModuleName(strings.TrimSuffix(base, ext)) == name {
				return true
			}
		}
	}
	return false
}

// Crypto reports whether /proc/crypto lists an algorithm called name (rxe
// needs "crc32").
func (f FS) Crypto(name string) (bool, error) {
	fh, err := os.Open(f.Path("/proc/crypto"))
	if err != nil {
		return false, fmt.Errorf("crypto algorithms: %w", err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "name" && strings.TrimSpace(v) == name {
			return true, nil
		}
	}
	return false, sc.Err()
}

// Release returns the kernel release, from /proc/sys/kernel/osrelease.
func (f FS) Release() string { return f.readOpt("/proc/sys/kernel/osrelease") }

// DevNode describes a character device node under /dev.
type DevNode struct {
	Path string      `json:"path"`
	Mode fs.FileMode `json:"mode"`
	UID  uint32      `json:"uid"`
	GID  uint32      `json:"gid"`
}

// ErrNoDevNode is returned when a device node does not exist.
var ErrNoDevNode = errors.New("no such device node")

// Perm returns the permission bits as an octal mode of four digits, as
// chmod takes it: "0666", "0066", "0000".
func (d DevNode) Perm() string { return fmt.Sprintf("%04o", uint32(d.Mode.Perm())) }
