// Copyright 2026 The rdmago Authors.

package trace

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/abi"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/uverbs"
)

// opSequence is the order in which a process first used each operation
// ("uverbs CREATE_QP", "ucma CONNECT", "cm ESTABLISHED", MODIFY_QP with its
// target state): a compact form to compare two programs' ways of doing the
// same thing.
func opSequence(f *Formatter, evs []Event) []string {
	var seq []string
	for _, e := range evs {
		op := opName(f, e)
		if !slices.Contains(seq, op) {
			seq = append(seq, op)
		}
	}
	return seq
}

// opName is "subsys op", with MODIFY_QP's target state and GET_EVENT's
// event appended.
func opName(f *Formatter, e Event) string {
	d := f.Describe(e)
	op := d.Subsys + " " + d.Op
	switch {
	case d.Op == "MODIFY_QP":
		if s := fieldVal(d.Args, "state"); s != nil {
			op += fmt.Sprintf(" %v", s)
		}
	case d.Subsys == "ucma" && d.Op == "GET_EVENT":
		if s := fieldVal(d.Resp, "event"); s != nil {
			op += fmt.Sprintf(" %v", s)
		}
	}
	return op
}

func fieldVal(fs []Field, k string) any {
	for _, x := range fs {
		if x.Key == k {
			return x.Val
		}
	}
	return nil
}

// TestLabRdmago traces rdmago's own stack in this very process: package cm
// listens and dials on this node's address (what cmd/rdmaping does), the
// client RDMA WRITEs into the server's buffer and SENDs, and closes. The
// tracer, filtered by this pid, must see the verbs objects being created in
// order, the QPs walking INIT, RTR, RTS, and the CM through ESTABLISHED and
// DISCONNECTED. The context comes from the ioctl methods DEVICE.GET_CONTEXT
// and ASYNC_EVENT.ALLOC; PD, CQ, QP and MR are created and destroyed with
// write() commands (rdma-core's rping uses the ioctl methods for those).
func TestLabRdmago(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "listener and dialer in this process")
	pid := uint32(os.Getpid())
	tr := openTracer(t, Options{PID: os.Getpid()})
	f := &Formatter{Names: ABINames{}, Devices: UverbsDevices(sysfs.ClassVerbs)}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := net.JoinHostPort(env.Addr, fmt.Sprint(21000+os.Getpid()%20000))
	l, err := cm.Listen(ctx, addr, nil)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	defer l.Close()

	type target struct {
		addr uint64
		rkey uint32
	}
	targets := make(chan target, 1)
	const payload = "written by RDMA WRITE"
	serverErr := make(chan error, 1)
	go func() {
		serverErr <- func() error {
			var rbuf, wbuf []byte
			var rmr *uverbs.MR
			req, err := l.AcceptRequest(ctx)
			if err != nil {
				return err
			}
			c, err := req.Accept(ctx, &cm.Options{Setup: func(c *cm.Conn) error {
				rbuf, wbuf = make([]byte, 64), make([]byte, 64)
				var err error
				if rmr, err = c.RegMR(rbuf, uverbs.AccessLocalWrite); err != nil {
					return err
				}
				wmr, err := c.RegMR(wbuf, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
				if err != nil {
					return err
				}
				targets <- target{wmr.Addr(), wmr.RKey()}
				return c.QP().PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{rmr.SGE(0, 64)}})
			}})
			if err != nil {
				return fmt.Errorf("accept: %w", err)
			}
			defer c.Close()
			var wcs [1]uverbs.WC
			if _, err := c.RecvCQ().PollN(ctx, wcs[:], 1); err != nil {
				return fmt.Errorf("server recv: %w", err)
			}
			if err := wcs[0].Err(); err != nil {
				return fmt.Errorf("server recv: %w", err)
			}
			if got := wbuf[:len(payload)]; !bytes.Equal(got, []byte(payload)) {
				return fmt.Errorf("RDMA WRITE left %q, want %q", got, payload)
			}
			select {
			case <-c.Done():
			case <-ctx.Done():
				return fmt.Errorf("server: the client never disconnected: %w", ctx.Err())
			}
			return c.Close()
		}()
	}()

	var sbuf []byte
	var smr *uverbs.MR
	var c *cm.Conn
	for {
		c, err = cm.Dial(ctx, addr, &cm.Options{Setup: func(c *cm.Conn) error {
			sbuf = make([]byte, 64)
			var err error
			smr, err = c.RegMR(sbuf, uverbs.AccessLocalWrite)
			return err
		}})
		if err == nil || !errors.Is(err, cm.ErrNoListener) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	tg := <-targets
	copy(sbuf, payload)
	var wcs [1]uverbs.WC
	for _, wr := range []uverbs.SendWR{
		{ID: 1, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{smr.SGE(0, len(payload))}, RemoteAddr: tg.addr, RKey: tg.rkey},
		{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{smr.SGE(0, 8)}},
	} {
		if err := c.QP().PostSend(wr); err != nil {
			t.Fatalf("post %v: %v", wr.Opcode, err)
		}
		if _, err := c.SendCQ().PollN(ctx, wcs[:], 1); err != nil {
			t.Fatalf("poll %v: %v", wr.Opcode, err)
		}
		if err := wcs[0].Err(); err != nil {
			t.Fatalf("%v completion: %v", wr.Opcode, err)
		}
	}
	clientQPN := c.QP().Num()
	if err := c.Close(); err != nil {
		t.Errorf("client close: %v", err)
	}
	if err := <-serverErr; err != nil {
		t.Fatalf("server: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("listener close: %v", err)
	}

	evs := collect(t, tr, 3*time.Second, func(e Event) bool {
		return e.PID == pid || e.Kind == KindCMEvent // the tracepoint fires in softirq and kworkers
	}, func([]Event) bool { return false })
	var lines []string
	ops := map[string]int{}
	for _, e := range evs {
		lines = append(lines, f.Line(e))
		ops[opName(f, e)]++
		// package uverbs opens its context with the ioctl methods (as
		// rdma-core does) and creates everything else with write().
		if d := f.Describe(e); d.Subsys == "uverbs" && strings.HasPrefix(d.Op, "ioctl") &&
			d.Op != "ioctl DEVICE.GET_CONTEXT" && d.Op != "ioctl ASYNC_EVENT.ALLOC" {
			t.Errorf("rdmago issued an unexpected ioctl: %s", f.Line(e))
		}
	}
	t.Logf("%d events; first 80:\n  %s", len(evs), strings.Join(lines[:min(80, len(lines))], "\n  "))
	seq := opSequence(f, evs)
	t.Logf("rdmago's sequence of first uses:\n  %s", strings.Join(seq, "\n  "))

	// Objects are created in dependency order, and every QP walks
	// RESET -> INIT -> RTR -> RTS.
	order := []string{"uverbs ioctl DEVICE.GET_CONTEXT", "uverbs ALLOC_PD", "uverbs CREATE_CQ", "uverbs CREATE_QP",
		"uverbs MODIFY_QP INIT", "uverbs MODIFY_QP RTR", "uverbs MODIFY_QP RTS"}
	last := -1
	for _, want := range order {
		i := slices.Index(seq, want)
		if i < 0 {
			t.Errorf("no %q; saw %v", want, seq)
			continue
		}
		if i < last {
			t.Errorf("%q came before %q", want, order[slices.Index(order, want)-1])
		}
		last = i
	}
	if i, j := slices.Index(seq, "uverbs ALLOC_PD"), slices.Index(seq, "uverbs REG_MR"); j < 0 || j < i {
		t.Errorf("REG_MR (index %d) missing or before ALLOC_PD (%d)", j, i)
	}
	for _, want := range []string{"uverbs MODIFY_QP INIT", "uverbs MODIFY_QP RTR", "uverbs MODIFY_QP RTS",
		"uverbs CREATE_QP", "uverbs DESTROY_QP"} {
		if ops[want] < 2 {
			t.Errorf("%d %q, want one for each side's QP", ops[want], want)
		}
	}
	for _, want := range []string{"uverbs REG_MR", "uverbs DEREG_MR", "uverbs mmap", "uverbs DESTROY_CQ", "uverbs DEALLOC_PD",
		"ucma CREATE_ID", "ucma LISTEN", "ucma RESOLVE_IP", "ucma RESOLVE_ROUTE", "ucma CONNECT", "ucma ACCEPT",
		"ucma DISCONNECT", "ucma DESTROY_ID", "ucma GET_EVENT ADDR_RESOLVED", "ucma GET_EVENT ROUTE_RESOLVED",
		"ucma GET_EVENT CONNECT_REQUEST", "ucma GET_EVENT ESTABLISHED", "ucma GET_EVENT DISCONNECTED",
		"cm CONNECT_REQUEST", "cm ESTABLISHED", "cm DISCONNECTED"} {
		if ops[want] == 0 && !(want == "ucma RESOLVE_IP" && ops["ucma RESOLVE_ADDR"] > 0) {
			t.Errorf("no %q; saw %v", want, ops)
		}
	}
	// The connection's events come in order in the process.
	var cmOrder []string
	for _, s := range seq {
		if strings.HasPrefix(s, "ucma GET_EVENT ") {
			cmOrder = append(cmOrder, strings.TrimPrefix(s, "ucma GET_EVENT "))
		}
	}
	if i, j := slices.Index(cmOrder, "ESTABLISHED"), slices.Index(cmOrder, "DISCONNECTED"); i < 0 || j < i {
		t.Errorf("GET_EVENT order %v: want ESTABLISHED before DISCONNECTED", cmOrder)
	}
	for _, e := range evs {
		if d := f.Describe(e); e.PID == pid && d.Subsys == "uverbs" && e.Ret < 0 {
			t.Errorf("failing command in a clean run: %s", f.Line(e))
		}
	}

	counts, err := tr.RXECounts()
	if err != nil {
		t.Fatal(err)
	}
	hits := map[string]uint64{}
	for _, rc := range counts {
		if rc.QPN == clientQPN {
			hits[rc.Func] += rc.Count
		}
	}
	t.Logf("rxe hits on the client's QP %d: %v", clientQPN, hits)
	if hits["rxe_post_send"] == 0 || hits["rxe_xmit_packet"] == 0 {
		t.Errorf("client QP %d: rxe hits %v, want rxe_post_send and rxe_xmit_packet", clientQPN, hits)
	}
	if ring, infl, err := tr.Lost(); err != nil || ring+infl != 0 {
		t.Errorf("lost %d+%d events, %v", ring, infl, err)
	}
}

// TestLabRegMRErrno registers memory with raw write()s and access flags
// the kernel refuses (REMOTE_WRITE without LOCAL_WRITE: EINVAL from
// ib_check_mr_access; package uverbs would refuse it before the kernel) and
// checks the traced REG_MR carries the errno the process got. The memlock
// limit cannot be provoked: the lab runs as root with CAP_IPC_LOCK.
func TestLabRegMRErrno(t *testing.T) {
	env := labtest.Require(t)
	tr := openTracer(t, Options{PID: os.Getpid(), NoRXE: true})
	f := &Formatter{Names: ABINames{}, Devices: UverbsDevices(sysfs.ClassVerbs)}

	raw := openRawUverbs(t, env.Dev, 2)
	bufAddr := uint64(uintptr(unsafe.Pointer(&raw.mem[4096])))
	if err := raw.write(abi.IB_USER_VERBS_CMD_GET_CONTEXT, abi.GetContext{Response: raw.respAddr}, 8); err != nil {
		t.Fatalf("GET_CONTEXT: %v", err)
	}
	defer unix.Close(int(binary.NativeEndian.Uint32(raw.mem)))
	if err := raw.write(abi.IB_USER_VERBS_CMD_ALLOC_PD, abi.AllocPD{Response: raw.respAddr}, 4); err != nil {
		t.Fatalf("ALLOC_PD: %v", err)
	}
	pd := binary.NativeEndian.Uint32(raw.mem)
	regErr := raw.write(abi.IB_USER_VERBS_CMD_REG_MR, abi.RegMR{Response: raw.respAddr, Start: bufAddr, Length: 4096, HCAVA: bufAddr,
		PDHandle: pd, AccessFlags: abi.IB_ACCESS_REMOTE_WRITE}, int(unsafe.Sizeof(abi.RegMRResp{})))
	if !errors.Is(regErr, unix.EINVAL) {
		t.Fatalf("REG_MR with REMOTE_WRITE alone: %v, want EINVAL", regErr)
	}
	if err := raw.write(abi.IB_USER_VERBS_CMD_DEALLOC_PD, abi.DeallocPD{PDHandle: pd}, 0); err != nil {
		t.Fatalf("DEALLOC_PD: %v", err)
	}

	evs, lines := ownEvents(t, tr, f, 4)
	e := evs[2]
	d := f.Describe(e)
	if d.Op != "REG_MR" || e.Ret != -int64(syscall.EINVAL) || d.Result != "EINVAL" {
		t.Errorf("event 2: %s ret %d result %q, want REG_MR -22 EINVAL", d.Op, e.Ret, d.Result)
	}
	if fieldVal(d.Args, "pd") != uint64(pd) || d.Resp != nil {
		t.Errorf("REG_MR args %v resp %v, want pd=%d and no response", d.Args, d.Resp, pd)
	}
	if !strings.Contains(lines[2], "-> EINVAL (-22)") {
		t.Errorf("failing REG_MR line %q lacks its errno", lines[2])
	}
}
