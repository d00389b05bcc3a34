// Copyright 2026 The rdmago Authors.

// Package demo is `rdmalab demo` (`make demo`): two lab nodes, rdmacp sends
// a random file from node 1 to node 0 over RDMA Write and both sides verify
// it, with rdma-core's ib_write_bw measured between the same two nodes in
// the same boot for comparison.
package demo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmago/rdmago/tools/lab"
	"github.com/rdmago/rdmago/tools/timeline"
)

// demoScript is what each node runs in the demo: node 0 serves ib_write_bw
// while it runs `rdmacp recv --once` into the guest's own tmpfs; node 1 makes a
// random file, measures ib_write_bw against node 0 at rdmacp's slot size
// and sends the file with rdmacp. Lines starting "DEMO " are the facts
// Run checks afterwards; the rest is narration.
const demoScript = `set -e
SZ=$DEMO_SLOT
T=${DEMO_TMP:-/tmp} # the node's own tmpfs (a host test gives each fake node its own)
rec=
# With DEMO_RDMATRACE set, rdmatrace records rdmacp's calls and the RoCEv2
# packets on this node into $DEMO_REC/nodeN.rec for the timeline page.
start_record() {
  [ -n "$DEMO_RDMATRACE" ] || return 0
  "$DEMO_RDMATRACE" record -q -c rdmacp -i "$RDMALAB_NETDEV" --node "node$RDMALAB_NODE" -o "$DEMO_REC/node$RDMALAB_NODE.rec" 2>$T/rec.err &
  rec=$!
  i=0
  until grep -q 'recording to' $T/rec.err; do
    i=$((i+1)); [ $i -lt 300 ] || { echo "rdmatrace record did not start:"; cat $T/rec.err; exit 1; }
    sleep 0.2
  done
  echo "== rdmatrace record: rdmacp's calls and the RoCEv2 packets on $RDMALAB_NETDEV"
}
stop_record() {
  [ -n "$rec" ] || return 0
  sleep 1
  kill -INT "$rec"
  wait "$rec" || { echo "rdmatrace record failed:"; cat $T/rec.err; exit 1; }
  echo "DEMO recorded $(tail -1 $T/rec.err)"
}
if [ "$RDMALAB_NODE" = 0 ]; then
  echo "== rxe device: $(ibv_devinfo -d "$RDMALAB_DEV" | grep -E 'hca_id|transport|state|active_mtu' | tr -s ' \t' ' ' | tr '\n' ';')"
  echo "== ib_write_bw server on $RDMALAB_ADDR ($SZ-byte RDMA Writes)"
  # Up to 3 runs in the background, stopped once rdmacp's file is in: a
  # client whose run ends in perftest's own timing-check glitch under
  # emulation ("Correlation coefficient r^2 < 0.9", no figures) tries again.
  serve_bw() {
    for t in 1 2 3; do
      [ ! -e $T/bw.stop ] || exit 0
      ib_write_bw -d "$RDMALAB_DEV" -x 1 -F -p 18516 -s "$SZ" -n "$DEMO_ITERS" >$T/bw.txt 2>&1 ||
        { [ -e $T/bw.stop ] || { echo "ib_write_bw server failed:"; cat $T/bw.txt; }; exit 1; }
    done
  }
  rm -f $T/bw.stop
  serve_bw &
  bwsrv=$!
  dst=$T/rdmacp-demo
  mkdir -p "$dst"
  echo "== rdmacp recv --once into $dst (node 0's tmpfs), listening on $RDMALAB_ADDR:18620"
  start_record
  "$DEMO_RDMACP" recv --once --json --slot-size "$SZ" --listen "$RDMALAB_ADDR:18620" "$dst" >$T/recv.json
  stop_record
  touch $T/bw.stop
  i=0
  while kill -0 $bwsrv 2>/dev/null && [ $i -lt 100 ]; do pkill -P $bwsrv -x ib_write_bw || true; sleep 0.1; i=$((i+1)); done
  wait $bwsrv || true
  echo "DEMO recv-json $(cat $T/recv.json)"
  echo "DEMO recv-rehash $(sha256sum "$dst/demo.bin" | cut -d' ' -f1)"
  echo "DEMO recv-size $(stat -c %s "$dst/demo.bin")"
else
  head -c "$DEMO_BYTES" /dev/urandom >$T/demo.bin
  echo "DEMO send-file-sha256 $(sha256sum $T/demo.bin | cut -d' ' -f1)"
  echo "== ib_write_bw $RDMALAB_ADDR -> $RDMALAB_PEER"
  ok=
  for try in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
    sleep 1
    if ib_write_bw -d "$RDMALAB_DEV" -x 1 -F -p 18516 -s "$SZ" -n "$DEMO_ITERS" "$RDMALAB_PEER" >$T/bw.txt 2>&1; then ok=1; break; fi
  done
  [ -n "$ok" ] || { cat $T/bw.txt; exit 1; }
  echo "DEMO bw $(grep -E "^ *$SZ " $T/bw.txt | head -1)"
  echo "== rdmacp send $T/demo.bin ($DEMO_BYTES random bytes) -> $RDMALAB_PEER:18620"
  start_record
  "$DEMO_RDMACP" send --json --wait 60s --slot-size "$SZ" $T/demo.bin "$RDMALAB_PEER:18620" >$T/send.json
  stop_record
  echo "DEMO send-json $(cat $T/send.json)"
fi`

// demoFacts are the DEMO lines of both nodes.
type demoFacts struct {
	sendFile, recvRehash string // sha256 hex: of node 1's file, of node 0's copy
	recvSize             int64
	bwMBs                float64 // ib_write_bw's average, MB/s as perftest counts them (2^20 bytes)
	send, recv           demoSummary
	seen                 map[string]bool
}

// demoSummary is the part of rdmacp's --json output the demo checks.
type demoSummary struct {
	OK         bool    `json:"ok"`
	Verified   int     `json:"verified"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"throughput_bytes_per_second"`
	Error      string  `json:"error"`
	Files      []struct {
		Name     string `json:"name"`
		Verify   string `json:"verify"` // crc32c, sha256, none; absent before rdmacp had --verify (SHA-256)
		SHA256   string `json:"sha256"`
		CRC32C   string `json:"crc32c"`
		Verified bool   `json:"verified"`
	} `json:"files"`
}

// check is how rdmacp verified the one file of s, and the checksum it
// reports: ("sha256", hex), ("crc32c", 8 hex digits) or ("none", "").
func (s demoSummary) check() (mode, sum string) {
	if len(s.Files) != 1 {
		return "", ""
	}
	f := s.Files[0]
	switch f.Verify {
	case "", "sha256":
		return "sha256", f.SHA256
	case "crc32c":
		return "crc32c", f.CRC32C
	}
	return f.Verify, ""
}

func parseDemo(out []byte) (*demoFacts, error) {
	f := &demoFacts{seen: map[string]bool{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "DEMO ")
		if i < 0 {
			continue
		}
		key, val, _ := strings.Cut(line[i+len("DEMO "):], " ")
		val = strings.TrimSpace(val)
		f.seen[key] = true
		var err error
		switch key {
		case "send-file-sha256":
			f.sendFile = val
		case "recv-rehash":
			f.recvRehash = val
		case "recv-size":
			f.recvSize, err = strconv.ParseInt(val, 10, 64)
		case "bw":
			// #bytes #iterations BW-peak BW-average MsgRate
			fields := strings.Fields(val)
			if len(fields) < 4 {
				return nil, fmt.Errorf("ib_write_bw result line %q: want 5 columns", val)
			}
			f.bwMBs, err = strconv.ParseFloat(fields[3], 64)
		case "send-json":
			err = json.Unmarshal([]byte(val), &f.send)
		case "recv-json":
			err = json.Unmarshal([]byte(val), &f.recv)
		}
		if err != nil {
			return nil, fmt.Errorf("demo line %q: %v", line, err)
		}
	}
	for _, k := range []string{"send-file-sha256", "recv-rehash", "recv-size", "bw", "send-json", "recv-json"} {
		if !f.seen[k] {
			return nil, fmt.Errorf("a node did not report %q (see its output above)", k)
		}
	}
	return f, nil
}

// check lists every way the transfer was not verified end to end.
func (f *demoFacts) check(size int64) []string {
	var bad []string
	if !f.send.OK || f.send.Verified != 1 {
		bad = append(bad, fmt.Sprintf("sender: ok=%v verified=%d %s", f.send.OK, f.send.Verified, f.send.Error))
	}
	if !f.recv.OK || f.recv.Verified != 1 {
		bad = append(bad, fmt.Sprintf("receiver: ok=%v verified=%d %s", f.recv.OK, f.recv.Verified, f.recv.Error))
	}
	if len(f.sendFile) != 64 {
		bad = append(bad, fmt.Sprintf("node 1's sha256sum printed %q", f.sendFile))
	}
	// The ground truth: sha256sum of the file on both nodes.
	if f.recvRehash != f.sendFile {
		bad = append(bad, fmt.Sprintf("sha256sum of the received file %q differs from the source file's %s", f.recvRehash, f.sendFile))
	}
	// rdmacp's own verification: the same check at both ends, agreeing
	// (and, for SHA-256, with sha256sum).
	smode, ssum := f.send.check()
	rmode, rsum := f.recv.check()
	switch {
	case smode != rmode:
		bad = append(bad, fmt.Sprintf("the sender's rdmacp verified with %q, the receiver's with %q", smode, rmode))
	case smode == "sha256":
		for _, c := range []struct{ what, got string }{{"sender's rdmacp digest", ssum}, {"receiver's rdmacp digest", rsum}} {
			if c.got != f.sendFile {
				bad = append(bad, fmt.Sprintf("%s %q differs from the source file's %s", c.what, c.got, f.sendFile))
			}
		}
	case smode == "crc32c":
		if len(ssum) != 8 || ssum != rsum {
			bad = append(bad, fmt.Sprintf("the sender's rdmacp CRC32C %q differs from the receiver's %q", ssum, rsum))
		}
	default:
		bad = append(bad, fmt.Sprintf("rdmacp did not verify the file (--verify %q)", smode))
	}
	if f.recvSize != size || f.send.Bytes != size {
		bad = append(bad, fmt.Sprintf("sizes: received file %d, sender moved %d, want %d", f.recvSize, f.send.Bytes, size))
	}
	if f.bwMBs <= 0 {
		bad = append(bad, "ib_write_bw reported no bandwidth")
	}
	return bad
}

// buildTool builds cmd/NAME statically for the guests (linux/amd64) into
// dir, which they see at the same path.
func buildTool(ctx context.Context, dir, name string, stderr io.Writer) (string, error) {
	out := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, "github.com/rdmago/rdmago/cmd/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s (run the demo from the repository, as `make demo`): %w", name, err)
	}
	return out, nil
}

// Options configure Run.
type Options struct {
	lab.RunOptions       // Nodes is ignored: the demo boots two
	Size           int64 // bytes of random data to send (keep it small: the VMs are emulated)
	SlotSize       int64 // rdmacp's slot size and ib_write_bw's message size, 4096..16 MiB
	// Timeline, when set, is the HTML page to write: rdmatrace records
	// rdmacp's calls and the packets on both nodes and draws them
	// (package tools/timeline).
	Timeline string
}

// Check reports sizes the demo cannot run with.
func (o Options) Check() error {
	if o.Size < 1 || o.SlotSize < 4096 || o.SlotSize > 16<<20 {
		return errors.New("want --size ≥ 1 and --slot-size in 4096..16777216")
	}
	return nil
}

// Result is what the demo found.
type Result struct {
	// Status is the first non-zero exit status of a node; when it is not 0
	// nothing else below is set.
	Status int
	// Problems lists every way the transfer was not verified end to end
	// (or why the nodes' report could not be read); empty when it was.
	Problems []string

	SourceSHA256 string // sha256sum of the file on node 1
	// Verify is how rdmacp verified (crc32c, its default, or sha256);
	// SentSum and RecvSum the checksums its two ends report (with sha256,
	// their SHA-256 digests).
	Verify, SentSum, RecvSum string
	NewSHA256                string  // sha256sum of the new file on node 0
	SentBytes                int64   // bytes rdmacp send moved
	Seconds                  float64 // rdmacp send's time
	RdmacpMBs                float64 // rdmacp send's throughput, MB/s (2^20 bytes)
	WriteBWMBs               float64 // ib_write_bw's average, MB/s as perftest counts them (2^20 bytes)
	// Timeline is the page written for Options.Timeline and what it shows.
	Timeline, TimelineSays string
}

// Run builds rdmacp, boots two lab nodes and runs the demo: the nodes'
// output streams to stdout, progress goes to stderr. An error is a demo
// that could not run; a demo that ran and failed has Result.Status or
// Result.Problems set.
func Run(ctx context.Context, o Options, stdout, stderr io.Writer) (*Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	o.Nodes = 2
	dir, err := os.MkdirTemp("", "rdmalab-demo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	fmt.Fprintln(stderr, "rdmalab demo: building rdmacp (CGO_ENABLED=0, static)")
	bin, err := buildTool(ctx, dir, "rdmacp", stderr)
	if err != nil {
		return nil, err
	}
	if o.Timeline != "" {
		tr, err := buildTool(ctx, dir, "rdmatrace", stderr)
		if err != nil {
			return nil, err
		}
		o.Env = append(o.Env, "DEMO_RDMATRACE="+tr, "DEMO_REC="+dir)
	}
	o.Shares = append(o.Shares, dir)
	iters := max(8, min(64, 32*(1<<20)/o.SlotSize)) // about 32 MiB of writes
	o.Env = append(o.Env, "DEMO_RDMACP="+bin, fmt.Sprintf("DEMO_BYTES=%d", o.Size),
		fmt.Sprintf("DEMO_SLOT=%d", o.SlotSize), fmt.Sprintf("DEMO_ITERS=%d", iters))

	fmt.Fprintln(stderr, "rdmalab demo: booting two VMs with Soft-RoCE joined by a virtual wire (software emulation: about 15 s)")
	var out bytes.Buffer
	status, err := lab.RunCommand(ctx, o.RunOptions, []string{"sh", "-c", demoScript}, io.MultiWriter(stdout, &out), stderr)
	if err != nil {
		return nil, err
	}
	if status != 0 {
		return &Result{Status: status}, nil
	}
	f, err := parseDemo(out.Bytes())
	if err != nil {
		return &Result{Problems: []string{err.Error()}}, nil
	}
	if bad := f.check(o.Size); len(bad) > 0 {
		return &Result{Problems: bad}, nil
	}
	const mib = 1 << 20
	mode, ssum := f.send.check()
	_, rsum := f.recv.check()
	r := &Result{
		SourceSHA256: f.sendFile,
		Verify:       mode,
		SentSum:      ssum,
		RecvSum:      rsum,
		NewSHA256:    f.recvRehash,
		SentBytes:    f.send.Bytes,
		Seconds:      f.send.Seconds,
		RdmacpMBs:    f.send.Throughput / mib,
		WriteBWMBs:   f.bwMBs,
	}
	if o.Timeline != "" {
		m, err := timeline.Load([]string{filepath.Join(dir, "node0.rec"), filepath.Join(dir, "node1.rec")})
		if err != nil {
			return nil, fmt.Errorf("timeline: %w", err)
		}
		m.Title = fmt.Sprintf("rdmalab demo: rdmacp sends %d bytes from node1 to node0 (RDMA Write, RoCEv2 over rxe)", o.Size)
		if err := timeline.WriteFile(o.Timeline, m); err != nil {
			return nil, err
		}
		r.Timeline = o.Timeline
		r.TimelineSays = fmt.Sprintf("%d packets, %d calls and CM events; %s", m.Packets, m.Calls, m.Clock)
	}
	return r, nil
}
