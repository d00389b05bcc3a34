// Copyright 2026 The rdmago Authors.

package grpcecho_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/rdmago/rdmago/examples/grpcecho"
	"github.com/rdmago/rdmago/rsocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// BenchmarkLabGRPC: gRPC-Go over rsocket against gRPC-Go over TCP on the
// same virtual wire, in alternating rounds (-test.benchtime=Nx: N rounds),
// each measuring both: the unary round trip (benchCalls calls of 64 B) and
// the stream's throughput (benchStreamBytes echoed both ways in 64 KiB
// messages, MiB/s each way). It reports the medians. With two nodes node 0
// serves and node 1 measures:
//
//	go run ./cmd/rdmalab test --nodes 2 -v -run '^$' -args -test.bench=LabGRPC -args -test.benchtime=5x ./examples/grpcecho
func BenchmarkLabGRPC(b *testing.B) {
	e := requireLab(b)
	ctx := labCtx(b, 30*time.Minute)
	const rsPort, tcpPort = 10, 11
	if e.twoNodes && e.serves() {
		for done := false; b.Loop(); done = true {
			if !done {
				if err := benchServe(ctx, e.addr, rsPort, tcpPort); err != nil {
					b.Fatal(err)
				}
			}
		}
		return
	}
	if !e.twoNodes {
		go benchServe(ctx, e.addr, rsPort, tcpPort) // ends with the clients' byes
	}
	creds := grpc.WithTransportCredentials(insecure.NewCredentials())
	rs := newClient(b, labAddr(e.peer, rsPort))
	defer rs.Close()
	tcp, err := grpc.NewClient(labAddr(e.peer, tcpPort), creds, grpc.WithContextDialer(dialTCP))
	if err != nil {
		b.Fatal(err)
	}
	defer tcp.Close()
	conns := []struct {
		name string
		cc   *grpc.ClientConn
	}{{"rsocket", rs}, {"TCP", tcp}}
	rtt := map[string][]float64{}
	mibs := map[string][]float64{}
	for _, c := range conns { // warm up: connect, grow the windows
		if _, err := benchCalls(ctx, c.cc, 20); err != nil {
			b.Fatal(c.name, err)
		}
		if _, err := benchStream(ctx, c.cc, 4<<20); err != nil {
			b.Fatal(c.name, err)
		}
	}
	for round := 0; b.Loop(); round++ {
		line := fmt.Sprintf("round %d:", round+1)
		for k := range conns {
			c := conns[(k+round)%len(conns)]
			d, err := benchCalls(ctx, c.cc, benchNCalls)
			if err != nil {
				b.Fatal(c.name, err)
			}
			us := d.Seconds() * 1e6 / benchNCalls
			d, err = benchStream(ctx, c.cc, benchStreamBytes)
			if err != nil {
				b.Fatal(c.name, err)
			}
			mb := float64(benchStreamBytes) / (1 << 20) / d.Seconds()
			rtt[c.name] = append(rtt[c.name], us)
			mibs[c.name] = append(mibs[c.name], mb)
			line += fmt.Sprintf("  %s %.0f µs/call %.2f MiB/s", c.name, us, mb)
		}
		b.Log(line)
	}
	for _, c := range conns {
		if err := bye(ctx, c.cc); err != nil {
			b.Fatal(c.name, err)
		}
	}
	for _, c := range conns {
		b.ReportMetric(median(rtt[c.name]), "µs/call-"+c.name)
		b.ReportMetric(median(mibs[c.name]), "MiB/s-"+c.name)
	}
	rttRatio, mibRatio := ratios(rtt["rsocket"], rtt["TCP"]), ratios(mibs["rsocket"], mibs["TCP"])
	b.Logf("medians of %d rounds: unary round trip rsocket %.0f µs, TCP %.0f µs (rsocket/TCP in the same round: %.2f [%.2f–%.2f]); stream rsocket %.2f MiB/s, TCP %.2f MiB/s (%.2f [%.2f–%.2f])",
		len(rttRatio), median(rtt["rsocket"]), median(rtt["TCP"]), median(rttRatio), slices.Min(rttRatio), slices.Max(rttRatio),
		median(mibs["rsocket"]), median(mibs["TCP"]), median(mibRatio), slices.Min(mibRatio), slices.Max(mibRatio))
}

// ratios divides each round's figure by the other's.
func ratios(xs, ys []float64) []float64 {
	r := make([]float64, len(xs))
	for i := range xs {
		r[i] = xs[i] / ys[i]
	}
	return r
}

const (
	benchNCalls      = 500
	benchStreamBytes = 16 << 20
)

// benchServe serves the echo service on rsocket and on TCP until a client
// said bye on each.
func benchServe(ctx context.Context, host string, rsPort, tcpPort int) error {
	rl, err := rsocket.Listen(ctx, "tcp", labAddr(host, rsPort))
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	tl, err := lc.Listen(ctx, "tcp", labAddr(host, tcpPort))
	if err != nil {
		rl.Close()
		return err
	}
	srv := &byeServer{bye: make(chan struct{}, 2)}
	s := grpc.NewServer()
	grpcecho.Register(s, srv)
	served := make(chan error, 2)
	go func() { served <- s.Serve(rl) }()
	go func() { served <- s.Serve(tl) }()
	return waitByes(ctx, s, served, srv.bye, 2)
}

// benchCalls times n unary calls of 64 B.
func benchCalls(ctx context.Context, cc *grpc.ClientConn, n int) (time.Duration, error) {
	in := make([]byte, 64)
	begin := time.Now()
	for range n {
		if _, err := grpcecho.Call(ctx, cc, in); err != nil {
			return 0, err
		}
	}
	return time.Since(begin), nil
}

// benchStream times total bytes echoed through a stream in 64 KiB
// messages (the same buffer each time: no content check, no hashing).
func benchStream(ctx context.Context, cc *grpc.ClientConn, total int) (time.Duration, error) {
	begin := time.Now()
	st, err := grpcecho.Stream(ctx, cc)
	if err != nil {
		return 0, err
	}
	go func() {
		b := make([]byte, 64<<10)
		for n := 0; n < total; n += len(b) {
			if st.Send(&b) != nil {
				return
			}
		}
		st.CloseSend()
	}()
	got := 0
	for {
		m, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		got += len(*m)
	}
	if got != total {
		return 0, fmt.Errorf("stream: %d bytes echoed of %d", got, total)
	}
	return time.Since(begin), nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}
