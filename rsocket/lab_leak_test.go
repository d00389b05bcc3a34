// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/rdmanl"
)

// kernelState is what a leaking connection would leave behind, as the
// kernel and /proc count it.
type kernelState struct {
	// own counts this process's objects on the lab device by kind (qp, cq,
	// mr, pd, cm_id) from the netlink resource dumps (`rdma res show`).
	// The kernel reports an object's pid as the thread that created it
	// (restrack keeps the task), and Go creates them from several threads:
	// an object is this process's when its pid is one of /proc/self/task.
	// Objects of user threads that have exited (pid 0, no kernel owner)
	// count as "KIND (exited thread)": only this process's children or
	// earlier threads could have left them.
	own map[string]int
	// dev is the device's summary (`rdma res show`: every type the kernel
	// tracks, ctx included, all owners): the C tools' objects show here.
	dev     map[string]uint64
	fds     int
	vmPinKB int
	gor     int
}

func (s kernelState) String() string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(s.own)) {
		fmt.Fprintf(&b, "%s %d, ", k, s.own[k])
	}
	fmt.Fprintf(&b, "device totals {")
	for i, k := range slices.Sorted(maps.Keys(s.dev)) {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s %d", k, s.dev[k])
	}
	fmt.Fprintf(&b, "}, %d descriptors, VmPin %d kB, %d goroutines", s.fds, s.vmPinKB, s.gor)
	return b.String()
}

// readKernelState reads the state of device dev through a netlink
// connection of its own (closed before it returns, so it counts no
// descriptor of its own).
func readKernelState(dev string) (kernelState, error) {
	s := kernelState{own: map[string]int{}, dev: map[string]uint64{}}
	nl, err := rdmanl.Dial()
	if err != nil {
		return s, err
	}
	defer nl.Close()
	d, err := nl.DeviceByName(dev)
	if err != nil {
		return s, err
	}
	count := func(kind string, o rdmanl.ResOwner) {
		switch {
		case o.Kernel():
		case labtest.OwnThread(o.PID):
			s.own[kind]++
		case o.PID == 0:
			s.own[kind+" (exited thread)"]++
		}
	}
	qps, err := nl.QPs(d.Index)
	for _, x := range qps {
		count("qp", x.ResOwner)
	}
	cqs, err2 := nl.CQs(d.Index)
	for _, x := range cqs {
		count("cq", x.ResOwner)
	}
	mrs, err3 := nl.MRs(d.Index)
	for _, x := range mrs {
		count("mr", x.ResOwner)
	}
	pds, err4 := nl.PDs(d.Index)
	for _, x := range pds {
		count("pd", x.ResOwner)
	}
	cms, err5 := nl.CMIDs(d.Index)
	for _, x := range cms {
		count("cm_id", x.ResOwner)
	}
	sums, err6 := nl.ResSummary()
	for _, sum := range sums {
		if sum.DevIndex == d.Index {
			for _, c := range sum.Counts {
				s.dev[c.Name] = c.Count
			}
		}
	}
	if err := errors.Join(err, err2, err3, err4, err5, err6); err != nil {
		return s, err
	}
	if len(s.dev) == 0 {
		return s, fmt.Errorf("no resource summary for %s", dev)
	}
	nl.Close() // before counting descriptors
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	if s.vmPinKB, err = labtest.StatusKB("VmPin"); err != nil {
		return s, err
	}
	s.gor = runtime.NumGoroutine()
	return s, nil
}

// leaks says what now holds beyond the baseline: this process's objects,
// descriptors, pinned memory and goroutines, and each type the device
// tracks (the C tools' objects, contexts). Fewer than before is no leak
// (an earlier test's connection may finish closing meanwhile).
func (s kernelState) leaks(now kernelState) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(now.own)) {
		if now.own[k] > s.own[k] {
			out = append(out, fmt.Sprintf("%d %s of this process (were %d)", now.own[k], k, s.own[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(now.dev)) {
		if now.dev[k] > s.dev[k] {
			out = append(out, fmt.Sprintf("%d %s on the device (were %d)", now.dev[k], k, s.dev[k]))
		}
	}
	if now.fds > s.fds {
		out = append(out, fmt.Sprintf("%d descriptors (were %d)", now.fds, s.fds))
	}
	if now.vmPinKB > s.vmPinKB {
		out = append(out, fmt.Sprintf("VmPin %d kB (was %d kB)", now.vmPinKB, s.vmPinKB))
	}
	if now.gor > s.gor {
		out = append(out, fmt.Sprintf("%d goroutines (were %d)", now.gor, s.gor))
	}
	return strings.Join(out, "; ")
}

// TestLabKernelObjects: 50 Go-to-Go connections (connect, 64 KiB each
// way, close: the accepting side closes first in even cycles, the dialing
// side in odd ones, the other end then reads EOF and closes) and 10 with
// rstream (C rsockets, as server and as client by turns) leave this
// process's kernel RDMA objects (QPs, CQs, MRs, PDs, cm_ids, by the thread
// ids the kernel reports), the device's totals (contexts included), the
// process's descriptors, pinned memory (VmPin) and goroutines where they
// were before the first listener was opened. While a connection is open
// the same counters must see its objects, or they could not see a leak.
// With two nodes each node checks its own process.
func TestLabKernelObjects(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 300*time.Second)
	const goCycles, cCycles = 50, 10
	// The runtime opens its netpoller (an epoll and an event descriptor)
	// on first use and keeps it: open it before the baseline.
	if ln, err := net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	} else {
		ln.Close()
	}
	base := settledKernelState(t, e.Dev)
	t.Logf("before: %v", base)
	begin := time.Now()

	port := labPort(80)
	var l *Listener
	if e.serves {
		lc := ListenConfig{}
		var err error
		if l, err = lc.ListenRSocket(ctx, "tcp", e.Addr+":"+port); err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
	// During the first cycle, with the connection open at both ends
	// (this node's end with two nodes), the counters see it.
	during := func(cycle int) error {
		if cycle != 0 {
			return nil
		}
		now, err := readKernelState(e.Dev)
		if err != nil {
			return err
		}
		t.Logf("with a connection open: %v", now)
		ends := 2
		if e.TwoNodes {
			ends = 1
		}
		for _, k := range []string{"qp", "cq", "mr", "pd", "cm_id"} {
			if now.own[k] < base.own[k]+ends {
				return fmt.Errorf("with %d end(s) of a connection open, this process has %d %s (%d before): the count does not see them", ends, now.own[k], k, base.own[k])
			}
		}
		if now.vmPinKB <= base.vmPinKB {
			return fmt.Errorf("with a connection open, VmPin is %d kB (%d kB before): its rings are not counted", now.vmPinKB, base.vmPinKB)
		}
		if now.fds <= base.fds {
			return fmt.Errorf("with a connection open, %d descriptors (%d before)", now.fds, base.fds)
		}
		return nil
	}
	// end finishes one side of cycle i: the closing side closes at once,
	// the other reads the EOF first.
	end := func(c *Conn, closesFirst bool) error {
		if !closesFirst {
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			if n, err := c.Read(make([]byte, 1)); err != io.EOF {
				c.Close()
				return fmt.Errorf("read after the peer closed: %d, %v, want EOF", n, err)
			}
		}
		return c.Close()
	}
	synced := make(chan struct{}) // one node: the first cycle's check waits for both ends
	e.RunRoles(t, func() error {
		for i := range goCycles {
			c, err := l.AcceptRSocket(ctx)
			if err != nil {
				return fmt.Errorf("cycle %d: accept: %w", i, err)
			}
			if err := echoCheck(c, 64<<10); err != nil {
				c.Close()
				return fmt.Errorf("cycle %d (accepting side): %w", i, err)
			}
			if i == 0 && !e.TwoNodes {
				<-synced
			} else if err := during(i); err != nil {
				c.Close()
				return err
			}
			if i == 0 {
				// The peer's check is done when it writes a byte.
				if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
					c.Close()
					return fmt.Errorf("cycle 0: %w", err)
				}
			}
			if err := end(c, i%2 == 0); err != nil {
				return fmt.Errorf("cycle %d (accepting side): %w", i, err)
			}
		}
		return l.Close()
	}, func() error {
		for i := range goCycles {
			c, err := dialRetry(ctx, &Dialer{}, e.Peer+":"+port)
			if err != nil {
				return fmt.Errorf("cycle %d: dial: %w", i, err)
			}
			if err := echoCheck(c, 64<<10); err != nil {
				c.Close()
				return fmt.Errorf("cycle %d (dialing side): %w", i, err)
			}
			if i == 0 {
				err := during(i)
				if !e.TwoNodes {
					close(synced)
				}
				if err != nil {
					c.Close()
					return err
				}
				if _, err := c.Write([]byte{1}); err != nil {
					c.Close()
					return fmt.Errorf("cycle 0: %w", err)
				}
			}
			if err := end(c, i%2 == 1); err != nil {
				return fmt.Errorf("cycle %d (dialing side): %w", i, err)
			}
		}
		return nil
	})
	if t.Failed() {
		return
	}
	goDone := time.Now()

	// rstream, as TestLabRstream runs it: C server and Go client in even
	// cycles, Go server and C client in odd ones.
	const size, count = 4096, 16
	for i := range cCycles {
		port := labPort(81 + i)
		args := []string{"-S", strconv.Itoa(size), "-C", strconv.Itoa(count), "-T", "v", "-p", port}
		runC := func(extra ...string) error {
			return runRefused(ctx, t, rstreamRefused, func() *exec.Cmd { return cTool(t, ctx, false, "rstream", append(args, extra...)...) })
		}
		goServer := func() error {
			lc := ListenConfig{}
			l, err := lc.ListenRSocket(ctx, "tcp", e.Addr+":"+port)
			if err != nil {
				return err
			}
			defer l.Close()
			c, err := l.AcceptRSocket(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			return rstreamPeer(c, false, size, count)
		}
		goClient := func() error {
			c, err := dialRetry(ctx, &Dialer{}, e.Peer+":"+port)
			if err != nil {
				return err
			}
			defer c.Close()
			return rstreamPeer(c, true, size, count)
		}
		if i%2 == 0 {
			e.RunRoles(t, func() error { return runC("-b", e.Addr) }, goClient)
		} else {
			e.RunRoles(t, goServer, func() error { return runC("-s", e.Peer) })
		}
		if t.Failed() {
			t.Fatalf("rstream cycle %d failed", i)
		}
	}
	t.Logf("%d Go-to-Go connections in %v, %d with rstream in %v", goCycles, goDone.Sub(begin).Round(time.Millisecond), cCycles, time.Since(goDone).Round(time.Millisecond))

	base.awaitNoLeak(t, e.Dev, fmt.Sprintf("after %d connections with Go and %d with rstream", goCycles, cCycles))
}

// settledKernelState is the state once this process has no RDMA object
// left: an earlier test's connections may still be going (their objects go
// a moment after Close, as awaitNoLeak allows at the end; a 6.12 two-node
// run took a baseline with one, which the next connection's objects then
// replaced). Objects still there after 15 s fail the test: an earlier
// test leaked them.
func settledKernelState(t *testing.T, dev string) kernelState {
	t.Helper()
	s, ok := awaitKernelState(t, dev, func(s kernelState) bool {
		left := 0
		for _, n := range s.own {
			left += n
		}
		return left == 0
	})
	if !ok {
		t.Fatalf("objects of this process still open 15 s after the earlier tests: %v", s)
	}
	return s
}

// awaitNoLeak fails t unless the state of device dev comes back to s (or
// below) within 15 s: Close destroys everything before it returns, but the
// goroutines that waited on the connections take a moment to go. what
// says what ran since s was read.
func (s kernelState) awaitNoLeak(t *testing.T, dev, what string) {
	t.Helper()
	now, ok := awaitKernelState(t, dev, func(now kernelState) bool { return s.leaks(now) == "" })
	if !ok {
		t.Fatalf("%s: %s\nbefore: %v\nafter:  %v", what, s.leaks(now), s, now)
	}
	t.Logf("after: %v", now)
}

// awaitKernelState reads the state of device dev every 100 ms until done
// accepts it, for up to 15 s; it returns the last state read and whether
// done accepted it.
func awaitKernelState(t *testing.T, dev string, done func(kernelState) bool) (kernelState, bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s, err := readKernelState(dev)
		if err != nil {
			t.Fatal(err)
		}
		if done(s) {
			return s, true
		}
		if time.Now().After(deadline) {
			return s, false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
