// Copyright 2026 The rdmago Authors.

//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// The interop tests run rdmaping against rdma-core's C tools (rping,
// udaddy, rdma_server, rdma_client) in both roles. They need a real RDMA
// device and the C tools, so they run in the lab:
//
//	go run ./cmd/rdmalab test [--kernel 6.12] [--nodes 2] -run Interop -v ./cmd/rdmaping/
//
// There the C tools are the host's, run with `chroot /host` (install them
// on the host with `apt-get install rdmacm-utils`). With two nodes node 0
// plays the servers and node 1 the clients, over the RoCE v2 wire between
// the two kernels. scripts in interop.sh do the same with `rdmalab run`.

func TestMain(m *testing.M) {
	// The test binary doubles as rdmaping, so the interop tests can run
	// it as a separate process next to the C tool.
	if os.Getenv("RDMAPING_RUN_MAIN") == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// cTool returns the command line that runs rdma-core's tool name, or
// skips the test when it is not installed. In the lab's bare guests the
// tools are the host's, under /host: they run chrooted there (chrootPrefix
// marks that).
func cTool(t *testing.T, name string) []string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return []string{p}
	}
	for _, dir := range []string{"/usr/bin", "/usr/local/bin"} {
		if _, err := os.Stat(filepath.Join("/host", dir, name)); err == nil && os.Geteuid() == 0 {
			return []string{chrootPrefix, filepath.Join(dir, name)}
		}
	}
	labtest.Missing(t, "rdma-core's %s not found (install rdmacm-utils; in the lab the host's tools are used through /host)", name)
	return nil
}

// chrootPrefix starts a command line that runs inside /host.
const chrootPrefix = "@chroot:/host"

type role struct {
	twoNodes bool
	server   bool // this node runs the servers (node 0 with two nodes)
	client   bool
	addr     string // the server's address, as the client dials it
	bind     string // the server's own address
}

func labRole(t *testing.T) role {
	e := labtest.Require(t)
	r := role{twoNodes: os.Getenv("RDMALAB_NODES") == "2", addr: e.Peer, bind: e.Addr}
	r.server = !r.twoNodes || e.Node == "0"
	r.client = !r.twoNodes || e.Node == "1"
	if r.twoNodes && e.Node == "0" {
		r.addr = e.Addr
	}
	return r
}

// output is a process's combined output, safe to read while the process
// runs; changed is closed, and replaced, at every write.
type output struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.b.Write(p)
	if o.changed != nil {
		close(o.changed)
	}
	o.changed = make(chan struct{})
	return n, err
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// has reports whether s is in the output so far, and returns a channel
// closed at the next write.
func (o *output) has(s string) (bool, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.changed == nil {
		o.changed = make(chan struct{})
	}
	return strings.Contains(o.b.String(), s), o.changed
}

// proc is a started command with its output.
type proc struct {
	cmd  *exec.Cmd
	out  output
	done chan struct{} // closed once the process has exited; err is then its status
	err  error
}

func start(ctx context.Context, t *testing.T, argv []string, self bool) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	if self {
		p.cmd = exec.CommandContext(ctx, os.Args[0], argv...)
		p.cmd.Env = append(os.Environ(), "RDMAPING_RUN_MAIN=1")
	} else if argv[0] == chrootPrefix {
		p.cmd = exec.CommandContext(ctx, argv[1], argv[2:]...)
		p.cmd.Path = argv[1] // resolved inside the chroot, not here
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: "/host"}
		p.cmd.Dir = "/"
	} else {
		p.cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %q: %v", argv, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

func (p *proc) wait() error {
	<-p.done
	return p.err
}

// readyWait bounds a server's wait for its ready line.
const readyWait = 30 * time.Second

// ready waits until the process has written marker, which says it is
// ready for its peer (a multicast receiver has posted its receives and
// attached its QP). It fails when the process exits first or after
// readyWait. With no marker it gives the process 300 ms to start: a
// client that comes too early is retried (runClient).
func (p *proc) ready(ctx context.Context, marker string) error {
	if marker == "" {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-p.done:
		case <-ctx.Done():
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	for {
		ok, changed := p.out.has(marker)
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-p.done:
			if ok, _ := p.out.has(marker); ok {
				return nil
			}
			return fmt.Errorf("exited (%v) before it printed %q", p.err, marker)
		case <-ctx.Done():
			return fmt.Errorf("no %q after %v", marker, readyWait)
		}
	}
}

// lineBuffered runs a C tool (a cTool command line) with its stdout line
// buffered (coreutils' stdbuf -oL), so a ready line shows while it runs
// and not only at its exit.
func lineBuffered(t *testing.T, tool []string) []string {
	t.Helper()
	return wrap(cTool(t, "stdbuf"), []string{"-oL"}, tool)
}

// wrap returns the command line that runs tool under wrapper with args
// (tool and wrapper are cTool command lines: both in /host, or neither).
func wrap(wrapper, args, tool []string) []string {
	if tool[0] == chrootPrefix {
		tool = tool[1:]
	}
	return append(append(append([]string{}, wrapper...), args...), tool...)
}

// runClient runs a client until it succeeds, retrying while the server
// (perhaps on the other node) is not up yet.
func runClient(ctx context.Context, t *testing.T, argv []string, self bool) (string, error) {
	t.Helper()
	for {
		p := start(ctx, t, argv, self)
		err := p.wait()
		if err == nil || ctx.Err() != nil {
			return p.out.String(), err
		}
		out := p.out.String()
		refused := strings.Contains(out, "REJECTED") || strings.Contains(out, "UNREACHABLE") ||
			strings.Contains(out, "refused") || strings.Contains(out, "error 8") || strings.Contains(out, "ADDR_ERROR") ||
			strings.Contains(out, "Couldn't connect to")
		if !refused {
			return out, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// pairOpts are what some pairs need besides the two command lines.
type pairOpts struct {
	// ready is the server's line that says it is ready for the client,
	// which starts only then (on either node). Without it the client
	// starts once the server has been given 300 ms, and is retried while
	// it is refused.
	ready string
}

// pair runs server and client: both here with one node, split by node with
// two. It checks each side's exit status and that its output has the
// wanted lines.
func pair(t *testing.T, r role, server []string, serverSelf bool, serverWant []string, client []string, clientSelf bool, clientWant []string) {
	t.Helper()
	pairWith(t, r, pairOpts{}, server, serverSelf, serverWant, client, clientSelf, clientWant)
}

// pairWith is pair with options. With two nodes the nodes first meet
// (meet), so that each starts its side of the same subtest, the client
// only once the server is ready, however far one node has got ahead of
// the other.
func pairWith(t *testing.T, r role, o pairOpts, server []string, serverSelf bool, serverWant []string, client []string, clientSelf bool, clientWant []string) {
	t.Helper()
	var l *link
	if r.twoNodes {
		l = meet(t, r)
		defer l.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var sp *proc
	if r.server {
		sp = start(ctx, t, server, serverSelf)
		err := sp.ready(ctx, o.ready)
		if err != nil {
			t.Errorf("server %q: %v", server, err)
		}
		if l != nil {
			l.sendReady(err)
		}
	}
	if r.client {
		if l != nil {
			if err := l.awaitReady(); err != nil {
				t.Fatalf("client %q: %v", client, err)
			}
		}
		out, err := runClient(ctx, t, client, clientSelf)
		t.Logf("client %q:\n%s", client, out)
		if err != nil {
			t.Errorf("client %q: %v", client, err)
		}
		for _, w := range clientWant {
			if !strings.Contains(out, w) {
				t.Errorf("client output lacks %q", w)
			}
		}
	}
	if sp != nil {
		err := sp.wait()
		out := sp.out.String()
		t.Logf("server %q:\n%s", server, out)
		if err != nil {
			t.Errorf("server %q: %v", server, err)
		}
		for _, w := range serverWant {
			if !strings.Contains(out, w) {
				t.Errorf("server output lacks %q", w)
			}
		}
	}
}

func TestInteropRping(t *testing.T) {
	r := labRole(t)
	rping := cTool(t, "rping")
	const count = 3
	var clientLines, serverLines []string
	for i := range count {
		clientLines = append(clientLines, fmt.Sprintf("ping data: rdma-ping-%d: ", i))
		serverLines = append(serverLines, fmt.Sprintf("server ping data: rdma-ping-%d: ", i))
	}
	c := fmt.Sprint(count)
	t.Run("GoServer_CClient", func(t *testing.T) {
		pair(t, r,
			[]string{"-s", "-a", r.bind, "-p", "7301", "-C", c, "-v"}, true, serverLines,
			append(rping, "-c", "-a", r.addr, "-p", "7301", "-C", c, "-v", "-V"), false, clientLines)
	})
	t.Run("CServer_GoClient", func(t *testing.T) {
		pair(t, r,
			append(rping, "-s", "-a", r.bind, "-p", "7302", "-C", c, "-v"), false, serverLines,
			[]string{"-c", "-a", r.addr, "-p", "7302", "-C", c, "-v", "-V"}, true, clientLines)
	})
	t.Run("GoServer_CClient_Size", func(t *testing.T) {
		pair(t, r,
			[]string{"-s", "-a", r.bind, "-p", "7303", "-S", "4000", "-C", "2"}, true, nil,
			append(rping, "-c", "-a", r.addr, "-p", "7303", "-S", "4000", "-C", "2", "-V"), false, nil)
	})
}

func TestInteropUdaddy(t *testing.T) {
	r := labRole(t)
	udaddy := cTool(t, "udaddy")
	done := []string{"data transfers complete", "test complete"}
	t.Run("CServer_GoClient", func(t *testing.T) {
		pair(t, r,
			udaddy, false, append(done, "return status 0"),
			[]string{"--ud", "-c", "-a", r.addr}, true, done)
	})
	t.Run("GoServer_CClient", func(t *testing.T) {
		pair(t, r,
			[]string{"--ud", "-s", "-a", r.bind}, true, done,
			append(udaddy, "-s", r.addr), false, append(done, "return status 0"))
	})
}

func TestInteropRdmaServerClient(t *testing.T) {
	r := labRole(t)
	server, client := cTool(t, "rdma_server"), cTool(t, "rdma_client")
	t.Run("CServer_GoClient", func(t *testing.T) {
		pair(t, r,
			append(server, "-s", r.bind, "-p", "7311"), false, []string{"rdma_server: end 0"},
			[]string{"--mode", "rdmacs", "-c", "-a", r.addr, "-p", "7311"}, true, []string{"rdma_client: end 0"})
	})
	t.Run("GoServer_CClient", func(t *testing.T) {
		pair(t, r,
			[]string{"--mode", "rdmacs", "-s", "-a", r.bind, "-p", "7312"}, true, []string{"rdma_server: end 0", `received "\x00`},
			append(client, "-s", r.addr, "-p", "7312"), false, []string{"rdma_client: end 0"})
	})
}
