// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// fakeWait hands out batches of completions, one batch per wait, then
// waits for ctx (or returns end's error when end is set).
func fakeWait(batches [][]uverbs.WC, end error) func(context.Context, []uverbs.WC, ...*uverbs.CQ) (int, *uverbs.CQ, error) {
	return func(ctx context.Context, wcs []uverbs.WC, _ ...*uverbs.CQ) (int, *uverbs.CQ, error) {
		if len(batches) > 0 {
			n := copy(wcs, batches[0])
			batches = batches[1:]
			return n, nil, nil
		}
		if end != nil {
			return 0, nil, end
		}
		<-ctx.Done()
		return 0, nil, ctx.Err()
	}
}

// TestAwaitStaleWrite: the send-inv server's end. The client's write under
// the invalidated rkey moves the server's QP to the error state, and the
// flush can come before the completion of the server's last message (the
// lab saw "work request 0x1 ... IBV_WC_WR_FLUSH_ERR" fail the server).
func TestAwaitStaleWrite(t *testing.T) {
	sent := uverbs.WC{WRID: 2, Opcode: uverbs.WCSend}
	recvFlush := uverbs.WC{WRID: 1, Status: uverbs.WCWRFlushErr}
	sendFlush := uverbs.WC{WRID: 2, Status: uverbs.WCWRFlushErr}
	disconnected := make(chan struct{})
	close(disconnected)
	for _, tc := range []struct {
		name    string
		batches [][]uverbs.WC
		end     error
		done    <-chan struct{}
		err     string
	}{
		{"sent then flush", [][]uverbs.WC{{sent}, {recvFlush}}, nil, nil, ""},
		{"flush before the last send's completion", [][]uverbs.WC{{recvFlush, sendFlush}}, nil, nil, ""},
		{"send flushed alone", [][]uverbs.WC{{sendFlush}}, nil, nil, ""},
		{"sent then quiet", [][]uverbs.WC{{sent}}, nil, nil, ""},
		{"sent then disconnect", [][]uverbs.WC{{sent}}, context.Canceled, disconnected, ""},
		{"flush after disconnect", [][]uverbs.WC{{recvFlush}}, nil, disconnected, ""},
		{"last send fails", [][]uverbs.WC{{{WRID: 2, Status: uverbs.WCRetryExcErr}}}, nil, nil, "IBV_WC_RETRY_EXC_ERR"},
		{"failure after the send", [][]uverbs.WC{{sent}, {{WRID: 1, Status: uverbs.WCLocProtErr}}}, nil, nil, "IBV_WC_LOC_PROT_ERR"},
		{"unexpected receive", [][]uverbs.WC{{sent}, {{WRID: 1, Opcode: uverbs.WCRecv}}}, nil, nil, "unexpected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Link{Wait: fakeWait(tc.batches, tc.end), Done: tc.done, Err: func() error { return context.Canceled }}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := awaitStaleWrite(ctx, l, 50*time.Millisecond)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("awaitStaleWrite: %v, want the expected end", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("awaitStaleWrite: %v, want an error with %q", err, tc.err)
			}
		})
	}
}
