// Copyright 2026 The rdmago Authors.

package lab

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestLabWire checks the lab network a node's rxe device sits on: each node
// pings its peer over UDP and answers the peer's pings (with one node the peer
// is itself). It also checks the environment the lab promises.
func TestLabWire(t *testing.T) {
	env := labtest.Require(t)
	if env.Addr == "" || env.Dev == "" || os.Getenv("RDMALAB_NETDEV") == "" {
		t.Fatalf("lab environment incomplete: %+v netdev=%q", env, os.Getenv("RDMALAB_NETDEV"))
	}
	if _, err := os.Stat("/sys/class/infiniband/" + env.Dev + "/ports/1/state"); err != nil {
		t.Fatal(err)
	}
	const port = 7477
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(env.Addr), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := &net.UDPAddr{IP: net.ParseIP(env.Peer), Port: port}
	me := "ping " + env.Node
	gotPing, gotPong := false, false
	deadline := time.Now().Add(20 * time.Second)
	buf := make([]byte, 64)
	// Keep answering for a while after done, so the peer gets its pong.
	var doneAt time.Time
	for time.Now().Before(deadline) {
		if gotPing && gotPong {
			if doneAt.IsZero() {
				doneAt = time.Now()
			}
			if time.Since(doneAt) > 2*time.Second {
				break
			}
		} else if _, err := c.WriteToUDP([]byte(me), peer); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, from, err := c.ReadFromUDP(buf)
		if err != nil {
			continue
		}
		msg := string(buf[:n])
		switch {
		case strings.HasPrefix(msg, "ping "):
			if msg != me || env.Peer == env.Addr {
				gotPing = true
			}
			c.WriteToUDP([]byte("pong "+strings.TrimPrefix(msg, "ping ")), from)
		case msg == "pong "+env.Node:
			gotPong = true
		}
	}
	if !gotPing || !gotPong {
		t.Fatalf("node %s (%s): ping from peer %s: %v, pong: %v", env.Node, env.Addr, env.Peer, gotPing, gotPong)
	}
	t.Logf("node %s: %s <-> %s over %s", env.Node, env.Addr, env.Peer, os.Getenv("RDMALAB_NETDEV"))

}

func TestKernelSeriesOf(t *testing.T) {
	for _, c := range []struct {
		rel, series string
		want        bool
	}{
		{"6.1.0-57-amd64", "6.1", true},
		{"6.12.118+deb13-amd64", "6.1", false},
		{"6.12.118+deb13-amd64", "6.12", true},
		{"7.3.4+bpo-amd64", "7.3", true},
		{"7.4.1+bpo-amd64", "7.3", false},
		{"5.10.0-35-amd64", "5.10", true},
	} {
		if got := seriesOf(c.rel, c.series); got != c.want {
			t.Errorf("seriesOf(%q, %q) = %v, want %v", c.rel, c.series, got, c.want)
		}
	}
	if got, want := KernelNames(), "5.10, 6.1, 6.12, 7.3"; got != want {
		t.Errorf("KernelNames() = %q, want %q", got, want)
	}
}
