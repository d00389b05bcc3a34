// Copyright 2026 The rdmago Authors.

// Command rdmaping is rdma-core's rping in pure Go, wire-compatible with it
// in both roles, plus the classic verbs demos, udaddy's UD exchange and the
// rdma_server/rdma_client pair. It needs no rdma-core: build it with
// CGO_ENABLED=0 and run it on any Linux with an RDMA device (Soft-RoCE is
// enough: `rdma link add rxe0 type rxe netdev eth0`).
//
//	rdmaping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-P]
//	rdmaping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]
//
// Modes (--mode; the default is rping):
//
//	rping       rping's RDMA READ/WRITE ping over rdma_cm (port 7174)
//	send        SEND ping-pong, validated
//	send-imm    SEND with immediate, the immediate checked
//	write       RDMA WRITE into the server's advertised buffer, then a SEND
//	write-imm   RDMA WRITE with immediate: the server learns of it from the immediate
//	read        RDMA READ of a pattern the server advertises
//	atomic      fetch-and-add and compare-and-swap on the server's counter
//	send-inv    RDMA WRITE through a type 2 memory window, then SEND WITH
//	            INVALIDATE revokes it (-v narrates each bind and invalidation)
//	rdmacs      the rdma_server/rdma_client 16-byte exchange (port 7471)
//
// The demos connect through rdma_cm, or with --tcp through ibv_rc_pingpong's
// out-of-band TCP exchange (port 18515). --tcp without --mode is the
// ibv_*_pingpong family itself, in either role: ibv_rc_pingpong by
// default, ibv_uc_pingpong and ibv_ud_pingpong with --qp-type uc|ud,
// ibv_srq_pingpong with --srq N (its -q; 16 by default there). -C is their
// -n (1000), -S their -s (4096; UD 1024); the C programs need -g with the
// index of the RoCE v2 GID (rdmainfo gids shows it). --ud runs udaddy's UD exchange
// (port 7174): -c -a addr is `udaddy -s addr`, -s is `udaddy`.
//
// --mcast GROUP is librdmacm's mckey: -s joins and receives (mckey -m
// GROUP), -c joins and sends (mckey -s -m GROUP), -a binds (mckey -b).
//
// -v prints the ping data as rping does and narrates every CM and verbs
// step (device, PD, MR, CQ, QP, each transition, each event) on stderr; -d
// adds rping's per-message debug lines.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmago/rdmago/oob"
	"github.com/rdmago/rdmago/tools/ping"
)

type config struct {
	server, client bool
	addr, source   string
	port           int
	count, size    int
	verbose        bool
	validate       bool
	debug          bool
	persistent     bool
	mode           string
	tcp, ud        bool
	qpType         string
	srq            int
	mcast          string
	sendOnly       bool
	dev            string
	timeout        time.Duration
	peerTimeout    time.Duration
	settle         time.Duration
	tos            int

	stdout, stderr io.Writer // where run writes; set by run, not by flags
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// boolFlags are the single-letter flags that take no value, which rping
// users combine ("-vV").
const boolFlags = "scvVdPq"

// expandArgs splits combined single-letter boolean flags ("-vVd") into
// separate ones, as getopt accepts them.
func expandArgs(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.Trim(a[1:], boolFlags) == "" {
			for _, c := range a[1:] {
				out = append(out, "-"+string(c))
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func parse(args []string) (*config, error) {
	var c config
	fs := flag.NewFlagSet("rdmaping", flag.ContinueOnError)
	fs.BoolVar(&c.server, "s", false, "server side")
	fs.BoolVar(&c.client, "c", false, "client side")
	fs.StringVar(&c.addr, "a", "", "address: the server's (client), the address to bind to (server; default all)")
	fs.StringVar(&c.source, "I", "", "source address to bind to (client)")
	fs.IntVar(&c.port, "p", 0, "port (default 7174; 7471 in rdmacs mode; 18515 with --tcp)")
	fs.IntVar(&c.count, "C", -1, "ping count (default: rping forever, udaddy 10, demos 10, pingpong 1000)")
	fs.IntVar(&c.size, "S", 0, "ping data size (default: rping 64, udaddy 100, demos 64, pingpong 4096, UD pingpong 1024)")
	fs.BoolVar(&c.verbose, "v", false, "display ping data and narrate every CM and verbs step")
	fs.BoolVar(&c.validate, "V", false, "validate ping data")
	fs.BoolVar(&c.debug, "d", false, "debug printfs")
	fs.BoolVar(&c.persistent, "P", false, "persistent server: serve clients until killed")
	q := fs.Bool("q", false, "ignored (rping's self-created QP: rdmaping always creates its QP itself)")
	fs.StringVar(&c.mode, "mode", "rping", "rping, send, send-imm, write, write-imm, read, atomic, send-inv or rdmacs")
	fs.BoolVar(&c.tcp, "tcp", false, "demos: connect the QP with an out-of-band TCP exchange instead of rdma_cm")
	fs.StringVar(&c.qpType, "qp-type", "rc", "--tcp pingpong: rc, uc or ud (ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong)")
	fs.IntVar(&c.srq, "srq", 0, "--tcp pingpong: N RC QPs sharing an SRQ (ibv_srq_pingpong -q N; its default is 16)")
	fs.StringVar(&c.mcast, "mcast", "", "mckey: join multicast GROUP; -s receives -C datagrams (mckey -m), -c sends them (mckey -s -m); -a binds (mckey -b)")
	fs.BoolVar(&c.sendOnly, "send-only", false, "--mcast -c: join as a send-only full member (mckey -o)")
	fs.BoolVar(&c.ud, "ud", false, "udaddy's UD datagram exchange over rdma_cm")
	fs.StringVar(&c.dev, "dev", "", "--tcp: RDMA device (default: the one on the address's interface)")
	fs.DurationVar(&c.timeout, "timeout", 0, "give up after this long (0: never)")
	fs.DurationVar(&c.peerTimeout, "peer-timeout", 10*time.Second, "--tcp: give up when no completion comes for this long (a peer that exited or runs another QP type)")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "--mcast -c: wait this long after joining before sending (mckey waits 3s for a subnet manager to set up the group)")
	fs.IntVar(&c.tos, "t", 0, "type of service (udaddy -t)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage:\n  rdmaping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-P]\n"+
			"  rdmaping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]\n"+
			"  rdmaping -s|-c --mode send|send-imm|write|write-imm|read|atomic|send-inv [--tcp] ...\n"+
			"  rdmaping -s|-c --tcp [--qp-type rc|uc|ud] [--srq N] [-C iters] [-S size] ...   (ibv_*_pingpong)\n"+
			"  rdmaping -s|-c --ud [-C count] [-S size] ...\n"+
			"  rdmaping -s|-c --mode rdmacs ...\n"+
			"  rdmaping -s|-c --mcast GROUP [-a bindaddr] [-C count] [-S size] [--send-only]   (mckey)\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(expandArgs(args)); err != nil {
		return nil, err
	}
	_ = q
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.server == c.client {
		return nil, errors.New("give exactly one of -s (server) and -c (client)")
	}
	if c.mcast != "" && (c.tcp || c.ud || c.mode != "rping") {
		return nil, errors.New("--mcast is mckey's exchange: it takes no --mode, --tcp or --ud")
	}
	if c.peerTimeout <= 0 {
		return nil, fmt.Errorf("--peer-timeout %v: give a positive duration", c.peerTimeout)
	}
	if c.settle < 0 {
		return nil, fmt.Errorf("--settle %v: give a duration of 0 or more", c.settle)
	}
	if c.sendOnly && (c.mcast == "" || !c.client) {
		return nil, errors.New("--send-only is for the multicast sender: -c --mcast GROUP")
	}
	if c.client && c.addr == "" && c.mcast == "" {
		return nil, errors.New("the client needs the server's address: -a ADDR")
	}
	switch c.mode {
	case "rping", "send", "send-imm", "write", "write-imm", "read", "atomic", "send-inv", "rdmacs":
	default:
		return nil, fmt.Errorf("unknown --mode %q", c.mode)
	}
	if c.ud && c.mode != "rping" {
		return nil, errors.New("--ud is udaddy's exchange; it takes no --mode")
	}
	if c.tcp && (c.ud || c.mode == "rdmacs") {
		return nil, errors.New("--tcp runs the ibv_*_pingpong exchange (no --mode) or connects the demo modes (send ... atomic)")
	}
	pingpong := c.tcp && c.mode == "rping"
	if _, ok := qpTypes[c.qpType]; !ok {
		return nil, fmt.Errorf("unknown --qp-type %q: give rc, uc or ud", c.qpType)
	}
	if (c.qpType != "rc" || c.srq != 0) && !pingpong {
		return nil, errors.New("--qp-type and --srq are for the ibv_*_pingpong exchange: --tcp without --mode")
	}
	if c.srq < 0 || c.srq >= oob.SRQDests {
		return nil, fmt.Errorf("--srq %d: give 1 to %d QPs", c.srq, oob.SRQDests-1)
	}
	if c.srq > 0 && c.qpType != "rc" {
		return nil, errors.New("--srq runs ibv_srq_pingpong, whose QPs are RC: drop --qp-type")
	}
	if c.port == 0 {
		switch {
		case c.tcp:
			c.port = 18515
		case c.mode == "rdmacs":
			c.port = 7471
		default:
			c.port = ping.DefaultPort
		}
	}
	if c.port < 1 || c.port > 65535 {
		return nil, fmt.Errorf("port %d out of range", c.port)
	}
	return &c, nil
}

// hostPort joins an address and the port; an empty address is the
// unspecified IPv4 address.
func hostPort(addr string, port int) string {
	if addr == "" {
		addr = "0.0.0.0"
	}
	return net.JoinHostPort(addr, strconv.Itoa(port))
}

func sourceAddr(s string) (netip.AddrPort, error) {
	if s == "" {
		return netip.AddrPort{}, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		ips, lerr := net.LookupIP(s)
		if lerr != nil || len(ips) == 0 {
			return netip.AddrPort{}, fmt.Errorf("-I %q: not an address", s)
		}
		a, _ = netip.AddrFromSlice(ips[0])
	}
	return netip.AddrPortFrom(a.Unmap(), 0), nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "rdmaping:", err)
		return 2
	}
	c.stdout, c.stderr = stdout, stderr
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	if err := dispatch(ctx, c); err != nil {
		fmt.Fprintln(stderr, "rdmaping:", err)
		return 1
	}
	return 0
}

// logf narrates on stderr under -v; nil without it (the packages' Logf
// fields take nil as off).
func (c *config) logf() func(string, ...any) {
	if !c.verbose {
		return nil
	}
	return func(f string, a ...any) { fmt.Fprintf(c.stderr, "rdmaping: "+f+"\n", a...) }
}

// narrate is logf, or a no-op without -v, for rdmaping's own steps.
func (c *config) narrate() func(string, ...any) {
	if f := c.logf(); f != nil {
		return f
	}
	return func(string, ...any) {}
}

func (c *config) debugf() func(string, ...any) {
	if !c.debug {
		return nil
	}
	return func(f string, a ...any) { fmt.Fprintf(c.stdout, f+"\n", a...) }
}

func dispatch(ctx context.Context, c *config) error {
	switch {
	case c.mcast != "":
		return runMcast(ctx, c)
	case c.ud:
		return runUD(ctx, c)
	case c.tcp && c.mode == "rping":
		return runPingpongTCP(ctx, c)
	case c.mode == "rping":
		return runRping(ctx, c)
	case c.mode == "rdmacs":
		return runRdmaCS(ctx, c)
	case c.tcp:
		return runDemoTCP(ctx, c)
	default:
		return runDemoCM(ctx, c)
	}
}
