// Copyright 2026 The rdmago Authors.

package grpcecho_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/examples/grpcecho"
	"github.com/rdmago/rdmago/rsocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Lab tests: gRPC-Go and net/rpc over rsocket on real rxe in the rdmalab
// guests (go run ./cmd/rdmalab test --nodes 2 ./examples/...). With two
// nodes node 0 serves and node 1 calls; with one both run here.

// labEnv is what the lab tells a guest through its RDMALAB_* variables
// (rdmago's own tests read them through an internal package, which this
// module cannot import).
type labEnv struct {
	node, addr, peer, dev string
	twoNodes              bool
}

func requireLab(t testing.TB) labEnv {
	t.Helper()
	devs, _ := filepath.Glob("/dev/infiniband/uverbs*")
	e := labEnv{
		node:     os.Getenv("RDMALAB_NODE"),
		addr:     os.Getenv("RDMALAB_ADDR"),
		peer:     os.Getenv("RDMALAB_PEER"),
		dev:      os.Getenv("RDMALAB_DEV"),
		twoNodes: os.Getenv("RDMALAB_NODES") == "2",
	}
	switch {
	case e.node == "":
		t.Skip("needs the RDMA lab: run it with `go run ./cmd/rdmalab test --nodes 2 ./examples/...` from rdmago's root")
	case len(devs) == 0:
		t.Fatal("inside the lab but no /dev/infiniband/uverbs* device: the guest's rxe setup failed")
	case e.addr == "" || e.dev == "":
		t.Fatalf("inside the lab but RDMALAB_ADDR or RDMALAB_DEV is unset: %+v", e)
	}
	if e.peer == "" {
		e.peer = e.addr
	}
	return e
}

func (e labEnv) serves() bool { return !e.twoNodes || e.node == "0" }

// runRoles runs serve and client: with one node both (serve in a
// goroutine), with two only this node's side.
func (e labEnv) runRoles(t testing.TB, serve, client func() error) {
	t.Helper()
	if e.twoNodes {
		f := client
		if e.serves() {
			f = serve
		}
		if err := f(); err != nil {
			t.Fatal(err)
		}
		return
	}
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	if err := client(); err != nil {
		t.Error(err)
	}
	if err := <-errc; err != nil {
		t.Error(err)
	}
}

const labPortBase = 18900

func labAddr(host string, n int) string {
	return net.JoinHostPort(host, strconv.Itoa(labPortBase+n))
}

func labCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// dialer waits for the other node's listener: the client may start first.
var dialer = &rsocket.Dialer{WaitForListener: true}

func newClient(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpcecho.WithRSocket(dialer), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

// byeServer is the echo service that counts the clients' goodbyes: an Echo
// of "bye" is a client saying it is done.
type byeServer struct {
	grpcecho.Service
	bye chan struct{}
}

func (s *byeServer) Echo(ctx context.Context, in []byte) ([]byte, error) {
	if string(in) == "bye" {
		s.bye <- struct{}{}
	}
	return in, nil
}

func bye(ctx context.Context, cc *grpc.ClientConn) error {
	if _, err := grpcecho.Call(ctx, cc, []byte("bye")); err != nil {
		return fmt.Errorf("bye: %w", err)
	}
	return nil
}

// serveUntilBye serves the echo service on an rsocket listener at addr
// until n clients said bye, then stops gracefully.
func serveUntilBye(ctx context.Context, addr string, n int) error {
	l, err := rsocket.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	srv := &byeServer{bye: make(chan struct{}, n)}
	s := grpc.NewServer()
	grpcecho.Register(s, srv)
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	return waitByes(ctx, s, served, srv.bye, n)
}

func waitByes(ctx context.Context, s *grpc.Server, served chan error, byes chan struct{}, n int) error {
	for i := 0; i < n; i++ {
		select {
		case <-byes:
		case err := <-served:
			return fmt.Errorf("serve stopped after %d of %d clients: %v", i, n, err)
		case <-ctx.Done():
			s.Stop()
			return fmt.Errorf("%d of %d clients said bye: %w", i, n, ctx.Err())
		}
	}
	stop := time.AfterFunc(10*time.Second, s.Stop) // a client that never closes
	s.GracefulStop()
	stop.Stop()
	return <-served
}

// callN makes n unary calls of random sizes up to max, each checked by
// content.
func callN(ctx context.Context, cc *grpc.ClientConn, seed uint64, n, max int) error {
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range n {
		in := make([]byte, r.IntN(max+1))
		fill(in, seed<<32|uint64(i), 0)
		out, err := grpcecho.Call(ctx, cc, in)
		if err != nil {
			return fmt.Errorf("call %d: %w", i, err)
		}
		if !bytes.Equal(out, in) {
			return fmt.Errorf("call %d: sent %d bytes, got %d others back", i, len(in), len(out))
		}
	}
	return nil
}

// fill fills b with the bytes at offset off of seed's stream, in which the
// 8 bytes at offset 8k are (k+1)·φ⁶⁴ XOR seed, little-endian: cheap to make
// and to check (the emulated guests hash at 30 MB/s), and a byte lost,
// repeated, reordered or changed shows.
func fill(b []byte, seed uint64, off int) {
	var w [8]byte
	for i := 0; i < len(b); {
		k := (off + i) / 8
		binary.LittleEndian.PutUint64(w[:], uint64(k+1)*0x9e3779b97f4a7c15^seed)
		i += copy(b[i:], w[(off+i)%8:])
	}
}

// streamCheck sends total bytes of seed's stream (fill) in messages of
// size msg over one Stream call while reading the echo, and checks every
// byte that comes back.
func streamCheck(ctx context.Context, cc *grpc.ClientConn, seed uint64, total, msg int) error {
	st, err := grpcecho.Stream(ctx, cc)
	if err != nil {
		return err
	}
	go func() {
		for n := 0; n < total; n += msg {
			b := make([]byte, min(msg, total-n))
			fill(b, seed, n)
			if st.Send(&b) != nil {
				return // Recv reports the stream's error
			}
		}
		st.CloseSend()
	}()
	want := make([]byte, msg)
	got := 0
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("stream, after %d bytes echoed: %w", got, err)
		}
		if len(*m) > len(want) {
			want = make([]byte, len(*m))
		}
		fill(want[:len(*m)], seed, got)
		if !bytes.Equal(*m, want[:len(*m)]) {
			return fmt.Errorf("stream: the %d bytes echoed at offset %d are not those sent", len(*m), got)
		}
		got += len(*m)
	}
	if got != total {
		return fmt.Errorf("stream: %d bytes echoed of %d", got, total)
	}
	return nil
}

// TestLoopbackTCP runs the lab tests' checks over TCP on the loopback, on
// any host: the service and the checks themselves, without RDMA.
func TestLoopbackTCP(t *testing.T) {
	ctx := labCtx(t, 60*time.Second)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	grpcecho.Register(s, grpcecho.Service{})
	go s.Serve(l)
	defer s.Stop()
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	if err := callN(ctx, cc, 1, 100, 4096); err != nil {
		t.Fatal(err)
	}
	if err := streamCheck(ctx, cc, 2, 4<<20+5, 256<<10); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 20)
	fill(b, 0, 0)
	c := make([]byte, 13)
	fill(c, 0, 7)
	if !bytes.Equal(b[7:], c) {
		t.Fatalf("fill at offset 7 = %x, want %x", c, b[7:])
	}
}

// TestLabGRPC: 1,000 unary calls of up to 4 KiB and a 64 MiB
// bidirectional stream (256 KiB messages), all checked by content, over
// one rsocket connection.
func TestLabGRPC(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 120*time.Second)
	e.runRoles(t, func() error {
		return serveUntilBye(ctx, labAddr(e.addr, 1), 1)
	}, func() error {
		cc := newClient(t, labAddr(e.peer, 1))
		defer cc.Close()
		begin := time.Now()
		if err := callN(ctx, cc, 1, 1000, 4096); err != nil {
			return err
		}
		t.Logf("1,000 unary calls in %v", time.Since(begin).Round(time.Millisecond))
		begin = time.Now()
		if err := streamCheck(ctx, cc, 2, 64<<20, 256<<10); err != nil {
			return err
		}
		t.Logf("64 MiB echoed through a stream in %v", time.Since(begin).Round(time.Millisecond))
		return bye(ctx, cc)
	})
}

// TestLabGRPCConcurrent: 64 clients at once, each on a connection of its
// own (unary calls and a stream), then 64 goroutines sharing one
// connection (64 concurrent streams multiplexed on it).
func TestLabGRPCConcurrent(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 120*time.Second)
	const clients = 64
	e.runRoles(t, func() error {
		return serveUntilBye(ctx, labAddr(e.addr, 2), clients+1)
	}, func() error {
		begin := time.Now()
		err := parallel(clients, func(i int) error {
			cc := newClient(t, labAddr(e.peer, 2))
			defer cc.Close()
			if err := callN(ctx, cc, uint64(i), 10, 1024); err != nil {
				return err
			}
			if err := streamCheck(ctx, cc, uint64(i), 64<<10, 8<<10); err != nil {
				return err
			}
			return bye(ctx, cc)
		})
		if err != nil {
			return err
		}
		t.Logf("%d clients, a connection each: %v", clients, time.Since(begin).Round(time.Millisecond))
		begin = time.Now()
		cc := newClient(t, labAddr(e.peer, 2))
		defer cc.Close()
		err = parallel(clients, func(i int) error {
			if err := callN(ctx, cc, uint64(i), 5, 1024); err != nil {
				return err
			}
			return streamCheck(ctx, cc, uint64(i), 64<<10, 8<<10)
		})
		if err != nil {
			return err
		}
		t.Logf("%d clients on one connection: %v", clients, time.Since(begin).Round(time.Millisecond))
		return bye(ctx, cc)
	})
}

// parallel runs f(0) ... f(n-1) at once and returns the first error.
func parallel(n int, f func(i int) error) error {
	errs := make(chan error, n)
	for i := range n {
		go func() {
			err := f(i)
			if err != nil {
				err = fmt.Errorf("client %d: %w", i, err)
			}
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// TestLabNetRPC: Go's own net/rpc over rsocket: 200 calls checked by
// content on one connection.
func TestLabNetRPC(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 120*time.Second)
	e.runRoles(t, func() error {
		l, err := rsocket.Listen(ctx, "tcp", labAddr(e.addr, 3))
		if err != nil {
			return err
		}
		defer l.Close()
		s := rpc.NewServer()
		if err := s.Register(new(Echo)); err != nil {
			return err
		}
		c, err := l.Accept()
		if err != nil {
			return err
		}
		s.ServeConn(c) // until the client closes
		return nil
	}, func() error {
		c, err := dialer.DialContext(ctx, "tcp", labAddr(e.peer, 3))
		if err != nil {
			return err
		}
		cl := rpc.NewClient(c)
		defer cl.Close()
		r := rand.New(rand.NewPCG(3, 1))
		for i := range 200 {
			in := make([]byte, r.IntN(4097))
			fill(in, uint64(i), 0)
			var out []byte
			if err := cl.Call("Echo.Echo", in, &out); err != nil {
				return fmt.Errorf("call %d: %w", i, err)
			}
			if !bytes.Equal(in, out) {
				return fmt.Errorf("call %d: sent %d bytes, got %d others back", i, len(in), len(out))
			}
		}
		return nil
	})
}

// Echo is the net/rpc service.
type Echo struct{}

// Echo returns in.
func (Echo) Echo(in []byte, out *[]byte) error {
	*out = in
	return nil
}

// The lab tests' child processes, which kill themselves mid-stream
// (SIGKILL: no goodbye on the wire, the kernel tears their RDMA objects
// down). $GRPCECHO_CHILD is "server ADDR" or "client ADDR".
const childEnv = "GRPCECHO_CHILD"

// killAfter is how many bytes a child receives in its stream before it
// kills itself.
const killAfter = 4 << 20

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		role, addr, _ := strings.Cut(spec, " ")
		err := errors.New("unknown role " + role)
		switch role {
		case "server":
			err = childServer(addr)
		case "client":
			err = childClient(addr)
		}
		fmt.Fprintf(os.Stderr, "%s child: %v\n", role, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// killer echoes until it has received killAfter bytes, then kills its
// process.
type killer struct{ grpcecho.Service }

func (killer) Stream(s grpc.BidiStreamingServer[[]byte, []byte]) error {
	n := 0
	for {
		m, err := s.Recv()
		if err != nil {
			return err
		}
		if n += len(*m); n >= killAfter {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if err := s.Send(m); err != nil {
			return err
		}
	}
}

func childServer(addr string) error {
	l, err := rsocket.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return err
	}
	s := grpc.NewServer()
	grpcecho.Register(s, killer{})
	return s.Serve(l)
}

func childClient(addr string) error {
	ctx := context.Background()
	cc, err := grpc.NewClient(addr, grpcecho.WithRSocket(dialer), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	st, err := grpcecho.Stream(ctx, cc)
	if err != nil {
		return err
	}
	go func() {
		b := make([]byte, 256<<10)
		for st.Send(&b) == nil {
		}
	}()
	n := 0
	for n < killAfter {
		m, err := st.Recv()
		if err != nil {
			return err
		}
		n += len(*m)
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	return nil
}

// runChild runs this test binary as a child in role, which must end
// killed by SIGKILL.
func runChild(ctx context.Context, role, addr string) error {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role+" "+addr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("the %s child did not kill itself mid-stream: %v", role, err)
}

// TestLabGRPCServerKilled: the server process is killed mid-stream; the
// client's call fails with Unavailable (the connection broke) well within
// its deadline, never hangs.
func TestLabGRPCServerKilled(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 120*time.Second)
	const deadline = 60 * time.Second
	e.runRoles(t, func() error {
		return runChild(ctx, "server", labAddr(e.addr, 4))
	}, func() error {
		cc := newClient(t, labAddr(e.peer, 4))
		defer cc.Close()
		cctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		begin := time.Now()
		err := streamCheck(cctx, cc, 4, 1<<30, 256<<10)
		if status.Code(err) != codes.Unavailable {
			return fmt.Errorf("stream to a server killed mid-stream: %v, want code Unavailable", err)
		}
		t.Logf("the call failed %v after it began: %v", time.Since(begin).Round(time.Millisecond), err)
		return nil
	})
}

// TestLabGRPCClientVanished: a client process is killed mid-stream; the
// server's stream ends with an error, and the connection's resources go:
// this process's cm_ids, QPs, CQs, MRs (rdma res), descriptors, pinned
// memory and goroutines are back where they were before it connected
// (and were above that while it was connected: the counts see it).
func TestLabGRPCClientVanished(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 120*time.Second)
	e.runRoles(t, func() error {
		l, err := rsocket.Listen(ctx, "tcp", labAddr(e.addr, 5))
		if err != nil {
			return err
		}
		srv := endSignal{started: make(chan struct{}, 1), measured: make(chan struct{}), ended: make(chan error, 1)}
		s := grpc.NewServer()
		grpcecho.Register(s, srv)
		served := make(chan error, 1)
		go func() { served <- s.Serve(l) }()
		defer s.Stop()
		base, err := readResources(ctx)
		if err != nil {
			return err
		}
		t.Logf("before: %v", base)
		// Only now may the client connect: it waits for a TCP
		// connection to the next port.
		if err := gate(ctx, labAddr(e.addr, 6)); err != nil {
			return err
		}
		select {
		case <-srv.started:
		case <-ctx.Done():
			return fmt.Errorf("no stream began: %w", ctx.Err())
		}
		during, err := readResources(ctx)
		close(srv.measured)
		if err != nil {
			return err
		}
		t.Logf("during the stream: %v", during)
		if during.within(base) {
			return fmt.Errorf("the counts do not see the connection: %v, before it: %v", during, base)
		}
		select {
		case err := <-srv.ended:
			if err == nil {
				return errors.New("the vanished client's stream ended without an error")
			}
			t.Logf("the stream ended: %v", err)
		case err := <-served:
			return fmt.Errorf("serve stopped: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("the vanished client's stream did not end: %w", ctx.Err())
		}
		var now resources
		for range 100 {
			if now, err = readResources(ctx); err != nil {
				return err
			}
			if now.within(base) {
				t.Logf("after: %v", now)
				return nil
			}
			time.Sleep(200 * time.Millisecond)
		}
		return fmt.Errorf("20 s after the client vanished: %v, before it connected: %v", now, base)
	}, func() error {
		c, err := dialTCP(ctx, labAddr(e.peer, 6))
		if err != nil {
			return fmt.Errorf("the gate: %w", err)
		}
		c.Close()
		return runChild(ctx, "client", labAddr(e.peer, 5))
	})
}

// gate listens on TCP at addr for one connection and closes both.
func gate(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer l.Close()
	c, err := l.Accept()
	if err != nil {
		return err
	}
	return c.Close()
}

// dialTCP dials TCP, again every 100 ms while the other node may not
// listen yet, until ctx ends.
func dialTCP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil || ctx.Err() != nil {
			return c, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// endSignal echoes; it says when a stream began, waits for measured
// before echoing, and reports how the stream ended.
type endSignal struct {
	grpcecho.Service
	started, measured chan struct{}
	ended             chan error
}

func (s endSignal) Stream(st grpc.BidiStreamingServer[[]byte, []byte]) error {
	s.started <- struct{}{}
	<-s.measured
	err := s.Service.Stream(st)
	s.ended <- err
	return err
}

// resources is what a connection holds in this process.
type resources struct {
	rdma             map[string]int // this process's objects by kind (rdma res)
	fds, vmPinKB, gs int
}

func (r resources) String() string {
	return fmt.Sprintf("%v, %d descriptors, VmPin %d kB, %d goroutines", r.rdma, r.fds, r.vmPinKB, r.gs)
}

func (r resources) within(base resources) bool {
	for k, n := range r.rdma {
		if n > base.rdma[k] {
			return false
		}
	}
	return r.fds <= base.fds && r.vmPinKB <= base.vmPinKB && r.gs <= base.gs
}

// readResources counts this process's RDMA objects with iproute2's
// rdma tool (an object's pid is the thread that created it: any of
// /proc/self/task), its descriptors, pinned memory and goroutines.
func readResources(ctx context.Context) (resources, error) {
	r := resources{rdma: map[string]int{}}
	for _, kind := range []string{"cm_id", "qp", "cq", "mr", "pd"} {
		out, err := rdmaTool(ctx, "-j", "resource", "show", kind).Output()
		if err != nil {
			return r, fmt.Errorf("rdma resource show %s: %w", kind, err)
		}
		if len(bytes.TrimSpace(out)) == 0 {
			continue // none at all
		}
		var objs []struct {
			PID *int `json:"pid"`
		}
		if err := json.Unmarshal(out, &objs); err != nil {
			return r, fmt.Errorf("rdma resource show %s: %w: %s", kind, err, out)
		}
		for _, o := range objs {
			if o.PID == nil {
				continue // the kernel's
			}
			if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", *o.PID)); err == nil {
				r.rdma[kind]++
			}
		}
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return r, err
	}
	r.fds = len(fds)
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return r, err
	}
	_, pin, ok := strings.Cut(string(status), "\nVmPin:")
	if !ok {
		return r, errors.New("no VmPin in /proc/self/status")
	}
	if r.vmPinKB, err = strconv.Atoi(strings.Fields(pin)[0]); err != nil {
		return r, err
	}
	r.gs = runtime.NumGoroutine()
	return r, nil
}

// rdmaTool runs iproute2's rdma: the lab guest's root is an initramfs with
// the host's root at /host, where the tool and its libraries are.
func rdmaTool(ctx context.Context, args ...string) *exec.Cmd {
	if _, err := os.Stat("/host/usr/bin/rdma"); err == nil {
		cmd := exec.CommandContext(ctx, "/usr/bin/rdma", args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: "/host"}
		cmd.Dir = "/"
		return cmd
	}
	return exec.CommandContext(ctx, "rdma", args...)
}
