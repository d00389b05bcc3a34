// Copyright 2026 The rdmago Authors.

//go:build linux

package main

import (
	"fmt"
	"testing"
)

// TestLabModes runs every demo mode Go to Go, over rdma_cm and over the
// TCP exchange, and the UD and rdma_server/rdma_client modes.
func TestLabModes(t *testing.T) {
	r := labRole(t)
	for i, m := range []string{"send", "send-imm", "write", "write-imm", "read", "atomic", "send-inv"} {
		want := []string{m + ": 5 iterations of"}
		for j, tcp := range []bool{false, true} {
			name, extra := m+"/cm", []string{}
			if tcp {
				name, extra = m+"/tcp", []string{"--tcp"}
			}
			port := fmt.Sprint(7400 + 2*i + j)
			t.Run(name, func(t *testing.T) {
				args := append([]string{"--mode", m, "-C", "5", "-S", "300", "-p", port, "--timeout", "60s"}, extra...)
				pair(t, r, append([]string{"-s", "-a", r.bind}, args...), true, want,
					append([]string{"-c", "-a", r.addr}, args...), true, want)
			})
		}
	}
	t.Run("send-inv/narrated", func(t *testing.T) {
		args := []string{"--mode", "send-inv", "-C", "3", "-S", "300", "-p", "7430", "--timeout", "60s", "-v"}
		pair(t, r, append([]string{"-s", "-a", r.bind}, args...), true,
			[]string{"bound the window over 300 bytes", "invalidated rkey", "(IBV_WC_WITH_INV)", "send-inv: 3 iterations of 300 bytes checked"},
			append([]string{"-c", "-a", r.addr}, args...), true,
			[]string{"SEND_WITH_INV invalidated rkey", "was refused (IBV_WC_REM_ACCESS_ERR)", "send-inv: 3 iterations of 300 bytes checked"})
	})
	// -v narrates the data phase as it narrates setup: each post and each
	// completion, as a learner would look them up.
	t.Run("write/narrated", func(t *testing.T) {
		args := []string{"--mode", "write", "-C", "2", "-S", "300", "-p", "7431", "--timeout", "60s", "-v"}
		pair(t, r, append([]string{"-s", "-a", r.bind}, args...), true,
			[]string{"verbs: post a receive of", "verbs: post IBV_WR_SEND", "verbs: completion IBV_WC_RECV"},
			append([]string{"-c", "-a", r.addr}, args...), true,
			[]string{"verbs: post IBV_WR_RDMA_WRITE 300 B → va 0x", "(signaled, wr_id", "verbs: completion IBV_WC_RDMA_WRITE 300 B on QPN 0x",
				"write: 2 iterations of 300 bytes checked"})
	})
	t.Run("ud", func(t *testing.T) {
		want := []string{"data transfers complete"}
		pair(t, r, []string{"--ud", "-s", "-a", r.bind, "-p", "7420", "-C", "4", "-S", "500"}, true, want,
			[]string{"--ud", "-c", "-a", r.addr, "-p", "7420", "-C", "4", "-S", "500"}, true, want)
	})
	t.Run("rdmacs", func(t *testing.T) {
		pair(t, r, []string{"--mode", "rdmacs", "-s", "-a", r.bind, "-p", "7421"}, true, []string{`received "rdmaping rdmacs!"`, "end 0"},
			[]string{"--mode", "rdmacs", "-c", "-a", r.addr, "-p", "7421"}, true, []string{`received "rdmaping rdmacs!"`, "end 0"})
	})
	t.Run("rping", func(t *testing.T) {
		pair(t, r, []string{"-s", "-a", r.bind, "-p", "7422", "-C", "5", "-S", "1000"}, true, nil,
			[]string{"-c", "-a", r.addr, "-p", "7422", "-C", "5", "-S", "1000", "-V", "-v"}, true, []string{"ping data: rdma-ping-4: "})
	})
}
