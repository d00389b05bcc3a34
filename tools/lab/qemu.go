// Copyright 2026 The rdmago Authors.

package lab

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmago/rdmago/internal/escape"
	"github.com/rdmago/rdmago/tools/lab/labproto"
)

// Lab network addressing: node i has 10.77.0.(i+1)/24 on its rxe netdev.
const (
	labNet    = "10.77.0."
	labPrefix = 24
	labDev    = "rxe0"
)

// NodeAddr is the lab address of node i.
func NodeAddr(i int) string { return labNet + strconv.Itoa(i+1) }

// Options configure a lab boot.
type Options struct {
	Kernel   string        // kernel series, "6.1" (default) or "6.12"
	Nodes    int           // 1 (default) or 2
	Timeout  time.Duration // limit of the whole boot, from start to power-off (default 10m)
	Shares   []string      // host directories mounted writable at the same path in the guest
	MemoryMB int           // per VM (default 1024)
	Accel    string        // "auto" (default), "tcg" or "kvm"
	CPU      string        // QEMU -cpu model under TCG (default TCGCPU, or $RDMALAB_CPU)
	Log      io.Writer     // progress and diagnostics (default os.Stderr)
	Verbose  bool          // also copy the guests' consoles and init logs to Log
	// Append are extra kernel parameters for every guest, after the lab's
	// own (see CheckKernelArgs), such as TSCArgs. None by default.
	Append []string
	// ICount makes the guests' time count instructions (QEMU's -icount
	// shift=0,sleep=off: 1 ns per instruction; an idle guest's clock jumps
	// to its next timer instead of waiting in the host's time) on one
	// vCPU per VM under single-threaded TCG, so that what a guest measures
	// is its own CPU's work and the host's load does not reach it. One
	// vCPU because QEMU 7.2 (Debian 12) with -icount stops booting a 6.1
	// guest at "Booting SMP configuration" with two. Needs TCG. Waits on
	// another VM over the wire still pass in the host's time.
	ICount bool
}

// TCGCPU is the CPU model the lab emulates under TCG: QEMU's "max".
// $RDMALAB_CPU (or Options.CPU) picks another. TCG emulates 256-bit vector
// instructions one helper call at a time, so code that takes its AVX2 path
// on "max" can be slower than its scalar path, the reverse of real CPUs:
// in a 6.1 guest Go's crypto/sha256 hashes 22.9 MB/s with AVX2 and 31.9 MB/s
// with RDMALAB_CPU=max,avx2=off. The default stays "max" so that figures
// from different runs compare.
const TCGCPU = "max"

func (l *Lab) tcgCPU() string {
	if l.opts.CPU != "" {
		return l.opts.CPU
	}
	if v := os.Getenv("RDMALAB_CPU"); v != "" {
		return v
	}
	return TCGCPU
}

// Lab is a set of booted guests ready to run commands. The caller must Close it.
type Lab struct {
	opts     Options
	Kernel   *Kernel
	tmp      string
	nodes    []*node
	timer    *time.Timer
	mu       sync.Mutex
	timedOut bool
	closed   bool
	crash    *Crash        // the first guest kernel crash; set once
	lost     *node         // the first node whose qemu exited before Close
	done     chan struct{} // closed by Close

	interrupted bool
	Boot        time.Duration // time from Start to every node ready
}

type frame struct {
	typ     byte
	payload []byte
}

type node struct {
	idx     int
	cmd     *exec.Cmd
	conn    net.Conn
	w       *labproto.Writer
	frames  chan frame
	readErr error // set before frames is closed
	console *tailBuffer
	watch   *crashWatch
	exited  chan struct{}
	waitErr error
	hello   labproto.HelloMsg
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	b   []byte
	max int
	tee io.Writer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	if t.tee != nil {
		t.tee.Write(p)
	}
	return len(p), nil
}

func (t *tailBuffer) Tail(lines int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimRight(strings.ReplaceAll(string(t.b), "\r", ""), "\n")
	ls := strings.Split(s, "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// prefixWriter prefixes each line written through it.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	bol    bool
}

// NewPrefixWriter returns a writer that starts every line with prefix; writers
// sharing mu do not interleave within a line's write.
func NewPrefixWriter(w io.Writer, prefix string, mu *sync.Mutex) io.Writer {
	return &prefixWriter{mu: mu, w: w, prefix: prefix, bol: true}
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out bytes.Buffer
	for _, c := range b {
		if p.bol {
			out.WriteString(p.prefix)
			p.bol = false
		}
		out.WriteByte(c)
		if c == '\n' {
			p.bol = true
		}
	}
	_, err := p.w.Write(out.Bytes())
	return len(b), err
}

// QEMU is the emulator binary the lab runs.
const QEMU = "qemu-system-x86_64"

// Start fetches the kernel if needed, builds the initramfs, boots the nodes
// and waits until every node has its rxe device up.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 1
	}
	if opts.Nodes < 1 || opts.Nodes > 2 {
		return nil, fmt.Errorf("the lab runs 1 or 2 nodes, not %d", opts.Nodes)
	}
	if opts.ICount && opts.Accel == "kvm" {
		return nil, fmt.Errorf("--icount counts instructions under TCG; it cannot run with --accel kvm")
	}
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Minute
	}
	if opts.MemoryMB == 0 {
		opts.MemoryMB = 1024
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if err := CheckKernelArgs(opts.Append); err != nil {
		return nil, err
	}
	if err := hostErr(); err != nil {
		return nil, err
	}
	if runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("the lab boots x86-64 Debian kernels and needs an amd64 host (this is %s)", runtime.GOARCH)
	}
	qemu, err := exec.LookPath(QEMU)
	if err != nil {
		return nil, fmt.Errorf("%s not found: install it with `apt-get install qemu-system-x86`", QEMU)
	}
	begin := time.Now()
	k, err := GetKernel(ctx, opts.Kernel, opts.Log)
	if err != nil {
		return nil, err
	}
	initrd, err := Initramfs(ctx, k, opts.Log)
	if err != nil {
		return nil, err
	}
	accel := opts.Accel
	switch {
	case opts.ICount:
		accel = "tcg"
	case accel == "" || accel == "auto":
		accel = probeAccel(ctx, qemu, k, opts.Log)
	}
	tmp, err := os.MkdirTemp("", "rdmalab-")
	if err != nil {
		return nil, fmt.Errorf("lab temp dir: %w", err)
	}
	l := &Lab{opts: opts, Kernel: k, tmp: tmp}
	l.timer = time.AfterFunc(opts.Timeout-time.Since(begin), func() {
		l.mu.Lock()
		l.timedOut = true
		l.mu.Unlock()
		l.kill()
	})
	l.done = make(chan struct{})
	go func() {
		// Interrupted (^C, SIGTERM): stop the guests rather than leave them.
		select {
		case <-ctx.Done():
			l.mu.Lock()
			l.interrupted = true
			l.mu.Unlock()
			l.kill()
		case <-l.done:
		}
	}()
	if err := l.boot(ctx, qemu, initrd, accel); err != nil {
		l.Close()
		return nil, err
	}
	l.Boot = time.Since(begin)
	return l, nil
}

// probeAccel decides between KVM and TCG. KVM is used only when /dev/kvm
// opens and a short KVM boot of the lab kernel reaches its panic (no root
// file system) within a few seconds; the result is cached per kernel.
func probeAccel(ctx context.Context, qemu string, k *Kernel, log io.Writer) string {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return "tcg"
	}
	f.Close()
	cache, _ := CacheDir()
	mark := filepath.Join(cache, "accel-"+k.Release)
	if b, err := os.ReadFile(mark); err == nil {
		return strings.TrimSpace(string(b))
	}
	pctx, cancel := context.WithTimeout(ctx, 8*time.Second)
	defer cancel()
	cmd := exec.CommandContext(pctx, qemu, "-nodefaults", "-display", "none", "-no-reboot", "-no-user-config",
		"-accel", "kvm", "-cpu", "host", "-m", "256", "-kernel", k.Vmlinuz,
		"-append", "console=ttyS0 panic=-1 loglevel=4", "-serial", "stdio", "-monitor", "none")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	res := "tcg"
	if err == nil && bytes.Contains(out.Bytes(), []byte("Kernel panic")) {
		res = "kvm"
	}
	fmt.Fprintf(log, "rdmalab: KVM probe: using %s\n", res)
	os.WriteFile(mark, []byte(res+"\n"), 0o644)
	return res
}

func (l *Lab) boot(ctx context.Context, qemu, initrd, accel string) error {
	n := l.opts.Nodes
	// The wire between two nodes: one socket of a connected pair for each
	// QEMU (see wirePair).
	var wire [2]*os.File
	if n == 2 {
		var err error
		if wire[0], wire[1], err = wirePair(); err != nil {
			return fmt.Errorf("the lab wire: %w", err)
		}
		// Each QEMU holds its end once started.
		defer wire[0].Close()
		defer wire[1].Close()
	}
	var shares []labproto.Share
	for i, s := range l.opts.Shares {
		shares = append(shares, labproto.Share{Tag: "share" + strconv.Itoa(i), Path: s})
	}
	for i := 0; i < n; i++ {
		args := l.qemuArgs(i, initrd, accel, shares)
		var extra []*os.File
		if n == 2 {
			extra = []*os.File{wire[i]} // fd 3 in QEMU
		}
		if _, err := l.startNode(ctx, qemu, i, args, extra); err != nil {
			return err
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, nd := range l.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = l.handshake(nd, shares)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// vcpus is the number of vCPUs of each node: the host's CPUs shared among
// the nodes, and one under ICount.
func (l *Lab) vcpus() int {
	if l.opts.ICount {
		return 1
	}
	return max(1, runtime.NumCPU()/l.opts.Nodes)
}

// qemuArgs are node i's QEMU arguments: vcpus vCPUs, the lab kernel with
// initrd and the kernel command line of kernelCmdline, the console on
// stdio, the control port, the host's root (read-only) and shares, and on
// two nodes the wire as fd 3.
func (l *Lab) qemuArgs(i int, initrd, accel string, shares []labproto.Share) []string {
	args := []string{
		"-nodefaults", "-nographic", "-no-reboot", "-no-user-config", "-monitor", "none",
		"-m", strconv.Itoa(l.opts.MemoryMB), "-smp", strconv.Itoa(l.vcpus()),
		"-kernel", l.Kernel.Vmlinuz, "-initrd", initrd,
		"-append", kernelCmdline(l.opts.Append),
		"-serial", "stdio",
		"-chardev", "socket,id=ctl,path=" + filepath.Join(l.tmp, fmt.Sprintf("ctl%d.sock", i)),
		"-serial", "chardev:ctl",
		"-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
	}
	if accel == "kvm" {
		args = append(args, "-accel", "kvm", "-cpu", "host")
	} else if l.opts.ICount {
		args = append(args, "-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off", "-cpu", l.tcgCPU())
	} else {
		args = append(args, "-accel", "tcg,thread=multi", "-cpu", l.tcgCPU())
	}
	for _, s := range shares {
		args = append(args, "-virtfs", "local,path="+s.Path+",mount_tag="+s.Tag+",security_model=none,multidevs=remap")
	}
	if l.opts.Nodes == 1 {
		return append(args, "-nic", "none")
	}
	return append(args, "-netdev", "socket,id=n0,fd=3",
		"-device", fmt.Sprintf("virtio-net-pci,netdev=n0,romfile=,mac=52:54:00:77:00:%02x", i+1))
}

func (l *Lab) startNode(ctx context.Context, qemu string, i int, args []string, extra []*os.File) (*node, error) {
	sockPath := filepath.Join(l.tmp, fmt.Sprintf("ctl%d.sock", i))
	ln, err := net.Listen("unix", sockPath)
	if err != nil {
		return nil, fmt.Errorf("node %d control socket: %w", i, err)
	}
	defer ln.Close()
	cmd := exec.Command(qemu, args...)
	cmd.SysProcAttr = qemuProcAttr()
	cmd.ExtraFiles = extra
	nd, err := l.spawn(i, cmd)
	if err != nil {
		return nil, err
	}
	type acc struct {
		c   net.Conn
		err error
	}
	ch := make(chan acc, 1)
	go func() {
		c, err := ln.Accept()
		ch <- acc{c, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			return nd, l.nodeErr(nd, fmt.Errorf("control socket: %w", a.err))
		}
		nd.conn = a.c
	case <-nd.exited:
		return nd, l.nodeErr(nd, errors.New("qemu exited before connecting its control port"))
	case <-time.After(30 * time.Second):
		return nd, l.nodeErr(nd, errors.New("qemu did not connect its control port within 30s"))
	case <-ctx.Done():
		return nd, ctx.Err()
	}
	nd.w = labproto.NewWriter(nd.conn)
	go func() {
		r := bufio.NewReaderSize(nd.conn, 64<<10)
		defer close(nd.frames)
		if _, err := labproto.SkipToMagic(r); err != nil {
			nd.readErr = err
			return
		}
		for {
			typ, p, err := labproto.ReadFrame(r)
			if err != nil {
				nd.readErr = err
				return
			}
			nd.frames <- frame{typ, p}
		}
	}()
	return nd, nil
}

// watchConsole makes nd's console watch for a kernel crash: the first
// crash in any node stops every node at once, so that a peer does not wait
// for a guest that is gone, and becomes the error of every node's step.
func (l *Lab) watchConsole(nd *node) {
	nd.watch = newCrashWatch(nd.idx, func(c *Crash) {
		l.mu.Lock()
		first := l.crash == nil
		if first {
			l.crash = c
		}
		l.mu.Unlock()
		if first {
			l.kill()
		}
	})
}

// nodeExited stops the other nodes when nd's qemu exits before Close asked
// it to: a peer would otherwise wait for it until its own timeout.
func (l *Lab) nodeExited(nd *node) {
	l.mu.Lock()
	first := !l.closed && l.lost == nil
	if first {
		l.lost = nd
	}
	l.mu.Unlock()
	if first {
		l.kill()
	}
}

// Crash returns the first guest kernel crash the lab saw, or nil.
func (l *Lab) Crash() *Crash {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.crash
}

// spawn starts node i's emulator, cmd, whose output is the guest's console,
// and adds the node to the lab.
func (l *Lab) spawn(i int, cmd *exec.Cmd) (*node, error) {
	nd := &node{idx: i, frames: make(chan frame, 64), exited: make(chan struct{}), console: &tailBuffer{max: 64 << 10}}
	if l.opts.Verbose {
		nd.console.tee = NewPrefixWriter(l.opts.Log, fmt.Sprintf("[console %d] ", i), &sync.Mutex{})
	}
	l.watchConsole(nd)
	cmd.Stdin = nil
	cmd.Stdout = io.MultiWriter(nd.console, nd.watch)
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	nd.cmd = cmd
	l.mu.Lock()
	l.nodes = append(l.nodes, nd)
	l.mu.Unlock()
	go func() {
		nd.waitErr = cmd.Wait() // returns once the console is copied out
		nd.watch.finish()
		l.nodeExited(nd)
		close(nd.exited)
	}()
	return nd, nil
}

// nodeErr explains a node's failure with the tail of its console; once a
// guest's kernel has crashed, the crash explains every node's failure.
func (l *Lab) nodeErr(nd *node, err error) error {
	l.mu.Lock()
	to, intr, crash, lost := l.timedOut, l.interrupted, l.crash, l.lost
	l.mu.Unlock()
	if crash != nil {
		if crash.Node == nd.idx {
			return crash
		}
		return fmt.Errorf("node %d: stopped because node %d's kernel crashed: %w", nd.idx, crash.Node, crash)
	}
	if lost != nil && lost != nd && !to && !intr {
		return fmt.Errorf("node %d: stopped because node %d's guest exited (see its error)", nd.idx, lost.idx)
	}
	if intr {
		err = fmt.Errorf("interrupted: %w", err)
	}
	if to {
		err = fmt.Errorf("timed out after %v (guest hung or too slow; raise --timeout): %w", l.opts.Timeout, err)
	}
	tail := escapeLines(nd.console.Tail(30))
	if tail != "" {
		return fmt.Errorf("node %d: %w\n--- node %d console (last lines) ---\n%s\n---", nd.idx, err, nd.idx, tail)
	}
	return fmt.Errorf("node %d: %w", nd.idx, err)
}

// next returns the node's next frame, skipping (or logging) init log lines.
func (l *Lab) next(nd *node) (frame, error) {
	for {
		f, ok := <-nd.frames
		if !ok {
			<-nd.exited
			err := nd.readErr
			if err == nil || errors.Is(err, io.EOF) {
				err = errors.New("guest stopped talking")
			}
			if nd.waitErr != nil {
				err = fmt.Errorf("%w (qemu: %v)", err, nd.waitErr)
			}
			return frame{}, l.nodeErr(nd, err)
		}
		switch f.typ {
		case labproto.Log:
			if l.opts.Verbose {
				fmt.Fprintf(l.opts.Log, "[init %d] %s\n", nd.idx, f.payload)
			}
			continue
		case labproto.Fatal:
			return frame{}, l.nodeErr(nd, fmt.Errorf("guest setup failed: %s", f.payload))
		}
		return f, nil
	}
}

func (l *Lab) handshake(nd *node, shares []labproto.Share) error {
	f, err := l.next(nd)
	if err != nil {
		return err
	}
	if f.typ != labproto.Hello {
		return l.nodeErr(nd, fmt.Errorf("expected hello, got frame %q", f.typ))
	}
	if err := json.Unmarshal(f.payload, &nd.hello); err != nil {
		return l.nodeErr(nd, fmt.Errorf("hello: %w", err))
	}
	if len(nd.hello.Errors) > 0 {
		fmt.Fprintf(l.opts.Log, "rdmalab: node %d: module load errors: %s\n", nd.idx, strings.Join(nd.hello.Errors, "; "))
	}
	cfg := labproto.ConfigMsg{
		Node: nd.idx, Nodes: l.opts.Nodes,
		Addr: NodeAddr(nd.idx), Peer: NodeAddr(nd.idx), Prefix: labPrefix,
		Netdev: "v0", Veth: true, Dev: labDev, Shares: shares,
		Hostname: fmt.Sprintf("rdmalab%d", nd.idx),
	}
	if l.opts.Nodes == 2 {
		cfg.Peer = NodeAddr(1 - nd.idx)
		cfg.Netdev, cfg.Veth = "eth0", false
	}
	if err := nd.w.JSON(labproto.Config, cfg); err != nil {
		return l.nodeErr(nd, err)
	}
	f, err = l.next(nd)
	if err != nil {
		return err
	}
	if f.typ != labproto.Ready {
		return l.nodeErr(nd, fmt.Errorf("expected ready, got frame %q", f.typ))
	}
	return nil
}

// Output receives one node's command output.
type Output struct {
	Stdout, Stderr io.Writer
}

// Result is how a step ended on one node.
type Result struct {
	Status   int
	Error    string
	Duration time.Duration
}

// Run runs steps[i] on node i (one step per node, all at once) and returns
// when every node has finished it.
func (l *Lab) Run(steps []labproto.StepMsg, outs []Output) ([]Result, error) {
	if len(steps) != len(l.nodes) || len(outs) != len(l.nodes) {
		return nil, fmt.Errorf("lab run: %d steps and %d outputs for %d nodes", len(steps), len(outs), len(l.nodes))
	}
	res := make([]Result, len(l.nodes))
	errs := make([]error, len(l.nodes))
	var wg sync.WaitGroup
	for i, nd := range l.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = l.runOn(nd, steps[i], outs[i])
		}()
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

func (l *Lab) runOn(nd *node, st labproto.StepMsg, out Output) (Result, error) {
	if err := nd.w.JSON(labproto.Step, st); err != nil {
		return Result{}, l.nodeErr(nd, err)
	}
	for {
		f, err := l.next(nd)
		if err != nil {
			return Result{}, err
		}
		switch f.typ {
		case labproto.Stdout:
			out.Stdout.Write(f.payload)
		case labproto.Stderr:
			out.Stderr.Write(f.payload)
		case labproto.Exit:
			var x labproto.ExitMsg
			if err := json.Unmarshal(f.payload, &x); err != nil {
				return Result{}, l.nodeErr(nd, err)
			}
			return Result{Status: x.Status, Error: x.Error, Duration: time.Duration(x.Millis) * time.Millisecond}, nil
		default:
			return Result{}, l.nodeErr(nd, fmt.Errorf("unexpected frame %q during a step", f.typ))
		}
	}
}

// Nodes is the number of booted nodes.
func (l *Lab) Nodes() int { return len(l.nodes) }

// GuestKernel is what uname -r says in the guest.
func (l *Lab) GuestKernel() string {
	if len(l.nodes) == 0 {
		return ""
	}
	return l.nodes[0].hello.Kernel
}

func (l *Lab) kill() {
	l.mu.Lock()
	nodes := append([]*node(nil), l.nodes...)
	l.mu.Unlock()
	for _, nd := range nodes {
		if nd.cmd != nil && nd.cmd.Process != nil {
			_ = nd.cmd.Process.Kill()
		}
	}
}

// Close powers the guests off (killing any that do not stop within 30 s)
// and removes the lab's temporary files. It is idempotent.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	if l.done != nil {
		close(l.done)
	}
	for _, nd := range l.nodes {
		if nd.w != nil {
			_ = nd.w.Frame(labproto.Quit, nil)
		}
	}
	deadline := time.After(30 * time.Second)
	var errs []error
	for _, nd := range l.nodes {
		select {
		case <-nd.exited:
		case <-deadline:
			errs = append(errs, fmt.Errorf("node %d: did not power off; killed", nd.idx))
			l.kill()
			<-nd.exited
		}
		if nd.conn != nil {
			nd.conn.Close()
		}
	}
	l.kill()
	if l.timer != nil {
		l.timer.Stop()
	}
	os.RemoveAll(l.tmp)
	return errors.Join(errs...)
}

// TimedOut reports whether the boot's time limit killed the guests.
func (l *Lab) TimedOut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.timedOut
}

// escapeLines escapes each line of console text for printing.
func escapeLines(s string) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		ls[i] = escape.Text(l)
	}
	return strings.Join(ls, "\n")
}
