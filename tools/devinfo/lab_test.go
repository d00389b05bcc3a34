// Copyright 2026 The rdmago Authors.

//go:build linux

package devinfo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/uverbs"
	"golang.org/x/sys/unix"
)

// These tests run in the lab (`go run ./cmd/rdmalab test ./tools/devinfo`)
// and compare rdmainfo's answers, value by value, with rdma-core's and
// iproute2's C tools run in the same boot.

func liveSystem(t *testing.T) (*System, labtest.Env) {
	t.Helper()
	env := labtest.Require(t)
	s, err := Live()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if s.NL == nil {
		t.Fatalf("no RDMA netlink: %v", s.NLErr)
	}
	return s, env
}

// TestLabShowMatchesIbvDevinfo compares `rdmainfo show [-v]` with
// `ibv_devinfo [-v]`: every field both print must be equal, and every field
// ibv_devinfo prints must be there.
func TestLabShowMatchesIbvDevinfo(t *testing.T) {
	s, env := liveSystem(t)
	infos, err := s.Show(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	if infos[0].Verbs == nil {
		t.Fatalf("uverbs query failed: %s", infos[0].VerbsErr)
	}
	for _, verbose := range []bool{false, true} {
		var buf bytes.Buffer
		WriteShow(&buf, infos, verbose)
		args := []string{"-d", env.Dev}
		if verbose {
			args = append(args, "-v")
		}
		ref := runTool(t, "ibv_devinfo", args...)
		n := compareDevinfo(t, buf.String(), ref, nil)
		t.Logf("verbose=%v: %d fields agree with ibv_devinfo %s", verbose, n, strings.Join(args, " "))
		if verbose && n < 60 {
			t.Errorf("only %d fields compared with ibv_devinfo -v", n)
		}
		if t.Failed() {
			t.Logf("rdmainfo:\n%s\nibv_devinfo:\n%s", buf.String(), ref)
		}
	}
}

// TestLabDevicesMatchIbvDevices compares `rdmainfo devices` with ibv_devices
// byte for byte.
func TestLabDevicesMatchIbvDevices(t *testing.T) {
	s, _ := liveSystem(t)
	devs, err := s.Devices()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	WriteDevices(&buf, devs)
	if ref := runTool(t, "ibv_devices"); buf.String() != ref {
		t.Errorf("rdmainfo devices:\n%s\nibv_devices:\n%s", buf.String(), ref)
	}
}

// jsonEqual compares ours (any value) with iproute2's JSON after a round
// trip, so numbers and key sets compare alike.
func jsonEqual(t *testing.T, what string, ours any, ref string) {
	t.Helper()
	b, err := json.Marshal(ours)
	if err != nil {
		t.Fatal(err)
	}
	var o, r any
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(ref), &r); err != nil {
		t.Fatalf("%s: iproute2 JSON: %v\n%s", what, err, ref)
	}
	if !reflect.DeepEqual(o, r) {
		t.Errorf("%s differs from iproute2:\nrdmainfo: %s\niproute2: %s", what, b, strings.TrimSpace(ref))
	}
}

// TestLabLinksMatchRdma compares `rdmainfo link show --json` with
// `rdma -j link show`.
func TestLabLinksMatchRdma(t *testing.T) {
	s, env := liveSystem(t)
	links, err := s.Links()
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 1 || links[0].Dev != env.Dev || links[0].State != "ACTIVE" || links[0].Netdev != labNetdev(t, env) {
		t.Errorf("links %+v", links)
	}
	jsonEqual(t, "link show", links, runTool(t, "rdma", "-j", "link", "show"))
	var buf bytes.Buffer
	WriteLinks(&buf, links)
	if ref := runTool(t, "rdma", "link", "show"); trimLines(buf.String()) != trimLines(ref) {
		t.Errorf("rdmainfo link show:\n%s\nrdma link show:\n%s", buf.String(), ref)
	}
}

// trimLines drops trailing blanks of each line (iproute2 ends lines with a
// space).
func trimLines(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	for i := range ls {
		ls[i] = strings.TrimRight(ls[i], " ")
	}
	return strings.Join(ls, "\n")
}

// TestLabGIDsMatchUverbs compares the sysfs GID table with the one uverbs
// gets from the kernel (QUERY_GID_TABLE), and checks that the lab address has
// a marked RoCE v2 entry.
func TestLabGIDsMatchUverbs(t *testing.T) {
	s, env := liveSystem(t)
	rows, err := s.GIDs(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	c, err := uverbs.Open(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ents, err := c.GIDTable(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(ents) {
		t.Fatalf("%d GIDs from sysfs, %d from uverbs", len(rows), len(ents))
	}
	for i, e := range ents {
		r := rows[i]
		ver := map[uverbs.GIDType]string{uverbs.GIDTypeRoCEv1: "v1", uverbs.GIDTypeRoCEv2: "v2"}[e.Type]
		if r.Index != e.Index || r.GID.As16() != [16]byte(e.GID) || r.Version != ver || r.Netdev != e.Netdev {
			t.Errorf("sysfs %+v, uverbs %+v", r, e)
		}
	}
	addr := netip.MustParseAddr(env.Addr)
	marked := 0
	for _, r := range rows {
		if r.RoCEv2 {
			marked++
			if r.IP == addr && r.Version != "v2" {
				t.Errorf("marked entry %+v is not RoCE v2", r)
			}
		}
	}
	e, err := c.GIDForIP(1, addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.IP == addr && r.RoCEv2 != (r.Index == e.Index) {
			t.Errorf("row %+v: marked %v, uverbs picks index %d", r, r.RoCEv2, e.Index)
		}
	}
	if marked < 1 {
		t.Error("no entry marked for RoCE v2")
	}
}

// holdResources starts C programs that hold verbs and rdma_cm resources
// until the test ends: ibv_rc_pingpong waiting for a client (PD, MR, CQ, RC
// QP) and rping -s (a listening cm_id).
func holdResources(t *testing.T, env labtest.Env) (pingpong, rping int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		cancel()
		for _, c := range cmds {
			c.Wait()
		}
	})
	for _, args := range [][]string{
		{"ibv_rc_pingpong", "-d", env.Dev, "-g", "1", "-p", "18515"},
		{"rping", "-s", "-a", env.Addr, "-C", "1"},
	} {
		c := cTool(t, ctx, args[0], args[1:]...)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	return cmds[0].Process.Pid, cmds[1].Process.Pid
}

// holdSRQ creates, in this process, an SRQ with two RC QPs receiving from
// it (no C tool holds one): PD, CQ, SRQ and QPs stay until the test ends.
func holdSRQ(t *testing.T, env labtest.Env) {
	t.Helper()
	c, err := uverbs.Open(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // destroys what it holds
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(8, nil)
	if err != nil {
		t.Fatal(err)
	}
	srq, err := pd.CreateSRQ(uverbs.SRQOptions{MaxWR: 8, MaxSGE: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, SRQ: srq,
			Cap: uverbs.QPCap{MaxSendWR: 1, MaxSendSGE: 1}}); err != nil {
			t.Fatal(err)
		}
	}
}

// normSpace collapses each line's runs of blanks, as iproute2's text output
// has doubled and trailing ones.
func normSpace(text string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return strings.Join(lines, "\n")
}

// TestLabResourcesMatchRdma holds resources with C programs and an SRQ of
// its own, and compares `rdmainfo resources [KIND]` with `rdma [-j]
// resource show [KIND]`, in JSON and in text.
func TestLabResourcesMatchRdma(t *testing.T) {
	s, env := liveSystem(t)
	pp, rp := holdResources(t, env)
	holdSRQ(t, env)
	self, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	srqs, err := s.Resources("srq", env.Dev)
	if err != nil || len(srqs) != 1 {
		t.Fatalf("srqs %v, %v: want the one this test holds", srqs, err)
	}
	if qps, _ := srqs[0]["lqpn"].([]string); len(qps) == 0 || srqs[0]["comm"] != strings.TrimSpace(string(self)) {
		t.Errorf("want this process's SRQ with its QPs, got %v", srqs)
	}
	var rep ResourceReport
	waitFor(t, 20*time.Second, "the C programs' resources", func() bool {
		var err error
		rep, err = s.ResourceSummary(env.Dev)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range rep.Processes {
			if p.PID == uint32(pp) && p.Counts["qp"] == 1 && p.Counts["mr"] == 1 || p.PID == uint32(rp) && p.Counts["cm_id"] == 1 {
				n++
			}
		}
		return n == 2
	})
	// The programs may still be setting up (pingpong makes its QP last and
	// then moves it to INIT): let them settle before comparing snapshots.
	time.Sleep(time.Second)
	rep, err = s.ResourceSummary(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	WriteResourceSummary(&buf, rep)
	t.Logf("rdmainfo resources:\n%s", buf.String())
	for _, p := range rep.Processes {
		want := map[uint32]string{uint32(pp): "ibv_rc_pingpong", uint32(rp): "rping", 0: "ib_core"}[p.PID]
		if labtest.OwnThread(p.PID) {
			want = strings.TrimSpace(string(self))
		}
		if p.Comm != want {
			t.Errorf("process %d: comm %q, want %q", p.PID, p.Comm, want)
		}
	}
	// `rdma -j res show`: [{"ifindex":0,"ifname":"rxe0","pd":3,...}]
	var sum []map[string]any
	for _, x := range rep.Summary {
		m := map[string]any{"ifindex": x.DevIndex, "ifname": x.DevName}
		for _, c := range x.Counts {
			m[c.Name] = c.Count
		}
		sum = append(sum, m)
	}
	jsonEqual(t, "resource summary", sum, runTool(t, "rdma", "-j", "resource", "show"))
	for _, kind := range ResourceKinds {
		rs, err := s.Resources(kind, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) == 0 {
			t.Errorf("no %s listed", kind)
		}
		refJSON, refText := runTool(t, "rdma", "-j", "-d", "resource", "show", kind), runTool(t, "rdma", "-d", "resource", "show", kind)
		var buf bytes.Buffer
		WriteResources(&buf, kind, rs)
		ours := normSpace(buf.String())
		if kind == "srq" {
			// iproute2 6.1 prints an SRQ's QP runs as its comm (res-srq.c
			// reuses the buffer get_task_name filled); compare the rest.
			rs = slices.Clone(rs)
			for i := range rs {
				rs[i] = maps.Clone(rs[i])
				runs, _ := rs[i]["lqpn"].([]string)
				if strings.Contains(refJSON, `"comm":"`+strings.Join(runs, ",")+`"`) {
					t.Logf("iproute2 prints srq %v's comm as its QPs %v", rs[i]["srqn"], runs)
					refText = strings.ReplaceAll(refText, "comm "+strings.Join(runs, ","), fmt.Sprintf("comm %v", rs[i]["comm"]))
					refJSON = strings.ReplaceAll(refJSON, `"comm":"`+strings.Join(runs, ",")+`"`, fmt.Sprintf(`"comm":%q`, rs[i]["comm"]))
				}
			}
		}
		jsonEqual(t, "resource show "+kind, rs, refJSON)
		if ref := normSpace(refText); ours != ref {
			t.Errorf("resource show %s, text:\nrdmainfo:\n%s\nrdma:\n%s", kind, ours, ref)
		}
	}
}

// TestLabCountersMatchRdma makes RC traffic with ibv_rc_pingpong, checks
// that the counters moved, and compares them with `rdma -j statistic show`.
func TestLabCountersMatchRdma(t *testing.T) {
	s, env := liveSystem(t)
	before, err := s.Counters(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const iters = 20
	srv := cTool(t, ctx, "ibv_rc_pingpong", "-d", env.Dev, "-g", "1", "-p", "18516", "-n", fmt.Sprint(iters))
	var srvOut bytes.Buffer
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	start := time.Now()
	var cli []byte
	for {
		c := cTool(t, ctx, "ibv_rc_pingpong", "-d", env.Dev, "-g", "1", "-p", "18516", "-n", fmt.Sprint(iters), env.Addr)
		if cli, err = c.CombinedOutput(); err == nil || time.Since(start) > 20*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond) // the server may not listen yet
	}
	if err != nil {
		t.Fatalf("ibv_rc_pingpong client: %v\n%s", err, cli)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("ibv_rc_pingpong server: %v\n%s", err, srvOut.String())
	}
	dt := time.Since(start)
	after, err := s.Counters(env.Dev)
	if err != nil {
		t.Fatal(err)
	}
	rated := Rates(before, after, dt)
	get := func(cs []Counter, name string) Counter {
		for _, c := range cs {
			if c.Kind == "hw" && c.Name == name {
				return c
			}
		}
		t.Fatalf("no hw counter %s", name)
		return Counter{}
	}
	for _, name := range []string{"sent_pkts", "rcvd_pkts"} {
		d := get(after, name).Value - get(before, name).Value
		// Both sides of a loopback pingpong are on this device: each of the
		// 2*iters sends is one packet out and one in, plus connection setup.
		if d < 2*iters {
			t.Errorf("%s grew by %d over %d round trips", name, d, iters)
		}
		if r := get(rated, name).Rate; r <= 0 {
			t.Errorf("%s rate %v", name, r)
		}
	}
	// `rdma -j statistic show link DEV/1`: [{"ifname":"rxe0","port":1,"sent_pkts":N,...}]
	ref := runTool(t, "rdma", "-j", "statistic", "show", "link", env.Dev+"/1")
	var stats []map[string]any
	if err := json.Unmarshal([]byte(ref), &stats); err != nil || len(stats) != 1 {
		t.Fatalf("rdma statistic: %v\n%s", err, ref)
	}
	n := 0
	for k, v := range stats[0] {
		if k == "ifname" || k == "port" {
			continue
		}
		c := get(after, k)
		if fmt.Sprint(c.Value) != fmt.Sprint(v) {
			t.Errorf("%s: rdmainfo %d, rdma statistic %v", k, c.Value, v)
		}
		n++
	}
	if n < 10 {
		t.Errorf("only %d counters compared", n)
	}
	t.Logf("%d counters agree with rdma statistic", n)
}

// TestLabDiagnoseAllClear expects no problem and no warning in the lab as it
// boots (root, unlimited memlock, port ACTIVE on an addressed veth).
func TestLabDiagnoseAllClear(t *testing.T) {
	s, env := liveSystem(t)
	r := s.Diagnose()
	var buf bytes.Buffer
	WriteReport(&buf, r)
	t.Logf("diagnose:\n%s", buf.String())
	for _, c := range r.Checks {
		if c.Verdict != OK {
			t.Errorf("%s: %s: %s", c.ID, c.Verdict, c.Detail)
		}
	}
	for _, id := range []string{"kernel", "module/rdma_rxe", "crc32", "uverbs/" + env.Dev, "rdma_cm",
		"port/" + env.Dev + "/1", "netdev/" + env.Dev + "/1", "gid/" + env.Dev + "/1/" + env.Addr, "memlock"} {
		if _, ok := r.Find(id); !ok {
			t.Errorf("no check %s", id)
		}
	}
	// The node's permissions print as the octal mode chmod takes.
	if c, _ := r.Find("rdma_cm"); !strings.Contains(c.Detail, "/dev/infiniband/rdma_cm (0666) opens read-write") {
		t.Errorf("rdma_cm: %q, want its mode as 0666", c.Detail)
	}
	c, _ := r.Find("mtu/" + env.Dev + "/1")
	if !strings.Contains(c.Detail, "reported by the device") {
		t.Errorf("the active MTU did not come from the device: %s", c.Detail)
	}
}

// TestLabDiagnosePortDown sets the rxe netdev down, expects the port and
// the netdev to be reported with `ip link set NETDEV up`, and restores it.
func TestLabDiagnosePortDown(t *testing.T) {
	s, env := liveSystem(t)
	nd := labNetdev(t, env)
	fs := sysfs.New("/")
	portUp := func() bool {
		p, err := fs.Port(env.Dev, 1)
		return err == nil && p.Active()
	}
	setLinkUp(t, nd, false)
	t.Cleanup(func() {
		setLinkUp(t, nd, true)
		waitFor(t, 30*time.Second, env.Dev+" port 1 ACTIVE again", portUp)
		rows, _ := s.GIDs(env.Dev)
		ok := false
		for _, r := range rows {
			ok = ok || r.IP == netip.MustParseAddr(env.Addr) && r.RoCEv2
		}
		if !ok {
			t.Errorf("after %s came back up the RoCE v2 GID of %s is missing: %+v", nd, env.Addr, rows)
		}
	})
	waitFor(t, 10*time.Second, env.Dev+" port 1 DOWN", func() bool { return !portUp() })
	r := s.Diagnose()
	var buf bytes.Buffer
	WriteReport(&buf, r)
	t.Logf("diagnose:\n%s", buf.String())
	for _, id := range []string{"port/" + env.Dev + "/1", "netdev/" + env.Dev + "/1"} {
		c, ok := r.Find(id)
		if !ok || c.Verdict != Fail || c.Fix != "ip link set "+nd+" up" {
			t.Errorf("%s: %+v", id, c)
		}
	}
	for _, c := range r.Checks {
		if c.Verdict != OK && !strings.HasPrefix(c.ID, "port/") && !strings.HasPrefix(c.ID, "netdev/") && !strings.HasPrefix(c.ID, "gid/") {
			t.Errorf("unexpected %s: %s: %s", c.ID, c.Verdict, c.Detail)
		}
	}
	if !r.Blocking() {
		t.Error("a down port does not block")
	}
}

// TestLabDiagnoseMissingModule runs diagnose over a root that mirrors the
// live one through symlinks, except that rdma_ucm is missing from
// /proc/modules and /sys/module.
func TestLabDiagnoseMissingModule(t *testing.T) {
	s, _ := liveSystem(t)
	root := t.TempDir()
	mirror := func(dir string, skip string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(root+dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() == skip {
				continue
			}
			if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(root+dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	mirror("/sys", "module")
	mirror("/sys/module", "rdma_ucm")
	for _, p := range []string{"crypto", "sys", "self"} {
		os.MkdirAll(root+"/proc", 0o755)
		if err := os.Symlink("/proc/"+p, root+"/proc/"+p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/dev", root+"/dev"); err != nil {
		t.Fatal(err)
	}
	mods, err := os.ReadFile("/proc/modules")
	if err != nil {
		t.Fatal(err)
	}
	var keep []string
	for _, l := range strings.Split(string(mods), "\n") {
		if !strings.HasPrefix(l, "rdma_ucm ") {
			keep = append(keep, l)
		}
	}
	if err := os.WriteFile(root+"/proc/modules", []byte(strings.Join(keep, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	s.FS = sysfs.New(root)
	r := s.Diagnose()
	var buf bytes.Buffer
	WriteReport(&buf, r)
	t.Logf("diagnose:\n%s", buf.String())
	for _, c := range r.Checks {
		want := OK
		if c.ID == "module/rdma_ucm" {
			want = Fail
			if !strings.HasPrefix(c.Fix, "modprobe rdma_ucm") {
				t.Errorf("fix %q", c.Fix)
			}
		}
		if c.Verdict != want {
			t.Errorf("%s: %s (%s), want %s", c.ID, c.Verdict, c.Detail, want)
		}
	}
	if _, ok := r.Find("module/rdma_ucm"); !ok || !r.Blocking() {
		t.Error("the missing rdma_ucm was not reported as blocking")
	}
}

// memlockChild is the environment variable that turns the test binary into
// the child of TestLabDiagnoseMemlock.
const memlockChild = "RDMAINFO_MEMLOCK_CHILD"

// childResult is what the child prints.
type childResult struct {
	Report Report `json:"report"`
	RegMR  string `json:"reg_mr"` // "" if registering 1 MiB worked, else the error
}

// TestLabMemlockChild is not a test of its own: run by TestLabDiagnoseMemlock
// with memlockChild set (as root, or as uid 65534 without CAP_IPC_LOCK), it
// lowers RLIMIT_MEMLOCK to 64 KiB, diagnoses, tries to register 1 MiB, and
// prints the result as JSON.
func TestLabMemlockChild(t *testing.T) {
	mode := os.Getenv(memlockChild)
	if mode == "" {
		t.Skip("helper of TestLabDiagnoseMemlock")
	}
	env := labtest.Require(t)
	lim := unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		t.Fatal(err)
	}
	if mode == "nobody" && os.Geteuid() != 65534 {
		t.Fatalf("the nobody child runs as uid %d", os.Geteuid())
	}
	s, err := Live()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res := childResult{Report: s.Diagnose()}
	func() {
		c, err := uverbs.Open(env.Dev)
		if err != nil {
			res.RegMR = err.Error()
			return
		}
		defer c.Close()
		pd, err := c.AllocPD()
		if err != nil {
			res.RegMR = err.Error()
			return
		}
		buf, err := uverbs.AllocBuffer(1 << 20)
		if err != nil {
			res.RegMR = err.Error()
			return
		}
		defer buf.Close()
		mr, err := pd.RegMR(buf.Bytes(), uverbs.AccessLocalWrite)
		if err != nil {
			if errors.Is(err, unix.ENOMEM) {
				res.RegMR = "ENOMEM: " + err.Error()
			} else {
				res.RegMR = err.Error()
			}
			return
		}
		mr.Close()
	}()
	b, _ := json.Marshal(res)
	fmt.Printf("CHILD-RESULT %s\n", b)
}

// TestLabDiagnoseMemlock runs diagnose in children whose RLIMIT_MEMLOCK is
// 64 KiB: as root (CAP_IPC_LOCK exempts it: warn, and 1 MiB registers) and
// as nobody (fail, and registering 1 MiB fails with ENOMEM, which is what
// the diagnosis predicts).
func TestLabDiagnoseMemlock(t *testing.T) {
	labtest.Require(t)
	for _, mode := range []string{"root", "nobody"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			bin := os.Args[0]
			if mode == "nobody" {
				// Drop privileges before exec, not in the child: Go's
				// setuid gives each thread its own credentials, and
				// uverbs refuses a write from credentials other than the
				// opener's (ib_safe_file_access). The test binary lives
				// where nobody may not reach, so run a copy.
				dir, err := os.MkdirTemp("", "memlock-")
				if err != nil {
					t.Fatal(err)
				}
				defer os.RemoveAll(dir)
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(os.Args[0])
				if err != nil {
					t.Fatal(err)
				}
				bin = filepath.Join(dir, "child.test")
				if err := os.WriteFile(bin, b, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			c := exec.CommandContext(ctx, bin, "-test.run=^TestLabMemlockChild$", "-test.v")
			c.Env = append(os.Environ(), memlockChild+"="+mode)
			if mode == "nobody" {
				c.Dir = "/"
				c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
			}
			out, err := c.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			_, js, ok := strings.Cut(string(out), "CHILD-RESULT ")
			if !ok {
				t.Fatalf("child printed no result:\n%s", out)
			}
			js, _, _ = strings.Cut(js, "\n")
			var res childResult
			if err := json.Unmarshal([]byte(js), &res); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			WriteReport(&buf, res.Report)
			t.Logf("child diagnose:\n%sreg 1 MiB: %q", buf.String(), res.RegMR)
			m, ok := res.Report.Find("memlock")
			if !ok {
				t.Fatal("no memlock check")
			}
			switch mode {
			case "root":
				if m.Verdict != Warn || res.RegMR != "" || res.Report.Blocking() {
					t.Errorf("root with 64 KiB: memlock %s, reg %q, blocking %v; want warn, success, not blocking", m.Verdict, res.RegMR, res.Report.Blocking())
				}
			case "nobody":
				if m.Verdict != Fail || !strings.HasPrefix(res.RegMR, "ENOMEM") || !res.Report.Blocking() {
					t.Errorf("nobody with 64 KiB: memlock %s, reg %q, blocking %v; want FAIL, ENOMEM, blocking", m.Verdict, res.RegMR, res.Report.Blocking())
				}
				if !strings.Contains(m.Fix, "ulimit -l unlimited") {
					t.Errorf("fix %q", m.Fix)
				}
			}
			for _, c := range res.Report.Checks {
				if c.ID != "memlock" && c.Verdict != OK {
					t.Errorf("%s: %s: %s", c.ID, c.Verdict, c.Detail)
				}
			}
		})
	}
}

// resolveRoute is what rping and rdmaping do first: rdma_resolve_addr and
// rdma_resolve_route to addr, with package cm.
func resolveRoute(t *testing.T, addr string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ch, err := cm.OpenChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	id, err := ch.CreateID(cm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	defer id.Close()
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, netip.AddrPortFrom(netip.MustParseAddr(addr), 7471), 0); err != nil {
		t.Fatalf("resolve address %s: %v", addr, err)
	}
	return id.ResolveRoute(ctx, 0)
}

// TestLabDiagnoseSmallMTU sets the lab netdev's MTU to 300 and 351, where
// rxe still reports an ACTIVE port with an active MTU of 256 but rdma_cm
// refuses the route (RoCERouteMTU), and to 352, where the route resolves:
// diagnose must fail the first two with `ip link set NETDEV mtu 1500` and
// pass the third, and agree with rdma_cm's own answer each time.
func TestLabDiagnoseSmallMTU(t *testing.T) {
	labtest.OneNode(t, "changes this node's netdev MTU and looks at it locally")
	s, env := liveSystem(t)
	nd := labNetdev(t, env)
	mtuFile := "/sys/class/net/" + nd + "/mtu"
	b, err := os.ReadFile(mtuFile)
	if err != nil {
		t.Fatal(err)
	}
	orig := strings.TrimSpace(string(b))
	activeMTU := func() uint8 {
		v, err := s.Verbs.Query(env.Dev)
		if err != nil {
			t.Fatalf("query %s: %v", env.Dev, err)
		}
		return v.Ports[0].ActiveMTU
	}
	setMTU := func(mtu string) {
		t.Helper()
		if err := os.WriteFile(mtuFile, []byte(mtu), 0o644); err != nil {
			t.Fatalf("set the MTU of %s to %s: %v", nd, mtu, err)
		}
		m, _ := strconv.Atoi(mtu)
		waitFor(t, 10*time.Second, fmt.Sprintf("%s to report the active MTU of a %d-byte netdev", env.Dev, m),
			func() bool { return activeMTU() == RXEActiveMTU(m) })
	}
	t.Cleanup(func() {
		setMTU(orig)
		// Below 1280 the netdev lost its IPv6 link-local address and the
		// GID table its entry: wait until the lab is all clear again.
		waitFor(t, 30*time.Second, "diagnose to be all clear after restoring the MTU", func() bool {
			for _, c := range s.Diagnose().Checks {
				if c.Verdict != OK {
					return false
				}
			}
			return true
		})
	})
	mtuID := "mtu/" + env.Dev + "/1"
	for _, c := range []struct {
		mtu  int
		fail bool
	}{{300, true}, {351, true}, {352, false}} {
		setMTU(strconv.Itoa(c.mtu))
		if got := uverbs.MTU(activeMTU()).Bytes(); got != 256 {
			t.Errorf("netdev MTU %d: %s reports an active MTU of %d, want 256", c.mtu, env.Dev, got)
		}
		routeErr := resolveRoute(t, env.Addr)
		if (routeErr != nil) != c.fail {
			t.Errorf("netdev MTU %d: rdma_cm route resolution: %v, want failure %v", c.mtu, routeErr, c.fail)
		}
		var r Report
		if c.fail {
			r = s.Diagnose()
		} else {
			// The GID table follows the address changes a little later.
			waitFor(t, 10*time.Second, "diagnose without FAIL", func() bool { r = s.Diagnose(); return !r.Blocking() })
		}
		var buf bytes.Buffer
		WriteReport(&buf, r)
		t.Logf("netdev MTU %d, route resolution: %v\n%s", c.mtu, routeErr, buf.String())
		m, ok := r.Find(mtuID)
		switch {
		case !ok:
			t.Errorf("netdev MTU %d: no check %s", c.mtu, mtuID)
		case c.fail && (m.Verdict != Fail || !strings.HasPrefix(m.Fix, "ip link set "+nd+" mtu 1500")):
			t.Errorf("netdev MTU %d: %+v, want FAIL with ip link set %s mtu 1500", c.mtu, m, nd)
		case !c.fail && m.Verdict == Fail:
			t.Errorf("netdev MTU %d: %+v, want no FAIL", c.mtu, m)
		}
		if r.Blocking() != c.fail {
			t.Errorf("netdev MTU %d: Blocking() = %v, want %v", c.mtu, r.Blocking(), c.fail)
		}
	}
}
