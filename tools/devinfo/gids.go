// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"fmt"
	"io"
	"net/netip"
	"text/tabwriter"

	"github.com/rdmago/rdmago/internal/sysfs"
)

// GIDRow is one valid GID table entry, as show_gids lists it.
type GIDRow struct {
	Dev     string     `json:"dev"`
	Port    int        `json:"port"`
	Index   int        `json:"index"`
	GID     netip.Addr `json:"gid"`
	IP      netip.Addr `json:"ip"`      // the address the GID stands for (IPv4 for a mapped GID)
	Version string     `json:"version"` // "v1", "v2" (RoCE) or "" (InfiniBand)
	Netdev  string     `json:"netdev,omitempty"`
	// RoCEv2 marks the entry to use as sgid_index for RoCE v2 traffic from
	// IP: the RoCE v2 entry of that address on that port.
	RoCEv2 bool `json:"use_for_rocev2"`
}

// GIDs lists the valid GID entries of device dev (all devices when dev is
// empty), port by port, in table order.
func (s *System) GIDs(dev string) ([]GIDRow, error) {
	devs, err := s.devices(dev)
	if err != nil {
		return nil, err
	}
	var rows []GIDRow
	for _, d := range devs {
		for _, p := range d.Ports {
			rows = append(rows, gidRows(d.Name, p)...)
		}
	}
	return rows, nil
}

// gidRows turns one port's table into rows and marks, for each address, the
// RoCE v2 entry to use.
func gidRows(dev string, p sysfs.Port) []GIDRow {
	var rows []GIDRow
	marked := map[netip.Addr]bool{}
	for _, g := range p.GIDs {
		r := GIDRow{Dev: dev, Port: p.Num, Index: g.Index, GID: g.GID, IP: g.IP(), Netdev: g.Netdev}
		if p.LinkLayer == "Ethernet" {
			r.Version = g.Version()
		}
		if r.Version == "v2" && !marked[r.IP] {
			r.RoCEv2, marked[r.IP] = true, true
		}
		rows = append(rows, r)
	}
	return rows
}

// fullGID is the sysfs spelling of a GID, eight groups of four hex digits.
func fullGID(a netip.Addr) string {
	b := a.As16()
	s := ""
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			s += ":"
		}
		s += fmt.Sprintf("%02x%02x", b[i], b[i+1])
	}
	return s
}

// WriteGIDs prints rows as show_gids does (DEV PORT INDEX GID IPv4 VER DEV),
// with the address column holding IPv6 addresses too and a last column
// marking the entry to use for RoCE v2 from each address.
func WriteGIDs(w io.Writer, rows []GIDRow) {
	tw := tabwriter.NewWriter(w, 0, 8, 1, ' ', 0)
	fmt.Fprintln(tw, "DEV\tPORT\tINDEX\tGID\tIPv4/IPv6\tVER\tNETDEV\tROCEV2")
	fmt.Fprintln(tw, "---\t----\t-----\t---\t---------\t---\t------\t------")
	for _, r := range rows {
		ip := ""
		if r.Version != "" {
			ip = r.IP.String()
		}
		mark := ""
		if r.RoCEv2 {
			mark = "<- use"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.Dev, r.Port, r.Index, fullGID(r.GID), ip, r.Version, r.Netdev, mark)
	}
	tw.Flush()
	fmt.Fprintf(w, "n_gids_found=%d\n", len(rows))
}
