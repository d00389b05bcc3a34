package transfer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// A sender that rewrites a slot after the receiver took its chunk (a plain
// RDMA WRITE into the window, which stays exposed) must not make the
// receiver attest bytes it did not write: what is on disk under a verified
// name hashes to the digest reported, and here is the source's content.
func TestRewrittenSlotCannotLie(t *testing.T) {
	for _, slotSize := range []int{tSlotSize, 2 * transfer.ParallelHashMin} {
		data := randBytes(23, 6*slotSize+17)
		src := tree(t, t.TempDir(), map[string][]byte{"f": data})
		dst := t.TempDir()
		r := &transfer.Receiver{Dir: dst, Slots: 3, SlotSize: slotSize, IdleTimeout: 5 * time.Second}

		var mu sync.Mutex
		var win *transfer.Window
		rcfg := transfertest.Config{Faults: transfertest.Faults{Message: func(_ int, msg []byte) transfertest.Fault {
			if m, err := transfer.Decode(msg); err == nil {
				if w, ok := m.(*transfer.Window); ok {
					mu.Lock()
					win = w
					mu.Unlock()
				}
			}
			return transfertest.Deliver
		}}}
		st, rt := transfertest.Pipe(transfertest.Config{}, rcfg)
		garbage := bytes.Repeat([]byte{0xA5}, slotSize)
		rewrites := 0
		transfer.SetWriteFault(r, func(_ string, off int64, n int) error {
			// Between the receiver's check of chunk k and its write:
			// rewrite k's slot (only: later slots hold chunks in flight).
			mu.Lock()
			w := win
			mu.Unlock()
			if w == nil {
				return nil
			}
			rem := transfer.RemoteRegion{Addr: w.Addr, RKey: w.RKey, Len: uint64(w.Slots) * uint64(w.SlotSize)}
			slot := uint64(off) / uint64(w.SlotSize) % uint64(w.Slots)
			if err := st.WriteRaw(rem, slot*uint64(w.SlotSize), garbage[:n]); err != nil {
				t.Errorf("raw write: %v", err)
				return nil
			}
			rewrites++
			return nil
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		done := make(chan struct{})
		var rrep *transfer.ConnReport
		go func() {
			defer close(done)
			defer rt.Close()
			rrep, _ = r.ServeConn(ctx, rt)
		}()
		srep, serr := (&transfer.Sender{}).Send(ctx, st, plan(t, filepath.Join(src, "f")))
		st.Close()
		<-done
		cancel()
		if rewrites == 0 {
			t.Fatalf("slot %d: the fault never ran", slotSize)
		}
		if serr != nil {
			t.Fatalf("slot %d: send: %v", slotSize, serr)
		}
		got, err := os.ReadFile(filepath.Join(dst, "f"))
		for _, f := range append(srep.Files, rrep.Files...) {
			if !f.Verified {
				continue
			}
			if err != nil {
				t.Fatalf("slot %d: verified but not on disk: %v", slotSize, err)
			}
			if sha256.Sum256(got) != f.Digest {
				t.Errorf("slot %d: reported verified with %x, the file on disk hashes to %x", slotSize, f.Digest, sha256.Sum256(got))
			}
		}
		if err == nil && !bytes.Equal(got, data) {
			t.Errorf("slot %d: the file on disk differs from the source", slotSize)
		}
		if !srep.OK(1) {
			t.Errorf("slot %d: not verified: %v", slotSize, srep.Files)
		}
	}
}
