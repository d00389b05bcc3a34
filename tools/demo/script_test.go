// Copyright 2026 The rdmago Authors.

//go:build linux

package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// Fakes of the guest's programs for TestDemoScriptGlitch, sharing $FAKE.
const (
	fakeDevinfo = "#!/bin/sh\necho 'hca_id:\trxe0'\n"
	// ib_write_bw: servers count themselves (srv.N) and wait for their
	// client (cli.N); the first client run ends as perftest's timing-check
	// glitch does, the next one reports.
	fakeWriteBW = `#!/bin/sh
for a; do last=$a; done
if [ "$last" = "$FAKE_PEER" ]; then
  n=$(ls "$FAKE" | grep -c '^srv\.')
  if [ "$n" = 0 ] || [ -e "$FAKE/cli.$n" ]; then echo "Couldn't connect to $last:18516"; exit 1; fi
  touch "$FAKE/cli.$n"
  if [ "$n" = 1 ]; then printf "Correlation coefficient r^2: 0.770424 < 0.9\nCan't produce a report\n"; exit 1; fi
  echo " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
  echo " $DEMO_SLOT       8           100.00             90.00              0.023"
  exit 0
fi
n=$(( $(ls "$FAKE" | grep -c '^srv\.') + 1 ))
echo $$ >"$FAKE/srv.$n"
i=0
until [ -e "$FAKE/cli.$n" ]; do i=$((i+1)); [ $i -lt 600 ] || exit 1; sleep 0.05; done
`
	// rdmacp: send leaves the file in $FAKE, recv waits for it.
	fakeRdmacp = `#!/bin/sh
for a; do prev=$last; last=$a; done
json() { printf '{"ok":true,"verified":1,"bytes":%s,"files":[{"name":"demo.bin","verify":"sha256","sha256":"%s","verified":true}]}\n' "$(stat -c %s "$1")" "$(sha256sum "$1" | cut -d' ' -f1)"; }
case $1 in
send) cp "$prev" "$FAKE/file"; touch "$FAKE/sent"; json "$prev" ;;
recv) i=0; until [ -e "$FAKE/sent" ]; do i=$((i+1)); [ $i -lt 600 ] || exit 1; sleep 0.05; done
  cp "$FAKE/file" "$last/demo.bin"; json "$last/demo.bin" ;;
esac
`
)

// TestDemoScriptGlitch runs the demo's script for both nodes on this host
// with fakes of ib_write_bw, ibv_devinfo and rdmacp, where the first
// ib_write_bw client run fails only perftest's own timing check (seen in
// lab runs under TCG: "Correlation coefficient r^2 < 0.9", exit 1, after
// its server has finished). Node 0 must serve another run, the demo must
// pass with the second run's figure, and no server may be left running.
func TestDemoScriptGlitch(t *testing.T) {
	dir := t.TempDir()
	bin, fake := filepath.Join(dir, "bin"), filepath.Join(dir, "fake")
	for _, d := range []string{bin, fake, filepath.Join(dir, "node0"), filepath.Join(dir, "node1")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"ibv_devinfo": fakeDevinfo, "ib_write_bw": fakeWriteBW, "rdmacp": fakeRdmacp} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const size = 5000
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := []string{"10.77.0.1", "10.77.0.2"}
	var outs [2]bytes.Buffer
	errc := make(chan error, 2)
	for node := range 2 {
		// In the lab the test runs in the initramfs, without a shell:
		// HostTool runs the host's, chrooted (the temporary directory is
		// under /tmp, which the chroot shares).
		cmd := labtest.HostTool(t, ctx, "sh", "-c", demoScript)
		env := cmd.Env // HostTool's own, when chrooted
		if env == nil {
			env = os.Environ()
		}
		cmd.Env = append(env, "PATH="+bin+":/usr/sbin:/usr/bin:/sbin:/bin", "FAKE="+fake, "FAKE_PEER="+addr[0],
			"RDMALAB_NODE="+strconv.Itoa(node), "RDMALAB_DEV=rxe0", "RDMALAB_NETDEV=eth0",
			"RDMALAB_ADDR="+addr[node], "RDMALAB_PEER="+addr[1-node],
			"DEMO_RDMACP="+filepath.Join(bin, "rdmacp"), "DEMO_BYTES="+strconv.Itoa(size), "DEMO_SLOT=4096", "DEMO_ITERS=8",
			"DEMO_TMP="+filepath.Join(dir, "node"+strconv.Itoa(node)))
		cmd.Stdout, cmd.Stderr = &outs[node], &outs[node]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { errc <- cmd.Wait() }()
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Errorf("a node's script: %v", err)
		}
	}
	t.Logf("node 0:\n%s\nnode 1:\n%s", &outs[0], &outs[1])
	f, err := parseDemo(append(outs[0].Bytes(), outs[1].Bytes()...))
	if err != nil {
		t.Fatal(err)
	}
	if bad := f.check(size); len(bad) > 0 {
		t.Errorf("demo problems: %s", strings.Join(bad, "; "))
	}
	if f.bwMBs != 90 {
		t.Errorf("ib_write_bw figure %v, want the second run's 90", f.bwMBs)
	}
	// Every server node 0 started is gone (the one still waiting for a
	// client when rdmacp's file came in was stopped).
	srvs, _ := filepath.Glob(filepath.Join(fake, "srv.*"))
	if len(srvs) < 2 {
		t.Errorf("%d ib_write_bw servers ran, want a second after the glitch", len(srvs))
	}
	for _, s := range srvs {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("%s: %q", s, b)
		}
		for i := 0; running(pid); i++ {
			if i == 100 {
				t.Errorf("ib_write_bw server %d (%s) still running after node 0 ended", pid, filepath.Base(s))
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// running reports whether process pid exists and is not a zombie (in the
// lab's guest nothing may reap an orphan).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}
