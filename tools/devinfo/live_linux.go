// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/internal/sysfs"
	"golang.org/x/sys/unix"
)

// Live returns the System of the running machine: sysfs at /, an RDMA
// netlink socket (left nil, with NLErr set, when it cannot be opened, as on a
// kernel without RDMA), uverbs queries, the interface addresses, this
// process's credentials and RLIMIT_MEMLOCK. The caller must Close it. On
// Linux it does not fail; elsewhere it fails with an error matching
// uverbs.ErrNotSupported (live_other.go).
func Live() (*System, error) {
	s := &System{
		FS:      sysfs.New("/"),
		Verbs:   UverbsQuerier{},
		Addrs:   hostAddrs{},
		Creds:   CurrentCreds(),
		Memlock: Memlock,
		Open:    OpenRW,
	}
	if c, err := rdmanl.Dial(); err != nil {
		s.NLErr = err
	} else {
		s.NL = c
		s.closer = c
	}
	return s, nil
}

// hostAddrs lists interface addresses with package net (rtnetlink
// RTM_GETADDR underneath).
type hostAddrs struct{}

func (hostAddrs) Addrs(ifname string) ([]netip.Prefix, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	as, err := ifc.Addrs()
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", ifname, err)
	}
	var out []netip.Prefix
	for _, a := range as {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(n.IP)
		if !ok {
			continue
		}
		ones, _ := n.Mask.Size()
		out = append(out, netip.PrefixFrom(ip.Unmap(), ones))
	}
	return out, nil
}

// CurrentCreds returns this process's uid, groups and whether CAP_IPC_LOCK
// is in its effective set (from /proc/self/status).
func CurrentCreds() Creds {
	c := Creds{UID: uint32(os.Geteuid())}
	c.GIDs = append(c.GIDs, uint32(os.Getegid()))
	if gs, err := os.Getgroups(); err == nil {
		for _, g := range gs {
			c.GIDs = append(c.GIDs, uint32(g))
		}
	}
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
				if caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil {
					c.CapIPCLck = caps&(1<<unix.CAP_IPC_LOCK) != 0
				}
			}
		}
	}
	return c
}

// Memlock returns this process's RLIMIT_MEMLOCK (soft, hard);
// RLIM_INFINITY is UnlimitedMemlock.
func Memlock() (cur, max uint64, err error) {
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
		return 0, 0, fmt.Errorf("getrlimit RLIMIT_MEMLOCK: %w", err)
	}
	conv := func(v uint64) uint64 {
		if v == unix.RLIM_INFINITY {
			return UnlimitedMemlock
		}
		return v
	}
	return conv(r.Cur), conv(r.Max), nil
}

// OpenRW opens path read-write, as a verbs or rdma_cm user would, and closes
// it again.
func OpenRW(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}
