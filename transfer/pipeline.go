package transfer

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// chunkJob is one chunk's work for a chunkPool: read it from a file into a
// staging slot (and write its CRC32C after it), or check a chunk copied out
// of the window against the CRC32C after it and write it to a file. Jobs
// travel by value: a steady stream of them allocates nothing.
type chunkJob struct {
	tag uint64 // submission number (chunkPool)
	seq uint64
	off int64  // file offset of the chunk
	buf []byte // n data bytes, then ChunkCRCSize more with crc
	n   int
	crc bool
	// read: f is read into buf. Otherwise x's partial copy is written.
	f *os.File
	x *recvFile
	// results
	sum uint32 // the CRC32C of the data (crc)
	bad bool   // the CRC32C after the data differs (a check)
	err error
}

// chunkPool runs chunkJobs on a few goroutines beside the goroutine that
// drives the transport, so checksums, reads and writes of several chunks
// proceed at once and none of them holds up the posts. With one worker it
// runs each job at submit (GOMAXPROCS=1 gains nothing from a goroutine).
// Results come back in the order the jobs were submitted (wait, poll).
type chunkPool struct {
	rc     *recvConn // for writes (recvConn.write), nil at a sender
	jobs   chan chunkJob
	done   chan chunkJob
	n      int // jobs submitted, not yet waited for
	inline bool
	// Results that finished before an earlier job's, by tag mod depth.
	tag, head uint64
	held      []chunkJob
	have      []bool
}

// poolWorkers is how many goroutines a pool runs: one per CPU the process
// may use, at most depth.
func poolWorkers(depth int) int { return max(1, min(runtime.GOMAXPROCS(0), depth)) }

// newChunkPool starts a pool for at most depth jobs in flight. Close stops it.
func newChunkPool(rc *recvConn, depth int) *chunkPool {
	w := poolWorkers(depth)
	p := &chunkPool{rc: rc, done: make(chan chunkJob, depth), inline: w == 1,
		held: make([]chunkJob, depth), have: make([]bool, depth)}
	if !p.inline {
		p.jobs = make(chan chunkJob, depth)
		for range w {
			go func() {
				for j := range p.jobs {
					p.run(&j)
					p.done <- j
				}
			}()
		}
	}
	return p
}

func (p *chunkPool) run(j *chunkJob) {
	if j.f != nil {
		k, err := j.f.ReadAt(j.buf[:j.n], j.off)
		if k < j.n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			j.err = err
			return
		}
		if j.crc {
			j.sum = rdcp.CRC32C(j.buf[:j.n])
			binary.BigEndian.PutUint32(j.buf[j.n:], j.sum)
		}
		return
	}
	if j.crc {
		j.sum = rdcp.CRC32C(j.buf[:j.n])
		if j.sum != binary.BigEndian.Uint32(j.buf[j.n:]) {
			j.bad = true
			return
		}
	}
	j.err = p.rc.write(j.x, j.buf[:j.n], j.off)
}

// submit queues j; the pool must have room (fewer than depth in flight).
func (p *chunkPool) submit(j chunkJob) {
	p.n++
	j.tag = p.tag
	p.tag++
	if p.inline {
		p.run(&j)
		p.done <- j
		return
	}
	p.jobs <- j
}

// wait returns the next job in submission order once it is finished;
// there must be one in flight.
func (p *chunkPool) wait() chunkJob {
	for {
		if j, ok := p.pop(); ok {
			return j
		}
		p.hold(<-p.done)
	}
}

// poll returns the next job in submission order if it is finished.
func (p *chunkPool) poll() (chunkJob, bool) {
	for {
		if j, ok := p.pop(); ok {
			return j, true
		}
		select {
		case j := <-p.done:
			p.hold(j)
		default:
			return chunkJob{}, false
		}
	}
}

func (p *chunkPool) hold(j chunkJob) {
	i := j.tag % uint64(len(p.held))
	p.held[i], p.have[i] = j, true
}

func (p *chunkPool) pop() (chunkJob, bool) {
	i := p.head % uint64(len(p.held))
	if !p.have[i] {
		return chunkJob{}, false
	}
	j := p.held[i]
	p.held[i], p.have[i] = chunkJob{}, false
	p.head++
	p.n--
	return j, true
}

// drain waits for every job in flight (whose buffers and files are then
// free again) and drops their results.
func (p *chunkPool) drain() {
	for p.n > 0 {
		p.wait()
	}
}

// close drains the pool and stops its goroutines.
func (p *chunkPool) close() {
	p.drain()
	if p.jobs != nil {
		close(p.jobs)
	}
}

// prefixPiece is how much of a resumed prefix one job sums.
const prefixPiece = 1 << 20

// prefixCRC sums the n bytes of f from off with CRC32C in pieces on the
// pool's goroutines at once, and combines the pieces' CRCs in order; bufs
// has a buffer of prefixPiece+ChunkCRCSize bytes per job in flight. It sends
// KEEPALIVEs on c meanwhile (a long prefix takes longer than the peer's
// idle timeout) and runs c.hashHook after each piece.
func prefixCRC(ctx context.Context, c *conn, p *chunkPool, f *os.File, off, n int64, bufs [][]byte) (uint32, error) {
	var crc uint32
	pieces := (n + prefixPiece - 1) / prefixPiece
	sums := make([]uint32, len(bufs))
	got := make([]int64, len(bufs)) // piece+1 whose sum is in sums
	whole := newCRCShift(prefixPiece)
	var issued, next int64
	var ferr error
	for next < pieces {
		for ferr == nil && issued < pieces && issued < next+int64(len(bufs)) {
			i := issued % int64(len(bufs))
			k := min(prefixPiece, n-issued*prefixPiece)
			p.submit(chunkJob{seq: uint64(issued), off: off + issued*prefixPiece, buf: bufs[i], n: int(k), crc: true, f: f})
			issued++
		}
		for got[next%int64(len(bufs))] != next+1 {
			if p.n == 0 {
				return 0, ferr
			}
			j := p.wait()
			if j.err != nil && ferr == nil {
				ferr = fmt.Errorf("read at %d: %w", j.off, j.err)
			}
			i := int64(j.seq) % int64(len(bufs))
			sums[i], got[i] = j.sum, int64(j.seq)+1
		}
		if ferr != nil {
			p.drain()
			return 0, ferr
		}
		i := next % int64(len(bufs))
		k := min(prefixPiece, n-next*prefixPiece)
		if next == 0 {
			crc = sums[i]
		} else if k == prefixPiece {
			crc = whole.combine(crc, sums[i])
		} else {
			crc = crc32cCombine(crc, sums[i], k)
		}
		next++
		if c.hashHook != nil {
			c.hashHook()
		}
		if err := c.keepAlive(ctx); err != nil {
			p.drain()
			return 0, err
		}
	}
	return crc, nil
}

// specPrefix sums a file's whole pieces from its start with CRC32C in a
// goroutine of its own (which drives the pool meanwhile), before the
// receiver's RESUME-OFFSET says how long the prefix to compare is: the two
// ends sum their prefixes at the same time, not one after the other. Once
// done is closed, crcs[k] is the CRC32C of the first k+1 pieces; limit caps
// the pieces summed and may be lowered meanwhile (stop).
type specPrefix struct {
	limit atomic.Int64
	done  chan struct{}
	crcs  []uint32
	err   error
	hook  func() // for tests: after each piece
}

func startSpecPrefix(p *chunkPool, f *os.File, size int64, bufs [][]byte, hook func()) *specPrefix {
	sp := &specPrefix{done: make(chan struct{}), hook: hook}
	sp.limit.Store(size / prefixPiece)
	go sp.run(p, f, bufs)
	return sp
}

// upTo is the CRC32C of the first k pieces, k at most what was summed.
func (sp *specPrefix) upTo(n int64) (k int64, crc uint32) {
	k = min(n, int64(len(sp.crcs)))
	if k > 0 {
		crc = sp.crcs[k-1]
	}
	return k, crc
}

func (sp *specPrefix) run(p *chunkPool, f *os.File, bufs [][]byte) {
	defer close(sp.done)
	defer p.drain()
	nb := int64(len(bufs))
	got := make([]int64, nb) // piece+1 read (and summed) into each buffer
	sums := make([]uint32, nb)
	whole := newCRCShift(prefixPiece)
	var issued, next int64
	var crc uint32
	for {
		lim := sp.limit.Load()
		for issued < lim && issued < next+nb {
			p.submit(chunkJob{seq: uint64(issued), off: issued * prefixPiece, buf: bufs[issued%nb], n: prefixPiece, crc: true, f: f})
			issued++
		}
		if next >= lim {
			return
		}
		i := next % nb
		for got[i] != next+1 {
			j := p.wait()
			if j.err != nil {
				sp.err = fmt.Errorf("read at %d: %w", j.off, j.err)
				return
			}
			k := int64(j.seq) % nb
			got[k], sums[k] = int64(j.seq)+1, j.sum
		}
		if next == 0 {
			crc = sums[i]
		} else {
			crc = whole.combine(crc, sums[i])
		}
		sp.crcs = append(sp.crcs, crc)
		next++
		if sp.hook != nil {
			sp.hook()
		}
	}
}

// stop lowers the limit to n pieces and waits until the goroutine is done,
// sending KEEPALIVEs on c meanwhile.
func (sp *specPrefix) stop(ctx context.Context, c *conn, n int64) error {
	for {
		if cur := sp.limit.Load(); n >= cur || sp.limit.CompareAndSwap(cur, n) {
			break
		}
	}
	tick := time.NewTicker(max(c.idle/8, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-sp.done:
			return sp.err
		case <-tick.C:
			if err := c.keepAlive(ctx); err != nil {
				sp.limit.Store(0)
				<-sp.done
				return err
			}
		}
	}
}
