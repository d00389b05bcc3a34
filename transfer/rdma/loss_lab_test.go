package rdma

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/internal/labtest/rtnl"
	"github.com/rdmago/rdmago/internal/sysfs"
	"github.com/rdmago/rdmago/transfer"
)

// lossLevels are the link conditions TestLabLoss sends a file through, in
// order; both nodes put the same netem qdisc on their netdev, so data
// packets and the ACKs and control messages coming back are all affected.
//
// The first level keeps the CM's default local ACK timeout (2.1 s with
// Linux 6.1, 0.54 s with 6.12): every loss that no NAK reports costs that
// much (see Options.AckTimeout), so it runs at the lowest loss and size. The
// others lower it to 14 (67 ms) to stay within the lab's time budget.
//
// Pervasive reordering (netem jitter larger than the packet spacing) is
// left out: RoCE's reliable connection assumes an in-order fabric, and
// rxe's go-back-N then advances about a packet per retransmission round.
var lossLevels = []struct {
	name       string // the subtest's
	netem      rtnl.Netem
	size       int
	ackTimeout uint8
}{
	{"loss1", rtnl.Netem{Loss: 1}, 1<<20 + 77, 0},
	{"loss3", rtnl.Netem{Loss: 3}, 2<<20 + 77, 14},
	// A constant delay with 5 % of the packets sent without it: those
	// overtake the delayed ones, so the receiver sees gaps that are
	// reordering, not loss, on top of the losses.
	{"loss1+delay+reorder", rtnl.Netem{Loss: 1, Latency: time.Millisecond, Reorder: 5}, 1<<20 + 77, 14},
}

// rxeCounters reads an rxe device's port counters
// (/sys/class/infiniband/DEV/ports/1/hw_counters; rxe_hw_counters.c).
func rxeCounters(t *testing.T, dev string) map[string]uint64 {
	t.Helper()
	cs, err := sysfs.FS{}.HWCounters([]string{dev})
	if err != nil || len(cs) == 0 {
		t.Fatalf("rxe counters of %s: %v (%d ports with counters)", dev, err, len(cs))
	}
	m, dir := cs[0].Values, filepath.Join("/sys/class/infiniband", dev, "ports", strconv.Itoa(cs[0].Port), "hw_counters")
	for _, want := range []string{"rcvd_seq_err", "completer_retry_err", "out_of_seq_request", "duplicate_request", "retry_exceeded_err"} {
		if _, ok := m[want]; !ok {
			t.Fatalf("rxe counters in %s: no %s (have %v)", dir, want, m)
		}
	}
	return m
}

// linkSnapshot is one node's view of the link: its rxe counters and its
// netem qdisc's counters.
type linkSnapshot struct {
	rxe   map[string]uint64
	netem rtnl.QdiscStats
}

func snapshot(t *testing.T, c *rtnl.Conn, env labtest.Env) linkSnapshot {
	t.Helper()
	q, err := c.RootQdisc(env.Netdev)
	if err != nil {
		t.Fatal(err)
	}
	if q.Kind != "netem" {
		t.Fatalf("root qdisc of %s is %q, want netem", env.Netdev, q.Kind)
	}
	return linkSnapshot{rxe: rxeCounters(t, env.Dev), netem: q.Stats}
}

// linkDelta is what changed between two snapshots.
type linkDelta struct {
	rxe            map[string]uint64
	sent, dropped  uint64 // netem: packets passed on, packets dropped
	retransmits    uint64 // requester: NAK sequence errors + retry timeouts
	outOfSeqOrDups uint64 // responder: gaps seen + duplicates received
}

func (a linkSnapshot) delta(b linkSnapshot) linkDelta {
	d := linkDelta{rxe: map[string]uint64{}}
	for k, v := range b.rxe {
		if v != a.rxe[k] {
			d.rxe[k] = v - a.rxe[k]
		}
	}
	d.sent = uint64(b.netem.Packets - a.netem.Packets)
	d.dropped = uint64(b.netem.Drops - a.netem.Drops)
	d.retransmits = d.rxe["rcvd_seq_err"] + d.rxe["completer_retry_err"]
	d.outOfSeqOrDups = d.rxe["out_of_seq_request"] + d.rxe["duplicate_request"]
	return d
}

func (d linkDelta) add(e linkDelta) linkDelta {
	d.sent += e.sent
	d.dropped += e.dropped
	d.retransmits += e.retransmits
	d.outOfSeqOrDups += e.outOfSeqOrDups
	return d
}

func (d linkDelta) String() string {
	keys := make([]string, 0, len(d.rxe))
	for k := range d.rxe {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "netem passed %d dropped %d packets; rxe", d.sent, d.dropped)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s+%d", k, d.rxe[k])
	}
	return b.String()
}

// TestLabLoss sends a file through a lossy link: both nodes put a netem
// qdisc (1-3 % loss, then loss with delay, jitter and reordering) on their
// netdev, node 1 sends, node 0 receives, and the file must arrive whole and
// verified (SHA-256) on both ends. The test then checks that packets really
// were dropped and that rxe's retransmission did the recovering: node 1's
// requester saw NAKs or timeouts, node 0's responder saw gaps or duplicates.
func TestLabLoss(t *testing.T) {
	env := labtest.Require(t)
	if os.Getenv("RDMALAB_NODES") != "2" {
		t.Skip("needs two lab nodes: with one, rxe hands packets for its own address back inside the kernel, never through the netdev's qdisc, so netem cannot drop them (go run ./cmd/rdmalab test --nodes 2 ./transfer/rdma)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := rtnl.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.DelRootQdisc(env.Netdev); err != nil {
			t.Errorf("remove netem: %v", err)
		}
		c.Close()
	})
	var total linkDelta
	for i, lv := range lossLevels {
		t.Run(lv.name, func(t *testing.T) {
			total = total.add(sendThroughLoss(t, ctx, c, env, 18660+i, lv.name, lv.netem, lv.size, lv.ackTimeout))
		})
	}
	t.Logf("node %s, all levels: netem passed %d, dropped %d; requester retransmissions (rcvd_seq_err+completer_retry_err) %d; responder out-of-sequence+duplicates %d",
		env.Node, total.sent, total.dropped, total.retransmits, total.outOfSeqOrDups)
	// Node 0 sends only ACKs and control messages (a few hundred packets in
	// all), so its own netem may drop none: what must show on node 0 is the
	// gaps and duplicates node 1's losses make.
	switch env.Node {
	case "1":
		if total.dropped == 0 {
			t.Errorf("netem on node 1 dropped nothing over %d packets", total.sent)
		}
		if total.retransmits == 0 {
			t.Error("node 1 sent through a lossy link without a single retransmission (rxe rcvd_seq_err and completer_retry_err did not move)")
		}
	case "0":
		if total.outOfSeqOrDups == 0 {
			t.Error("node 0 received through a lossy link without a gap or a duplicate (rxe out_of_seq_request and duplicate_request did not move)")
		}
	}
}

// qpLog keeps the CM's log lines that show the QP's transport timeout
// (the RTS transition), for the test's log.
type qpLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *qpLog) logf(format string, args ...any) {
	if m := fmt.Sprintf(format, args...); strings.Contains(m, "-> IBV_QPS_RTS") {
		if _, after, ok := strings.Cut(m, "timeout"); ok {
			m = "QP timeout" + after
		}
		l.mu.Lock()
		l.lines = append(l.lines, m)
		l.mu.Unlock()
	}
}

func (l *qpLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "; ")
}

// sendThroughLoss puts netem n on this node's netdev and moves one file of
// size bytes from node 1 to node 0 over port, checking it on both ends. It
// returns what the link counters say happened meanwhile.
func sendThroughLoss(t *testing.T, ctx context.Context, c *rtnl.Conn, env labtest.Env, port int, level string, n rtnl.Netem, size int, ackTimeout uint8) linkDelta {
	if err := c.ReplaceNetem(env.Netdev, n); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, c, env)
	start := time.Now()
	name := level + ".bin"
	data := labContent(name, size)
	var qps qpLog
	cfg := Options{AckTimeout: ackTimeout, Logf: qps.logf}
	switch env.Node {
	case "0":
		ln, err := Listen(ctx, addr(env.Addr, port), &cfg)
		if err != nil {
			t.Fatal(err)
		}
		dst := t.TempDir()
		rep, err := serveOne(ctx, ln, labReceiver(dst))
		ln.Close()
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(rep.Files) != 1 || !rep.Files[0].Verified {
			t.Fatalf("receiver report %+v, want one verified file", rep.Files)
		}
		got, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("received %d bytes with SHA-256 %x, sent %d with %x", len(got), sha256.Sum256(got), len(data), sha256.Sum256(data))
		}
	case "1":
		src := t.TempDir()
		if err := os.WriteFile(filepath.Join(src, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		items, _, err := transfer.Plan(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		tr, retries, err := dialRetry(ctx, addr(env.Peer, port), cfg, time.Minute)
		if err != nil {
			t.Fatalf("connect to %s after %d retries: %v", env.Peer, retries, err)
		}
		rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
		tr.Close()
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		if !rep.OK(1) {
			t.Fatalf("file not verified by the receiver: %+v", rep.Files)
		}
	default:
		t.Fatalf("unknown node %q", env.Node)
	}
	el := time.Since(start)
	d := before.delta(snapshot(t, c, env))
	t.Logf("node %s: %d bytes verified in %v (%.2f MB/s under emulation); %v; %v", env.Node, size, el.Round(time.Millisecond), float64(size)/el.Seconds()/1e6, d, &qps)
	if env.Node == "1" && d.dropped == 0 {
		// Over a thousand data packets at 1 % loss or more: no drop at all
		// means netem did not act on the traffic.
		t.Errorf("netem on %s dropped none of the %d packets node 1 sent", env.Netdev, d.sent)
	}
	return d
}
