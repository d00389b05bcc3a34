// Copyright 2026 The rdmago Authors.

//go:build linux

package main

import (
	"testing"
)

// TestInteropMckey: rdmaping --mcast against librdmacm's mckey, as receiver
// and as sender (with two nodes, node 0 receives and node 1 sends over the
// wire), and rdmaping to rdmaping with every byte checked.
//
//	go run ./cmd/rdmalab test [--nodes 2] -run Mckey -v ./cmd/rdmaping/
func TestInteropMckey(t *testing.T) {
	r := labRole(t)
	mckey := cTool(t, "mckey")
	done := []string{"mckey: joined dgid: ::ffff:239.", "data transfers complete", "test complete"}
	t.Run("GoReceiver_CSender", func(t *testing.T) {
		pair(t, r,
			[]string{"-s", "--mcast", "239.3.3.1", "-a", r.bind, "-C", "5", "-S", "200", "--timeout", "60s", "-v"}, true,
			append(done, "mcast: 5 datagrams of 200 bytes from mckey, immediate checked"),
			append(mckey, "-s", "-m", "239.3.3.1", "-b", r.bind, "-C", "5", "-S", "200"), false, append(done, "return status 0"))
	})
	t.Run("CReceiver_GoSender", func(t *testing.T) {
		pair(t, r,
			append(mckey, "-m", "239.3.3.2", "-b", r.bind, "-C", "5", "-S", "200"), false, append(done, "return status 0"),
			[]string{"-c", "--mcast", "239.3.3.2", "-a", r.bind, "-C", "5", "-S", "200", "--timeout", "60s", "-v"}, true, done)
	})
	t.Run("GoReceiver_GoSender", func(t *testing.T) {
		pair(t, r,
			[]string{"-s", "--mcast", "239.3.3.3", "-a", r.bind, "-C", "5", "-S", "200", "--timeout", "60s"}, true,
			append(done, "mcast: 5 datagrams of 200 bytes from rdmaping, every byte checked"),
			[]string{"-c", "--mcast", "239.3.3.3", "-a", r.bind, "-C", "5", "-S", "200", "--timeout", "60s"}, true, done)
	})
}
