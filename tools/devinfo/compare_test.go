// Copyright 2026 The rdmago Authors.

package devinfo

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
)

// devinfoDump is ibv_devinfo's output parsed into fields: one map for the
// device and one per port. device_cap_flags' name lines are joined into the
// "device_cap_flags names" field.
type devinfoDump struct {
	Name   string
	Fields map[string]string
	Ports  []map[string]string
}

// parseDevinfo parses the output of `ibv_devinfo [-v]` (or of WriteShow).
// Headings (rc_odp_caps:) are fields with an empty value, the lines under
// them in -v's sub-sections are "heading.key" (rss_caps.max_tso), and a
// remark line is a field named by its text ("core clock not supported").
func parseDevinfo(text string) ([]devinfoDump, error) {
	var out []devinfoDump
	var cur *devinfoDump
	var port map[string]string
	lastKey, section := "", ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "#") {
			continue
		}
		tabs := len(line) - len(strings.TrimLeft(line, "\t"))
		k, v, ok := strings.Cut(trim, ":")
		v = strings.TrimSpace(v)
		switch {
		case tabs == 0 && ok && k == "hca_id":
			out = append(out, devinfoDump{Name: v, Fields: map[string]string{}})
			cur, port, lastKey = &out[len(out)-1], nil, ""
		case cur == nil:
			return nil, fmt.Errorf("line %q before any hca_id", line)
		case tabs == 2 && ok && k == "port":
			port = map[string]string{"port": v}
			cur.Ports = append(cur.Ports, port)
		case tabs == 1 && ok && v == "":
			lastKey, section = k, k // a heading (rc_odp_caps:) whose lines follow
			cur.Fields[k] = ""
		case tabs == 1 && !ok && port == nil:
			cur.Fields[trim], lastKey, section = "", "", ""
		case tabs == 5 || !ok:
			// A continuation (flag names) or a remark.
			if tabs == 5 && lastKey != "" {
				f := cur.Fields
				if port != nil {
					f = port
				}
				f[lastKey+" names"] = strings.TrimSpace(f[lastKey+" names"] + " " + trim)
			}
		case tabs >= 3 && port != nil:
			port[k] = v
			lastKey = k
		case tabs == 1:
			cur.Fields[k] = v
			lastKey, section = k, ""
		case tabs == 2 && ok && port == nil && section != "":
			// The lines of a sub-section of -v (tso_caps, rss_caps, ...).
			cur.Fields[section+"."+k] = v
			lastKey = section + "." + k
		default:
			return nil, fmt.Errorf("unexpected line %q", line)
		}
	}
	return out, sc.Err()
}

// compareDevinfo checks ours against ibv_devinfo's output: every field both
// print must be equal, and every field ibv_devinfo prints must be printed by
// us unless it is in absent (the fields rdmainfo cannot know yet). It
// returns how many fields were compared.
func compareDevinfo(t *testing.T, ours, ref string, absent map[string]bool) int {
	t.Helper()
	o, err := parseDevinfo(ours)
	if err != nil {
		t.Fatalf("our output: %v\n%s", err, ours)
	}
	r, err := parseDevinfo(ref)
	if err != nil {
		t.Fatalf("ibv_devinfo output: %v", err)
	}
	if len(o) != len(r) {
		t.Fatalf("%d devices, ibv_devinfo shows %d\nours:\n%s", len(o), len(r), ours)
	}
	n := 0
	cmp := func(where string, of, rf map[string]string) {
		keys := make([]string, 0, len(rf))
		for k := range rf {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ov, ok := of[k]
			if !ok {
				if !absent[k] {
					t.Errorf("%s: ibv_devinfo prints %s = %q, rdmainfo does not", where, k, rf[k])
				}
				continue
			}
			n++
			if ov != rf[k] {
				t.Errorf("%s: %s: rdmainfo %q, ibv_devinfo %q", where, k, ov, rf[k])
			}
		}
		for k := range of {
			if _, ok := rf[k]; !ok && !extraKeys[k] {
				t.Errorf("%s: rdmainfo prints %s = %q, ibv_devinfo does not", where, k, of[k])
			}
		}
	}
	for i := range r {
		if o[i].Name != r[i].Name {
			t.Errorf("device %d: %q, ibv_devinfo %q", i, o[i].Name, r[i].Name)
		}
		cmp(r[i].Name, o[i].Fields, r[i].Fields)
		if len(o[i].Ports) != len(r[i].Ports) {
			t.Fatalf("%s: %d ports, ibv_devinfo %d", r[i].Name, len(o[i].Ports), len(r[i].Ports))
		}
		for p := range r[i].Ports {
			cmp(fmt.Sprintf("%s port %d", r[i].Name, p+1), o[i].Ports[p], r[i].Ports[p])
		}
	}
	return n
}

// extraKeys are lines rdmainfo adds to ibv_devinfo's layout.
var extraKeys = map[string]bool{"uverbs": true, "netdev": true}

// absentWithoutVerbs are the fields only QUERY_DEVICE/QUERY_PORT know, and
// the -v lines of ibv_query_device_ex (ODP, clocks, extended flags, TSO,
// RSS, packet pacing, tag matching) as rxe has them. With the device's
// uverbs answers rdmainfo prints every line (compareDevinfo with no absent
// fields).
var absentWithoutVerbs = map[string]bool{
	"fw_ver": true, "vendor_id": true, "vendor_part_id": true, "hw_ver": true, "max_mr_size": true,
	"page_size_cap": true, "max_qp": true, "max_qp_wr": true, "max_sge": true, "max_sge_rd": true,
	"max_cq": true, "max_cqe": true, "max_mr": true, "max_pd": true, "max_qp_rd_atom": true,
	"max_res_rd_atom": true, "max_qp_init_rd_atom": true, "atomic_cap": true, "max_mw": true,
	"max_ah": true, "max_srq": true, "max_srq_wr": true, "max_srq_sge": true, "max_pkeys": true,
	"local_ca_ack_delay": true, "num_comp_vectors": true, "max_mtu": true, "active_mtu": true,
	"max_msg_sz": true, "port_cap_flags2": true, "max_ee_rd_atom": true, "max_ee_init_rd_atom": true,
	"max_ee": true, "max_rdd": true, "max_raw_ipv6_qp": true, "max_raw_ethy_qp": true, "max_mcast_grp": true,
	"max_mcast_qp_attach": true, "max_total_mcast_qp_attach": true, "max_fmr": true, "max_vl_num": true,
	"bad_pkey_cntr": true, "qkey_viol_cntr": true, "subnet_timeout": true, "init_type_reply": true,

	"general_odp_caps": true, "rc_odp_caps": true, "rc_odp_caps names": true, "uc_odp_caps": true, "uc_odp_caps names": true,
	"ud_odp_caps": true, "ud_odp_caps names": true, "xrc_odp_caps": true, "xrc_odp_caps names": true,
	"completion_timestamp_mask not supported": true, "core clock not supported": true,
	"device_cap_flags_ex": true, "device_cap_flags_ex names": true, "tso_caps": true, "tso_caps.max_tso": true,
	"rss_caps": true, "rss_caps.max_rwq_indirection_tables": true, "rss_caps.max_rwq_indirection_table_size": true,
	"rss_caps.rx_hash_function": true, "rss_caps.rx_hash_fields_mask": true, "max_wq_type_rq": true,
	"packet_pacing_caps": true, "packet_pacing_caps.qp_rate_limit_min": true, "packet_pacing_caps.qp_rate_limit_max": true,
	"tag matching not supported": true,
}

// fixtureFiles holds each lab capture's files, read once: tests copy them
// into a fresh directory per case (reading the tree again through the lab's
// 9p share for every case is slow).
var fixtureFiles sync.Map // name → map[string][]byte (relative path → contents; nil for a directory)

// fixtureRoot copies the lab-captured tree internal/sysfs/testdata/NAME to a
// temporary directory the test may change, restoring the device nodes'
// permissions from the capture's `ls -ln /dev/infiniband` (git keeps no
// modes).
func fixtureRoot(t *testing.T, name string) string {
	t.Helper()
	v, ok := fixtureFiles.Load(name)
	if !ok {
		src := filepath.Join("../../internal/sysfs/testdata", name)
		files := map[string][]byte{}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if d.IsDir() {
				files[rel] = nil
				return nil
			}
			b, err := os.ReadFile(p)
			if b == nil {
				b = []byte{}
			}
			files[rel] = b
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		v, _ = fixtureFiles.LoadOrStore(name, files)
	}
	files := v.(map[string][]byte)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths) // parents first
	dst := t.TempDir()
	for _, p := range paths {
		to := filepath.Join(dst, p)
		var err error
		if b := files[p]; b == nil {
			err = os.MkdirAll(to, 0o755)
		} else {
			err = os.WriteFile(to, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	ls, err := os.ReadFile(filepath.Join(dst, "dev/infiniband.capture"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(ls), "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || len(f[0]) != 10 {
			continue
		}
		var mode uint32
		for i, c := range f[0][1:] {
			if c != '-' {
				mode |= 1 << (8 - i)
			}
		}
		if err := os.Chmod(filepath.Join(dst, "dev/infiniband", f[len(f)-1]), fs.FileMode(mode)); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func labFixtures(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob("testdata/lab-*")
	if len(dirs) == 0 {
		t.Fatal("no testdata/lab-* fixtures")
	}
	var names []string
	for _, d := range dirs {
		names = append(names, filepath.Base(d))
	}
	return names
}
