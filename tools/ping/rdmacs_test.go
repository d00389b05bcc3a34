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
			err := (&CS{l: l}).sent(ctx)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("sent: %v, want the exchange done", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("sent: %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// TestAwaitSentThenAnswer: the client's side of the same race. The server
// answers and disconnects before the client saw its own message's
// completion, which the disconnect flushes: the answer, there already,
// proves the message arrived (the lab saw rdmaping -c --mode rdmacs fail
// with "rdma_get_send_comp: peer disconnected" after the server had
// answered). Without an answer the wait for it fails.
func TestAwaitSentThenAnswer(t *testing.T) {
	answer := uverbs.WC{WRID: 1, Opcode: uverbs.WCRecv, ByteLen: MsgCS}
	sendFlush := uverbs.WC{WRID: 2, Status: uverbs.WCWRFlushErr}
	recvFlush := uverbs.WC{WRID: 1, Status: uverbs.WCWRFlushErr}
	disconnected := make(chan struct{})
	close(disconnected)
	gone := errors.New("the connection ended")
	for _, tc := range []struct {
		name    string
		batches [][]uverbs.WC
		answer  bool
	}{
		{"answer, then the send flushed", [][]uverbs.WC{{answer, sendFlush}}, true},
		{"send flushed, then the answer", [][]uverbs.WC{{sendFlush, answer}}, true},
		{"send flushed, no answer", [][]uverbs.WC{{sendFlush, recvFlush}}, false},
		{"send flushed, nothing more", [][]uverbs.WC{{sendFlush}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &Link{Wait: fakeWait(tc.batches, gone), Done: disconnected, Err: func() error { return gone }}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := l.AwaitSent(ctx, uverbs.WCSend); err != nil {
				t.Fatalf("AwaitSent: %v, want the answer to decide", err)
			}
			wc, err := l.Await(ctx, uverbs.WCRecv, nil)
			switch {
			case tc.answer && (err != nil || wc.ByteLen != MsgCS):
				t.Fatalf("the answer: %+v, %v; want it", wc, err)
			case !tc.answer && !errors.Is(err, ErrDisconnected):
				t.Fatalf("the answer: %+v, %v; want ErrDisconnected", wc, err)
			}
		})
	}
}
