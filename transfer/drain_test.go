package transfer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// lateAckTransport is a sender's transport whose final Drain finds the
// peer gone: the receiver got the sender's last message (BYE) and left,
// but the acknowledgement of that message was lost on the way back, so the
// send is still outstanding when the disconnect arrives (seen over RDMA on
// a lossy link).
type lateAckTransport struct {
	*transfertest.Transport
}

func (t lateAckTransport) Drain(ctx context.Context) error {
	return fmt.Errorf("rdma: %w", transfer.ErrPeerGone)
}

// TestSendDrainPeerGoneAfterResults: once every item has its RESULT and
// the BYEs are exchanged, a peer gone before it acknowledged the last
// message costs nothing: Send succeeds.
func TestSendDrainPeerGoneAfterResults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := tree(t, t.TempDir(), map[string][]byte{"f": randBytes(7, 100<<10)})
	dst := t.TempDir()
	st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
	done := make(chan error, 1)
	go func() {
		defer rt.Close()
		_, err := (&transfer.Receiver{Dir: dst}).ServeConn(ctx, rt)
		done <- err
	}()
	rep, err := (&transfer.Sender{}).Send(ctx, lateAckTransport{st}, plan(t, filepath.Join(src, "f")))
	st.Close()
	if err != nil || !rep.OK(1) {
		t.Errorf("send: %v (report %+v), want success: every RESULT was in", err, rep)
	}
	if err := <-done; err != nil {
		t.Errorf("receive: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, "f")); err != nil {
		t.Error(err)
	}
}
