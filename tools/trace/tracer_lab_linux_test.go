// Copyright 2026 The rdmago Authors.

package trace

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/tools/trace/capture"
	"github.com/rdmago/rdmago/tools/trace/ibpkt"
	"github.com/rdmago/rdmago/tools/trace/pcap"
)

// These tests attach to the lab kernel (go run ./cmd/rdmalab test ./tools/trace/...).

// kernelRelease is uname -r.
func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

// openTracer starts a Tracer and logs which probes this kernel has; the
// uverbs/ucma kprobes and the CM tracepoint must all attach in the lab.
func openTracer(t *testing.T, opts Options) *Tracer {
	t.Helper()
	tr, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := tr.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
	var rxe []string // the rxe functions counted
	for _, p := range tr.Probes() {
		if p.Attached {
			t.Logf("[%s] attached %-38s %s", kernelRelease(), p.Name, p.Note)
			if isRXEProbe(p.Name) {
				_, fn, _ := strings.Cut(p.Name, ":")
				rxe = append(rxe, fn)
			}
			continue
		}
		t.Logf("[%s] skipped  %-38s %v", kernelRelease(), p.Name, p.Err)
		if !isRXEProbe(p.Name) && !(opts.NoCM && strings.HasPrefix(p.Name, "tracepoint")) {
			t.Errorf("%s did not attach in the lab: %v", p.Name, p.Err)
		}
	}
	switch {
	case opts.NoRXE:
		if len(rxe) > 0 {
			t.Errorf("NoRXE, yet rxe probes %v attached", rxe)
		}
	case opts.RXEAll:
		// Both kernels have at least 8 of RXEFuncs (each lacks some task names).
		if len(rxe) < 8 {
			t.Errorf("only %d rxe probes attached with RXEAll: %v", len(rxe), rxe)
		}
	default:
		// Both kernels have every one of the default set, and only those count.
		if !slices.Equal(rxe, rxeFuncs(false)) {
			t.Errorf("rxe probes attached %v, want the default set %v", rxe, rxeFuncs(false))
		}
	}
	return tr
}

// isRXEProbe reports whether a Probe's name is one of the rxe counters
// (kprobes, or fentry programs where the kernel takes them).
func isRXEProbe(name string) bool {
	return strings.HasPrefix(name, "kprobe:rxe_") || strings.HasPrefix(name, "fentry:rxe_")
}

// uverbsFor finds /dev/infiniband/uverbsN of RDMA device dev.
func uverbsFor(t *testing.T, dev string) string {
	t.Helper()
	paths, _ := filepath.Glob("/sys/class/infiniband_verbs/uverbs*/ibdev")
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		if strings.TrimSpace(string(b)) == dev {
			return "/dev/infiniband/" + filepath.Base(filepath.Dir(p))
		}
	}
	t.Fatalf("no uverbs device for %s", dev)
	return ""
}

// collect reads events until done says so or the deadline passes.
func collect(t *testing.T, tr *Tracer, timeout time.Duration, keep func(Event) bool, done func([]Event) bool) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var evs []Event
	for !done(evs) {
		e, err := tr.Read(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if keep(e) {
			evs = append(evs, e)
		}
	}
	return evs
}

// rawUverbs is dev's uverbs device opened for raw write() commands, with
// scratch pages whose first takes the responses.
type rawUverbs struct {
	t        *testing.T
	fd       int
	mem      []byte
	respAddr uint64 // &mem[0]
}

// openRawUverbs opens dev's uverbs device and maps pages pages of scratch
// memory; both are released when the test ends.
func openRawUverbs(t *testing.T, dev string, pages int) *rawUverbs {
	t.Helper()
	fd, err := unix.Open(uverbsFor(t, dev), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	mem, err := unix.Mmap(-1, 0, pages*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	return &rawUverbs{t: t, fd: fd, mem: mem, respAddr: uint64(uintptr(unsafe.Pointer(&mem[0])))}
}

// write sends command (header and body) with one write().
func (r *rawUverbs) write(command uint32, body any, respLen int) error {
	hdr, err := abi.NewCmdHdr(command, binary.Size(body), respLen)
	if err != nil {
		r.t.Fatal(err)
	}
	buf, _ := binary.Append(nil, binary.NativeEndian, hdr)
	buf, _ = binary.Append(buf, binary.NativeEndian, body)
	_, err = unix.Write(r.fd, buf)
	return err
}

// ownEvents collects this process's events until there are n, logs them
// as lines, and fails unless there are exactly n.
func ownEvents(t *testing.T, tr *Tracer, f *Formatter, n int) ([]Event, []string) {
	t.Helper()
	evs := collect(t, tr, 20*time.Second, func(e Event) bool { return e.PID == uint32(os.Getpid()) },
		func(evs []Event) bool { return len(evs) >= n })
	var lines []string
	for _, e := range evs {
		lines = append(lines, f.Line(e))
	}
	t.Logf("traced:\n  %s", strings.Join(lines, "\n  "))
	if len(evs) != n {
		t.Fatalf("%d events, want %d", len(evs), n)
	}
	return evs, lines
}

// TestLabRawVerbs does GET_CONTEXT, ALLOC_PD, DEALLOC_PD, an undefined
// command and a bogus mmap with raw write()/mmap() on the uverbs device and
// checks that the tracer saw exactly that, with handles, errnos and device.
func TestLabRawVerbs(t *testing.T) {
	env := labtest.Require(t)
	tr := openTracer(t, Options{PID: os.Getpid(), NoRXE: true})
	f := &Formatter{Names: ABINames{}, Devices: UverbsDevices(sysfs.ClassVerbs)}

	raw := openRawUverbs(t, env.Dev, 1)
	if err := raw.write(abi.IB_USER_VERBS_CMD_GET_CONTEXT, abi.GetContext{Response: raw.respAddr}, 8); err != nil {
		t.Fatalf("GET_CONTEXT: %v", err)
	}
	asyncFD := binary.NativeEndian.Uint32(raw.mem)
	defer unix.Close(int(asyncFD))
	if err := raw.write(abi.IB_USER_VERBS_CMD_ALLOC_PD, abi.AllocPD{Response: raw.respAddr}, 4); err != nil {
		t.Fatalf("ALLOC_PD: %v", err)
	}
	pd := binary.NativeEndian.Uint32(raw.mem)
	if err := raw.write(abi.IB_USER_VERBS_CMD_DEALLOC_PD, abi.DeallocPD{PDHandle: pd}, 0); err != nil {
		t.Fatalf("DEALLOC_PD: %v", err)
	}
	badErr := raw.write(0x3e, struct{}{}, 0)
	var badErrno syscall.Errno
	if !errors.As(badErr, &badErrno) {
		t.Fatalf("undefined command 0x3e: %v, want an errno", badErr)
	}
	_, mmapErr := unix.Mmap(raw.fd, 0, 4096, unix.PROT_READ, unix.MAP_SHARED)
	var mmapErrno syscall.Errno
	if !errors.As(mmapErr, &mmapErrno) {
		t.Fatalf("mmap of offset 0 without a queue: %v, want an errno", mmapErr)
	}

	evs, lines := ownEvents(t, tr, f, 5)
	wantOps := []string{"GET_CONTEXT", "ALLOC_PD", "DEALLOC_PD", "CMD_0x3e", "mmap"}
	for i, e := range evs {
		d := f.Describe(e)
		if d.Op != wantOps[i] || d.Subsys != "uverbs" {
			t.Errorf("event %d is %s %s, want uverbs %s", i, d.Subsys, d.Op, wantOps[i])
		}
		if d.Dev != env.Dev {
			t.Errorf("event %d on device %q, want %q", i, d.Dev, env.Dev)
		}
		if !e.Returned || e.Dur == 0 || e.TID == 0 || e.Comm == "" {
			t.Errorf("event %d: returned %v dur %d tid %d comm %q", i, e.Returned, e.Dur, e.TID, e.Comm)
		}
	}
	if d := f.Describe(evs[0]); evs[0].Ret != 16 || fieldVal(d.Resp, "async_fd") != uint64(asyncFD) {
		t.Errorf("GET_CONTEXT: ret %d resp %v, want 16 and async_fd=%d", evs[0].Ret, d.Resp, asyncFD)
	}
	if d := f.Describe(evs[1]); fieldVal(d.Resp, "pd") != uint64(pd) {
		t.Errorf("ALLOC_PD resp %v, want pd=%d", d.Resp, pd)
	}
	if d := f.Describe(evs[2]); fieldVal(d.Args, "pd") != uint64(pd) || evs[2].Ret != 12 {
		t.Errorf("DEALLOC_PD args %v ret %d, want pd=%d and 12", d.Args, evs[2].Ret, pd)
	}
	if evs[3].Ret != -int64(badErrno) {
		t.Errorf("undefined command traced ret %d, the process got %v (%d)", evs[3].Ret, badErrno, -int64(badErrno))
	}
	if d := f.Describe(evs[4]); evs[4].Ret != -int64(mmapErrno) || fieldVal(d.Args, "len") != uint64(4096) {
		t.Errorf("mmap traced ret %d args %v, the process got %v", evs[4].Ret, d.Args, mmapErrno)
	}
	if !strings.Contains(lines[3], fmt.Sprintf("-> %s (%d)", errnoName(badErrno), -int(badErrno))) {
		t.Errorf("failing command line %q lacks its errno", lines[3])
	}
	if ring, infl, err := tr.Lost(); err != nil || ring+infl != 0 {
		t.Errorf("lost %d+%d events, %v", ring, infl, err)
	}
}

// hostCmd runs a C tool of the host root (mounted at /host in the lab).
func hostCmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, name, args...)
	c.SysProcAttr = &syscall.SysProcAttr{Chroot: "/host"}
	c.Dir = "/"
	c.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp"}
	return c
}

// TestLabRping traces rdma-core's rping (server and client on this node's
// address): the rdma_cm sequence, the CM events, the verbs calls, and rxe
// data-path hits on the very QPs rping connected, rxe's internal steps
// included (RXEAll; the default set is checked by TestLabRdmago and the
// filter tests).
func TestLabRping(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "server and client on this node's address")
	if _, err := os.Stat("/host/usr/bin/rping"); err != nil {
		t.Fatalf("rping is not in the host root (apt-get install rdmacm-utils): %v", err)
	}
	tr := openTracer(t, Options{Comm: "rping", RXEAll: true})
	// Nothing moves packets yet: both lab kernels take every rxe counter
	// as an fentry program (rxeNotFentry).
	for _, p := range tr.Probes() {
		if p.Attached && strings.HasPrefix(p.Name, "kprobe:rxe_") {
			t.Errorf("%s is a kprobe, want fentry before any traffic: %s", p.Name, p.Note)
		}
	}
	hwBefore, err := sysfs.ReadHWCounters(sysfs.ClassInfiniband, []string{env.Dev})
	if err != nil {
		t.Fatal(err)
	}
	f := &Formatter{Names: ABINames{}, Devices: UverbsDevices(sysfs.ClassVerbs)}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	port := fmt.Sprint(20000 + os.Getpid()%20000)
	server := hostCmd(ctx, "/usr/bin/rping", "-s", "-a", env.Addr, "-p", port, "-C", "3")
	var sout strings.Builder
	server.Stdout, server.Stderr = &sout, &sout
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	defer server.Process.Kill()
	var cout []byte
	for try := 0; ; try++ {
		time.Sleep(2 * time.Second) // the server needs time to listen under TCG
		cout, err = hostCmd(ctx, "/usr/bin/rping", "-c", "-a", env.Addr, "-p", port, "-C", "3", "-v").CombinedOutput()
		if err == nil || try == 4 {
			break
		}
		t.Logf("rping client try %d: %v: %s", try, err, cout)
	}
	if err != nil {
		t.Fatalf("rping client: %v\n%s", err, cout)
	}
	if err := server.Wait(); err != nil {
		t.Fatalf("rping server: %v\n%s", err, sout.String())
	}

	evs := collect(t, tr, 3*time.Second, func(Event) bool { return true }, func([]Event) bool { return false })
	ops := map[string]int{}
	var qpnums []uint32
	var lines []string
	for _, e := range evs {
		d := f.Describe(e)
		ops[d.Subsys+" "+d.Op]++
		lines = append(lines, f.Line(e))
		if d.Subsys == "ucma" && (d.Op == "CONNECT" || d.Op == "ACCEPT") && e.Ret >= 0 {
			for _, x := range d.Args {
				if x.Key == "qp_num" && x.Val.(uint64) != 0 {
					qpnums = append(qpnums, uint32(x.Val.(uint64)))
				}
			}
		}
		if d.Subsys == "ucma" || d.Subsys == "uverbs" {
			if e.Comm != "rping" {
				t.Errorf("comm filter let %q through", e.Comm)
			}
		}
	}
	t.Logf("%d events; first 60:\n  %s", len(evs), strings.Join(lines[:min(60, len(lines))], "\n  "))
	t.Logf("rping's sequence of first uses (compare TestLabRdmago):\n  %s", strings.Join(opSequence(f, evs), "\n  "))
	for _, want := range []string{"ucma CREATE_ID", "ucma LISTEN", "ucma CONNECT", "ucma ACCEPT", "ucma GET_EVENT",
		"ucma DISCONNECT", "ucma DESTROY_ID", "uverbs REG_MR", "uverbs POST_SEND", "uverbs REQ_NOTIFY_CQ",
		"uverbs MODIFY_QP", "uverbs mmap", "cm CONNECT_REQUEST", "cm ESTABLISHED", "cm DISCONNECTED"} {
		if ops[want] == 0 {
			t.Errorf("no %q event; saw %v", want, ops)
		}
	}
	if ops["uverbs CREATE_QP"]+ops["uverbs ioctl QP.CREATE"]+ops["uverbs CREATE_QP_EX"] < 2 {
		t.Errorf("fewer than 2 QP creations; saw %v", ops)
	}
	if len(qpnums) < 2 {
		t.Fatalf("CONNECT/ACCEPT gave QP numbers %v, want the client's and the server's", qpnums)
	}

	counts, err := tr.RXECounts()
	if err != nil {
		t.Fatal(err)
	}
	perQP := map[uint32]map[string]uint64{}
	for _, c := range counts {
		t.Logf("rxe %-22s qpn %-10d error=%v %d", c.Func, c.QPN, c.Error, c.Count)
		if perQP[c.QPN] == nil {
			perQP[c.QPN] = map[string]uint64{}
		}
		perQP[c.QPN][c.Func] += c.Count
	}
	for _, qpn := range qpnums {
		hits := perQP[qpn]
		if hits["rxe_xmit_packet"] == 0 || hits["rxe_rcv"] == 0 || hits["rxe_cq_post"] == 0 {
			t.Errorf("QP %d (from CONNECT/ACCEPT) has rxe hits %v, want rxe_xmit_packet, rxe_rcv and rxe_cq_post", qpn, hits)
		}
		if hits["rxe_post_send"] == 0 {
			t.Errorf("QP %d: no rxe_post_send (doorbell) hits: %v", qpn, hits)
		}
		// Both sides send (rping pings and pongs): the requester ran for
		// each QP (6.1 finds it from the task's void *arg, 6.12 from its qp).
		if hits["rxe_requester"] == 0 {
			t.Errorf("QP %d: no rxe_requester hits with RXEAll: %v", qpn, hits)
		}
	}
	hwNow, err := sysfs.ReadHWCounters(sysfs.ClassInfiniband, []string{env.Dev})
	if err != nil {
		t.Fatal(err)
	}
	d := DiffHWCounters(hwBefore, hwNow, false)
	if !slices.ContainsFunc(d, func(c CounterDelta) bool { return c.Name == "sent_pkts" && c.Now > c.Before }) {
		t.Errorf("hw_counters sent_pkts did not grow: %+v", d)
	}
}

// TestLabCaptureTwoNodes runs rping between the two lab nodes (server on
// node 1, client on node 0), captures the RoCEv2 wire on node 0 with the
// packet socket while tracing rping there, writes and re-reads the pcap, and
// checks the packets against the QP rping connected.
func TestLabCaptureTwoNodes(t *testing.T) {
	env := labtest.Require(t)
	if os.Getenv("RDMALAB_NODES") != "2" {
		t.Skip("needs two nodes (rdmalab test --nodes 2): with one node rxe loops back without touching the netdev")
	}
	const port = "7471"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if env.Node == "1" {
		out, err := hostCmd(ctx, "/usr/bin/rping", "-s", "-a", env.Addr, "-p", port, "-C", "4").CombinedOutput()
		if err != nil {
			t.Fatalf("rping server: %v\n%s", err, out)
		}
		return
	}
	netdev := os.Getenv("RDMALAB_NETDEV")
	tr := openTracer(t, Options{Comm: "rping", NoRXE: true})
	h, err := capture.Open(netdev, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	capCtx, stopCapture := context.WithCancel(ctx)
	pkts := make(chan []capture.Packet, 1)
	go func() {
		var ps []capture.Packet
		for {
			p, err := h.ReadPacket(capCtx)
			if err != nil {
				pkts <- ps
				return
			}
			ps = append(ps, p)
		}
	}()
	var out []byte
	time.Sleep(3 * time.Second) // node 1's server must be listening
	hwBefore, err := sysfs.ReadHWCounters(sysfs.ClassInfiniband, []string{env.Dev})
	if err != nil {
		t.Fatal(err)
	}
	for try := 0; ; try++ {
		if try > 0 {
			time.Sleep(3 * time.Second)
		}
		out, err = hostCmd(ctx, "/usr/bin/rping", "-c", "-a", env.Peer, "-p", port, "-C", "4", "-v").CombinedOutput()
		if err == nil || try == 5 {
			break
		}
		t.Logf("rping client try %d: %v: %s", try, err, out)
	}
	if err != nil {
		t.Fatalf("rping client: %v\n%s", err, out)
	}
	time.Sleep(time.Second)
	stopCapture()
	captured := <-pkts
	hwNow, err := sysfs.ReadHWCounters(sysfs.ClassInfiniband, []string{env.Dev})
	if err != nil {
		t.Fatal(err)
	}
	// Every packet this node's rxe sent was captured, none dropped.
	var sent uint64
	for _, c := range DiffHWCounters(hwBefore, hwNow, true) {
		if c.Name == "sent_pkts" {
			sent += c.Now - c.Before
		}
	}
	outgoing := 0
	for _, p := range captured {
		if p.Outgoing {
			outgoing++
		}
	}
	rcv, drops, err := h.Stats()
	t.Logf("rxe sent_pkts grew by %d; captured %d outgoing of %d; socket passed %d, dropped %d", sent, outgoing, len(captured), rcv, drops)
	if err != nil || drops != 0 {
		t.Errorf("capture dropped %d packets (%v)", drops, err)
	}
	if sent == 0 || uint64(outgoing) != sent {
		t.Errorf("captured %d outgoing RoCEv2 packets, rxe's sent_pkts grew by %d", outgoing, sent)
	}

	// The client's QP number, from the traced CONNECT.
	f := &Formatter{Names: ABINames{}}
	var clientQPN uint64
	collect(t, tr, 2*time.Second, func(e Event) bool {
		if d := f.Describe(e); d.Subsys == "ucma" && d.Op == "CONNECT" {
			for _, x := range d.Args {
				if x.Key == "qp_num" {
					clientQPN = x.Val.(uint64)
				}
			}
		}
		return false
	}, func([]Event) bool { return false })
	if clientQPN == 0 {
		t.Fatal("no CONNECT with a qp_num traced")
	}

	// Through a pcap file and back, as Wireshark would read it.
	path := filepath.Join(t.TempDir(), "rping.pcap")
	pf, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pcap.NewWriter(pf, capture.DefaultSnapLen, pcap.LinkTypeEthernet, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range captured {
		if err := w.WritePacket(p.Time, p.Data, p.OrigLen); err != nil {
			t.Fatal(err)
		}
	}
	pf.Close()
	rf, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	r, err := pcap.NewReader(rf)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	toClient := 0
	for i := 0; ; i++ {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fr, err := ibpkt.DecodeFrame(rec.Data)
		if err != nil {
			t.Errorf("packet %d does not decode: %v", i, err)
			continue
		}
		if i < 40 {
			t.Logf("%s %s", map[bool]string{true: ">", false: "<"}[captured[i].Outgoing], fr.Summary())
		}
		ops[fr.Packet.BTH.OpCode.String()]++
		if !captured[i].Outgoing && fr.Packet.BTH.OpCode.Transport() == ibpkt.RC {
			if uint64(fr.Packet.BTH.DestQP) != clientQPN {
				t.Errorf("incoming RC packet for QP %d, the client's QP is %d", fr.Packet.BTH.DestQP, clientQPN)
			}
			toClient++
		}
	}
	t.Logf("%d packets: %v", len(captured), ops)
	for _, want := range []string{"RC SEND Only", "RC RDMA READ Request", "RC RDMA WRITE Only", "RC Acknowledge", "UD SEND Only"} {
		if ops[want] == 0 && !(want == "RC RDMA READ Request" && ops["RC RDMA READ Response Only"] > 0) {
			t.Errorf("no %q packet captured", want)
		}
	}
	if toClient == 0 {
		t.Error("no RC packet toward the client captured")
	}
}
