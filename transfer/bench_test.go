package transfer_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// BenchmarkTransfer moves a 64 MiB file through the whole core (read, hash,
// write, fsync, verify) over the in-memory transport: the protocol's own
// cost, without RDMA.
func BenchmarkTransfer(b *testing.B) {
	for _, slotSize := range []int{64 << 10, 1 << 20} {
		b.Run(humanSlot(slotSize), func(b *testing.B) {
			src := benchDir(b)
			const size = 64 << 20
			if err := os.WriteFile(filepath.Join(src, "f"), randBytes(1, size), 0o644); err != nil {
				b.Fatal(err)
			}
			items, _, err := transfer.Plan(filepath.Join(src, "f"))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(size)
			for b.Loop() {
				benchOnce(b, items, &transfer.Receiver{Dir: benchDir(b), Slots: 16, SlotSize: slotSize})
			}
		})
	}
}

// BenchmarkTransferVerify moves a 32 MiB file (1 MiB slots) over the
// in-memory transport under each --verify policy with GOMAXPROCS 1 and 2:
// how the checksums (and the reads and writes beside them on the chunk
// pool) scale with the cores the host gives. MB/s is the file's bytes.
func BenchmarkTransferVerify(b *testing.B) {
	const size = 32 << 20
	src := benchDir(b)
	if err := os.WriteFile(filepath.Join(src, "f"), randBytes(2, size), 0o644); err != nil {
		b.Fatal(err)
	}
	items, _, err := transfer.Plan(filepath.Join(src, "f"))
	if err != nil {
		b.Fatal(err)
	}
	for _, procs := range []int{1, 2} {
		for _, v := range []transfer.Verify{transfer.VerifyCRC32C, transfer.VerifySHA256, transfer.VerifyNone} {
			b.Run("procs="+itoa(procs)+"/"+v.String(), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				b.SetBytes(size)
				b.ReportAllocs()
				for b.Loop() {
					dst := benchDir(b)
					benchOnce(b, items, &transfer.Receiver{Dir: dst, Slots: 16, SlotSize: 1 << 20, Verify: v})
					os.RemoveAll(dst)
				}
			})
		}
	}
}

// benchOnce sends items to r over a transfertest.Pipe.
func benchOnce(b *testing.B, items []transfer.Item, r *transfer.Receiver) {
	st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
	done := make(chan error, 1)
	go func() {
		_, err := r.ServeConn(context.Background(), rt)
		done <- err
	}()
	rep, err := (&transfer.Sender{}).Send(context.Background(), st, items)
	st.Close()
	if err != nil || !rep.OK(1) {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// benchDir is a temporary directory on RDMAGO_BENCH_DIR's file system when
// set (e.g. /dev/shm, to measure the protocol rather than the disk).
func benchDir(b *testing.B) string {
	base := os.Getenv("RDMAGO_BENCH_DIR")
	if base == "" {
		return b.TempDir()
	}
	d, err := os.MkdirTemp(base, "transfer-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func humanSlot(n int) string {
	if n >= 1<<20 {
		return "slot=" + itoa(n>>20) + "MiB"
	}
	return "slot=" + itoa(n>>10) + "KiB"
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
