// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/tools/perf"
)

// straceCall matches the first line strace -f -y prints for a call on an
// RDMA character device (also the line of a call it shows as unfinished):
// the pid, the call and, for write and ioctl the first argument, for mmap
// the fifth, annotated with the file's path.
var straceCall = regexp.MustCompile(`^\d+\s+(?:(write|ioctl)\(\d+</dev/infiniband/(uverbs\d+|rdma_cm)>|(mmap)\([^,]*, [^,]*, [^,]*, [^,]*, \d+</dev/infiniband/(uverbs\d+)>)`)

// straceCounts counts, over every file in dir, the calls strace saw on
// uverbs and rdma_cm devices, by the names rdmatrace's kinds have.
func straceCounts(t *testing.T, dir string) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*-[0-9]*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no strace output in %s (%v)", dir, err)
	}
	n := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			m := straceCall.FindStringSubmatch(line)
			switch {
			case m == nil:
			case m[3] == "mmap":
				n[KindVerbsMmap.String()]++
			case m[2] == "rdma_cm":
				n[KindUCMWrite.String()]++
			case m[1] == "ioctl":
				n[KindVerbsIoctl.String()]++
			default:
				n[KindVerbsWrite.String()]++
			}
		}
	}
	return n
}

// traceCounts counts the traced calls by kind (CM events are not calls).
func traceCounts(evs []Event) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		if e.Kind != KindCMEvent {
			n[e.Kind.String()]++
		}
	}
	return n
}

// straceCase is one program of TestLabStraceAgrees: a server and a client
// on this node's address, or one process alone, and what to check of it
// besides the counts of calls.
type straceCase struct {
	name string // the subtest; prog when empty
	prog string // the program (the server's when clientProg is set)
	// clientProg is the client's program when it is another one
	// (rdma_client): both then run through links named comm, the
	// kernel's name for a process being its executable's base name, so
	// one comm filter sees both.
	clientProg     string
	comm           string   // with clientProg: the links' name
	server, client []string // arguments; server nil: the client runs alone
	portFlag       bool     // "-p PORT" is added to both (a port per case)
	stays          bool     // the server serves until stopped (cTool.stays)
	bounded        int      // the client runs so many seconds under timeout(1), which must stop it
	// seccomp: strace stops only at the calls it shows (--seccomp-bpf),
	// for a program spinning on sched_yield (cmtime), which crawls when
	// every call stops it under TCG.
	seccomp bool
	timeout time.Duration // cTool.timeout
	noCalls bool          // the program makes no call on the devices (ibv_devices reads sysfs)

	qpns  bool    // the program prints "local address: ... QPN 0x..."
	posts *[2]int // POST_SEND doorbells of the server and of the client
	qps   *[2]int // QPs the server and the client created
	mrLen uint64  // every MR registered is this long (its messages' size)
	// ppSize: the ibv_*_pingpong report ("B bytes in", "N iters in") of
	// each process must count its POST_SEND doorbells as iterations and
	// 2 x iterations x ppSize bytes.
	ppSize int
	// ppSlack: the POST_SEND doorbells may exceed the iterations by so
	// many (ibv_srq_pingpong sends on every QP while fewer than -n sends
	// have completed, so up to QPs-1 more than it reports).
	ppSlack int
	row     *[2]int // perftest's result row in the client's output: #bytes, #iterations
	check   func(t *testing.T, run cToolRun)
}

func two(server, client int) *[2]int { return &[2]int{server, client} }

// TestLabStraceAgrees traces rdma-core's and perftest's C programs (server
// and client on this node, or one process), each run under `strace -f -y`,
// and requires the two to have seen the same calls: as many write()s and
// ioctl()s on uverbs, mmap()s of it and write()s on rdma_cm, per kind.
// Where the program prints its QPNs (perftest, the pingpong examples),
// each must be one the trace saw created. What a program reports or was
// told to do is checked against the trace too: its message size against
// the MRs registered, its message count against the POST_SEND doorbells
// (rxe's provider rings one write() per ibv_post_send call, however many
// WRs it carries), its connections against the QPs created, perftest's
// result row against its flags, ibv_devinfo's figures against the
// QUERY_DEVICE and QUERY_PORT responses.
//
// Programs: ibverbs-utils' ibv_{rc,uc,ud,srq}_pingpong, ibv_devinfo,
// ibv_devices, ibv_asyncwatch; rdmacm-utils' rping, ucmatose, udaddy,
// mckey (multicast), cmtime, rdma_server/rdma_client, rdma_xserver/
// rdma_xclient (RC), rstream, riostream, rcopy; perftest's ib_write_bw,
// ib_read_lat -R (its rdma_cm exchange), ib_send_bw --use-srq,
// ib_send_lat, ib_write_lat, ib_read_bw -q 2, ib_atomic_bw, ib_atomic_lat.
// Those that cannot run on rxe are TestLabCToolsExcluded's.
func TestLabStraceAgrees(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "server and client on this node's address")
	base := 19000 + os.Getpid()%1000
	dev, addr := env.Dev, env.Addr
	pp := func(n, size int, extra ...string) []string {
		return append([]string{"-d", dev, "-g", "1", "-n", fmt.Sprint(n), "-s", fmt.Sprint(size)}, extra...)
	}
	const mcast = "239.77.0.1"
	for i, tc := range []straceCase{
		{prog: "ibv_rc_pingpong", server: []string{"-d", dev, "-g", "1", "-n", "5"}, client: []string{"-d", dev, "-g", "1", "-n", "5", addr},
			portFlag: true, qpns: true, posts: two(5, 5), qps: two(1, 1), mrLen: 4096, ppSize: 4096},
		{prog: "ibv_uc_pingpong", server: pp(5, 2048), client: pp(5, 2048, addr),
			portFlag: true, qpns: true, posts: two(5, 5), qps: two(1, 1), mrLen: 2048, ppSize: 2048},
		{prog: "ibv_ud_pingpong", server: pp(5, 512), client: pp(5, 512, addr), // UD: a message within the MTU
			portFlag: true, qpns: true, posts: two(5, 5), qps: two(1, 1), mrLen: 512 + 40, ppSize: 512}, // its buffer holds the GRH
		{prog: "ibv_srq_pingpong", server: pp(5, 256, "-q", "2"), client: pp(5, 256, "-q", "2", addr), // iterations per process, not per QP
			portFlag: true, qpns: true, qps: two(2, 2), mrLen: 256, ppSize: 256, ppSlack: 2 - 1},
		{prog: "ibv_devinfo", client: []string{"-d", dev, "-v"}, check: checkDevinfo},
		{prog: "ibv_devices", client: nil, noCalls: true, check: func(t *testing.T, run cToolRun) { checkDevices(t, run, dev) }},
		{prog: "ibv_asyncwatch", client: []string{"-d", dev}, bounded: 3, check: checkAsyncwatch},
		{prog: "rping", server: []string{"-s", "-a", addr, "-C", "2"}, client: []string{"-c", "-a", addr, "-C", "2"},
			portFlag: true, posts: two(4*2, 2*2), qps: two(1, 1)}, // per ping the server READs, SENDs, WRITEs, SENDs; the client SENDs twice
		{prog: "ucmatose", server: []string{"-b", addr, "-c", "2", "-C", "4"}, client: []string{"-s", addr, "-c", "2", "-C", "4"}, // its port is fixed (7471)
			posts: two(2*4, 2*4), qps: two(2, 2), mrLen: 100}, // its default message size
		{prog: "udaddy", server: []string{"-b", addr, "-c", "2", "-C", "4", "-S", "64"}, client: []string{"-s", addr, "-c", "2", "-C", "4", "-S", "64"}, // port fixed (7174)
			posts: two(2*4, 2*4), qps: two(2, 2), mrLen: 64 + 40},
		{prog: "mckey", server: []string{"-m", mcast, "-b", addr, "-C", "4", "-S", "64"}, client: []string{"-m", mcast, "-b", addr, "-s", "-C", "4", "-S", "64"},
			posts: two(0, 4), qps: two(1, 1), mrLen: 64 + 40}, // the receiver joins first; the sender sends
		{prog: "cmtime", server: []string{"-b", addr}, client: []string{"-s", addr, "-c", "2"},
			portFlag: true, stays: true, seccomp: true, timeout: time.Minute, posts: two(0, 0), qps: two(2, 2)},
		{name: "rdma_server", prog: "rdma_server", clientProg: "rdma_client", comm: "rdma_cs", server: []string{"-s", addr}, client: []string{"-s", addr},
			portFlag: true, posts: two(1, 1), qps: two(1, 1), mrLen: 16}, // 16-byte messages (sent inline)
		{name: "rdma_xserver", prog: "rdma_xserver", clientProg: "rdma_xclient", comm: "rdma_xcs", server: []string{"-c", "r"}, client: []string{"-s", addr, "-c", "r"},
			portFlag: true, posts: two(0, 1), qps: two(1, 1), mrLen: 16},
		{prog: "rstream", server: []string{"-b", addr, "-S", "4096", "-C", "16", "-T", "v"}, client: []string{"-s", addr, "-S", "4096", "-C", "16", "-T", "v"}, portFlag: true},
		{prog: "riostream", server: []string{"-b", addr, "-S", "4096", "-C", "16", "-T", "v"}, client: []string{"-s", addr, "-S", "4096", "-C", "16", "-T", "v"}, portFlag: true},
		{prog: "rcopy", server: []string{}, client: nil, portFlag: true, stays: true}, // client arguments and check: the files, below
		{prog: "ib_write_bw", server: []string{"-s", "4096", "-n", "50"}, client: []string{"-s", "4096", "-n", "50", addr},
			portFlag: true, qpns: true, posts: two(0, 50), row: &[2]int{4096, 50}},
		{prog: "ib_read_lat", server: []string{"-R", "-s", "64", "-n", "50"}, client: []string{"-R", "-s", "64", "-n", "50", addr},
			portFlag: true, qpns: true, posts: two(11, 11+50), qps: two(2, 2), row: &[2]int{64, 50}}, // -R: 11 SENDs of its exchange on a QP of their own
		{prog: "ib_send_bw", server: []string{"--use-srq", "-s", "64", "-n", "50"}, client: []string{"--use-srq", "-s", "64", "-n", "50", addr},
			portFlag: true, qpns: true, posts: two(0, 50), row: &[2]int{64, 50}},
		{prog: "ib_send_lat", server: []string{"-s", "64", "-n", "50"}, client: []string{"-s", "64", "-n", "50", addr},
			portFlag: true, qpns: true, posts: two(50, 50), row: &[2]int{64, 50}},
		{prog: "ib_write_lat", server: []string{"-s", "64", "-n", "50"}, client: []string{"-s", "64", "-n", "50", addr},
			portFlag: true, qpns: true, posts: two(50, 50), row: &[2]int{64, 50}},
		{prog: "ib_read_bw", server: []string{"-q", "2", "-s", "4096", "-n", "50"}, client: []string{"-q", "2", "-s", "4096", "-n", "50", addr},
			portFlag: true, qpns: true, posts: two(0, 2*50), qps: two(2, 2), row: &[2]int{4096, 2 * 50}}, // the row counts both QPs' iterations
		{prog: "ib_atomic_bw", server: []string{"-n", "50"}, client: []string{"-n", "50", addr},
			portFlag: true, qpns: true, posts: two(0, 50), row: &[2]int{8, 50}},
		{prog: "ib_atomic_lat", server: []string{"-n", "50"}, client: []string{"-n", "50", addr},
			portFlag: true, qpns: true, posts: two(0, 50), row: &[2]int{8, 50}},
	} {
		if tc.name == "" {
			tc.name = tc.prog
		}
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("/tmp", "strace-") // the C tools' chroot sees the guest's /tmp
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			port := fmt.Sprint(base + 10*i)
			server, client := tc.server, tc.client
			if tc.prog == "rcopy" {
				tc.client, tc.check = rcopyFiles(t, dir, addr)
				client = tc.client
			}
			if tc.portFlag { // after the client's file operands (rcopy)
				if server != nil {
					server = append(slices.Clip(server), "-p", port)
				}
				client = append(slices.Clip(client), "-p", port)
			}
			comm := tc.prog[:min(len(tc.prog), commLen-1)] // the kernel keeps 15 bytes
			sprog, cprog := tc.prog, tc.prog
			if tc.clientProg != "" {
				comm = tc.comm
				sprog = linkAs(t, dir, "server", tc.prog, comm)
				cprog = linkAs(t, dir, "client", tc.clientProg, comm)
			}
			if tc.bounded > 0 {
				client = append([]string{"-c", fmt.Sprintf(`timeout %d "$0" "$@"; test $? -eq 124`, tc.bounded), cprog}, client...)
				cprog = "sh"
			}
			tries := 0
			straced := func(ctx context.Context, side, prog string, args []string) *exec.Cmd {
				tries++
				out := filepath.Join(dir, fmt.Sprintf("%s-%d", side, tries))
				opts := []string{"-f", "-qq", "-y", "-e", "trace=write,ioctl,mmap", "-o", out}
				if tc.seccomp {
					opts = append(opts, "--seccomp-bpf")
				}
				return labtest.HostTool(t, ctx, "strace", append(append(opts, prog), args...)...)
			}
			c := cTool{comm: comm, stays: tc.stays, timeout: tc.timeout,
				client: func(ctx context.Context) *exec.Cmd { return straced(ctx, "client", cprog, client) },
				reset: func() { // a failed run's strace output: straceCounts' files
					old, _ := filepath.Glob(filepath.Join(dir, "*-[0-9]*"))
					for _, f := range old {
						os.Remove(f)
					}
				}}
			if server != nil {
				c.server = func(ctx context.Context) *exec.Cmd { return straced(ctx, "server", sprog, server) }
			}
			run := c.trace(t)
			got, want := traceCounts(run.evs), straceCounts(t, dir)
			t.Logf("%s: rdmatrace %v, strace %v", tc.name, got, want)
			for _, k := range slices.Sorted(maps.Keys(want)) {
				if got[k] != want[k] {
					t.Errorf("%s: rdmatrace saw %d %s calls, strace %d", tc.name, got[k], k, want[k])
				}
			}
			for _, k := range slices.Sorted(maps.Keys(got)) {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: rdmatrace saw %d %s calls, strace none", tc.name, got[k], k)
				}
			}
			switch {
			case tc.noCalls && len(got)+len(want) != 0:
				t.Errorf("%s: calls on the devices seen (rdmatrace %v, strace %v); the program reads sysfs only", tc.name, got, want)
			case !tc.noCalls && want[KindVerbsIoctl.String()] == 0:
				t.Errorf("%s: strace saw no ioctl on uverbs: the comparison checks nothing (strace's output format?)", tc.name)
			}
			if tc.qpns {
				checkPrintedQPNs(t, run)
			}
			checkReported(t, tc, run)
			if tc.check != nil {
				tc.check(t, run)
			}
		})
	}
}

// linkAs makes dir/side/comm a symbolic link to the host's program prog
// (as the C tools' chroot sees it), so that prog runs named comm.
func linkAs(t *testing.T, dir, side, prog, comm string) string {
	t.Helper()
	path := labtest.HostTool(t, context.Background(), prog).Path // its path in the chroot
	link := filepath.Join(dir, side, comm)
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// checkPrintedQPNs requires every QPN a program printed as its local one
// to be among the QPNs the trace saw created (by either process: ib_*
// print the pair's).
func checkPrintedQPNs(t *testing.T, run cToolRun) {
	t.Helper()
	local, _, err := pingpongQPNs(run.out)
	if err != nil {
		t.Fatal(err)
	}
	created := map[uint64]bool{}
	for _, v := range qpViews(run.evs) {
		maps.Copy(created, v.created)
	}
	for _, q := range local {
		if !created[q] {
			t.Errorf("the program printed local QPN %#x; the trace saw created %v", q, slices.Sorted(maps.Keys(created)))
		}
	}
}

// procView is what a trace shows one process doing.
type procView struct {
	pid    uint32
	posts  int      // POST_SEND doorbells
	qps    int      // QPs created
	mrLens []uint64 // lengths of the MRs registered
}

// procViews sums evs per process, in the order the processes first
// appear (a server before its clients).
func procViews(evs []Event) []*procView {
	f := &Formatter{Names: ABINames{}}
	var views []*procView
	by := map[uint32]*procView{}
	for _, e := range evs {
		v := by[e.PID]
		if v == nil {
			v = &procView{pid: e.PID}
			by[e.PID] = v
			views = append(views, v)
		}
		d := f.Describe(e)
		if d.Subsys != "uverbs" || d.Result != "ok" {
			continue
		}
		switch {
		case d.Op == "POST_SEND":
			v.posts++
		case d.Op == "REG_MR" || d.Op == "ioctl MR.REG_MR":
			if n, ok := fieldVal(d.Args, "len").(uint64); ok {
				v.mrLens = append(v.mrLens, n)
			}
		case fieldVal(d.Resp, "qpn") != nil && fieldVal(d.Resp, "qp") != nil:
			v.qps++
		}
	}
	return views
}

var (
	ppBytes    = regexp.MustCompile(`(?m)^(\d+) bytes in [\d.]+ seconds`)
	ppIters    = regexp.MustCompile(`(?m)^(\d+) iters in [\d.]+ seconds`)
	perfRow    = regexp.MustCompile(`(?m)^\s*#bytes\s+#iterations.*\n\s*(\d+)\s+(\d+)\s`)
	devinfoNum = regexp.MustCompile(`(?m)^\s*(node_guid|max_qp|max_qp_wr|max_sge|max_cq|max_cqe|max_mr|max_pd|port_lid|gid_tbl_len|link_layer|active_mtu):\s*(\S+)`)
)

// checkReported fails t with reportProblems' findings.
func checkReported(t *testing.T, tc straceCase, run cToolRun) {
	t.Helper()
	for _, v := range procViews(run.evs) {
		t.Logf("%s pid %d: %d POST_SEND, %d QPs created, MRs %v", tc.name, v.pid, v.posts, v.qps, v.mrLens)
	}
	for _, p := range reportProblems(tc, run) {
		t.Errorf("%s: %s", tc.name, p)
	}
}

// reportProblems checks the counts tc expects (posts, qps, mrLen) and
// what the program reported (ppSize, row) against the trace of run. The
// server is the process seen first, the client the one seen last (the
// tries before it failed).
func reportProblems(tc straceCase, run cToolRun) []string {
	var bad []string
	fail := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	views := procViews(run.evs)
	if tc.noCalls {
		return nil
	}
	if len(views) == 0 {
		return []string{"no process traced"}
	}
	sout, cout, _ := strings.Cut(run.out, "--- client\n")
	type side struct {
		name string
		i    int
		v    *procView
		out  string
	}
	sides := []side{{"client", 1, views[len(views)-1], cout}}
	if tc.server != nil {
		if len(views) < 2 {
			return []string{fmt.Sprintf("%d process traced, want the server and the client", len(views))}
		}
		sides = append(sides, side{"server", 0, views[0], sout})
	}
	for _, s := range sides {
		v := s.v
		if tc.posts != nil && v.posts != tc.posts[s.i] {
			fail("%s: %d POST_SEND doorbells traced, want %d", s.name, v.posts, tc.posts[s.i])
		}
		if tc.qps != nil && v.qps != tc.qps[s.i] {
			fail("%s: %d QPs created, want %d", s.name, v.qps, tc.qps[s.i])
		}
		if tc.mrLen != 0 {
			if len(v.mrLens) == 0 {
				fail("%s: no MR registered, want %d-byte ones", s.name, tc.mrLen)
			}
			for _, n := range v.mrLens {
				if n != tc.mrLen {
					fail("%s: an MR of %d bytes registered, want %d (the message size)", s.name, n, tc.mrLen)
				}
			}
		}
		if tc.ppSize != 0 {
			b, it := ppBytes.FindStringSubmatch(s.out), ppIters.FindStringSubmatch(s.out)
			if b == nil || it == nil {
				fail("%s: no \"bytes in\" and \"iters in\" lines in %q", s.name, s.out)
				continue
			}
			nb, _ := strconv.Atoi(b[1])
			ni, _ := strconv.Atoi(it[1])
			if v.posts < ni || v.posts > ni+tc.ppSlack {
				fail("%s: the program reports %d iterations, the trace shows %d POST_SEND (%d more allowed)", s.name, ni, v.posts, tc.ppSlack)
			}
			if nb != 2*ni*tc.ppSize {
				fail("%s: the program reports %d bytes, want 2 x %d iterations x %d bytes", s.name, nb, ni, tc.ppSize)
			}
		}
	}
	if tc.row != nil {
		m := perfRow.FindStringSubmatch(cout)
		switch {
		case m == nil && perf.PerftestGlitch(cout) != "":
			// perftest's own timing check failed as it reported
			// (glitchedRun): the run is checked in the trace only.
		case m == nil:
			fail("no \"#bytes #iterations\" result row in the client's output")
		case m[1] != fmt.Sprint(tc.row[0]) || m[2] != fmt.Sprint(tc.row[1]):
			fail("result row says %s bytes x %s iterations, want %d x %d", m[1], m[2], tc.row[0], tc.row[1])
		}
	}
	return bad
}

// checkDevinfo compares what ibv_devinfo -v printed with the decoded
// responses of the queries the trace shows it making: each figure the
// trace decodes (QUERY_DEVICE's limits and node GUID, QUERY_PORT's MTU,
// LID, link layer and GID table length) must be the one printed.
func checkDevinfo(t *testing.T, run cToolRun) {
	t.Helper()
	printed := map[string]string{}
	for _, m := range devinfoNum.FindAllStringSubmatch(run.out, -1) {
		printed[m[1]] = m[2]
	}
	f := &Formatter{Names: ABINames{}}
	traced := map[string]string{}
	for _, e := range run.evs {
		d := f.Describe(e)
		if d.Result != "ok" {
			continue
		}
		for _, fl := range d.Resp {
			k := fl.Key
			switch k {
			case "mtu":
				k = "active_mtu"
			case "lid":
				k = "port_lid"
			}
			traced[k] = fmt.Sprint(fl.Val)
		}
	}
	compared := 0
	for k, v := range printed {
		tv, ok := traced[k]
		if !ok {
			continue
		}
		compared++
		if tv != v {
			t.Errorf("ibv_devinfo printed %s %s, the trace's response says %s", k, v, tv)
		}
	}
	t.Logf("ibv_devinfo: %d figures compared; printed %v, traced %v", compared, printed, traced)
	if compared < 4 {
		t.Errorf("only %d of ibv_devinfo's figures found in the trace's responses (printed %v)", compared, printed)
	}
}

var asyncFD = regexp.MustCompile(`async event FD (\d+)`)

// checkAsyncwatch requires the async event FD ibv_asyncwatch printed to be
// the one the trace shows ASYNC_EVENT.ALLOC returning.
func checkAsyncwatch(t *testing.T, run cToolRun) {
	t.Helper()
	m := asyncFD.FindStringSubmatch(run.out)
	if m == nil {
		t.Fatalf("ibv_asyncwatch printed no async event FD:\n%s", run.out)
	}
	f := &Formatter{Names: ABINames{}}
	var fds []string
	for _, e := range run.evs {
		if d := f.Describe(e); d.Op == "ioctl ASYNC_EVENT.ALLOC" && d.Result == "ok" {
			fds = append(fds, fmt.Sprint(fieldVal(d.Resp, "fd")))
		}
	}
	if len(fds) != 1 || fds[0] != m[1] {
		t.Errorf("ibv_asyncwatch printed async event FD %s; the trace shows ASYNC_EVENT.ALLOC returning %v", m[1], fds)
	}
}

// checkDevices requires ibv_devices to list dev with its node GUID.
func checkDevices(t *testing.T, run cToolRun, dev string) {
	t.Helper()
	guid, err := sysfs.ParseGUID(sysfs.New("/").DeviceAttr(dev, "node_guid"))
	if err != nil {
		t.Fatal(err)
	}
	want := dev + " " + guid.Hex()
	if !strings.Contains(strings.Join(strings.Fields(run.out), " "), want) {
		t.Errorf("ibv_devices did not list %q:\n%s", want, run.out)
	}
}

// rcopyFiles makes a file for rcopy to copy within dir and returns the
// client's arguments and the check that the copy arrived whole and that
// rcopy reported its size.
func rcopyFiles(t *testing.T, dir, addr string) ([]string, func(*testing.T, cToolRun)) {
	t.Helper()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	data := bytes.Repeat([]byte("rdmatrace rcopy "), 4096) // 64 KiB
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{src, addr + ":" + dst}, func(t *testing.T, run cToolRun) {
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("rcopy's copy holds %d bytes (%v), want the %d of the source", len(got), err, len(data))
		}
		if !strings.Contains(run.out, fmt.Sprintf("%d bytes in", len(data))) {
			t.Errorf("rcopy did not report copying %d bytes:\n%s", len(data), run.out)
		}
	}
}

// TestLabCToolsExcluded runs the programs of ibverbs-utils and
// rdmacm-utils that cannot run on rxe, which TestLabStraceAgrees therefore
// leaves out, and requires each to fail as documented here: should one
// start to run (a kernel whose rxe has XRC), this fails, saying to move it
// to TestLabStraceAgrees.
func TestLabCToolsExcluded(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "one process failing on this node's device")
	port := fmt.Sprint(19500 + os.Getpid()%400)
	for _, tc := range []struct {
		name string
		args []string
		want string // what the program prints as it fails
		why  string
	}{
		{"ibv_xsrq_pingpong", []string{"-d", env.Dev, "-g", "1", "-p", port}, "Couldn't Open the XRC Domain 95", // EOPNOTSUPP
			"XRC: rxe has no XRC domains (ibv_open_xrcd)"},
		{"rdma_xclient", []string{"-s", env.Addr, "-p", port, "-c", "x"}, "rdma_create_ep: Operation not supported",
			"XRC: rxe has no XRC QPs (rdma_create_ep of an XRC_SEND QP)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := labtest.HostTool(t, ctx, tc.name, tc.args...).CombinedOutput()
			t.Logf("%s %v: %v\n%s", tc.name, tc.args, err, out)
			if err == nil || ctx.Err() != nil || !strings.Contains(string(out), tc.want) {
				t.Errorf("%s was left out of TestLabStraceAgrees as failing on rxe (%s) with %q; on this kernel (%s) it ended with %v, printing:\n%s\nIf it runs now, check it in TestLabStraceAgrees",
					tc.name, tc.why, tc.want, kernelRelease(), err, out)
			}
		})
	}
}
