// Copyright 2026 The rdmago Authors.

package rdmanl

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/netlink"
)

// The fixtures in testdata/lab-KERNEL were captured in one lab boot (see
// res_lab_test.go, -rdmanl.capture): the raw RES_* dump answers (*.hex, one
// message per line) and, at the same moment, iproute2's `rdma -j -d resource
// show TYPE` (rdma-res-*.json), while ibv_rc_pingpong (an RC QP, CQ, MR, PD)
// and rping -s (a listening cm_id) held resources. The decoders must agree
// with iproute2 on every field iproute2 prints.

func fixtureDirs(t *testing.T) []string {
	dirs, _ := filepath.Glob("testdata/lab-*")
	if len(dirs) == 0 {
		t.Fatal("no testdata/lab-* fixtures")
	}
	return dirs
}

func readHex(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b, err := hex.DecodeString(strings.TrimSpace(sc.Text()))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, b)
	}
	return out
}

func readJSON(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v []map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// pidComm is the pids.txt of a capture: which comm each user pid had.
func pidComm(t *testing.T, dir string) map[uint32]string {
	b, err := os.ReadFile(filepath.Join(dir, "pids.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[uint32]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			n, _ := strconv.Atoi(f[0])
			m[uint32(n)] = f[1]
		}
	}
	return m
}

// compare checks every field iproute2 printed against ours, rendered the
// way iproute2 renders it. want holds iproute2's values, got ours.
func compare(t *testing.T, what string, want map[string]any, got map[string]string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: iproute2 printed nothing", what)
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: iproute2 prints %s=%v, we do not decode it", what, k, w)
			continue
		}
		if ws := fmt.Sprint(w); ws != g {
			t.Errorf("%s: %s: iproute2 %q, we %q", what, k, ws, g)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: we decode %s=%s, iproute2 did not print it", what, k, g)
		}
	}
}

// owner renders pid/comm the way iproute2 does: kernel objects have only
// comm (the kernel name), user objects pid and the comm from /proc.
func owner(m map[string]string, o ResOwner, comms map[uint32]string) {
	if o.Kernel() {
		m["comm"] = o.KernName
		return
	}
	m["pid"] = fmt.Sprint(o.PID)
	m["comm"] = comms[o.PID]
}

func TestResFixtures(t *testing.T) {
	for _, dir := range fixtureDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			comms := pidComm(t, dir)

			// Summary.
			var sums []ResSummary
			for _, m := range readHex(t, filepath.Join(dir, "summary.hex")) {
				s, err := parseResSummary(m)
				if err != nil {
					t.Fatal(err)
				}
				sums = append(sums, s)
			}
			want := readJSON(t, filepath.Join(dir, "rdma-res.json"))
			if len(sums) != len(want) {
				t.Fatalf("%d summaries, iproute2 shows %d", len(sums), len(want))
			}
			for i, s := range sums {
				got := map[string]string{"ifindex": fmt.Sprint(s.DevIndex), "ifname": s.DevName}
				for _, c := range s.Counts {
					got[c.Name] = fmt.Sprint(c.Count)
				}
				compare(t, "summary", want[i], got)
			}

			check := func(name string, got []map[string]string) {
				t.Helper()
				want := readJSON(t, filepath.Join(dir, "rdma-res-"+name+".json"))
				if len(got) != len(want) {
					t.Fatalf("%s: %d entries, iproute2 shows %d", name, len(got), len(want))
				}
				if len(got) == 0 {
					t.Fatalf("%s: the fixture has no entries to compare", name)
				}
				for i := range got {
					compare(t, fmt.Sprintf("%s[%d]", name, i), want[i], got[i])
				}
			}

			var qps []map[string]string
			for _, m := range readHex(t, filepath.Join(dir, "qp.hex")) {
				v, err := parseQPs(m)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range v {
					g := map[string]string{"ifindex": fmt.Sprint(q.DevIndex), "ifname": q.DevName,
						"port": fmt.Sprint(q.Port), "lqpn": fmt.Sprint(q.LQPN), "type": q.Type.String(),
						"state": q.State.String(), "sq-psn": fmt.Sprint(q.SQPSN)}
					if q.HasRQPN {
						g["rqpn"] = fmt.Sprint(q.RQPN)
						g["rq-psn"] = fmt.Sprint(q.RQPSN)
					}
					if q.HasPathMig {
						g["path-mig-state"] = MigStateName(q.PathMigState)
					}
					if !q.Kernel() {
						g["pdn"] = fmt.Sprint(q.PDN)
					}
					owner(g, q.ResOwner, comms)
					qps = append(qps, g)
				}
			}
			check("qp", qps)

			var cqs []map[string]string
			for _, m := range readHex(t, filepath.Join(dir, "cq.hex")) {
				v, err := parseCQs(m)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range v {
					g := map[string]string{"ifindex": fmt.Sprint(c.DevIndex), "ifname": c.DevName,
						"cqn": fmt.Sprint(c.CQN), "cqe": fmt.Sprint(c.CQE), "users": fmt.Sprint(c.Users),
						"adaptive-moderation": fmt.Sprint(c.DIM)}
					if c.HasPollCtx {
						g["poll-ctx"] = PollCtxName(c.PollCtx)
					}
					if !c.Kernel() {
						g["ctxn"] = fmt.Sprint(c.CtxN)
					}
					owner(g, c.ResOwner, comms)
					cqs = append(cqs, g)
				}
			}
			check("cq", cqs)

			var mrs []map[string]string
			for _, m := range readHex(t, filepath.Join(dir, "mr.hex")) {
				v, err := parseMRs(m)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range v {
					g := map[string]string{"ifindex": fmt.Sprint(r.DevIndex), "ifname": r.DevName,
						"mrn": fmt.Sprint(r.MRN), "rkey": fmt.Sprintf("%x", r.RKey), "lkey": fmt.Sprintf("%x", r.LKey),
						"mrlen": fmt.Sprint(r.Len), "pdn": fmt.Sprint(r.PDN)}
					if r.IOVA != 0 {
						g["iova"] = fmt.Sprintf("%x", r.IOVA)
					}
					owner(g, r.ResOwner, comms)
					mrs = append(mrs, g)
				}
			}
			check("mr", mrs)

			var pds []map[string]string
			for _, m := range readHex(t, filepath.Join(dir, "pd.hex")) {
				v, err := parsePDs(m)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range v {
					g := map[string]string{"ifindex": fmt.Sprint(p.DevIndex), "ifname": p.DevName,
						"pdn": fmt.Sprint(p.PDN), "local_dma_lkey": fmt.Sprintf("%x", p.LocalDMALKey),
						"users": fmt.Sprint(p.Users)}
					if !p.Kernel() {
						g["ctxn"] = fmt.Sprint(p.CtxN)
					}
					owner(g, p.ResOwner, comms)
					pds = append(pds, g)
				}
			}
			check("pd", pds)

			var cms []map[string]string
			for _, m := range readHex(t, filepath.Join(dir, "cm_id.hex")) {
				v, err := parseCMIDs(m)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range v {
					g := map[string]string{"ifindex": fmt.Sprint(c.DevIndex), "ifname": c.DevName,
						"port": fmt.Sprint(c.Port), "cm-idn": fmt.Sprint(c.CMIDN), "state": c.State.String(),
						"ps": PortSpaceName(c.PS), "src-addr": c.Src.String(), "dst-addr": c.Dst.String()}
					if c.HasQP {
						g["lqpn"] = fmt.Sprint(c.LQPN)
						g["qp-type"] = c.Type.String()
					}
					owner(g, c.ResOwner, comms)
					cms = append(cms, g)
				}
			}
			check("cm_id", cms)
		})
	}
}

func TestResMalformed(t *testing.T) {
	b := readHex(t, filepath.Join(fixtureDirs(t)[0], "qp.hex"))[0]
	for n := 1; n < len(b); n += 7 {
		// Truncations must fail cleanly or decode a prefix, never panic.
		_, _ = parseQPs(b[:n])
	}
	if _, err := parseQPs(b[:8]); err == nil {
		t.Error("a QP dump without a device name was accepted")
	}
	if _, err := parseResSummary([]byte{0xff, 0, 1, 0}); err == nil {
		t.Error("a bad attribute length was accepted")
	}
	if got := parseSockaddr([]byte{2, 0}); got.IsValid() {
		t.Errorf("short sockaddr decoded as %v", got)
	}
}

// srqDump is an RDMA_NLDEV_CMD_RES_SRQ_GET answer shaped as nldev.c's
// fill_res_srq_entry writes it (tables marked NLA_F_NESTED, as the kernel's
// nla_nest_start does): a BASIC SRQ of a user process with QPs 17,
// 18–20 and 25, and an XRC SRQ of ib_core with its CQ and no QPs (an empty
// QP table).
func srqDump() []byte {
	var e netlink.Encoder
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, 3)
	e.String(abi.RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
	e.Nested(abi.RDMA_NLDEV_ATTR_RES_SRQ|netlink.NLA_F_NESTED, func(e *netlink.Encoder) {
		e.Nested(abi.RDMA_NLDEV_ATTR_RES_SRQ_ENTRY|netlink.NLA_F_NESTED, func(e *netlink.Encoder) {
			e.Uint32(abi.RDMA_NLDEV_ATTR_RES_SRQN, 1)
			e.Uint8(abi.RDMA_NLDEV_ATTR_RES_TYPE, 0)
			e.Uint32(abi.RDMA_NLDEV_ATTR_RES_PDN, 4)
			e.Nested(abi.RDMA_NLDEV_ATTR_RES_QP|netlink.NLA_F_NESTED, func(e *netlink.Encoder) {
				e.Nested(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY|netlink.NLA_F_NESTED, func(e *netlink.Encoder) {
					e.Uint32(abi.RDMA_NLDEV_ATTR_RES_LQPN, 17)
				})
				e.Nested(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY|netlink.NLA_F_NESTED, func(e *netlink.Encoder) {
					e.Uint32(abi.RDMA_NLDEV_ATTR_MIN_RANGE, 18)
					e.Uint32(abi.RDMA_NLDEV_ATTR_MAX_RANGE, 20)
				})
				e.Nested(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY|netlink.NLA_F_NESTED, func(e *netlink.Encoder) {
					e.Uint32(abi.RDMA_NLDEV_ATTR_RES_LQPN, 25)
				})
			})
			e.Uint32(abi.RDMA_NLDEV_ATTR_RES_PID, 4242)
		})
		e.Nested(abi.RDMA_NLDEV_ATTR_RES_SRQ_ENTRY|netlink.NLA_F_NESTED, func(e *netlink.Encoder) {
			e.Uint32(abi.RDMA_NLDEV_ATTR_RES_SRQN, 2)
			e.Uint8(abi.RDMA_NLDEV_ATTR_RES_TYPE, 1)
			e.Uint32(abi.RDMA_NLDEV_ATTR_RES_PDN, 1)
			e.Uint32(abi.RDMA_NLDEV_ATTR_RES_CQN, 7)
			e.Nested(abi.RDMA_NLDEV_ATTR_RES_QP|netlink.NLA_F_NESTED, func(*netlink.Encoder) {})
			e.String(abi.RDMA_NLDEV_ATTR_RES_KERN_NAME, "ib_core")
		})
	})
	return e.Encode()
}

func TestParseSRQs(t *testing.T) {
	got, err := parseSRQs(srqDump())
	if err != nil {
		t.Fatal(err)
	}
	want := []SRQ{
		{DevIndex: 3, DevName: "rxe0", SRQN: 1, Type: 0, PDN: 4, QPs: []QPRange{{17, 17}, {18, 20}, {25, 25}}, ResOwner: ResOwner{PID: 4242}},
		{DevIndex: 3, DevName: "rxe0", SRQN: 2, Type: 1, PDN: 1, CQN: 7, HasCQ: true, ResOwner: ResOwner{KernName: "ib_core"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseSRQs:\n got %+v\nwant %+v", got, want)
	}
	var runs []string
	for _, r := range got[0].QPs {
		runs = append(runs, r.String())
	}
	if s := strings.Join(runs, ","); s != "17,18-20,25" {
		t.Errorf("QP runs %q, want 17,18-20,25 (as iproute2 prints them)", s)
	}
	if got[0].Type.String() != "BASIC" || got[1].Type.String() != "XRC" || SRQType(9).String() != "UNKNOWN" {
		t.Errorf("SRQ type names: %v %v %v", got[0].Type, got[1].Type, SRQType(9))
	}
	// A QP entry that is neither a number nor a whole range is an error.
	var bad netlink.Encoder
	bad.Nested(abi.RDMA_NLDEV_ATTR_RES_QP_ENTRY, func(e *netlink.Encoder) { e.Uint32(abi.RDMA_NLDEV_ATTR_MIN_RANGE, 5) })
	if _, err := parseQPRanges(bad.Encode()); err == nil {
		t.Error("a range without its end was accepted")
	}
}
