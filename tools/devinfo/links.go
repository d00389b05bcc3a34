// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"io/fs"
)

// Link is one port as `rdma link show` lists it; the JSON keys are
// iproute2's (`rdma -j link show`).
type Link struct {
	DevIndex    *uint32 `json:"ifindex,omitempty"` // nil when netlink is unavailable
	Dev         string  `json:"ifname"`
	Port        int     `json:"port"`
	State       string  `json:"state"`          // "ACTIVE", "DOWN", ...
	PhysState   string  `json:"physical_state"` // "LINK_UP", "DISABLED", ...
	Netdev      string  `json:"netdev,omitempty"`
	NetdevIndex int     `json:"netdev_index,omitempty"`
}

// linkStateNames and linkPhysNames are the names iproute2's rdma tool prints.
var linkStateNames = []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
var linkPhysNames = []string{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP", "LINK_ERROR_RECOVER",
	"PHY_TEST", "UNKNOWN", "OPA_OFFLINE", "UNKNOWN", "OPA_TEST"}

func nameOf(names []string, i int) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return "UNKNOWN"
}

// Links lists every port of every RDMA device (`rdma link show`), over
// netlink when it is available, else from sysfs.
func (s *System) Links() ([]Link, error) {
	if s.NL != nil {
		devs, err := s.NL.Devices()
		if err == nil {
			var out []Link
			for _, d := range devs {
				ports, err := s.NL.Ports(d.Index)
				if err != nil {
					return nil, err
				}
				for _, p := range ports {
					idx := d.Index
					l := Link{DevIndex: &idx, Dev: d.Name, Port: int(p.Index), State: nameOf(linkStateNames, int(p.State)),
						PhysState: nameOf(linkPhysNames, int(p.PhysState)), Netdev: p.NetdevName, NetdevIndex: int(p.NetdevIndex)}
					out = append(out, l)
				}
			}
			return out, nil
		}
	}
	devs, err := s.FS.Devices()
	if err != nil {
		return nil, err
	}
	var out []Link
	for _, d := range devs {
		for _, p := range d.Ports {
			l := Link{Dev: d.Name, Port: p.Num, State: nameOf(linkStateNames, p.State), PhysState: nameOf(linkPhysNames, p.PhysState)}
			for _, g := range p.GIDs {
				if g.Netdev != "" {
					l.Netdev = g.Netdev
					break
				}
			}
			if l.Netdev != "" {
				if n, err := s.FS.Netdev(l.Netdev); err == nil {
					l.NetdevIndex = n.Index
				}
			}
			out = append(out, l)
		}
	}
	return out, nil
}

// WriteLinks prints links as `rdma link show` does.
func WriteLinks(w io.Writer, links []Link) {
	for _, l := range links {
		fmt.Fprintf(w, "link %s/%d state %s physical_state %s", l.Dev, l.Port, l.State, l.PhysState)
		if l.Netdev != "" {
			fmt.Fprintf(w, " netdev %s", l.Netdev)
		}
		fmt.Fprintln(w)
	}
}

// LinkAdd creates a software RDMA device (`rdma link add NAME type TYPE
// netdev NETDEV`); typ is "rxe" (Soft-RoCE) or "siw". It needs CAP_NET_ADMIN.
func (s *System) LinkAdd(name, typ, netdev string) error {
	if name == "" || typ == "" || netdev == "" {
		return errors.New("usage: link add NAME type rxe|siw netdev IFNAME")
	}
	if strings.ContainsAny(name, "/%") || len(name) >= 64 {
		return fmt.Errorf("link name %q: must be shorter than 64 characters, without '/' or '%%'", name)
	}
	if typ != "rxe" && typ != "siw" {
		return fmt.Errorf("link type %q: the kernel creates links of type rxe (Soft-RoCE) or siw (Soft-iWARP)", typ)
	}
	if s.NL == nil {
		return fmt.Errorf("link add needs RDMA netlink: %w", s.nlErr())
	}
	if _, err := s.FS.Netdev(netdev); err != nil {
		return fmt.Errorf("netdev %q does not exist (see `ip link`): %w", netdev, err)
	}
	err := s.NL.AddLink(name, typ, netdev)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%w (creating RDMA links needs root or CAP_NET_ADMIN)", err)
	case errors.Is(err, syscall.EEXIST):
		return fmt.Errorf("%w (a device called %s exists, or %s already has an %s device: see `rdmainfo link show`)", err, name, netdev, typ)
	case errors.Is(err, syscall.EINVAL):
		mod := "rdma_rxe"
		if typ == "siw" {
			mod = "siw"
		}
		return fmt.Errorf("%w (is %s loaded? `modprobe %s`; rxe refuses some netdevs, such as dummy, and names already taken)", err, mod, mod)
	}
	return err
}

// LinkDel deletes the software RDMA device called name (`rdma link delete
// NAME`). It needs CAP_NET_ADMIN; hardware devices cannot be deleted.
func (s *System) LinkDel(name string) error {
	if name == "" {
		return errors.New("usage: link del NAME")
	}
	if s.NL == nil {
		return fmt.Errorf("link del needs RDMA netlink: %w", s.nlErr())
	}
	devs, err := s.NL.Devices()
	if err != nil {
		return err
	}
	for _, d := range devs {
		if d.Name != name {
			continue
		}
		err := s.NL.DelLink(d.Index)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EPERM):
			return fmt.Errorf("%w (deleting RDMA links needs root or CAP_NET_ADMIN)", err)
		case errors.Is(err, syscall.EINVAL):
			return fmt.Errorf("%w (only software devices such as rxe and siw can be deleted)", err)
		}
		return err
	}
	return fmt.Errorf("no RDMA device %q (see `rdmainfo link show`): %w", name, fs.ErrNotExist)
}

func (s *System) nlErr() error {
	if s.NLErr != nil {
		return s.NLErr
	}
	return errors.New("no netlink connection")
}
