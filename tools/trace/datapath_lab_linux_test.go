// Copyright 2026 The rdmago Authors.

package trace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/rdmago/rdmago/internal/labtest"
)

// TestLabDataPath traces rdma-core's ibv_rc_pingpong (SENDs) and rping
// (SEND, RDMA READ and RDMA WRITE) with the rxe probes attached: every
// doorbell must show the WR it rang for, read from the send ring, and every
// signaled WR its completion (checkDataPath).
func TestLabDataPath(t *testing.T) {
	env := labtest.Require(t)
	labtest.OneNode(t, "server and client on this node's address")
	t.Run("ibv_rc_pingpong", func(t *testing.T) {
		port := fmt.Sprint(19515 + os.Getpid()%1000)
		args := []string{"-d", env.Dev, "-g", "1", "-p", port, "-n", "3", "-s", "64"}
		run := cTool{comm: "ibv_rc_pingpong", rxe: true,
			server: func(ctx context.Context) *exec.Cmd { return labtest.HostTool(t, ctx, "ibv_rc_pingpong", args...) },
			client: func(ctx context.Context) *exec.Cmd {
				return labtest.HostTool(t, ctx, "ibv_rc_pingpong", append(args, env.Addr)...)
			},
		}.trace(t)
		checkDataPath(t, run.evs, "SEND")
		saveDataPath(t, "ibv_rc_pingpong", run)
	})
	t.Run("rping", func(t *testing.T) {
		port := fmt.Sprint(21000 + os.Getpid()%20000)
		run := cTool{comm: "rping", rxe: true,
			server: func(ctx context.Context) *exec.Cmd {
				return labtest.HostTool(t, ctx, "rping", "-s", "-a", env.Addr, "-p", port, "-C", "2")
			},
			client: func(ctx context.Context) *exec.Cmd {
				return labtest.HostTool(t, ctx, "rping", "-c", "-a", env.Addr, "-p", port, "-C", "2", "-v")
			},
		}.trace(t)
		checkDataPath(t, run.evs, "SEND", "RDMA_READ", "RDMA_WRITE")
		saveDataPath(t, "rping", run)
	})
}
