// Copyright 2026 The rdmago Authors.

package labtest

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"testing"
)

// HostTool returns a command running the host's C tool name (ibv_devinfo,
// rdma, rping, ...). Lab tests run bare, in the initramfs root, where the
// host's root is mounted at /host with /dev, /proc, /sys and /tmp bound into
// it: the tool runs chrooted there, so its libraries resolve. In a non-bare
// run, or on a host, it runs directly. A missing tool skips the test outside
// the lab and fails it inside (see Missing).
func HostTool(t testing.TB, ctx context.Context, name string, args ...string) *exec.Cmd {
	t.Helper()
	dirs := []string{"/usr/bin", "/usr/sbin", "/bin", "/sbin"}
	for _, dir := range dirs {
		if _, err := os.Stat(dir + "/" + name); err == nil {
			return exec.CommandContext(ctx, dir+"/"+name, args...)
		}
	}
	for _, dir := range dirs {
		if _, err := os.Stat("/host" + dir + "/" + name); err == nil && os.Geteuid() == 0 {
			c := exec.CommandContext(ctx, dir+"/"+name, args...)
			c.SysProcAttr = chroot("/host")
			c.Dir = "/"
			c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C"}
			return c
		}
	}
	Missing(t, "the tool %s is not installed on the host (scripts/deps.sh installs every tool the tests run: make test does it)", name)
	return nil
}

// Preload makes cmd (from HostTool) run with LD_PRELOAD set to the host's
// library lib, a path under /usr/lib/<multiarch>/ such as
// "rsocket/librspreload.so". A library that is not installed skips the
// test outside the lab and fails it inside (see Missing): ld.so would
// only warn and run the tool without it.
func Preload(t testing.TB, cmd *exec.Cmd, lib string) {
	t.Helper()
	arch := "x86_64-linux-gnu"
	if runtime.GOARCH == "arm64" {
		arch = "aarch64-linux-gnu"
	}
	path := "/usr/lib/" + arch + "/" + lib
	if _, err := os.Stat(path); err != nil {
		if _, err := os.Stat("/host" + path); err != nil {
			Missing(t, "%s is not installed on the host (librspreload.so: apt-get install librdmacm1)", path)
			return
		}
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "LD_PRELOAD="+path)
}
