// Copyright 2026 The rdmago Authors.

// Package perf is the logic of cmd/rdmaperf: perftest's bandwidth and latency
// tests (ib_write_bw, ib_read_lat, ...) over package uverbs, connected by an
// out-of-band TCP exchange or by rdma_cm (package cm), with perftest's
// algorithms, statistics and table layout so the two can be read side by side.
//
// Timing uses the CPU's cycle counter (RDTSC on amd64, CNTVCT_EL0 on arm64),
// as perftest does, so the measured loops make no system call for the clock.
package perf

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rdmago/rdmago/internal/cliflag"
)

// Test is one of the benchmarks.
type Test int

// The tests, named as perftest's programs without the "ib_" prefix.
const (
	WriteBW Test = iota
	ReadBW
	SendBW
	WriteLat
	ReadLat
	SendLat
	AtomicLat
	// ConnTime is rdma_cm connection setup (Dial to ESTABLISHED), the
	// counterpart of rdma-core's cmtime.
	ConnTime
	// AtomicBW is ib_atomic_bw: atomics (-A) kept in flight like write_bw.
	AtomicBW
)

var testNames = [...]string{"write_bw", "read_bw", "send_bw", "write_lat", "read_lat", "send_lat", "atomic_lat", "conn_time", "atomic_bw"}

func (t Test) String() string {
	if int(t) < len(testNames) {
		return testNames[t]
	}
	return "test(" + strconv.Itoa(int(t)) + ")"
}

// ParseTest maps a name ("write_bw", also "ib_write_bw") to a Test.
func ParseTest(s string) (Test, error) {
	s = strings.TrimPrefix(s, "ib_")
	for i, n := range testNames {
		if n == s {
			return Test(i), nil
		}
	}
	return 0, fmt.Errorf("unknown test %q: want one of %s", s, strings.Join(testNames[:], ", "))
}

// IsBW reports a bandwidth test.
func (t Test) IsBW() bool { return t == WriteBW || t == ReadBW || t == SendBW || t == AtomicBW }

// IsAtomic reports an atomics test.
func (t Test) IsAtomic() bool { return t == AtomicLat || t == AtomicBW }

// IsLat reports a latency test.
func (t Test) IsLat() bool { return t >= WriteLat && t <= AtomicLat }

// title is perftest's banner for the test.
func (t Test) title() string {
	switch t {
	case WriteBW:
		return "RDMA_Write BW Test"
	case ReadBW:
		return "RDMA_Read BW Test"
	case SendBW:
		return "Send BW Test"
	case WriteLat:
		return "RDMA_Write Latency Test"
	case ReadLat:
		return "RDMA_Read Latency Test"
	case SendLat:
		return "Send Latency Test"
	case AtomicLat:
		return "Atomic Latency Test"
	case AtomicBW:
		return "Atomic BW Test"
	case ConnTime:
		return "RDMA_CM Connection Setup Test"
	}
	return t.String()
}

// rttFactor is what perftest divides a latency sample by: write and send
// latencies are measured as ping-pong round trips and halved, READ and
// atomics are one request and its response.
func (t Test) rttFactor() int {
	if t == WriteLat || t == SendLat {
		return 2
	}
	return 1
}

// AtomicType is perftest's -A.
type AtomicType int

// Atomic operations.
const (
	FetchAndAdd AtomicType = iota
	CmpAndSwap
)

func (a AtomicType) String() string {
	if a == CmpAndSwap {
		return "CMP_AND_SWAP"
	}
	return "FETCH_AND_ADD"
}

// Limits and defaults, perftest's where it has them (perftest_parameters.h).
const (
	DefaultPort    = 18515
	MaxSize        = 8 << 20 // -a goes up to 2^23
	minIters       = 5
	defItersBW     = 5000
	defItersLat    = 1000
	defItersConn   = 20
	defTxBW        = 128
	defTxLat       = 1
	defRxSend      = 512
	defRxRDMA      = 1
	defCQMod       = 100
	cqModSizeLimit = 8192  // above this perftest signals every WR (MSG_SIZE_CQ_MOD_LIMIT)
	peakItersLimit = 20000 // above this perftest skips the peak (O(n²/cq_mod))
	maxQPs         = 256
)

// defWarmup is --warmup's default: enough for sysmon's period to reach
// 10 ms (see spinUp).
const defWarmup = 30 * time.Millisecond

// Config is one rdmaperf invocation.
type Config struct {
	Test Test
	// Host is the server to connect to; empty makes this the server.
	Host string

	Sizes    []int         // message sizes, in order (-s, or -a: 2..8 MiB)
	All      bool          // -a
	Iters    int           // -n: iterations per size (connections for conn_time)
	Duration time.Duration // -D: run for this long instead of Iters
	Margin   time.Duration // -f: warm-up and cool-down around a -D sample
	Warmup   time.Duration // --warmup: the side that posts first spins this long before an -n loop (see warmUp)
	QPs      int           // -q
	TxDepth  int           // -t
	RxDepth  int           // -r
	CQMod    int           // -Q: signal one send in CQMod
	PostList int           // -l: WRs per post (one doorbell each)
	Inline   int           // -I: max inline data
	Atomic   AtomicType    // -A

	RDMACM   bool   // -R: connect with rdma_cm instead of the TCP exchange
	Perftest bool   // --perftest: speak perftest's TCP exchange (the peer is ib_write_bw, ...)
	Device   string // -d
	IBPort   int    // -i
	GIDIndex int    // -x; -1 picks the port's RoCE v2 IPv4 GID
	Port     int    // -p: TCP (or rdma_cm) port
	MTU      int    // -m: path MTU in bytes; 0 uses the port's active MTU
	Timeout  int    // -u: QP local ACK timeout exponent

	NoPeak     bool          // -N
	Gbits      bool          // --report_gbits
	JSON       bool          // --json: one JSON document on stdout instead of the table
	CPUProfile string        // --cpuprofile FILE (pprof)
	MemProfile string        // --memprofile FILE: every allocation (pprof alloc_objects)
	Deadline   time.Duration // --timeout: give up after this long

	explicit map[string]bool // flags given on the command line
}

// Usage is rdmaperf's help text.
const Usage = `usage: rdmaperf TEST [flags]           server: wait for a client
       rdmaperf TEST [flags] HOST      client: connect to the server on HOST

TESTS (perftest's ib_* programs):
  write_bw read_bw send_bw            bandwidth: BW peak/average [MB/sec], MsgRate [Mpps]
  write_lat read_lat send_lat         latency: t_min/max/typical/avg/stdev, 99%, 99.9% [usec]
  atomic_lat atomic_bw                fetch-and-add (default) or compare-and-swap (-A)
  conn_time                           rdma_cm connection setup (Dial to ESTABLISHED), like cmtime

Both sides take the same test; the client's settings (sizes, iterations,
depths) are sent to the server. Flags keep perftest's names; -x, -d, -p and -R
must agree between the two sides.

With --perftest rdmaperf speaks perftest's own TCP exchange instead (with
-R its rdma_cm exchange), as client of ib_write_bw and its siblings
(ib_{write,read,send}_{bw,lat}, ib_atomic_{bw,lat}) or as server for them:
then nothing is sent ahead, and both sides must be given the same test, -s,
-n, -q and -R, as with perftest. A server without --perftest whose client
turns out to be perftest speaks its exchange all the same, and says so; a
client needs --perftest to meet perftest's server.
`

// ParseArgs parses rdmaperf's command line: the test name, then perftest's
// flags and an optional host in any order (as getopt permutes them).
func ParseArgs(args []string, out io.Writer) (*Config, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no test given\n%s", Usage)
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		return nil, flag.ErrHelp
	}
	t, err := ParseTest(args[0])
	if err != nil {
		return nil, err
	}
	c := &Config{Test: t, explicit: map[string]bool{}}
	fs := flag.NewFlagSet("rdmaperf "+t.String(), flag.ContinueOnError)
	fs.SetOutput(out)
	var size int
	var dur, margin durationFlag
	var atomic string
	both := func(short, long string, fn func(name string)) {
		fn(short)
		fn(long)
	}
	both("s", "size", func(n string) {
		fs.IntVar(&size, n, 0, "message `size` in bytes (default 65536 for BW, 2 for latency, 8 for atomics)")
	})
	both("a", "all", func(n string) { fs.BoolVar(&c.All, n, false, "run sizes from 2 to 2^23 bytes") })
	both("n", "iters", func(n string) {
		fs.IntVar(&c.Iters, n, 0, "`iterations` per size, at least 5 (default 5000 for BW, 1000 for latency; connections for conn_time, default 20)")
	})
	both("D", "duration", func(n string) {
		fs.Var(&dur, n, "run each size for `SEC` seconds (or a Go duration: 500ms) instead of -n")
	})
	both("f", "margin", func(n string) {
		fs.Var(&margin, n, "with -D: warm-up and cool-down `SEC` around the sample (default duration/4)")
	})
	both("q", "qp", func(n string) { fs.IntVar(&c.QPs, n, 1, "number of QPs (bandwidth tests)") })
	both("t", "tx-depth", func(n string) { fs.IntVar(&c.TxDepth, n, 0, "send queue `depth` (default 128 for BW, 1 for latency)") })
	both("r", "rx-depth", func(n string) { fs.IntVar(&c.RxDepth, n, 0, "receive queue `depth` (default 512 for send tests)") })
	both("Q", "cq-mod", func(n string) {
		fs.IntVar(&c.CQMod, n, 0, "generate a completion every `N` sends (default 100; 1 above 8 KiB)")
	})
	both("l", "post_list", func(n string) {
		fs.IntVar(&c.PostList, n, 1, "post `N` work requests per post (one doorbell for the list)")
	})
	both("I", "inline_size", func(n string) { fs.IntVar(&c.Inline, n, 0, "max `bytes` sent inline (perftest uses 0 on Soft-RoCE)") })
	both("A", "atomic_type", func(n string) { fs.StringVar(&atomic, n, "FETCH_AND_ADD", "atomics: FETCH_AND_ADD or CMP_AND_SWAP") })
	both("R", "rdma_cm", func(n string) {
		fs.BoolVar(&c.RDMACM, n, false, "connect the QPs with rdma_cm instead of the TCP exchange")
	})
	both("d", "ib-dev", func(n string) { fs.StringVar(&c.Device, n, "", "RDMA `device` (default: the first one)") })
	both("i", "ib-port", func(n string) { fs.IntVar(&c.IBPort, n, 1, "device `port`") })
	both("x", "gid-index", func(n string) { fs.IntVar(&c.GIDIndex, n, -1, "GID `index` (default: the port's RoCE v2 IPv4 GID)") })
	both("p", "port", func(n string) {
		fs.IntVar(&c.Port, n, DefaultPort, "TCP (or rdma_cm) `port` to listen on or connect to")
	})
	both("m", "mtu", func(n string) {
		fs.IntVar(&c.MTU, n, 0, "path MTU `bytes`, 256..4096 (default: the port's active MTU)")
	})
	both("u", "qp-timeout", func(n string) { fs.IntVar(&c.Timeout, n, 14, "QP ACK timeout exponent (4.096 us × 2^N)") })
	both("N", "noPeak", func(n string) { fs.BoolVar(&c.NoPeak, n, false, "do not compute the peak bandwidth") })
	var ignored bool
	both("F", "CPU-freq", func(n string) { fs.BoolVar(&ignored, n, false, "accepted for perftest compatibility (no effect)") })
	fs.BoolVar(&c.Perftest, "perftest", false, "speak perftest's own exchange (TCP, or rdma_cm with -R): the peer is ib_write_bw, ib_read_lat, ... (same test, -s, -n, -q and -R on both sides)")
	fs.DurationVar(&c.Warmup, "warmup", defWarmup, "-n runs, on the side that posts first (the client; write_lat's server): keep the loop's thread busy this `long` before the first post, unmeasured, so that the Go runtime's sysmon has backed off (0: start at once)")
	fs.BoolVar(&c.Gbits, "report_gbits", false, "report bandwidth in Gb/sec instead of MB/sec (MiB/s)")
	fs.BoolVar(&c.JSON, "json", false, "print one JSON document on stdout instead of the table")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write a pprof CPU profile of the run to `FILE`")
	fs.StringVar(&c.MemProfile, "memprofile", "", "record every allocation and write the pprof profile to `FILE`")
	fs.DurationVar(&c.Deadline, "timeout", 10*time.Minute, "give up after this long")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), Usage, "\nFlags:\n")
		fs.PrintDefaults()
	}

	// getopt-style: flags and the host may come in any order.
	pos, err := cliflag.ParseInterleaved(fs, args[1:])
	if err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { c.explicit[f.Name] = true })
	switch len(pos) {
	case 0:
	case 1:
		c.Host = pos[0]
	default:
		return nil, fmt.Errorf("more than one host given: %q", pos)
	}
	switch strings.ToUpper(atomic) {
	case "FETCH_AND_ADD", "FAA":
		c.Atomic = FetchAndAdd
	case "CMP_AND_SWAP", "CAS":
		c.Atomic = CmpAndSwap
	default:
		return nil, fmt.Errorf("-A %q: want FETCH_AND_ADD or CMP_AND_SWAP", atomic)
	}
	if c.Atomic != FetchAndAdd && !t.IsAtomic() {
		return nil, fmt.Errorf("-A applies to atomic_lat and atomic_bw only")
	}
	c.Duration, c.Margin = time.Duration(dur), time.Duration(margin)
	if c.set("s", "size") && size <= 0 {
		return nil, fmt.Errorf("-s %d: the size must be at least 1 byte", size)
	}
	if err := c.finish(size); err != nil {
		return nil, err
	}
	return c, nil
}

// set reports whether any of the flag names was given.
func (c *Config) set(names ...string) bool {
	for _, n := range names {
		if c.explicit[n] {
			return true
		}
	}
	return false
}

// finish applies perftest's defaults and dependencies (force_dependecies) and
// rejects what cannot work.
func (c *Config) finish(size int) error {
	t := c.Test
	if c.All && size != 0 {
		return errors.New("-a and -s exclude each other: -a runs every size from 2 to 2^23 bytes")
	}
	if c.All && c.Duration > 0 {
		return errors.New("-a and -D exclude each other: -D runs one size for a time")
	}
	if c.Duration < 0 || (c.set("D", "duration") && c.Duration == 0) {
		return fmt.Errorf("-D %v: want a positive duration", c.Duration)
	}
	if c.Duration > 0 && c.set("n", "iters") {
		return errors.New("-n and -D exclude each other")
	}
	switch {
	case t == ConnTime:
		if c.Perftest {
			return fmt.Errorf("--perftest: %w", c.checkPerftest())
		}
		if c.All || c.set("s", "size") || c.Duration > 0 {
			return errors.New("conn_time takes -n (connections), not -s, -a or -D")
		}
		c.RDMACM = true // connection setup is rdma_cm's
		if c.Iters == 0 {
			c.Iters = defItersConn
		}
		if c.Iters < 1 {
			return fmt.Errorf("-n %d: want at least one connection", c.Iters)
		}
		c.Sizes = []int{0}
		return nil
	case c.All:
		for s := 2; s <= MaxSize; s *= 2 {
			c.Sizes = append(c.Sizes, s)
		}
	case size != 0:
		c.Sizes = []int{size}
	case t.IsAtomic():
		c.Sizes = []int{8}
	case t.IsBW():
		c.Sizes = []int{65536}
	default:
		c.Sizes = []int{2}
	}
	if t.IsAtomic() && (len(c.Sizes) != 1 || c.Sizes[0] != 8) {
		return fmt.Errorf("%v works on 8 bytes: drop -s/-a", t)
	}
	for _, s := range c.Sizes {
		if s > 1<<30 {
			return fmt.Errorf("-s %d: at most 1 GiB", s)
		}
	}
	if c.Iters == 0 {
		c.Iters = defItersLat
		if t.IsBW() {
			c.Iters = defItersBW
		}
	}
	if c.Duration == 0 && c.Iters < minIters {
		return fmt.Errorf("-n %d: perftest's algorithms need at least %d iterations", c.Iters, minIters)
	}
	if c.Warmup < 0 {
		return fmt.Errorf("--warmup %v: want 0 or more", c.Warmup)
	}
	if c.Duration > 0 {
		if c.Margin == 0 && !c.set("f", "margin") {
			c.Margin = c.Duration / 4
		}
		if c.Margin < 0 || c.Duration <= 2*c.Margin {
			return fmt.Errorf("-D %v with margin -f %v: the duration must exceed twice the margin", c.Duration, c.Margin)
		}
		c.NoPeak = true
	}
	if c.QPs < 1 || c.QPs > maxQPs {
		return fmt.Errorf("-q %d: want 1..%d", c.QPs, maxQPs)
	}
	if c.QPs > 1 && !t.IsBW() {
		return errors.New("-q: latency tests use one QP")
	}
	if c.TxDepth == 0 {
		c.TxDepth = defTxLat
		if t.IsBW() {
			c.TxDepth = defTxBW
		}
	}
	if c.TxDepth < 1 || c.TxDepth > 16384 {
		return fmt.Errorf("-t %d: want 1..16384", c.TxDepth)
	}
	if c.RxDepth == 0 {
		c.RxDepth = defRxRDMA
		if t == SendBW || t == SendLat {
			c.RxDepth = defRxSend
		}
	}
	if c.RxDepth < 1 || c.RxDepth > 16384 {
		return fmt.Errorf("-r %d: want 1..16384", c.RxDepth)
	}
	if c.Duration == 0 {
		c.TxDepth = min(c.TxDepth, c.Iters)
		if t == SendBW || t == SendLat {
			c.RxDepth = min(c.RxDepth, c.Iters)
		}
	}
	if c.PostList < 1 || c.PostList > c.TxDepth {
		return fmt.Errorf("-l %d: want 1..tx depth (%d)", c.PostList, c.TxDepth)
	}
	if c.PostList > 1 && !t.IsBW() {
		return errors.New("-l: post lists are for bandwidth tests")
	}
	if c.CQMod == 0 {
		c.CQMod = defCQMod
		if c.PostList > 1 {
			c.CQMod = c.PostList
		} else if len(c.Sizes) == 1 && c.Sizes[0] > cqModSizeLimit {
			c.CQMod = 1
		}
	}
	if c.CQMod < 1 || c.CQMod > 1024 {
		return fmt.Errorf("-Q %d: want 1..1024", c.CQMod)
	}
	if c.PostList > 1 && c.CQMod != c.PostList {
		return fmt.Errorf("-Q %d with -l %d: each list signals its last request, so the CQ moderation is the list length", c.CQMod, c.PostList)
	}
	if c.PostList > 1 && c.Duration == 0 && c.Iters%c.PostList != 0 {
		return fmt.Errorf("-n %d with -l %d: the iterations must be a multiple of the list length", c.Iters, c.PostList)
	}
	c.CQMod = min(c.CQMod, c.TxDepth)
	if t == ReadBW || t == ReadLat || t.IsAtomic() {
		c.Inline = 0 // nothing to inline: the data comes back
	}
	if c.Inline < 0 || c.Inline > 912 {
		return fmt.Errorf("-I %d: want 0..912", c.Inline)
	}
	if c.Duration == 0 && c.Iters > peakItersLimit {
		c.NoPeak = true
	}
	if c.Port < 1 || c.Port > 65535 {
		return fmt.Errorf("-p %d: want a port 1..65535", c.Port)
	}
	if c.MTU != 0 && (c.MTU < 256 || c.MTU > 4096 || c.MTU&(c.MTU-1) != 0) {
		return fmt.Errorf("-m %d: want 256, 512, 1024, 2048 or 4096", c.MTU)
	}
	if c.Perftest {
		if err := c.checkPerftest(); err != nil {
			return fmt.Errorf("--perftest: %w", err)
		}
	}
	if c.IBPort < 1 || c.IBPort > 255 {
		return fmt.Errorf("-i %d: want a device port from 1", c.IBPort)
	}
	if c.GIDIndex < -1 || c.GIDIndex > 255 {
		return fmt.Errorf("-x %d: want a GID index 0..255", c.GIDIndex)
	}
	if c.Timeout < 0 || c.Timeout > 31 {
		return fmt.Errorf("-u %d: want 0..31", c.Timeout)
	}
	return nil
}

// checkPerftest rejects what a run against perftest cannot do: it names
// the flag to change. It applies to --perftest and to a server that finds
// its client is perftest.
func (c *Config) checkPerftest() error {
	switch {
	case c.Test == ConnTime:
		return errors.New("conn_time has no perftest counterpart")
	case len(c.Sizes) != 1:
		return errors.New("perftest runs one size: give -s instead of -a")
	case c.Duration > 0:
		return errors.New("perftest runs -n iterations: -D is not implemented against perftest")
	case c.PostList > 1:
		return errors.New("-l is not implemented against perftest")
	}
	return nil
}

// MaxMsg is the largest size the run uses.
func (c *Config) MaxMsg() int {
	m := 0
	for _, s := range c.Sizes {
		m = max(m, s)
	}
	return m
}

// durationFlag takes perftest's whole seconds ("5") or a Go duration ("500ms").
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }

func (d *durationFlag) Set(s string) error {
	if n, err := strconv.Atoi(s); err == nil {
		*d = durationFlag(time.Duration(n) * time.Second)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want seconds (5) or a duration (500ms): %q", s)
	}
	*d = durationFlag(v)
	return nil
}
