// Copyright 2026 The rdmago Authors.

package guest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/internal/labtest/rtnl"
	"github.com/rdmago/rdmago/internal/rdmanl"
	"github.com/rdmago/rdmago/tools/lab/labproto"
	"golang.org/x/sys/unix"
)

type initProc struct {
	w    *labproto.Writer
	r    *bufio.Reader
	cfg  labproto.ConfigMsg
	log  []string
	env  []string
	cons *os.File
}

func (p *initProc) logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.log = append(p.log, s)
	if p.cons != nil {
		fmt.Fprintf(p.cons, "rdmalab-init: %s\n", s)
	}
	if p.w != nil {
		_ = p.w.Frame(labproto.Log, []byte(s))
	}
}

// Main is the guest's /init. It never returns: it powers the machine off.
func Main() {
	p := &initProc{}
	p.cons, _ = os.OpenFile("/dev/console", os.O_WRONLY, 0)
	err := p.run()
	if err != nil {
		if p.w != nil {
			_ = p.w.Frame(labproto.Fatal, []byte(err.Error()))
		}
		if p.cons != nil {
			fmt.Fprintf(p.cons, "rdmalab-init: FATAL: %v\n", err)
		}
	}
	powerOff()
}

func powerOff() {
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	for {
		time.Sleep(time.Hour)
	}
}

type mnt struct {
	src, dst, fstype string
	flags            uintptr
	data             string
}

func mountAll(ms []mnt) error {
	for _, m := range ms {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			return fmt.Errorf("mkdir %s: %w", m.dst, err)
		}
		if err := unix.Mount(m.src, m.dst, m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mount %s on %s: %w", m.fstype, m.dst, err)
		}
	}
	return nil
}

func (p *initProc) run() error {
	start := time.Now()
	const nodev = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if err := mountAll([]mnt{
		{"proc", "/proc", "proc", nodev, ""},
		{"sysfs", "/sys", "sysfs", nodev, ""},
		{"devtmpfs", "/dev", "devtmpfs", unix.MS_NOSUID, "mode=0755"},
		{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777"},
		{"tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777"},
		{"devpts", "/dev/pts", "devpts", unix.MS_NOSUID | unix.MS_NOEXEC, "mode=0620,ptmxmode=0666"},
	}); err != nil {
		return err
	}
	// Optional file systems for tracing (rdmatrace); absent ones are fine.
	for _, m := range []mnt{
		{"tracefs", "/sys/kernel/tracing", "tracefs", nodev, ""},
		{"debugfs", "/sys/kernel/debug", "debugfs", nodev, ""},
		{"bpf", "/sys/fs/bpf", "bpf", nodev, "mode=0700"},
	} {
		if err := mountAll([]mnt{m}); err != nil {
			p.logf("%v", err)
		}
	}

	ctl, err := os.OpenFile(CtlPort, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("open control port: %w", err)
	}
	if err := makeRaw(ctl); err != nil {
		return fmt.Errorf("control port raw mode: %w", err)
	}
	p.w = labproto.NewWriter(ctl)
	p.r = bufio.NewReaderSize(ctl, 64<<10)
	if err := p.w.WriteRaw([]byte(labproto.Magic)); err != nil {
		return fmt.Errorf("control port: %w", err)
	}

	hello := labproto.HelloMsg{}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		hello.Kernel = unix.ByteSliceToString(uts.Release[:])
	}
	hello.Modules, hello.Errors = loadModules()
	if err := p.w.JSON(labproto.Hello, hello); err != nil {
		return err
	}
	typ, payload, err := labproto.ReadFrame(p.r)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	if typ != labproto.Config {
		return fmt.Errorf("expected a config frame, got %q", typ)
	}
	if err := json.Unmarshal(payload, &p.cfg); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := p.setup(); err != nil {
		return err
	}
	if err := p.w.JSON(labproto.Ready, labproto.ReadyMsg{SetupMillis: time.Since(start).Milliseconds(), Log: p.log}); err != nil {
		return err
	}
	for {
		typ, payload, err := labproto.ReadFrame(p.r)
		if err != nil {
			return fmt.Errorf("control port: %w", err)
		}
		switch typ {
		case labproto.Quit:
			return nil
		case labproto.Step:
			var st labproto.StepMsg
			if err := json.Unmarshal(payload, &st); err != nil {
				return fmt.Errorf("step: %w", err)
			}
			if err := p.w.JSON(labproto.Exit, p.runStep(st)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected frame %q", typ)
		}
	}
}

// makeRaw is cfmakeraw(3) on f: no echo, no line editing, no CR/LF mapping.
func makeRaw(f *os.File) error {
	fd := int(f.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return err
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON | unix.IXOFF
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB | unix.CRTSCTS
	t.Cflag |= unix.CS8 | unix.CLOCAL | unix.CREAD
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
	return unix.IoctlSetTermios(fd, unix.TCSETS, t)
}

func loadModules() (loaded, failed []string) {
	b, err := os.ReadFile(ModuleOrder)
	if err != nil {
		return nil, []string{err.Error()}
	}
	for _, name := range strings.Fields(string(b)) {
		if err := loadModule(filepath.Join(ModuleDir, name)); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		loaded = append(loaded, name)
	}
	return loaded, failed
}

func loadModule(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	flags := 0
	if strings.HasSuffix(path, ".xz") || strings.HasSuffix(path, ".zst") || strings.HasSuffix(path, ".gz") {
		flags |= unix.MODULE_INIT_COMPRESSED_FILE
	}
	err = unix.FinitModule(int(f.Fd()), "", flags)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	return err
}

func (p *initProc) setup() error {
	c := p.cfg
	if c.Hostname != "" {
		_ = unix.Sethostname([]byte(c.Hostname))
	}
	var lim = unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		return fmt.Errorf("raise RLIMIT_MEMLOCK: %w", err)
	}
	if err := p.setupNet(); err != nil {
		return err
	}
	if err := p.setupRXE(); err != nil {
		return err
	}
	if err := p.setupHostRoot(); err != nil {
		return err
	}
	p.env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp",
		"TMPDIR=/tmp",
		"LANG=C.UTF-8",
		fmt.Sprintf("RDMALAB_NODE=%d", c.Node),
		fmt.Sprintf("RDMALAB_NODES=%d", c.Nodes),
		"RDMALAB_ADDR=" + c.Addr,
		"RDMALAB_PEER=" + c.Peer,
		"RDMALAB_DEV=" + c.Dev,
		"RDMALAB_NETDEV=" + c.Netdev,
	}
	return nil
}

func (p *initProc) setupNet() error {
	c := p.cfg
	nl, err := rtnl.Dial()
	if err != nil {
		return err
	}
	defer nl.Close()
	if err := nl.SetUp("lo"); err != nil {
		return err
	}
	if c.Veth {
		if err := nl.AddVeth(c.Netdev, "v1"); err != nil {
			return err
		}
		if err := nl.SetUp("v1"); err != nil {
			return err
		}
	} else {
		// The NIC's driver probed when virtio_net loaded; allow a moment anyway.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := nl.LinkByName(c.Netdev); err == nil {
				break
			} else if time.Now().After(deadline) {
				return fmt.Errorf("network device %s never appeared: %w", c.Netdev, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := nl.SetUp(c.Netdev); err != nil {
		return err
	}
	addr, err := netip.ParseAddr(c.Addr)
	if err != nil {
		return fmt.Errorf("node address: %w", err)
	}
	if err := nl.AddAddr(c.Netdev, netip.PrefixFrom(addr, c.Prefix)); err != nil {
		return err
	}
	p.logf("network: %s up with %s/%d", c.Netdev, c.Addr, c.Prefix)
	return nil
}

func (p *initProc) setupRXE() error {
	c := p.cfg
	nl, err := rdmanl.Dial()
	if err != nil {
		return err
	}
	defer nl.Close()
	if err := nl.AddLink(c.Dev, "rxe", c.Netdev); err != nil {
		return err
	}
	state := filepath.Join("/sys/class/infiniband", c.Dev, "ports/1/state")
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for {
		b, _ := os.ReadFile(state)
		last = strings.TrimSpace(string(b))
		if strings.Contains(last, "ACTIVE") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s port 1 never became ACTIVE (state %q)", c.Dev, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, dev := range []string{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"} {
		for i := 0; ; i++ {
			if _, err := os.Stat(dev); err == nil {
				break
			} else if i > 200 {
				return fmt.Errorf("%s missing after creating %s: %w", dev, c.Dev, err)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	p.logf("rdma: %s on %s, port 1 %s", c.Dev, c.Netdev, last)
	return nil
}

const ninepOpts = "trans=virtio,version=9p2000.L,msize=512000"

func (p *initProc) setupHostRoot() error {
	if err := mountAll([]mnt{{"hostroot", HostRoot, "9p", unix.MS_RDONLY, ninepOpts + ",cache=loose"}}); err != nil {
		return err
	}
	for _, d := range []string{"/dev", "/proc", "/sys", "/tmp"} {
		if err := unix.Mount(d, HostRoot+d, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s into the host root: %w", d, err)
		}
	}
	for _, s := range p.cfg.Shares {
		dst := HostRoot + s.Path
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return fmt.Errorf("share %s: %w", s.Path, err)
		}
		if err := unix.Mount(s.Tag, dst, "9p", 0, ninepOpts); err != nil {
			return fmt.Errorf("mount share %s at %s: %w", s.Tag, s.Path, err)
		}
	}
	return nil
}

// frameWriter sends everything written to it as frames of one type until
// closed.
type frameWriter struct {
	w      *labproto.Writer
	typ    byte
	closed atomic.Bool
}

func (fw *frameWriter) pump(r io.Reader, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 && !fw.closed.Load() {
			_ = fw.w.Frame(fw.typ, buf[:n])
		}
		if err != nil {
			return
		}
	}
}

func (p *initProc) runStep(st labproto.StepMsg) labproto.ExitMsg {
	start := time.Now()
	res := func(status int, err error) labproto.ExitMsg {
		m := labproto.ExitMsg{Status: status, Millis: time.Since(start).Milliseconds()}
		if err != nil {
			m.Error = err.Error()
		}
		return m
	}
	if len(st.Args) == 0 {
		return res(127, errors.New("empty command"))
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return res(127, err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return res(127, err)
	}
	cmd := &exec.Cmd{
		Path:   st.Args[0],
		Args:   st.Args,
		Dir:    st.Dir,
		Env:    append(append([]string(nil), p.env...), st.Env...),
		Stdout: stdoutW,
		Stderr: stderrW,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid: true,
		},
	}
	if !st.Bare {
		cmd.SysProcAttr.Chroot = HostRoot
	}
	outW := &frameWriter{w: p.w, typ: labproto.Stdout}
	errW := &frameWriter{w: p.w, typ: labproto.Stderr}
	var wg sync.WaitGroup
	wg.Add(2)
	go outW.pump(stdoutR, &wg)
	go errW.pump(stderrR, &wg)
	err = cmd.Start()
	stdoutW.Close()
	stderrW.Close()
	status := 0
	if err != nil {
		status = 127
	} else {
		err = cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = nil
			ws := ee.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				status = 128 + int(ws.Signal())
			} else {
				status = ws.ExitStatus()
			}
		} else if err != nil {
			status = 127
		}
		// Whatever the command left running in its process group goes too.
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		// A daemon outside the process group still holds the pipes.
		outW.closed.Store(true)
		errW.closed.Store(true)
	}
	stdoutR.Close()
	stderrR.Close()
	reap()
	return res(status, err)
}

// reap collects orphans that were reparented to init.
func reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
