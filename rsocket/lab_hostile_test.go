// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
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
// own beyond serving it; with one node all of it shares the vCPUs. A
// second honest client on the server's node (its own address) is timed
// the same way, away from the attackers' CPU; each phase logs both nodes'
// CPU use and what the Listener did meanwhile.
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
	e.RunRoles(t, func() error { return hostileServe(t, ctx, l, e.Addr+":"+port) }, func() error { return hostileClient(t, ctx, addr) })
}

// hostileGet gets path from the HTTP server at addr with c, returning the
// body.
func hostileGet(ctx context.Context, c *http.Client, addr, path string) (string, error) {
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

// hostileHTTPClient is an HTTP client over rsockets that dials for every
// request.
func hostileHTTPClient(waitForListener bool) *http.Client {
	d := &Dialer{Timeout: 20 * time.Second, WaitForListener: waitForListener}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// honestRounds times 5 honest requests (each dialing) with c to addr,
// every one of which must be served, and returns the median.
func honestRounds(ctx context.Context, t *testing.T, c *http.Client, addr, what string) (time.Duration, error) {
	const rounds = 5
	var times []time.Duration
	for range rounds {
		begin := time.Now()
		body, err := hostileGet(ctx, c, addr, "/")
		if err != nil || body != "ok" {
			return 0, fmt.Errorf("%s: body %q, %v", what, body, err)
		}
		times = append(times, time.Since(begin))
	}
	slices.Sort(times)
	t.Logf("%s: %v (median %v)", what, times, times[rounds/2])
	return times[rounds/2], nil
}

// hostileServe runs http.Serve on l until the client's request for
// /done, then checks that l's Stats counted the attack. Besides "/" it
// serves /cpu (this node's CPU times and l's Stats) and /measure (times
// honest requests from this node to addr, its own address).
func hostileServe(t *testing.T, ctx context.Context, l *Listener, addr string) error {
	done := make(chan struct{})
	var once sync.Once
	local := hostileHTTPClient(false)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/cpu", func(w http.ResponseWriter, r *http.Request) {
		c, err := readCPUTimes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s := l.Stats()
		fmt.Fprintf(w, "%d %d %d %d %d %d %d %d %d", c.busy, c.steal, c.total, c.utime, c.stime, s.Accepted, s.Refused, s.Dropped, s.TimedOut)
	})
	mux.HandleFunc("/measure", func(w http.ResponseWriter, r *http.Request) {
		med, err := honestRounds(r.Context(), t, local, addr, "server node's own client "+r.URL.Query().Get("what"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%d", med)
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
	// Shutdown, not Close: /done's response may not be flushed yet, and
	// Close would cut its connection (the client saw EOF on one node).
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		t.Logf("shutdown: %v", err)
	}
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

// serverSample is what /cpu reports: the server node's CPU times and its
// Listener's counters.
type serverSample struct {
	cpu cpuTimes
	st  ListenerStats
}

// hostileClient measures honest requests to addr, unloaded and under
// attack, from this node and (through /measure) from the server's, then
// asks the server for /done.
func hostileClient(t *testing.T, ctx context.Context, addr string) error {
	// The first request waits for the server (the other node may still
	// be starting); the measured ones do not.
	if body, err := hostileGet(ctx, hostileHTTPClient(true), addr, "/"); err != nil || body != "ok" {
		return fmt.Errorf("first request: body %q, %v", body, err)
	}
	client := hostileHTTPClient(false)
	ctl := hostileHTTPClient(false) // unmeasured requests
	// sample takes both nodes' CPU times (the server's through /cpu; with
	// one node both are this one's), to tell where a slowdown's time went.
	sample := func() (s serverSample, c cpuTimes, err error) {
		body, err := hostileGet(ctx, ctl, addr, "/cpu")
		if err == nil {
			_, err = fmt.Sscanf(body, "%d %d %d %d %d %d %d %d %d", &s.cpu.busy, &s.cpu.steal, &s.cpu.total, &s.cpu.utime, &s.cpu.stime,
				&s.st.Accepted, &s.st.Refused, &s.st.Dropped, &s.st.TimedOut)
		}
		if err != nil {
			return s, c, fmt.Errorf("the server's CPU times: %q, %v", body, err)
		}
		c, err = readCPUTimes()
		return s, c, err
	}
	// measure times honest requests from this node, then from the
	// server's, and logs what both nodes did meanwhile; it returns both
	// medians.
	measure := func(what string) (here, there time.Duration, err error) {
		s0, c0, err := sample()
		if err != nil {
			return 0, 0, err
		}
		if here, err = honestRounds(ctx, t, client, addr, what); err != nil {
			return 0, 0, err
		}
		body, err := hostileGet(ctx, ctl, addr, "/measure?what="+url.QueryEscape(what))
		var ns int64
		if err == nil {
			_, err = fmt.Sscanf(body, "%d", &ns)
		}
		if err != nil {
			return 0, 0, fmt.Errorf("%s: the server node's own client: %q, %v", what, body, err)
		}
		there = time.Duration(ns)
		s1, c1, err := sample()
		if err != nil {
			return 0, 0, err
		}
		t.Logf("%s: median %v from the client node, %v from the server node's own client; server node %s, listener +%d accepted +%d refused +%d dropped (+%d timed out); client node %s",
			what, here, there, s1.cpu.since(s0.cpu), s1.st.Accepted-s0.st.Accepted, s1.st.Refused-s0.st.Refused,
			s1.st.Dropped-s0.st.Dropped, s1.st.TimedOut-s0.st.TimedOut, c1.since(c0))
		return here, there, nil
	}
	ratio := func(what string, here, there, unHere, unThere time.Duration) {
		t.Logf("%s: honest request %.2fx its unloaded time from the client node (%v vs %v), %.2fx from the server node (%v vs %v)",
			what, float64(here)/float64(unHere), here, unHere, float64(there)/float64(unThere), there, unThere)
	}
	// Warm up (the first connections map the device), then measure.
	if _, _, err := measure("warm-up"); err != nil {
		return err
	}
	unHere, unThere, err := measure("unloaded")
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
	here, there, err := measure("under 64 half-open requesters")
	if err != nil {
		return err
	}
	ratio(fmt.Sprintf("under 64 half-open requesters (%d connects)", halfOpens.Load()), here, there, unHere, unThere)
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
	g0 := garbage.Load()
	begin := time.Now()
	here, there, err = measure("under 64 half-open + 64 garbage requesters")
	rate := float64(garbage.Load()-g0) / time.Since(begin).Seconds()
	stop()
	wg.Wait()
	if err != nil {
		return err
	}
	ratio(fmt.Sprintf("under 64 half-open + 64 garbage requesters (%d connects, %d garbage requests, %.0f/s while measured)",
		halfOpens.Load(), garbage.Load(), rate), here, there, unHere, unThere)
	if p := halfOpenErr.Load(); p != nil {
		t.Logf("a half-open connect failed: %v", *p)
	}
	if _, _, err := measure("after the attack"); err != nil {
		return err
	}
	stats, err := hostileGet(ctx, ctl, addr, "/done")
	if err != nil {
		return fmt.Errorf("/done: %w", err)
	}
	t.Logf("listener (as the server saw it at /done): %s", stats)
	return nil
}

// cpuTimes is a node's CPU time in clock ticks over all its CPUs
// (/proc/stat): busy (user, nice, system, irq, softirq, where rxe runs),
// steal (taken by the host) and total; and this process's own
// (/proc/self/stat).
type cpuTimes struct{ busy, steal, total, utime, stime uint64 }

func readCPUTimes() (cpuTimes, error) {
	var c cpuTimes
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return c, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, v := range f[1:9] { // user nice system idle iowait irq softirq steal (guest is in user)
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("/proc/stat: %q: %v", line, err)
		}
		c.total += n
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			c.steal += n
		default:
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
	if c.utime, err = strconv.ParseUint(f[11], 10, 64); err == nil {
		c.stime, err = strconv.ParseUint(f[12], 10, 64)
	}
	if err != nil {
		return c, fmt.Errorf("/proc/self/stat: %v", err)
	}
	return c, nil
}

// since says how busy the node was between b and c, and how much CPU
// this process used (ticks of 10 ms, USER_HZ).
func (c cpuTimes) since(b cpuTimes) string {
	pct := func(n uint64) float64 {
		if c.total <= b.total {
			return 0
		}
		return 100 * float64(n) / float64(c.total-b.total)
	}
	tick := func(n uint64) time.Duration { return time.Duration(n) * 10 * time.Millisecond }
	return fmt.Sprintf("busy %.0f%% (steal %.0f%%), test process %v user + %v system",
		pct(c.busy-b.busy), pct(c.steal-b.steal), tick(c.utime-b.utime), tick(c.stime-b.stime))
}
