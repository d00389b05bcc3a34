//go:build linux

package rdma

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/transfer"
)

// halfOpenQPN numbers the half-open connects' fake QPs.
var halfOpenQPN atomic.Uint32

func init() { halfOpenQPN.Store(0x4200) }

// halfOpen connects to a at the rdma_cm ID level and stops after the
// receiver's REP: CONNECT_RESPONSE arrives, no RTU is ever sent (no
// Establish). The receiver's side stays waiting for ESTABLISHED. The IDs
// are closed at the end of the test.
func halfOpen(t *testing.T, ctx context.Context, ch *cm.Channel, a string) *cm.ID {
	t.Helper()
	dst, err := netip.ParseAddrPort(a)
	if err != nil {
		t.Fatal(err)
	}
	id, err := ch.CreateID(cm.PortSpaceTCP)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { id.Close() })
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst, 0); err != nil {
		t.Fatal(err)
	}
	if err := id.ResolveRoute(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// No QP behind the number (the peer never gets that far), but a new
	// one each time: the CM rejects a QP number it already has a
	// connection from as stale.
	qpn := halfOpenQPN.Add(1)
	if err := id.Connect(cm.ConnParam{QPNum: qpn, RetryCount: 7, RNRRetryCount: 7, InitiatorDepth: 1, ResponderResources: 1}); err != nil {
		t.Fatal(err)
	}
	ev, err := id.WaitEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != cm.EventConnectResponse {
		t.Fatalf("half-open connect got %v (status %d), want CONNECT_RESPONSE", ev.Type, ev.Status)
	}
	return id
}

// TestLabHalfOpenConnects: peers that stop after CONNECT_RESPONSE do not
// stall the listener: an honest sender behind them is served while they
// are still held (the accept timeout is longer than the test), and when
// more are held than MaxPendingAccepts the oldest are evicted, so they
// cannot lock a sender out either.
func TestLabHalfOpenConnects(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const port = 18650
	a := addr(env.Addr, port)
	dst := t.TempDir()
	srv := serve(t, ctx, port, Options{AcceptTimeout: time.Hour, MaxPendingAccepts: 3}, labReceiver(dst))
	ch, err := cm.OpenChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	src := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(src, labContent("f", 256<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	// Two held (of three pending setups), then five (two evicted): each
	// time an honest sender is served at its first connect.
	for round, held := range []int{2, 3} {
		for range held {
			halfOpen(t, ctx, ch, a)
		}
		tr, err := Dial(ctx, a, &Options{})
		if err != nil {
			t.Fatalf("round %d: connect behind half-open connects: %v", round, err)
		}
		items, _, _ := transfer.Plan(src)
		rep, err := (&transfer.Sender{}).Send(ctx, tr, items)
		tr.Close()
		if err != nil || !rep.OK(1) {
			t.Fatalf("round %d: sender behind half-open connects: %v %+v", round, err, rep)
		}
		if _, err := srv.waitConn(t, round+1); err != nil {
			t.Errorf("round %d: receiver: %v", round, err)
		}
		os.Remove(filepath.Join(dst, "f"))
	}
	srv.alive(t)
}

// TestLabAcceptTimeout: a half-open connect is dropped after AcceptTimeout
// (the listener says so), and the listener serves the next sender.
func TestLabAcceptTimeout(t *testing.T) {
	env := labtest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const port = 18651
	a := addr(env.Addr, port)
	logs := make(chan string, 4096)
	cfg := Options{AcceptTimeout: 2 * time.Second, Logf: func(f string, args ...any) {
		select {
		case logs <- fmt.Sprintf(f, args...):
		default:
		}
	}}
	serve(t, ctx, port, cfg, labReceiver(t.TempDir()))
	ch, err := cm.OpenChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	halfOpen(t, ctx, ch, a)
	timeout := time.After(60 * time.Second)
wait:
	for {
		select {
		case l := <-logs:
			if strings.Contains(l, "did not complete the connection within 2s") {
				break wait
			}
		case <-timeout:
			t.Fatal("the half-open connect was not dropped within 60s (AcceptTimeout 2s)")
		}
	}
	src := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(src, labContent("f", 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := sendFile(ctx, a, &transfer.Sender{}, src)
	if err != nil || !rep.OK(1) {
		t.Fatalf("sender after the half-open connect was dropped: %v", err)
	}
}
