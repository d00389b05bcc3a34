// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/uverbs"
)

var halfOpenQPN atomic.Uint32

// halfOpenConnect sends an rsocket's connection request to addr from a raw
// rdma_cm ID and waits for the listener's CONNECT_RESPONSE, then never
// sends the RTU: a half-open connect. Closing the returned ID rejects the
// connection (the CM's REJ, reason 28). The caller must Close the ID and
// the Channel.
func halfOpenConnect(ctx context.Context, addr string) (*cm.Channel, *cm.ID, error) {
	dst, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, nil, err
	}
	ch, err := cm.OpenChannel()
	if err != nil {
		return nil, nil, err
	}
	id, err := ch.CreateID(cm.PortSpaceTCP)
	if err != nil {
		ch.Close()
		return nil, nil, err
	}
	fail := func(err error) (*cm.Channel, *cm.ID, error) {
		id.Close()
		ch.Close()
		return nil, nil, err
	}
	if err := id.ResolveAddr(ctx, netip.AddrPort{}, dst, 2*time.Second); err != nil {
		return fail(err)
	}
	if err := id.ResolveRoute(ctx, 2*time.Second); err != nil {
		return fail(err)
	}
	var cfg config
	if cfg, err = (&Options{}).config(); err != nil {
		return fail(err)
	}
	data := make([]byte, connDataLen)
	d := ownConnData(&memory{}, &cfg)
	d.marshal(data)
	// A QP number nobody owns (the listener's QP never sends to it), a
	// new one each time: the CM rejects a request from a QP it already
	// has a connection with (IB_CM_REJ_STALE_CONN).
	qpn := 0x800000 | halfOpenQPN.Add(1)&0x7fffff
	if err := id.Connect(cm.ConnParam{PrivateData: data, QPNum: qpn, RetryCount: 7, RNRRetryCount: 7}); err != nil {
		return fail(err)
	}
	ev, err := id.WaitEvent(ctx)
	if err != nil {
		return fail(err)
	}
	switch ev.Type {
	case cm.EventConnectResponse:
		return ch, id, nil
	case cm.EventRejected:
		if cm.RejectReason(ev.Status) == cm.RejInvalidServiceID {
			return fail(fmt.Errorf("half-open connect: %w", cm.ErrNoListener))
		}
	}
	return fail(fmt.Errorf("half-open connect: unexpected event %v (status %d)", ev.Type, ev.Status))
}

// echoAll writes back what c reads, until its end of stream.
func echoAll(c *Conn) error {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestLabHalfOpenDoesNotBlock: a requester that receives the listener's
// CONNECT_RESPONSE and never sends its RTU does not hold up an honest
// rsocket client behind it (served within 2 s), and when it finally
// rejects, the listener goes on serving.
func TestLabHalfOpenDoesNotBlock(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 90*time.Second)
	port := labPort(80)
	var l *Listener
	if e.serves {
		lc := ListenConfig{AcceptTimeout: time.Minute, Options: Options{Logf: t.Logf}}
		var err error
		if l, err = lc.ListenRSocket(ctx, "tcp", e.Addr+":"+port); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	e.RunRoles(t, func() error {
		for i := range 2 {
			c, err := l.AcceptRSocket(ctx)
			if err != nil {
				return fmt.Errorf("accept %d: %w", i, err)
			}
			err = echoAll(c) // until the client closes its side
			c.Close()
			if err != nil {
				return fmt.Errorf("echo %d: %w", i, err)
			}
		}
		for l.Stats().Dropped == 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("the half-open requester's reject was not counted: %+v", l.Stats())
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Logf("listener: %+v", l.Stats())
		return nil
	}, func() error {
		addr := e.Peer + ":" + port
		var id *cm.ID
		ch, err := labtest.Retry(ctx, func(err error) bool { return errors.Is(err, cm.ErrNoListener) },
			func() (ch *cm.Channel, err error) {
				ch, id, err = halfOpenConnect(ctx, addr)
				return ch, err
			})
		if err != nil {
			return err
		}
		defer ch.Close()
		defer id.Close()
		echo := func(what string) error {
			begin := time.Now()
			d := Dialer{Timeout: 10 * time.Second}
			c, err := d.DialRSocket(ctx, "tcp", addr)
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			defer c.Close()
			msg := []byte("hello " + what)
			if _, err := c.Write(msg); err != nil {
				return fmt.Errorf("%s: write: %w", what, err)
			}
			c.CloseWrite()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			if err != nil || string(got) != string(msg) {
				return fmt.Errorf("%s: echo %q, %v", what, got, err)
			}
			took := time.Since(begin)
			t.Logf("%s: dial and echo in %v", what, took.Round(time.Millisecond))
			if took > 2*time.Second {
				return fmt.Errorf("%s: served in %v behind a half-open connect, want < 2 s", what, took)
			}
			return nil
		}
		if err := echo("honest client behind a half-open connect"); err != nil {
			return err
		}
		id.Close() // the half-open requester gives up: REJ, reason 28
		time.Sleep(200 * time.Millisecond)
		return echo("honest client after the half-open requester's reject")
	})
}

// TestLabPeerSendsSEND: a peer that connects with an rsocket's connection
// data and then sends a 16-byte SEND (rsockets send only RDMA WRITE WITH
// IMMEDIATE, into receives of 0 bytes) makes the rsocket fail with
// ErrProtocol saying what the peer did, not with rxe's
// IBV_WC_LOC_QP_OP_ERR blaming our own QP.
func TestLabPeerSendsSEND(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 60*time.Second)
	port := labPort(81)
	var l *Listener
	if e.serves {
		l = listenLab(t, ctx, e, port, Options{})
	}
	e.RunRoles(t, func() error {
		c, err := l.AcceptRSocket(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = c.Read(make([]byte, 64))
		t.Logf("read: %v", err)
		if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "larger than the 0-byte receive") {
			return fmt.Errorf("read after the peer's SEND: %v; want ErrProtocol naming the peer's SEND", err)
		}
		return nil
	}, func() error {
		cfg, err := (&Options{}).config()
		if err != nil {
			return err
		}
		data := make([]byte, connDataLen)
		d := ownConnData(&memory{}, &cfg)
		d.marshal(data)
		c, err := labtest.Retry(ctx, func(err error) bool { return errors.Is(err, cm.ErrNoListener) },
			func() (*cm.Conn, error) { return cm.Dial(ctx, e.Peer+":"+port, &cm.Options{PrivateData: data}) })
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 16)
		mr, err := c.RegMR(buf, uverbs.AccessLocalWrite)
		if err != nil {
			return err
		}
		if err := c.QP().PostSend(uverbs.SendWR{ID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{mr.SGE(0, len(buf))}}); err != nil {
			return err
		}
		wcs := make([]uverbs.WC, 4)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n, _, err := c.Wait(wctx, wcs, c.SendCQ())
		if err == nil && n > 0 {
			t.Logf("our SEND completed: %v", wcs[0].Status)
		} else {
			t.Logf("waiting for our SEND: %v", err)
		}
		return nil
	})
}

// TestLabHTTPUnderHostileLoad measures an honest HTTP client's requests
// (dial included) to http.Serve on a Listener, unloaded and while 64
// half-open connects and 64 requesters sending garbage connection data
// keep at it; it logs the ratio (a lab's timing is no assertion) and
// checks every honest request is served, http.Serve keeps serving and the
// Listener's Stats count the garbage refused and the half-open dropped.
// With two nodes the server runs on node 0 and the attackers and the
// honest client on node 1, so the attack costs the server no CPU of its
// own beyond serving it; with one node all of it shares the vCPUs.
func TestLabHTTPUnderHostileLoad(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 180*time.Second)
	port := labPort(82)
	addr := e.Peer + ":" + port
	var l *Listener
	if e.serves {
		var lc ListenConfig
		var err error
		if l, err = lc.ListenRSocket(ctx, "tcp", e.Addr+":"+port); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
	e.RunRoles(t, func() error { return hostileServe(t, ctx, l) }, func() error { return hostileClient(t, ctx, addr) })
}

// hostileServe runs http.Serve on l until the client's request for
// /done, then checks that l's Stats counted the attack.
func hostileServe(t *testing.T, ctx context.Context, l *Listener) error {
	done := make(chan struct{})
	var once sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/cpu", func(w http.ResponseWriter, r *http.Request) {
		c, err := readCPUTimes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%d %d %d", c.busy, c.total, c.self)
	})
	mux.HandleFunc("/done", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%+v", l.Stats())
		once.Do(func() { close(done) })
	})
	srv := &http.Server{Handler: mux}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return fmt.Errorf("http.Serve stopped under attack: %v; listener %+v", err, l.Stats())
	case <-ctx.Done():
		srv.Close()
		<-served
		return fmt.Errorf("the client never asked for /done: %w; listener %+v", ctx.Err(), l.Stats())
	case <-done:
	}
	// The half-open requesters' rejects may still be on their way.
	var s ListenerStats
	for begin := time.Now(); ; {
		s = l.Stats()
		if s.Refused > 0 && s.Dropped > 0 || time.Since(begin) > 10*time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("listener after the attack: %+v", s)
	srv.Close()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http.Serve: %v", err)
	}
	if s.Refused == 0 || s.Dropped == 0 {
		return fmt.Errorf("listener %+v: want the garbage requests Refused and the half-open connects Dropped", s)
	}
	if s.Failed != 0 {
		return fmt.Errorf("listener %+v: a requester's failure was counted as the listener's own (Failed)", s)
	}
	return nil
}

// hostileClient measures honest requests to addr, unloaded and under
// attack, then asks the server for /done.
func hostileClient(t *testing.T, ctx context.Context, addr string) error {
	get := func(c *http.Client, path string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
		if err != nil {
			return "", err
		}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(body), err
	}
	newClient := func(d *Dialer) *http.Client {
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	}
	// The first request waits for the server (the other node may still
	// be starting); the measured ones do not.
	if body, err := get(newClient(&Dialer{Timeout: 20 * time.Second, WaitForListener: true}), "/"); err != nil || body != "ok" {
		return fmt.Errorf("first request: body %q, %v", body, err)
	}
	client := newClient(&Dialer{Timeout: 20 * time.Second})
	client0 := newClient(&Dialer{Timeout: 20 * time.Second}) // unmeasured requests
	// cpu samples both nodes' CPU times (the server's through /cpu; with
	// one node both are this one's), to tell where a slowdown's time went.
	cpu := func() (server, client cpuTimes, err error) {
		body, err := get(client0, "/cpu")
		if err == nil {
			_, err = fmt.Sscanf(body, "%d %d %d", &server.busy, &server.total, &server.self)
		}
		if err != nil {
			return server, client, fmt.Errorf("the server's CPU times: %q, %v", body, err)
		}
		client, err = readCPUTimes()
		return server, client, err
	}
	const rounds = 5
	measure := func(what string) (time.Duration, error) {
		s0, c0, err := cpu()
		if err != nil {
			return 0, err
		}
		var times []time.Duration
		for range rounds {
			begin := time.Now()
			body, err := get(client, "/")
			if err != nil || body != "ok" {
				return 0, fmt.Errorf("%s: body %q, %v", what, body, err)
			}
			times = append(times, time.Since(begin))
		}
		slices.Sort(times)
		t.Logf("%s: %v (median %v)", what, times, times[rounds/2])
		s1, c1, err := cpu()
		if err != nil {
			return 0, err
		}
		t.Logf("%s: server %s; client %s", what, s1.since(s0), c1.since(c0))
		return times[rounds/2], nil
	}
	// Warm up (the first connections map the device), then measure.
	if _, err := measure("warm-up"); err != nil {
		return err
	}
	unloaded, err := measure("unloaded")
	if err != nil {
		return err
	}

	actx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	var halfOpens, garbage atomic.Int64
	var halfOpenErr atomic.Pointer[error]
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Half-open connects, again as the listener evicts or drops
			// each, at most 20 each.
			for i := 0; i < 20 && actx.Err() == nil; i++ {
				ch, id, err := halfOpenConnect(actx, addr)
				if err != nil {
					if actx.Err() == nil {
						halfOpenErr.Store(&err)
					}
					continue
				}
				halfOpens.Add(1)
				select {
				case <-actx.Done():
				case <-id.Disconnected():
				case <-time.After(15 * time.Second):
				}
				id.Close()
				ch.Close()
			}
		}()
	}
	time.Sleep(2 * time.Second) // let the half-open connects build up
	halfOnly, err := measure("under 64 half-open requesters")
	if err != nil {
		return err
	}
	t.Logf("honest request under 64 half-open requesters: %v vs %v unloaded: %.2fx; %d half-open connects",
		halfOnly, unloaded, float64(halfOnly)/float64(unloaded), halfOpens.Load())
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &cm.Options{PrivateData: []byte("GET / HTTP/1.1 garbage, not rs_conn_data")}
			for i := 0; i < 200 && actx.Err() == nil; i++ {
				if c, err := cm.Dial(actx, addr, o); err == nil {
					c.Close()
				}
				garbage.Add(1)
			}
		}()
	}
	time.Sleep(time.Second) // let the garbage build up
	loaded, err := measure("under 64 half-open + 64 garbage requesters")
	stop()
	wg.Wait()
	if err != nil {
		return err
	}
	t.Logf("honest request under attack: %v vs %v unloaded: %.2fx; %d half-open connects, %d garbage requests",
		loaded, unloaded, float64(loaded)/float64(unloaded), halfOpens.Load(), garbage.Load())
	if p := halfOpenErr.Load(); p != nil {
		t.Logf("a half-open connect failed: %v", *p)
	}
	if _, err := measure("after the attack"); err != nil {
		return err
	}
	stats, err := get(client, "/done")
	if err != nil {
		return fmt.Errorf("/done: %w", err)
	}
	t.Logf("listener (as the server saw it at /done): %s", stats)
	return nil
}

// cpuTimes is a node's CPU time in clock ticks: busy (all but idle and
// iowait; softirq, where rxe runs, included) and total, over all its
// CPUs (/proc/stat), and this process's own (utime+stime, /proc/self/stat).
type cpuTimes struct{ busy, total, self uint64 }

func readCPUTimes() (cpuTimes, error) {
	var c cpuTimes
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return c, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("/proc/stat: %q: %v", line, err)
		}
		c.total += n
		if i != 3 && i != 4 { // idle, iowait
			c.busy += n
		}
	}
	if b, err = os.ReadFile("/proc/self/stat"); err != nil {
		return c, err
	}
	i := strings.LastIndexByte(string(b), ')')
	f = strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return c, fmt.Errorf("/proc/self/stat: unexpected %q", b)
	}
	for _, v := range f[11:13] { // utime, stime
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("/proc/self/stat: %v", err)
		}
		c.self += n
	}
	return c, nil
}

// since says how busy the node was between b and c, and how much CPU
// this process used (ticks of 10 ms, USER_HZ).
func (c cpuTimes) since(b cpuTimes) string {
	busy := 0.0
	if c.total > b.total {
		busy = 100 * float64(c.busy-b.busy) / float64(c.total-b.total)
	}
	return fmt.Sprintf("node busy %.0f%%, process %v CPU", busy, time.Duration(c.self-b.self)*10*time.Millisecond)
}
