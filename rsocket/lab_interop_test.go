// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/internal/labtest"
)

// Lab interop with more of rdma-core's rsockets programs: riostream,
// rcopy, and a C HTTP server (civetweb) under librspreload. Ports from
// labPort(400) on.

// hostTempDir makes a directory under /tmp, which a C tool from
// labtest.HostTool sees at the same path (the lab binds /tmp into the
// host's root it runs in), removed when t ends.
func hostTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "rsocket-"+strings.ReplaceAll(t.Name(), "/", "-")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// runHeard runs the C client mk makes (a new command each time), again
// while refusedBy says the run was refused (nothing listened yet), pausing
// 100 ms, until a run was not refused or ctx ends; it returns that run's
// output and exit error. Each run's output goes to the test log.
func runHeard(ctx context.Context, t *testing.T, refusedBy func(out []byte, err error) bool, mk func() *exec.Cmd) ([]byte, error) {
	type run struct {
		out []byte
		err error
	}
	refused := errors.New("connection refused")
	r, _ := labtest.Retry(ctx, func(err error) bool { return errors.Is(err, refused) }, func() (run, error) {
		cmd := mk()
		out, err := cmd.CombinedOutput()
		t.Logf("%s %s: %v:\n%s", filepath.Base(cmd.Args[0]), strings.Join(cmd.Args[1:], " "), err, out)
		if err != nil && ctx.Err() == nil && refusedBy(out, err) {
			return run{out, err}, refused
		}
		return run{out, err}, nil
	})
	return r.out, r.err
}

// expectPeerEOF reads from c until it fails: the peer must have sent
// nothing and closed cleanly (io.EOF, not a reset or a protocol error),
// within d.
func expectPeerEOF(c *Conn, d time.Duration) error {
	c.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, 4096)
	total := 0
	for {
		n, err := c.Read(b)
		total += n
		if err == nil {
			continue
		}
		if !errors.Is(err, io.EOF) || total != 0 {
			return fmt.Errorf("read %d bytes, then %v; want no data and io.EOF", total, err)
		}
		return nil
	}
}

// serveC starts the C server cmd (from cTool; it serves until killed),
// its output going to a file in dir, and asks done every 100 ms whether
// the server has done its work, until done says so or fails, the server
// exits or ctx ends; it then kills the server and logs its output. done
// gets the output so far.
func serveC(ctx context.Context, t *testing.T, dir string, cmd *exec.Cmd, done func(out []byte) (bool, error)) error {
	name := filepath.Base(cmd.Args[0])
	path := filepath.Join(dir, name+".out")
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
		said, _ := os.ReadFile(path)
		t.Logf("%s said: %q", name, said)
	}()
	for {
		said, _ := os.ReadFile(path)
		if ok, err := done(said); ok || err != nil {
			return err
		}
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("%s exited (%v): %q", name, err, said)
		case <-ctx.Done():
			return fmt.Errorf("%s did not finish: %v: %q", name, ctx.Err(), said)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestLabRiostream: rdma-core's riostream (rsockets' iomap test) against
// this package, riostream as server and as client, at two sizes, with its
// data verification on (-T v) and blocking calls (-T b). riostream has no
// mode without iomap: every test (custom or -S all, any -T) starts with
// riomap(PROT_WRITE) on its receive buffer, before any data, and then
// transfers with riowrite into the peer's mapping. riomap(PROT_WRITE)
// takes a free slot of the iomap the peer published in its rs_conn_data
// (target_iomap_size); this package publishes none (size 0), so it fails
// with ENOMEM. The test proves that failure is clean: riostream says
// "riomap: Cannot allocate memory" and exits 255 without sending a byte,
// and this side reads io.EOF (rsockets' DISCONNECT from riostream's
// rshutdown), neither a reset nor a protocol error.
func TestLabRiostream(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 180*time.Second)
	for i, sz := range []struct{ size, count int }{{64, 100}, {1 << 20, 4}} {
		for j, cServer := range []bool{true, false} {
			port := labPort(400 + 2*i + j)
			args := []string{"-S", strconv.Itoa(sz.size), "-C", strconv.Itoa(sz.count), "-T", "b", "-T", "v", "-p", port}
			name := fmt.Sprintf("%d×%d/C-%s", sz.count, sz.size, map[bool]string{true: "server", false: "client"}[cServer])
			t.Run(name, func(t *testing.T) {
				runC := func(extra ...string) error {
					out, err := runHeard(ctx, t, rstreamRefused, func() *exec.Cmd { return cTool(t, ctx, false, "riostream", append(args, extra...)...) })
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != 255 || !bytes.Contains(out, []byte("riomap: Cannot allocate memory")) {
						return fmt.Errorf("riostream: %v, output %q; want exit status 255 and \"riomap: Cannot allocate memory\" (this package publishes no iomap)", err, out)
					}
					return nil
				}
				goServer := func() error {
					l := listenLab(t, ctx, e, port, Options{})
					c, err := l.AcceptRSocket(ctx)
					if err != nil {
						return err
					}
					defer c.Close()
					return expectPeerEOF(c, 60*time.Second)
				}
				goClient := func() error {
					c, err := dialRetry(ctx, &Dialer{}, e.Peer+":"+port)
					if err != nil {
						return err
					}
					defer c.Close()
					return expectPeerEOF(c, 60*time.Second)
				}
				if cServer {
					e.RunRoles(t, func() error { return runC("-b", e.Addr) }, goClient)
				} else {
					e.RunRoles(t, goServer, func() error { return runC("-s", e.Peer) })
				}
			})
		}
	}
}

// rcopy's protocol (rdma-core librdmacm/examples/rcopy.c) over one
// rsocket: the client sends OPEN (the destination path, NUL-padded to a
// multiple of 8, the file mode in data), WRITE (the size, then the bytes)
// and CLOSE; the server answers each with the command | 0x80 and a status
// (0 or an errno) in data. Headers are 16 bytes in the host's byte order
// (rcopy does no swapping).
const (
	rcopyOpen  = 1
	rcopyClose = 2
	rcopyWrite = 3
	rcopyResp  = 0x80
	rcopyHdr   = 16 // struct msg_hdr: version, command, len, data, id
)

type rcopyMsg struct {
	command uint8
	len     uint16
	data    uint32
}

func (m rcopyMsg) bytes() []byte {
	b := make([]byte, rcopyHdr)
	b[1] = m.command
	binary.NativeEndian.PutUint16(b[2:], m.len)
	binary.NativeEndian.PutUint32(b[4:], m.data)
	return b
}

func readRcopyMsg(r io.Reader) (rcopyMsg, error) {
	b := make([]byte, rcopyHdr)
	if _, err := io.ReadFull(r, b); err != nil {
		return rcopyMsg{}, err
	}
	m := rcopyMsg{command: b[1], len: binary.NativeEndian.Uint16(b[2:]), data: binary.NativeEndian.Uint32(b[4:])}
	if b[0] != 0 || m.len < rcopyHdr {
		return m, fmt.Errorf("rcopy message: version %d, length %d", b[0], m.len)
	}
	return m, nil
}

// rcopySend is rcopy's client: it sends data to the rcopy server at the
// other end of c as the file path.
func rcopySend(c net.Conn, path string, data []byte) error {
	call := func(cmd uint8, msg []byte) error {
		if _, err := c.Write(msg); err != nil {
			return err
		}
		r, err := readRcopyMsg(c)
		if err != nil {
			return fmt.Errorf("response to %d: %w", cmd, err)
		}
		if r.command != cmd|rcopyResp || r.len != rcopyHdr || r.data != 0 {
			return fmt.Errorf("response to %d: command %#x, length %d, status %d", cmd, r.command, r.len, r.data)
		}
		return nil
	}
	pad := (len(path) + 8) &^ 7
	open := append(rcopyMsg{command: rcopyOpen, len: uint16(rcopyHdr + pad), data: 0o644}.bytes(), make([]byte, pad)...)
	copy(open[rcopyHdr:], path)
	if err := call(rcopyOpen, open); err != nil {
		return fmt.Errorf("open: %w", err)
	}
	write := binary.NativeEndian.AppendUint64(rcopyMsg{command: rcopyWrite, len: rcopyHdr + 8}.bytes(), uint64(len(data)))
	if err := call(rcopyWrite, append(write, data...)); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if err := call(rcopyClose, rcopyMsg{command: rcopyClose, len: rcopyHdr}.bytes()); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

// rcopyServe is rcopy's server for one connection: it writes the file the
// client sends into dir (under the base name of the path it asks for) and
// returns that path and the path the client asked for, once the client has
// closed the file and hung up.
func rcopyServe(c net.Conn, dir string) (file, asked string, err error) {
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	resp := func(m rcopyMsg, status uint32) error {
		_, err := c.Write(rcopyMsg{command: m.command | rcopyResp, len: rcopyHdr, data: status}.bytes())
		return err
	}
	for {
		m, err := readRcopyMsg(c)
		if errors.Is(err, io.EOF) && asked != "" && f == nil {
			return file, asked, nil
		}
		if err != nil {
			return "", "", err
		}
		switch m.command {
		case rcopyOpen:
			p := make([]byte, m.len-rcopyHdr)
			if _, err := io.ReadFull(c, p); err != nil {
				return "", "", err
			}
			asked, _, _ = strings.Cut(string(p), "\x00")
			file = filepath.Join(dir, filepath.Base(asked))
			if f, err = os.Create(file); err != nil {
				return "", "", err
			}
		case rcopyWrite:
			var n uint64
			if m.len != rcopyHdr+8 || f == nil {
				return "", "", fmt.Errorf("rcopy WRITE of length %d with the file open: %v", m.len, f != nil)
			}
			if err := binary.Read(c, binary.NativeEndian, &n); err != nil {
				return "", "", err
			}
			if n > 1<<30 {
				return "", "", fmt.Errorf("rcopy WRITE of %d bytes", n)
			}
			if _, err := io.CopyN(f, c, int64(n)); err != nil {
				return "", "", fmt.Errorf("rcopy data: %w", err)
			}
		case rcopyClose:
			if f == nil {
				return "", "", errors.New("rcopy CLOSE without OPEN")
			}
			err := f.Close()
			f = nil
			if err != nil {
				return "", "", err
			}
		default:
			return "", "", fmt.Errorf("rcopy command %d", m.command)
		}
		if err := resp(m, 0); err != nil {
			return "", "", err
		}
	}
}

// sumFile returns the SHA-256 and size of the file at path.
func sumFile(path string) ([sha256.Size]byte, int, error) {
	b, err := os.ReadFile(path)
	return sha256.Sum256(b), len(b), err
}

// TestLabRcopy: rdma-core's rcopy against rcopy's protocol spoken here
// over this package, at two file sizes: a Go client sends a file to rcopy's
// server (`rcopy -p PORT`), which writes it to disk; rcopy's client
// (`rcopy FILE HOST:DEST -p PORT`) sends a file to a Go server, which
// writes it to disk. The SHA-256 of each file on disk must be the
// sender's.
func TestLabRcopy(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 240*time.Second)
	for i, size := range []int{1000, 3<<20 + 123} {
		data := randomBytes(size, uint64(20+i))
		want := sha256.Sum256(data)
		check := func(path string) error {
			got, n, err := sumFile(path)
			if err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("%s: %d bytes with SHA-256 %x, want %d bytes with %x", path, n, got, size, want)
			}
			return nil
		}
		t.Run(fmt.Sprintf("%dB/C-server", size), func(t *testing.T) {
			port := labPort(410 + 2*i)
			// The client names the file on the server's node: the same
			// path on both.
			dst := fmt.Sprintf("/tmp/rsocket-rcopy-%d", size)
			dir := hostTempDir(t)
			e.RunRoles(t, func() error {
				os.Remove(dst)
				defer os.Remove(dst)
				// rcopy serves forever; it has stored the file once it
				// prints "closing...done" (its stdout is flushed when it
				// waits for the next connection).
				err := serveC(ctx, t, dir, cTool(t, ctx, false, "rcopy", "-p", port), func(out []byte) (bool, error) {
					return bytes.Contains(out, []byte("closing...done")), nil
				})
				if err != nil {
					return err
				}
				return check(dst)
			}, func() error {
				c, err := dialRetry(ctx, &Dialer{}, e.Peer+":"+port)
				if err != nil {
					return err
				}
				defer c.Close()
				return rcopySend(c, dst, data)
			})
		})
		t.Run(fmt.Sprintf("%dB/C-client", size), func(t *testing.T) {
			port := labPort(411 + 2*i)
			dir := hostTempDir(t)
			const asked = "/tmp/rcopy-dest-name"
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
				file, got, err := rcopyServe(c, dir)
				if err != nil {
					return fmt.Errorf("serving rcopy: %w", err)
				}
				if got != asked {
					return fmt.Errorf("rcopy asked for %q, want %q", got, asked)
				}
				return check(file)
			}, func() error {
				src := filepath.Join(dir, "source")
				if err := os.WriteFile(src, data, 0o644); err != nil {
					return err
				}
				out, err := runHeard(ctx, t, rstreamRefused, func() *exec.Cmd {
					return cTool(t, ctx, false, "rcopy", src, e.Peer+":"+asked, "-p", port)
				})
				if err != nil || !bytes.Contains(out, []byte(strconv.Itoa(size)+" bytes in")) {
					return fmt.Errorf("rcopy client: %v: %q", err, out)
				}
				return nil
			})
		})
	}
}

// TestLabCivetwebHTTP: a Go http.Client whose Transport dials with this
// package fetches a file from civetweb, a C HTTP server, run unmodified
// under LD_PRELOAD=librspreload.so; the SHA-256 of the body must be the
// file's. rsocket.Dial reaches only an rsockets listener, so a fetch that
// works proves civetweb's socket is an rsocket (librspreload passes a
// socket to TCP when its type carries SOCK_NONBLOCK or SOCK_CLOEXEC;
// civetweb opens plain SOCK_STREAM sockets, accepts with accept and polls
// with poll, all of which librspreload intercepts, and serves each
// connection in a thread, not a child). -allow_sendfile_call no: rdma-core
// 44's librspreload sendfile maps the file with mmap flags 0, which Linux
// refuses (EINVAL); civetweb then copies with read and send.
func TestLabCivetwebHTTP(t *testing.T) {
	e := requireLab(t)
	ctx := labCtx(t, 180*time.Second)
	port := labPort(420)
	body := randomBytes(3<<20+77, 13)
	want := sha256.Sum256(body)
	dir := hostTempDir(t)
	e.RunRoles(t, func() error {
		root := filepath.Join(dir, "root")
		if err := os.Mkdir(root, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, "file"), body, 0o644); err != nil {
			return err
		}
		access := filepath.Join(dir, "access.log")
		cmd := cTool(t, ctx, true, "civetweb", "-document_root", root, "-listening_ports", e.Addr+":"+port,
			"-num_threads", "2", "-enable_keep_alive", "no", "-allow_sendfile_call", "no", "-access_log_file", access)
		// civetweb logs a request once it has answered it, with the bytes
		// it sent (headers and body).
		served := []byte("\"GET /file HTTP/1.1\" 200 ")
		return serveC(ctx, t, dir, cmd, func([]byte) (bool, error) {
			logged, _ := os.ReadFile(access)
			_, after, ok := bytes.Cut(logged, served)
			if !ok {
				return false, nil
			}
			sent, _, _ := strings.Cut(string(after), " ")
			if n, err := strconv.Atoi(sent); err != nil || n < len(body) {
				return false, fmt.Errorf("civetweb logged %q, want at least the file's %d bytes sent", logged, len(body))
			}
			t.Logf("civetweb logged: %q", logged)
			return true, nil
		})
	}, func() error {
		client := &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{DialContext: (&Dialer{}).DialContext, DisableKeepAlives: true}}
		url := "http://" + e.Peer + ":" + port + "/file"
		// civetweb may not listen yet (with two nodes the server may still
		// be on an earlier test).
		resp, err := labtest.Retry(ctx, func(err error) bool { return errors.Is(err, cm.ErrNoListener) }, func() (*http.Response, error) {
			return client.Get(url)
		})
		if err != nil {
			return fmt.Errorf("GET %s over rsocket: %v (rsocket.Dial reaches only an rsockets server: did civetweb under librspreload fall back to TCP?)", url, err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			return fmt.Errorf("GET %s: body after %d bytes: %v", url, len(got), err)
		}
		if resp.StatusCode != http.StatusOK || sha256.Sum256(got) != want {
			return fmt.Errorf("GET %s: %s, %d bytes with SHA-256 %x, want 200 OK, %d bytes with %x", url, resp.Status, len(got), sha256.Sum256(got), len(body), want)
		}
		t.Logf("civetweb under librspreload served %d bytes over rsockets, SHA-256 %x", len(got), want)
		return nil
	})
}
