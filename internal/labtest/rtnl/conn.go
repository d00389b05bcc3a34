// Copyright 2026 The rdmago Authors.

package rtnl

import (
	"fmt"
	"net/netip"

	"github.com/rdmago/rdmago/internal/netlink"
)

// Conn is an rtnetlink socket. The caller must Close it.
type Conn struct {
	c *netlink.Conn
}

// Dial opens an rtnetlink socket in the caller's network namespace.
func Dial() (*Conn, error) {
	c, err := netlink.Dial(netlink.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("rtnetlink: %w", err)
	}
	return &Conn{c: c}, nil
}

// Close closes the socket; it is idempotent.
func (c *Conn) Close() error { return c.c.Close() }

// LinkByName is `ip link show NAME`.
func (c *Conn) LinkByName(name string) (Link, error) {
	msgs, err := c.c.Execute(RTM_GETLINK, 0, getLinkReq(name))
	if err != nil {
		return Link{}, fmt.Errorf("get link %q: %w", name, err)
	}
	for _, m := range msgs {
		if m.Header.Type == RTM_NEWLINK {
			return parseLink(m.Data)
		}
	}
	return Link{}, fmt.Errorf("get link %q: no answer from the kernel", name)
}

// SetUp is `ip link set NAME up`.
func (c *Conn) SetUp(name string) error { return c.setUp(name, true) }

// SetDown is `ip link set NAME down`.
func (c *Conn) SetDown(name string) error { return c.setUp(name, false) }

func (c *Conn) setUp(name string, up bool) error {
	l, err := c.LinkByName(name)
	if err != nil {
		return err
	}
	if _, err := c.c.Execute(RTM_NEWLINK, 0, setUpReq(l.Index, up)); err != nil {
		state := "down"
		if up {
			state = "up"
		}
		return fmt.Errorf("set link %q %s: %w", name, state, err)
	}
	return nil
}

// DelLink is `ip link del NAME`. Deleting one end of a veth pair deletes
// both.
func (c *Conn) DelLink(name string) error {
	l, err := c.LinkByName(name)
	if err != nil {
		return err
	}
	if _, err := c.c.Execute(RTM_DELLINK, 0, delLinkReq(l.Index)); err != nil {
		return fmt.Errorf("delete link %q: %w", name, err)
	}
	return nil
}

// AddVeth is `ip link add NAME type veth peer name PEER`.
func (c *Conn) AddVeth(name, peer string) error {
	if _, err := c.c.Execute(RTM_NEWLINK, netlink.NLM_F_CREATE|netlink.NLM_F_EXCL, addVethReq(name, peer)); err != nil {
		return fmt.Errorf("add veth %q peer %q: %w", name, peer, err)
	}
	return nil
}

// AddAddr is `ip addr add PREFIX dev NAME` for an IPv4 prefix.
func (c *Conn) AddAddr(name string, p netip.Prefix) error {
	l, err := c.LinkByName(name)
	if err != nil {
		return err
	}
	req, err := addAddrReq(l.Index, p)
	if err != nil {
		return err
	}
	if _, err := c.c.Execute(RTM_NEWADDR, netlink.NLM_F_CREATE|netlink.NLM_F_EXCL, req); err != nil {
		return fmt.Errorf("add address %v to %q: %w", p, name, err)
	}
	return nil
}

// ReplaceNetem puts a netem qdisc with options n at the root of link name,
// replacing whatever root qdisc it had: `tc qdisc replace dev NAME root
// handle 10: netem delay T J loss P% ...` (tc-netem(8)). Packets the link
// sends then meet n's delay, loss, duplication and reordering; packets it
// receives do not. It needs sch_netem (loaded, or loadable by the kernel)
// and CAP_NET_ADMIN; DelRootQdisc undoes it.
func (c *Conn) ReplaceNetem(name string, n Netem) error {
	l, err := c.LinkByName(name)
	if err != nil {
		return err
	}
	req, err := replaceNetemReq(l.Index, n)
	if err != nil {
		return fmt.Errorf("add netem qdisc on %s: %w", name, err)
	}
	if _, err := c.c.Execute(RTM_NEWQDISC, netlink.NLM_F_CREATE|NLM_F_REPLACE, req); err != nil {
		return fmt.Errorf("add netem qdisc on %s: %w", name, err)
	}
	return nil
}

// DelRootQdisc removes link name's root qdisc, which gives the link its
// default one back: `tc qdisc del dev NAME root`. With the default already
// in place the kernel answers ENOENT ("Cannot delete qdisc with handle of
// zero").
func (c *Conn) DelRootQdisc(name string) error {
	l, err := c.LinkByName(name)
	if err != nil {
		return err
	}
	if _, err := c.c.Execute(RTM_DELQDISC, 0, delRootQdiscReq(l.Index)); err != nil {
		return fmt.Errorf("delete root qdisc of %s: %w", name, err)
	}
	return nil
}

// Qdiscs lists link name's qdiscs with their counters: `tc -s qdisc show
// dev NAME` (an RTM_GETQDISC dump, filtered to the link).
func (c *Conn) Qdiscs(name string) ([]Qdisc, error) {
	l, err := c.LinkByName(name)
	if err != nil {
		return nil, err
	}
	msgs, err := c.c.Execute(RTM_GETQDISC, netlink.NLM_F_DUMP, getQdiscsReq(l.Index))
	if err != nil {
		return nil, fmt.Errorf("list qdiscs of %s: %w", name, err)
	}
	var out []Qdisc
	for _, m := range msgs {
		if m.Header.Type != RTM_NEWQDISC {
			continue
		}
		q, err := parseQdisc(m.Data)
		if err != nil {
			return nil, fmt.Errorf("list qdiscs of %s: %w", name, err)
		}
		if q.Ifindex == l.Index {
			out = append(out, q)
		}
	}
	return out, nil
}

// RootQdisc is the entry of Qdiscs(name) whose parent is TC_H_ROOT.
func (c *Conn) RootQdisc(name string) (Qdisc, error) {
	qs, err := c.Qdiscs(name)
	if err != nil {
		return Qdisc{}, err
	}
	for _, q := range qs {
		if q.Parent == TC_H_ROOT {
			return q, nil
		}
	}
	return Qdisc{}, fmt.Errorf("list qdiscs of %s: the kernel reported no root qdisc", name)
}
