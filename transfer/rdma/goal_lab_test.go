//go:build linux

package rdma

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/transfer"
)

// procKB returns a /proc/self/status field (VmHWM, VmRSS) in kB.
func procKB(t *testing.T, field string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	kb := -1
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			fmt.Sscan(string(v), &kb)
		}
	}
	if kb < 0 {
		t.Fatalf("no %s in /proc/self/status", field)
	}
	return kb
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestLabGoal is issue 17's goal: with 64 half-open and 64 silent
// connections held against it, and one peer flooding FILEs, an
// authenticated sender's transfer completes in under twice its unloaded
// time, and the receiver's peak RSS stays under 64 MiB.
//
// The receiver's caps admit the load (the listener holds 80 setups, the
// receiver 72 connections, 68 of them in their handshake, both timeouts a
// minute), so every attacker is held for the whole measurement rather than
// turned away: the test fails if any of them is dropped before the end.
// The times are medians of 3 unloaded and 3 loaded transfers of 3 MiB (the
// ratio is a property of the accept path, which a stalled loop makes
// 100×, not a benchmark). The RSS bound is on the whole test process's
// VmHWM: receiver, senders and attackers together (with one node all run
// here), and whatever tests ran before in the same binary, so it bounds
// the receiver's peak from above.
//
// It runs with one node only: with two, each guest would run it at once on
// the two shared host cores, and the ratio would measure that.
func TestLabGoal(t *testing.T) {
	env := labtest.Require(t)
	if env.TwoNodes {
		t.Skip("runs in the one-node lab (both guests would run it at once on shared cores)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 85*time.Second)
	defer cancel()
	const (
		port      = 18660
		halfOpens = 64
		silents   = 64
		size      = 3 << 20
		runs      = 3
		limitKB   = 64 << 10
	)
	a := addr(env.Addr, port)
	key := []byte("issue 17's key, 32 bytes long ..")
	dst := t.TempDir()
	var files atomic.Int64
	r := &transfer.Receiver{
		Dir: dst, Force: true, PSK: key, Slots: 4, SlotSize: 64 << 10,
		MaxConns: 72, MaxHandshakes: 68,
		HandshakeTimeout: time.Minute, IdleTimeout: time.Minute,
		OnFile: func(transfer.FileResult) { files.Add(1) },
	}
	srv := serve(t, ctx, port, Config{AcceptTimeout: time.Minute, MaxPendingAccepts: 80}, r)

	src := t.TempDir()
	file := filepath.Join(src, "goal")
	data := labContent("goal", size)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	conns := 0 // connections the receiver has ended
	timed := func(what string) []time.Duration {
		var d []time.Duration
		for i := range runs {
			start := time.Now()
			rep, err := sendFile(ctx, a, &transfer.Sender{PSK: key}, file)
			el := time.Since(start)
			if err != nil || !rep.OK(1) {
				t.Fatalf("%s transfer %d: %v %+v", what, i, err, rep)
			}
			conns += 1 + rep.BusyRetries
			if b, err := os.ReadFile(filepath.Join(dst, "goal")); err != nil || !bytes.Equal(b, data) {
				t.Fatalf("%s transfer %d: %d bytes arrived (%v), want the %d sent", what, i, len(b), err, size)
			}
			d = append(d, el)
		}
		return d
	}
	unloaded := timed("unloaded")
	for i := range conns {
		if _, err := srv.waitConn(t, i+1); err != nil {
			t.Fatalf("receiver, unloaded connection %d: %v", i+1, err)
		}
	}

	// The load. Half-open connects: CONNECT_RESPONSE, never an RTU.
	ch, err := cm.OpenChannel()
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	for range halfOpens {
		halfOpen(t, ctx, ch, a)
	}
	// Silent peers: connected; every other one sends a HELLO asking for
	// the key's handshake, then nothing. Small queues: they are attackers
	// in this process, not what is measured.
	hello, err := transfer.Encode(&transfer.Hello{Role: transfer.RoleSender, Flags: transfer.HelloPSK, MinVersion: transfer.ProtocolVersion, MaxVersion: transfer.ProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	var silent []*Transport
	defer func() {
		for _, tr := range silent {
			tr.Close()
		}
	}()
	for i := range silents {
		tr, err := Dial(ctx, a, Config{MaxSlots: 1})
		if err != nil {
			t.Fatalf("silent peer %d: %v", i, err)
		}
		silent = append(silent, tr)
		if i%2 == 0 {
			(&rawRDMA{t: t, ctx: ctx, tr: tr}).send(hello)
		}
	}
	// The flooder: an authenticated peer sending FILE after FILE (200
	// empty files a connection, connection after connection) until the
	// loaded transfers are done.
	flood := filepath.Join(src, "flood")
	os.MkdirAll(flood, 0o755)
	for i := range 200 {
		os.WriteFile(filepath.Join(flood, fmt.Sprintf("f%03d", i)), nil, 0o600)
	}
	fctx, stopFlood := context.WithCancel(ctx)
	var fwg sync.WaitGroup
	var floodConns int
	var floodErr error
	fwg.Add(1)
	go func() {
		defer fwg.Done()
		for fctx.Err() == nil {
			rep, err := sendFile(fctx, a, &transfer.Sender{PSK: key}, flood)
			if fctx.Err() != nil {
				if rep != nil {
					floodConns += 1 + rep.BusyRetries
				}
				return
			}
			if err != nil {
				floodErr = err
				return
			}
			floodConns += 1 + rep.BusyRetries
		}
	}()
	defer func() { stopFlood(); fwg.Wait() }()
	// Measure only once the flood is under way.
	for deadline := time.Now().Add(20 * time.Second); files.Load() < 300; {
		if time.Now().After(deadline) {
			t.Fatalf("the flooder got %d files in within 20s", files.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	rss0 := procKB(t, "VmRSS")
	f0 := files.Load()
	loaded := timed("loaded")
	flooded := files.Load() - f0 - runs
	rss1 := procKB(t, "VmRSS")
	stopFlood()
	fwg.Wait()
	if floodErr != nil {
		t.Errorf("flooder: %v", floodErr)
	}
	if flooded <= 0 {
		t.Errorf("the flooder got no file in during the loaded transfers")
	}
	// Every attacker was held through the measurement: no connection has
	// ended but the timed ones and the flooder's (the receiver ends a
	// silent one only at its timeouts, a minute on).
	srv.mu.Lock()
	ended, errs := len(srv.errs), slices.Clone(srv.errs)
	srv.mu.Unlock()
	if ended > conns+floodConns {
		t.Errorf("%d connections ended, want at most the %d timed and %d flooding: %v", ended, conns, floodConns, errs)
	}
	for i, err := range errs[:min(conns, len(errs))] {
		if err != nil {
			t.Errorf("receiver, connection %d: %v", i+1, err)
		}
	}
	srv.alive(t)

	mu, ml := median(unloaded), median(loaded)
	ratio := float64(ml) / float64(mu)
	hwm := procKB(t, "VmHWM")
	t.Logf("%d MiB with a key: unloaded %v (median %v), under %d half-open + %d silent + a flooder (%d files in meanwhile) %v (median %v): %.2f×",
		size>>20, unloaded, mu, halfOpens, silents, flooded, loaded, ml, ratio)
	t.Logf("process RSS %d kB before and %d kB after the loaded transfers, peak (VmHWM) %d kB", rss0, rss1, hwm)
	if ratio >= 2 {
		t.Errorf("loaded transfer took %.2f× the unloaded one (median %v vs %v), want under 2×", ratio, ml, mu)
	}
	if hwm >= limitKB {
		t.Errorf("process peak RSS %d kB, want under %d kB (64 MiB)", hwm, limitKB)
	}
}
