// Copyright 2026 The rdmago Authors.

//go:build linux

package uverbs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmago/rdmago/internal/labtest"
)

// odpEnv marks the child process TestLabODP starts: it runs
// TestLabODPChild without CAP_IPC_LOCK and with RLIMIT_MEMLOCK at one page.
const odpEnv = "RDMAGO_ODP_CHILD"

// requireODP opens the lab's device and registers one on-demand MR to learn
// whether the kernel pages on demand; a kernel whose device does not report
// it ends the test through labtest.Lacks (a gated test).
func requireODP(t *testing.T) (*Context, labEnv) {
	t.Helper()
	e := requireLab(t)
	c := openLab(t, e)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	mr, err := pd.RegMR(make([]byte, 4096), AccessLocalWrite|AccessOnDemand)
	if err != nil {
		if errors.Is(err, ErrNotSupported) && !strings.Contains(err.Error(), labtest.KernelRelease()) {
			t.Errorf("the refusal does not name the kernel (%s): %v", labtest.KernelRelease(), err)
		}
		labtest.Lacks(t, err, errors.Is(err, ErrNotSupported))
	}
	mr.Close()
	a, err := c.QueryDeviceEx()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: ODP general caps %#x, RC %#x, UC %#x, UD %#x", labtest.KernelRelease(), a.ODPGeneralCaps, a.RCODPCaps, a.UCODPCaps, a.UDODPCaps)
	return c, e
}

// TestLabODP registers ordinary Go memory on demand in a child process that
// has no CAP_IPC_LOCK and an RLIMIT_MEMLOCK of one page, so a pinned
// registration of the same size fails there, and moves data into it by RDMA
// WRITE, READ and atomics after AdviseMR prefetched it.
func TestLabODP(t *testing.T) {
	requireODP(t)
	// The bounding set is per thread and inherited by what the thread
	// forks: drop CAP_IPC_LOCK on a locked thread that then dies with the
	// goroutine (no UnlockOSThread), so no other test runs without it.
	ctx := labtest.Context(t, 2*time.Minute)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		runtime.LockOSThread()
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_IPC_LOCK, 0, 0, 0); err != nil {
			done <- err
			return
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLabODPChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), odpEnv+"=1")
		cmd.Stdout, cmd.Stderr = &out, &out
		done <- cmd.Run()
	}()
	err := <-done
	t.Logf("child:\n%s", out.String())
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(out.String(), "--- PASS: TestLabODPChild") {
		t.Fatal("the child did not run TestLabODPChild")
	}
}

// TestLabODPChild is TestLabODP's child process; run by itself it only says
// so.
func TestLabODPChild(t *testing.T) {
	if os.Getenv(odpEnv) == "" {
		t.Skip("the child process of TestLabODP")
	}
	if capEff(t)&(1<<unix.CAP_IPC_LOCK) != 0 {
		t.Fatal("the child still has CAP_IPC_LOCK")
	}
	e := requireLab(t)
	c := openLab(t, e)
	const size = 1 << 20
	access := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead | AccessRemoteAtomic
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	a := newEndpoint(t, c, pd, e, epOpts{size: 4096})
	b := newEndpoint(t, c, pd, e, epOpts{size: 4096})
	for _, ep := range []*endpoint{a, b} { // their small pinned MRs go
		if err := ep.mr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	ps := os.Getpagesize()
	if err := syscall.Setrlimit(unix.RLIMIT_MEMLOCK, &syscall.Rlimit{Cur: uint64(ps), Max: uint64(ps)}); err != nil {
		t.Fatal(err)
	}
	// The limit bites a pinned registration...
	if mr, err := pd.RegMR(make([]byte, size), access); err == nil {
		mr.Close()
		t.Fatal("a pinned MR of 1 MiB registered under RLIMIT_MEMLOCK of one page without CAP_IPC_LOCK")
	} else if !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("pinned MR under a one-page RLIMIT_MEMLOCK: want ENOMEM, got %v", err)
	}
	// ... and not an on-demand one, over ordinary Go memory.
	for _, ep := range []*endpoint{a, b} {
		ep.buf = make([]byte, size)
		if ep.mr, err = pd.RegMR(ep.buf, access|AccessOnDemand); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.qp.Connect(b.dest(200), 100, a.connectOpts()); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Connect(a.dest(100), 200, b.connectOpts()); err != nil {
		t.Fatal(err)
	}
	if kb, err := labtest.StatusKB("VmPin"); err != nil || kb != 0 {
		t.Errorf("VmPin %d kB (%v): on-demand MRs pin nothing", kb, err)
	}
	// Prefetch the target, synchronously, then asynchronously.
	if err := pd.AdviseMR(AdvicePrefetchWrite, AdviseFlush, []SGE{b.mr.SGE(0, size/2)}); err != nil {
		t.Fatal(err)
	}
	if err := pd.AdviseMR(AdvicePrefetch, 0, []SGE{b.mr.SGE(size/2, size/2), a.mr.SGE(0, size)}); err != nil {
		t.Fatal(err)
	}
	if err := pd.AdviseMR(AdvicePrefetch, 0, nil); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("AdviseMR without ranges: %v, want EINVAL", err)
	}

	// RDMA WRITE of the whole region, then READ it back into a's second half.
	fill(a.buf[:size/2], 3)
	post(t, a, SendWR{ID: 1, Opcode: WRRDMAWrite, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, size/2)}, RemoteAddr: b.mr.Addr() + size/4, RKey: b.mr.RKey()})
	if d := pageDiff(b.buf[size/4:size/4+size/2], a.buf[:size/2]); d != "" {
		t.Errorf("RDMA WRITE into on-demand memory (pages 64-191 of the target; 64-127 prefetched for writing, 128-191 for reading): %s", d)
	}
	post(t, a, SendWR{ID: 2, Opcode: WRRDMARead, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(size/2, size/2)}, RemoteAddr: b.mr.Addr() + size/4, RKey: b.mr.RKey()})
	if d := pageDiff(a.buf[size/2:], b.buf[size/4:size/4+size/2]); d != "" {
		t.Errorf("RDMA READ from on-demand memory: %s", d)
	}
	// Atomics on a page nothing touched yet (the last one).
	off := size - 64
	binary.NativeEndian.PutUint64(b.buf[off:], 40)
	post(t, a, SendWR{ID: 3, Opcode: WRAtomicFetchAndAdd, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(0, 8)}, RemoteAddr: b.mr.Addr() + uint64(off), RKey: b.mr.RKey(), CompareAdd: 2})
	post(t, a, SendWR{ID: 4, Opcode: WRAtomicCmpAndSwp, Flags: SendSignaled, SGL: []SGE{a.mr.SGE(8, 8)}, RemoteAddr: b.mr.Addr() + uint64(off), RKey: b.mr.RKey(), CompareAdd: 42, Swap: 7})
	if got, old1, old2 := binary.NativeEndian.Uint64(b.buf[off:]), binary.NativeEndian.Uint64(a.buf[0:]), binary.NativeEndian.Uint64(a.buf[8:]); got != 7 || old1 != 40 || old2 != 42 {
		t.Errorf("atomics on on-demand memory: target %d (want 7), fetch-add returned %d (want 40), cmp-swap %d (want 42)", got, old1, old2)
	}
	runtime.KeepAlive(a.buf)
	runtime.KeepAlive(b.buf)
}

// post posts one signaled work request on a and waits for its successful
// completion.
func post(t *testing.T, a *endpoint, wr SendWR) {
	t.Helper()
	if err := a.qp.PostSend(wr); err != nil {
		t.Fatal(err)
	}
	a.wait(t, 1)
}

// capEff is the CapEff mask of /proc/self/status.
func capEff(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("CapEff %q: %v", v, err)
			}
			return m
		}
	}
	t.Fatal("no CapEff in /proc/self/status")
	return 0
}

// TestLabODPUnmap: a peer's RDMA WRITE and READ into an on-demand MR whose
// memory was unmapped end in an error completion, and the kernel logs no
// warning for it; the MR still deregisters.
func TestLabODPUnmap(t *testing.T) {
	c, e := requireODP(t)
	kmsg := openKmsg(t)
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	access := AccessLocalWrite | AccessRemoteWrite | AccessRemoteRead
	a := newEndpoint(t, c, pd, e, epOpts{})
	b := newEndpoint(t, c, pd, e, epOpts{})
	buf, err := AllocBuffer(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.RegMR(buf.Bytes(), access|AccessOnDemand)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Connect(b.dest(200), 100, a.connectOpts()); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Connect(a.dest(100), 200, b.connectOpts()); err != nil {
		t.Fatal(err)
	}
	// Mapped: the write lands, on a page the process never touched (0)
	// and on one it wrote before (1).
	buf.Bytes()[4096] = 1
	if wc := write(t, a, mr.Addr(), mr.RKey(), 8192); wc.Status != WCSuccess {
		t.Fatalf("write into mapped on-demand memory: %v", wc.Err())
	}
	if d := pageDiff(buf.Bytes()[:8192], a.buf[:8192]); d != "" {
		t.Errorf("write into mapped on-demand memory (page 0 untouched, 1 touched): %s", d)
	}
	addr, rkey := mr.Addr(), mr.RKey()
	if err := buf.Close(); err != nil { // munmap under the MR
		t.Fatal(err)
	}
	wc := write(t, a, addr, rkey, 4096)
	t.Logf("RDMA WRITE into unmapped on-demand memory: %v", wc.Err())
	if wc.Status == WCSuccess {
		t.Fatal("RDMA WRITE into unmapped on-demand memory succeeded")
	}
	if err := mr.Close(); err != nil {
		t.Fatalf("dereg of an on-demand MR over unmapped memory: %v", err)
	}
	if w := kmsg(); w != "" {
		t.Fatalf("the kernel logged:\n%s", w)
	}
}

// openKmsg starts reading the kernel log at its end; the function it
// returns gives the warnings, BUGs and oopses logged since. It reads the
// raw descriptor: an *os.File would park on the poller at the log's end.
func openKmsg(t *testing.T) func() string {
	t.Helper()
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.Seek(fd, 0, io.SeekEnd); err != nil {
		t.Fatal(err)
	}
	return func() string {
		var bad []string
		rec := make([]byte, 8192)
		for {
			// One record per read; EAGAIN at the end of the log.
			n, err := unix.Read(fd, rec)
			if errors.Is(err, unix.EPIPE) { // overwritten while read: go on
				continue
			}
			if err != nil || n <= 0 {
				return strings.Join(bad, "\n")
			}
			if _, msg, ok := strings.Cut(string(rec[:n]), ";"); ok && (strings.Contains(msg, "WARNING") || strings.Contains(msg, "BUG") || strings.Contains(msg, "Oops") || strings.Contains(msg, "Call Trace")) {
				bad = append(bad, strings.TrimSpace(msg))
			}
		}
	}
}

// pageDiff describes, page by page, where got differs from want: "" if
// nowhere, else runs of pages that are all zero or hold something else.
func pageDiff(got, want []byte) string {
	ps := os.Getpagesize()
	var out []string
	kind := func(i int) string {
		g, w := got[i*ps:min((i+1)*ps, len(got))], want[i*ps:min((i+1)*ps, len(want))]
		switch {
		case bytes.Equal(g, w):
			return "ok"
		case !slices.ContainsFunc(g, func(b byte) bool { return b != 0 }):
			return "zero"
		}
		return "other"
	}
	n := (len(got) + ps - 1) / ps
	for i := 0; i < n; {
		k, j := kind(i), i+1
		for j < n && kind(j) == k {
			j++
		}
		out = append(out, fmt.Sprintf("pages %d-%d %s", i, j-1, k))
		i = j
	}
	if len(out) == 1 && strings.HasSuffix(out[0], " ok") {
		return ""
	}
	return strings.Join(out, ", ")
}
