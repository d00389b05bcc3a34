// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"net"
	"testing"
	"time"
)

// TestRstreamTest runs the lab's rstream peer against itself over an
// in-memory pipe, with and without verification, and checks that a byte
// out of format_buf's sequence is caught.
func TestRstreamTest(t *testing.T) {
	for _, verify := range []bool{true, false} {
		a, b := net.Pipe()
		errs := make(chan error, 1)
		go func() {
			_, err := rstreamTest(b, false, 100, 3, 4, verify)
			b.Close()
			errs <- err
		}()
		d, err := rstreamTest(a, true, 100, 3, 4, verify)
		a.Close()
		if err != nil || d <= 0 {
			t.Errorf("verify %v: client: %v, %v", verify, d, err)
		}
		if err := <-errs; err != nil {
			t.Errorf("verify %v: server: %v", verify, err)
		}
	}
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		sync := make([]byte, 16)
		for i := range sync {
			sync[i] = byte(i)
		}
		b.Write(sync)
		b.Read(make([]byte, 16)) // the server's half of the sync
		b.Write([]byte{16, 17, 99})
		b.Close()
	}()
	if _, err := rstreamTest(a, false, 3, 1, 1, true); err == nil {
		t.Error("a byte out of sequence was not caught")
	}
}

// TestRstreamTime reads rstream's result line (rdma-core 44's output).
func TestRstreamTime(t *testing.T) {
	out := []byte("name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer\n" +
		"custom    64      1       500     62k         0.07s      0.00      65.90\n")
	d, err := rstreamTime(out, 1, 500)
	if want := time.Duration(65.90 * 1000 * 1000 * float64(time.Nanosecond)); err != nil || d != want {
		t.Errorf("rstreamTime = %v, %v; want %v", d, err, want)
	}
	if _, err := rstreamTime([]byte("rconnect: Connection refused\n"), 1, 1); err == nil {
		t.Error("no result line: no error")
	}
}
