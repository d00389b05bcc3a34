// Copyright 2026 The rdmago Authors.

package cm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/internal/sys"
	"github.com/rdmago/rdmago/internal/sysfs"
)

// Where the kernel publishes the rdma_cm character device (a variable so
// tests can point it elsewhere) and its ABI version, in sysfs.
var ucmDevPath = "/dev/infiniband/rdma_cm"

const ucmSysfsDir = "/sys/class/misc/rdma_cm"

// ucmMaxBacklog is the kernel's cap on a listener's backlog, sysctl
// net.rdma_ucm.max_backlog (1024 unless changed); LISTEN uses it for a
// backlog of 0 or above it.
func ucmMaxBacklog() int {
	if s, err := sysfs.New("/").ReadString("/proc/sys/net/rdma_ucm/max_backlog"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n > 0 {
			return n
		}
	}
	return 1024
}

// ucmDev is the real /dev/infiniband/rdma_cm: a non-blocking descriptor
// registered with Go's netpoller (os.NewFile), so waiting for an event parks a
// goroutine, not a thread.
type ucmDev struct {
	f  *os.File
	rc syscall.RawConn
}

// openUCM opens the rdma_cm character device the way librdmacm does: it asks
// RDMA netlink which device node serves "rdma_cm" and checks the ABI version
// the kernel reports (netlink, or sysfs misc/rdma_cm/abi_version as the
// fallback), then opens it non-blocking and close-on-exec.
func openUCM() (*ucmDev, error) {
	path := ucmDevPath
	abiv := -1
	if nl, err := rdmanl.Dial(); err == nil {
		if c, err := nl.Chardev(-1, "rdma_cm"); err == nil {
			if c.Name != "" {
				path = filepath.Join(filepath.Dir(ucmDevPath), c.Name)
			}
			abiv = int(c.ABI)
		}
		nl.Close()
	}
	if abiv < 0 {
		if v, err := sysfs.New("/").ABIVersion(ucmSysfsDir); err == nil {
			abiv = v
		}
	}
	if abiv >= 0 && abiv != abi.RDMA_USER_CM_ABI_VERSION {
		return nil, fmt.Errorf("open %s: the kernel speaks rdma_cm ABI %d, rdmago speaks %d: %w", path, abiv, abi.RDMA_USER_CM_ABI_VERSION, ErrNotSupported)
	}
	fd, err := sys.OpenNonblock(path)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENODEV), errors.Is(err, syscall.ENXIO):
			return nil, fmt.Errorf("open %s: %w (the rdma_cm device needs an RDMA device and the rdma_ucm module: `modprobe rdma_rxe rdma_ucm`, then `rdma link add rxe0 type rxe netdev eth0`): %w", path, err, ErrNoDevice)
		case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
			return nil, fmt.Errorf("open %s: %w (it needs read-write access: check its permissions or the rdma group)", path, err)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &ucmDev{f: f, rc: rc}, nil
}

// write does one write(2) of command b. buf, the memory b's pointer field
// refers to, is pinned by the caller and kept alive here until the kernel is
// done with it.
func (d *ucmDev) write(b, buf []byte) error {
	var werr error
	err := d.rc.Control(func(fd uintptr) {
		for {
			var n int
			n, werr = sys.Write(int(fd), b)
			if werr == syscall.EINTR {
				continue
			}
			if werr == nil && n != len(b) {
				werr = fmt.Errorf("short write of %d of %d bytes: %w", n, len(b), syscall.EIO)
			}
			return
		}
	})
	runtime.KeepAlive(buf)
	if err != nil {
		return translateClosed(err)
	}
	return werr
}

// poll runs fn until it reports done, parking the goroutine on the netpoller
// whenever fn reports that no event was ready (GET_EVENT said EAGAIN).
func (d *ucmDev) poll(fn func() bool) error {
	return translateClosed(d.rc.Read(func(uintptr) bool { return fn() }))
}

func (d *ucmDev) close() error { return d.f.Close() }

func translateClosed(err error) error {
	if errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	return err
}
