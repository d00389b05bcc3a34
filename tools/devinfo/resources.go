// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rdmago/rdmago/internal/rdmanl"
)

// ResourceKinds are the object types `rdmainfo resources KIND` lists.
var ResourceKinds = []string{"qp", "cq", "mr", "pd", "cm_id", "srq"}

// Res is one tracked object in the shape of `rdma -j resource show KIND`:
// the same keys, present or absent as iproute2 prints them.
type Res map[string]any

// ProcessRes is the per-process view: how many of each object a process (or
// a kernel client) holds.
type ProcessRes struct {
	PID    uint32            `json:"pid,omitempty"`
	Comm   string            `json:"comm"`
	Kernel bool              `json:"kernel,omitempty"`
	Counts map[string]uint64 `json:"counts"` // "qp", "cq", "mr", "pd", "cm_id", "srq"
}

// ResourceReport is `rdmainfo resources`: per-device summaries and who holds
// what.
type ResourceReport struct {
	Summary   []rdmanl.ResSummary `json:"summary"`
	Processes []ProcessRes        `json:"processes"`
}

// comm returns the command name of pid from /proc/PID/comm under the root, as
// iproute2 does; "" if the process is gone.
func (s *System) comm(pid uint32) string {
	c, err := s.FS.ReadString("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/comm")
	if err != nil {
		return ""
	}
	return c
}

func (s *System) owner(r Res, o rdmanl.ResOwner) {
	if o.Kernel() {
		r["comm"] = o.KernName
		return
	}
	if o.PID != 0 {
		r["pid"] = o.PID
		r["comm"] = s.comm(o.PID)
	}
}

func hexs(v uint64) string { return strconv.FormatUint(v, 16) }

// Resources lists the objects of one kind ("qp", "cq", "mr", "pd", "cm_id", "srq")
// on device dev (every device when dev is empty), like `rdma resource show
// KIND`.
func (s *System) Resources(kind, dev string) ([]Res, error) {
	if s.NL == nil {
		return nil, fmt.Errorf("resources need RDMA netlink: %w", s.nlErr())
	}
	if !slices.Contains(ResourceKinds, kind) {
		return nil, fmt.Errorf("resource kind %q: want one of %s", kind, strings.Join(ResourceKinds, ", "))
	}
	devs, err := s.NL.Devices()
	if err != nil {
		return nil, err
	}
	found := dev == ""
	var out []Res
	for _, d := range devs {
		if dev != "" && d.Name != dev {
			continue
		}
		found = true
		base := func() Res { return Res{"ifindex": d.Index, "ifname": d.Name} }
		switch kind {
		case "qp":
			qps, err := s.NL.QPs(d.Index)
			if err != nil {
				return nil, err
			}
			for _, q := range qps {
				r := base()
				if q.Port != 0 {
					r["port"] = q.Port
				}
				r["lqpn"] = q.LQPN
				if q.HasRQPN {
					r["rqpn"], r["rq-psn"] = q.RQPN, q.RQPSN
				}
				r["type"], r["state"], r["sq-psn"] = q.Type.String(), q.State.String(), q.SQPSN
				if q.HasPathMig {
					r["path-mig-state"] = rdmanl.MigStateName(q.PathMigState)
				}
				if !q.Kernel() {
					r["pdn"] = q.PDN
				}
				s.owner(r, q.ResOwner)
				out = append(out, r)
			}
		case "cq":
			cqs, err := s.NL.CQs(d.Index)
			if err != nil {
				return nil, err
			}
			for _, c := range cqs {
				r := base()
				r["cqn"], r["cqe"], r["users"] = c.CQN, c.CQE, c.Users
				if c.HasDIM {
					r["adaptive-moderation"] = c.DIM
				}
				if c.HasPollCtx {
					r["poll-ctx"] = rdmanl.PollCtxName(c.PollCtx)
				}
				if !c.Kernel() {
					r["ctxn"] = c.CtxN
				}
				s.owner(r, c.ResOwner)
				out = append(out, r)
			}
		case "mr":
			mrs, err := s.NL.MRs(d.Index)
			if err != nil {
				return nil, err
			}
			for _, m := range mrs {
				r := base()
				r["mrn"], r["rkey"], r["lkey"], r["mrlen"], r["pdn"] = m.MRN, hexs(uint64(m.RKey)), hexs(uint64(m.LKey)), m.Len, m.PDN
				if m.IOVA != 0 {
					r["iova"] = hexs(m.IOVA)
				}
				s.owner(r, m.ResOwner)
				out = append(out, r)
			}
		case "pd":
			pds, err := s.NL.PDs(d.Index)
			if err != nil {
				return nil, err
			}
			for _, p := range pds {
				r := base()
				r["pdn"], r["local_dma_lkey"], r["users"] = p.PDN, hexs(uint64(p.LocalDMALKey)), p.Users
				if p.UnsafeGlobalRKey != 0 {
					r["unsafe_global_rkey"] = hexs(uint64(p.UnsafeGlobalRKey))
				}
				if !p.Kernel() {
					r["ctxn"] = p.CtxN
				}
				s.owner(r, p.ResOwner)
				out = append(out, r)
			}
		case "cm_id":
			ids, err := s.NL.CMIDs(d.Index)
			if err != nil {
				return nil, err
			}
			for _, c := range ids {
				r := base()
				if c.Port != 0 {
					r["port"] = c.Port
				}
				if c.HasQP {
					r["lqpn"], r["qp-type"] = c.LQPN, c.Type.String()
				}
				r["cm-idn"], r["state"], r["ps"] = c.CMIDN, c.State.String(), rdmanl.PortSpaceName(c.PS)
				r["src-addr"], r["dst-addr"] = c.Src.String(), c.Dst.String()
				s.owner(r, c.ResOwner)
				out = append(out, r)
			}
		case "srq":
			srqs, err := s.NL.SRQs(d.Index)
			if err != nil {
				return nil, err
			}
			for _, q := range srqs {
				r := base()
				r["srqn"], r["type"] = q.SRQN, q.Type.String()
				if len(q.QPs) > 0 {
					// iproute2 prints the QPs as runs: ["17","18-20"].
					runs := make([]string, len(q.QPs))
					for i, qr := range q.QPs {
						runs[i] = qr.String()
					}
					r["lqpn"] = runs
				}
				r["pdn"] = q.PDN
				if q.HasCQ {
					r["cqn"] = q.CQN
				}
				s.owner(r, q.ResOwner)
				out = append(out, r)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("no RDMA device %q (see `rdmainfo devices`)", dev)
	}
	if perPort(kind) {
		// iproute2 lists these port by port (rd_exec_link), those bound to
		// no port first.
		sort.SliceStable(out, func(i, j int) bool {
			pi, _ := out[i]["port"].(uint32)
			pj, _ := out[j]["port"].(uint32)
			return out[i]["ifindex"].(uint32) < out[j]["ifindex"].(uint32) ||
				out[i]["ifindex"] == out[j]["ifindex"] && pi < pj
		})
	}
	return out, nil
}

// perPort reports whether iproute2 lists and prints objects of kind port by
// port (rd_exec_link, print_link's "link rxe0/1"): QPs and cm_ids; the
// others go per device ("dev rxe0").
func perPort(kind string) bool { return kind == "qp" || kind == "cm_id" }

// ResourceSummary is `rdmainfo resources`: the per-device counts and the
// per-process counts of QPs, CQs, MRs, PDs, cm_ids and SRQs.
func (s *System) ResourceSummary(dev string) (ResourceReport, error) {
	if s.NL == nil {
		return ResourceReport{}, fmt.Errorf("resources need RDMA netlink: %w", s.nlErr())
	}
	sums, err := s.NL.ResSummary()
	if err != nil {
		return ResourceReport{}, err
	}
	var rep ResourceReport
	for _, x := range sums {
		if dev == "" || x.DevName == dev {
			rep.Summary = append(rep.Summary, x)
		}
	}
	if dev != "" && len(rep.Summary) == 0 {
		return ResourceReport{}, fmt.Errorf("no RDMA device %q (see `rdmainfo devices`)", dev)
	}
	type key struct {
		pid  uint32
		comm string
	}
	procs := map[key]*ProcessRes{}
	for _, kind := range ResourceKinds {
		if kind == "srq" && !tracksSRQs(rep.Summary) {
			continue // a kernel without SRQ tracking refuses the dump
		}
		rs, err := s.Resources(kind, dev)
		if err != nil {
			return ResourceReport{}, err
		}
		for _, r := range rs {
			pid, _ := r["pid"].(uint32)
			comm, _ := r["comm"].(string)
			k := key{pid, comm}
			p := procs[k]
			if p == nil {
				p = &ProcessRes{PID: pid, Comm: comm, Kernel: pid == 0, Counts: map[string]uint64{}}
				procs[k] = p
			}
			p.Counts[kind]++
		}
	}
	for _, p := range procs {
		rep.Processes = append(rep.Processes, *p)
	}
	sort.Slice(rep.Processes, func(i, j int) bool {
		a, b := rep.Processes[i], rep.Processes[j]
		if a.PID != b.PID {
			return a.PID < b.PID
		}
		return a.Comm < b.Comm
	})
	return rep, nil
}

// tracksSRQs reports whether the kernel counts SRQs (an "srq" entry in a
// device's summary): only then does it answer RDMA_NLDEV_CMD_RES_SRQ_GET.
func tracksSRQs(sums []rdmanl.ResSummary) bool {
	for _, x := range sums {
		for _, c := range x.Counts {
			if c.Name == "srq" {
				return true
			}
		}
	}
	return false
}

// WriteResourceSummary prints the report: `rdma resource show` lines, then a
// table of processes.
func WriteResourceSummary(w io.Writer, rep ResourceReport) {
	for _, x := range rep.Summary {
		fmt.Fprintf(w, "%d: %s:", x.DevIndex, x.DevName)
		for _, c := range x.Counts {
			fmt.Fprintf(w, " %s %d", c.Name, c.Count)
		}
		fmt.Fprintln(w)
	}
	if len(rep.Processes) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PID\tCOMM\tQP\tCQ\tMR\tPD\tCM_ID\tSRQ\t")
	for _, p := range rep.Processes {
		pid, comm := strconv.FormatUint(uint64(p.PID), 10), p.Comm
		if p.Kernel {
			pid, comm = "-", "["+comm+"]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", pid, comm, p.Counts["qp"], p.Counts["cq"], p.Counts["mr"], p.Counts["pd"], p.Counts["cm_id"], p.Counts["srq"])
	}
	tw.Flush()
}

// resKeyOrder is the order iproute2 prints the keys of each kind in
// (rdma/res-*.c).
var resKeyOrder = map[string][]string{
	"qp":    {"port", "lqpn", "rqpn", "type", "state", "rq-psn", "sq-psn", "path-mig-state", "pdn", "pid", "comm"},
	"cq":    {"cqn", "cqe", "users", "poll-ctx", "adaptive-moderation", "ctxn", "pid", "comm"},
	"mr":    {"mrn", "rkey", "lkey", "iova", "mrlen", "pdn", "pid", "comm"},
	"pd":    {"pdn", "local_dma_lkey", "users", "unsafe_global_rkey", "ctxn", "pid", "comm"},
	"cm_id": {"port", "cm-idn", "lqpn", "qp-type", "state", "ps", "pid", "comm", "src-addr", "dst-addr"},
	"srq":   {"srqn", "type", "lqpn", "pdn", "cqn", "pid", "comm"},
}

// resHexKeys are the keys iproute2 prints with print_key: hexadecimal, with
// a 0x prefix in text (its JSON has the digits alone, as Res holds them).
var resHexKeys = map[string]bool{"rkey": true, "lkey": true, "iova": true, "local_dma_lkey": true, "unsafe_global_rkey": true}

// WriteResources prints objects of one kind one per line, as `rdma resource
// show KIND` does ("link rxe0/1 lqpn 1 type GSI state RTS sq-psn 0 comm
// [ib_core]"): keys in 0x hex, adaptive-moderation on or off, an SRQ's QPs
// as runs ("lqpn 17,18-20").
func WriteResources(w io.Writer, kind string, rs []Res) {
	for _, r := range rs {
		var b strings.Builder
		// print_link: "link rxe0/-" before a port is bound.
		if p, ok := r["port"]; ok {
			fmt.Fprintf(&b, "link %v/%v", r["ifname"], p)
		} else if perPort(kind) {
			fmt.Fprintf(&b, "link %v/-", r["ifname"])
		} else {
			fmt.Fprintf(&b, "dev %v", r["ifname"])
		}
		_, user := r["pid"]
		for _, k := range resKeyOrder[kind] {
			v, ok := r[k]
			if !ok || k == "port" {
				continue
			}
			if k == "comm" && !user {
				v = fmt.Sprintf("[%v]", v)
			}
			switch x := v.(type) {
			case bool: // print_on_off
				v = "off"
				if x {
					v = "on"
				}
			case []string:
				v = strings.Join(x, ",")
			case string:
				if resHexKeys[k] {
					v = "0x" + x
				}
			}
			fmt.Fprintf(&b, " %s %v", k, v)
		}
		fmt.Fprintln(w, b.String())
	}
}
