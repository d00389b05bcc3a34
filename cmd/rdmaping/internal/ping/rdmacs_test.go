// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// TestCSAnswered: the rdma_server side's wait for its answer's completion.
// rdma_client disconnects once it has the answer, and on Linux 6.12 that
// disconnect can come before the answer's completion (the lab saw
// "rdma_get_send_comp: peer disconnected" fail rdmaping -s --mode rdmacs
// while the client printed the answer): the exchange is done. Without a
// disconnect every failure is still one.
func TestCSAnswered(t *testing.T) {
	sent := uverbs.WC{WRID: 2, Opcode: uverbs.WCSend}
	sendFlush := uverbs.WC{WRID: 2, Status: uverbs.WCWRFlushErr}
	disconnected := make(chan struct{})
	close(disconnected)
	gone := errors.New("the connection ended")
	for _, tc := range []struct {
		name    string
		batches [][]uverbs.WC
		end     error
		done    <-chan struct{}
		err     string
	}{
		{"sent", [][]uverbs.WC{{sent}}, nil, nil, ""},
		{"disconnect before the completion", nil, gone, disconnected, ""},
		{"answer flushed by the disconnect", [][]uverbs.WC{{sendFlush}}, nil, disconnected, ""},
		{"answer flushed, still connected", [][]uverbs.WC{{sendFlush}}, nil, nil, "IBV_WC_WR_FLUSH_ERR"},
		{"answer failed", [][]uverbs.WC{{{WRID: 2, Status: uverbs.WCRetryExcErr}}}, nil, disconnected, "IBV_WC_RETRY_EXC_ERR"},
		{"wait failed, still connected", nil, gone, nil, "the connection ended"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Link{Wait: fakeWait(tc.batches, tc.end), Done: tc.done, Err: func() error { return gone }}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := (&CS{l: l}).answered(ctx)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("answered: %v, want the exchange done", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("answered: %v, want an error with %q", err, tc.err)
			}
		})
	}
}
