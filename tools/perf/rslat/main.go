// Command rslat is a ping-pong of small messages over package rsocket (or
// TCP), for profiling one round trip in the lab against rstream's (see
// docs/performance.md). The client prints the mean
// round trip and how often it slept in the completion channel.
//
//	rslat -l ADDR:PORT           serve
//	rslat ADDR:PORT              ping-pong with a server
//	rslat -both ADDR:PORT        both ends in this process (as BenchmarkLabRstream's Go pair)
//	rslat -clock                 what a time.Now costs here
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/rdmago/rdmago/rsocket"
)

var (
	listen = flag.Bool("l", false, "serve")
	both   = flag.Bool("both", false, "client and server in this process")
	n      = flag.Int("n", 2000, "round trips")
	size   = flag.Int("s", 64, "bytes")
	poll   = flag.Duration("poll", 0, "PollTime")
	tcp    = flag.Bool("tcp", false, "TCP")
	dl     = flag.Bool("deadline", false, "SetDeadline per call")
	clock  = flag.Bool("clock", false, "time time.Now")
)

func clockCost() {
	const k = 20000
	start := time.Now()
	var last time.Time
	for range k {
		last = time.Now()
	}
	el := last.Sub(start)
	fmt.Printf("RESULT time.Now %.2f us\n", el.Seconds()*1e6/k)
}

func opts() rsocket.Options {
	return rsocket.Options{SendBuffer: 1 << 20, RecvBuffer: 1 << 20, PollTime: *poll}
}

func serve(addr string, ready chan<- struct{}) {
	ctx := context.Background()
	var l net.Listener
	var err error
	if *tcp {
		l, err = net.Listen("tcp", addr)
	} else {
		lc := rsocket.ListenConfig{Options: opts()}
		l, err = lc.Listen(ctx, "tcp", addr)
	}
	if err != nil {
		log.Fatal(err)
	}
	if ready != nil {
		close(ready)
	}
	c, err := l.Accept()
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, *size)
	for {
		if *dl {
			c.SetDeadline(time.Now().Add(time.Minute))
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			break
		}
		if _, err := c.Write(buf); err != nil {
			break
		}
	}
	c.Close()
	l.Close()
}

func client(addr string) {
	ctx := context.Background()
	var c net.Conn
	var err error
	for i := 0; i < 200; i++ {
		if *tcp {
			c, err = net.Dial("tcp", addr)
		} else {
			d := rsocket.Dialer{Options: opts()}
			c, err = d.DialContext(ctx, "tcp", addr)
		}
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		log.Fatal(err)
	}
	buf := make([]byte, *size)
	rt := func() {
		if *dl {
			c.SetDeadline(time.Now().Add(time.Minute))
		}
		if _, err := c.Write(buf); err != nil {
			log.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			log.Fatal(err)
		}
	}
	for range 50 {
		rt()
	}
	var st0 rsocket.Stats
	if rc, ok := c.(*rsocket.Conn); ok {
		st0 = rc.Stats()
	}
	start := time.Now()
	for range *n {
		rt()
	}
	el := time.Since(start)
	extra := ""
	if rc, ok := c.(*rsocket.Conn); ok {
		st := rc.Stats()
		extra = fmt.Sprintf(" wakes/rt %.2f compl/rt %.2f", float64(st.Wakeups-st0.Wakeups)/float64(*n), float64(st.Completions-st0.Completions)/float64(*n))
	}
	f := float64(*n)
	fmt.Printf("RESULT gomaxprocs=%d both=%v poll=%v tcp=%v: %.1f us/rt%s\n",
		runtime.GOMAXPROCS(0), *both, *poll, *tcp, el.Seconds()*1e6/f, extra)
	c.Close()
}

func main() {
	flag.Parse()
	addr := flag.Arg(0)
	switch {
	case *clock:
		clockCost()
	case *both:
		ready := make(chan struct{})
		done := make(chan struct{})
		go func() { serve(addr, ready); close(done) }()
		<-ready
		client(addr)
		<-done
	case *listen:
		serve(addr, nil)
	default:
		client(addr)
	}
	os.Exit(0)
}
