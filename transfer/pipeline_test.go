package transfer

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// The pool moves jobs by value: reading and summing a chunk, or checking
// and writing one, allocates nothing once the pool runs, with one worker
// (run at submit) and with several.
func TestChunkPoolNoAllocs(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 64<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(dir, "dst"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	rc := &recvConn{r: &Receiver{}}
	x := &recvFile{f: out, m: &rdcp.File{Name: "dst"}}
	for _, procs := range []int{1, 2} {
		old := runtime.GOMAXPROCS(procs)
		p := newChunkPool(rc, 4)
		if p.inline != (procs == 1) {
			t.Errorf("GOMAXPROCS %d: inline %v", procs, p.inline)
		}
		buf := make([]byte, len(data)+rdcp.ChunkCRCSize)
		const n = 4096
		allocs := testing.AllocsPerRun(200, func() {
			p.submit(chunkJob{seq: 1, off: n, buf: buf[:n+rdcp.ChunkCRCSize], n: n, crc: true, f: in})
			r := p.wait()
			p.submit(chunkJob{seq: 1, off: n, buf: r.buf, n: n, crc: true, x: x})
			w := p.wait()
			if r.err != nil || w.err != nil || w.bad || r.sum != rdcp.CRC32C(data[n:2*n]) {
				t.Fatalf("read %v (crc %08x), write %v (bad %v)", r.err, r.sum, w.err, w.bad)
			}
		})
		p.close()
		runtime.GOMAXPROCS(old)
		if allocs != 0 {
			t.Errorf("GOMAXPROCS %d: %v allocations per chunk read, summed, checked and written", procs, allocs)
		}
	}
}

// Results come back in the order the jobs went in, whatever order the
// workers finish them.
func TestChunkPoolOrder(t *testing.T) {
	old := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(old)
	rc := &recvConn{r: &Receiver{}}
	p := newChunkPool(rc, 8)
	defer p.close()
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, (8-i)*4096+rdcp.ChunkCRCSize) // the first jobs take longest
	}
	for round := range 20 {
		for i, b := range bufs {
			p.submit(chunkJob{seq: uint64(i), buf: b, n: len(b) - rdcp.ChunkCRCSize, crc: true, x: &recvFile{}})
		}
		for i := range bufs {
			j, ok := p.poll()
			if !ok {
				j = p.wait()
			}
			if j.seq != uint64(i) || !j.bad {
				t.Fatalf("round %d: result %d is job %d (bad %v)", round, i, j.seq, j.bad)
			}
		}
	}
}
