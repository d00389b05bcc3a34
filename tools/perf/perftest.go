// Copyright 2026 The rdmago Authors.

package perf

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/tools/perf/ptwire"
	"github.com/rdmago/rdmago/uverbs"
)

// With --perftest rdmaperf speaks perftest's own exchange (package ptwire;
// TCP, or rdma_cm with -R, see ptconn.go) instead of its control protocol, so either side can be one of
// perftest's programs (ib_write_bw, ib_read_lat, ...). perftest sends no
// settings: as with two perftest programs, both sides must be given the
// same test, -s, -n and -q. Each program runs its test's fixed sequence of
// exchanges; this file follows each one's (write_bw.c, send_bw.c, ...).

// ptHelloWait bounds the wait for the peer's first message: a peer that is
// not perftest may say nothing at all.
const ptHelloWait = 30 * time.Second

// ptCacheLine is the cache line size this side announces (perftest reads
// the CPU's, 64 on the lab's).
const ptCacheLine = 64

// ptGlitch is perftest's calibration of its cycle counter against
// gettimeofday failing its own linearity check (get_clock.c,
// sample_get_cpu_mhz), which happens now and then under emulation (TCG).
var ptGlitch = regexp.MustCompile(`Correlation coefficient r\^2: *[-\d.e+naif]+ *< *0\.9`)

// PerftestGlitch returns the line of a perftest program's output that shows
// its known glitch under emulation, or "" if there is none: its
// cycle-counter calibration failed its own check ("Correlation coefficient
// r^2: 0.47 < 0.9"), after which it prints "Can't produce a report" and
// exits 1, or reports 0, inf or nonsense. perftest calibrates when it
// reports, after the exchange and the measured run: its peer did its part
// and its calls were made; only its figures are lost.
func PerftestGlitch(out string) string {
	return ptGlitch.FindString(out)
}

// runPerftest runs one side of a test against a perftest program.
func (s *session) runPerftest(ctx context.Context) (*Report, error) {
	pc, ln, comm, err := s.ptConnect(ctx)
	if err != nil {
		return nil, err
	}
	s.ptKeep(pc, ln)
	return s.runPerftestOn(ctx, pc, ln, comm)
}

// ptKeep closes the exchange's connection and listener last: the QPs'
// connections go first, as a perftest client waits for their
// disconnection before it lets the exchange's connection go.
func (s *session) ptKeep(pc *ptwire.Conn, ln *cm.Listener) {
	s.closeLast = append(s.closeLast, pc)
	if ln != nil {
		s.closeLast = append(s.closeLast, ln)
	}
}

// runPerftestOn runs the test on perftest's exchange pc, from the version
// exchange on. With -R, comm is the rdma_cm connection under it and, on the
// server, ln the listener the QPs' connections arrive on.
func (s *session) runPerftestOn(ctx context.Context, pc *ptwire.Conn, ln *cm.Listener, comm *cm.Conn) (*Report, error) {
	c := s.cfg
	// The versions first: a peer that is not perftest shows before this
	// side opens its device.
	if _, err := pc.Versions(); err != nil {
		return nil, err
	}
	t0 := time.Now()
	s.newEndpoints(c.QPs)
	if comm != nil {
		// The device is the one the route to the peer goes through.
		s.devName = comm.Context().Device().Name
		if err := s.queryPort(comm.Context()); err != nil {
			return nil, err
		}
	} else if err := s.openDevice(); err != nil {
		return nil, err
	}
	// Later waits can last the peer's whole run: --timeout bounds them.
	pc.Wait = c.Deadline
	if dl, ok := ctx.Deadline(); ok {
		pc.Wait = time.Until(dl)
	}
	cycle, _, err := pc.SysData(4096, ptCacheLine)
	if err != nil {
		return nil, err
	}
	// The peer cycles its RDMA addresses within the larger page size
	// (increase_rem_addr): the receive half covers it.
	for _, e := range s.eps {
		e.half = max(e.half, bufHalf(cycle))
	}
	mtu, err := pc.MTU(int(s.mtu))
	if err != nil {
		return nil, err
	}
	s.mtu = uverbs.MTU(mtu)
	if comm != nil {
		// create_rdma_cm_connection: a barrier, one rdma_cm connection per
		// QP on the same port, a barrier. The keys carry nothing yet.
		if _, err := pc.Keys("before the QPs' rdma_cm connections", ptwire.Dest{}); err != nil {
			return nil, err
		}
		if err := s.ptDataConns(ctx, ln, pc.Wait); err != nil {
			return nil, err
		}
		s.mtu = uverbs.MTU(mtu) // adoptConn read the port's
		if _, err := pc.Keys("after the QPs' rdma_cm connections", ptwire.Dest{}); err != nil {
			return nil, err
		}
		if err := s.register(s.pd); err != nil {
			return nil, err
		}
	} else if err := s.createQPs(); err != nil {
		return nil, err
	}
	mine := make([]ptwire.Dest, len(s.eps))
	for i, e := range s.eps {
		in := e.info()
		mine[i] = ptwire.Dest{LID: s.port.LID, OutReads: s.outReads, QPN: in.QPN, PSN: in.PSN, RKey: in.RKey, VAddr: in.Addr, GID: s.gid.GID}
	}
	keysAll := func(step string) ([]ptwire.Dest, error) {
		r := make([]ptwire.Dest, len(mine))
		for i := range mine {
			var err error
			if r[i], err = pc.Keys(step, mine[i]); err != nil {
				return nil, err
			}
		}
		return r, nil
	}
	keys1 := func(step string) error {
		_, err := pc.Keys(step, mine[0])
		return err
	}
	lat := c.Test.IsLat()
	send := c.Test == SendBW || c.Test == SendLat
	// The latency programs (but send_lat) shake hands once more first.
	if lat && !send {
		if err := keys1("QP addresses"); err != nil {
			return nil, err
		}
	}
	remote, err := keysAll("QP addresses")
	if err != nil {
		return nil, err
	}
	if comm != nil {
		// rdma_cm connected the QPs: the keys give the buffers.
		for i, d := range remote {
			s.eps[i].remote = qpInfo{LID: d.LID, QPN: d.QPN, PSN: d.PSN, RKey: d.RKey, Addr: d.VAddr, OutReads: d.OutReads}
		}
	} else if ptwire.V4Mapped(remote[0].GID) != ptwire.V4Mapped(s.gid.GID) {
		return nil, fmt.Errorf("the peer's GID %v and this side's %v differ in type (IPv4-mapped or not), as perftest refuses: pick GIDs of the same IP version with -x", gidAddr(hex.EncodeToString(remote[0].GID[:])), s.gid.GID.Addr())
	}
	if comm == nil {
		infos := make([]qpInfo, len(remote))
		for i, d := range remote {
			infos[i] = qpInfo{LID: d.LID, QPN: d.QPN, PSN: d.PSN, GID: hex.EncodeToString(d.GID[:]), RKey: d.RKey, Addr: d.VAddr, OutReads: d.OutReads}
		}
		if err := s.connectQPs(infos); err != nil {
			return nil, err
		}
	}
	if send {
		if err := keys1("QPs connected"); err != nil {
			return nil, err
		}
	}
	if _, err := keysAll("QP addresses, again"); err != nil {
		return nil, err
	}
	// Clear the buffers and post the receives before the last handshake:
	// after it the peer may write at once.
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if !send {
		if err := keys1("QPs ready (RTR)"); err != nil {
			return nil, err
		}
	}
	s.setup = time.Since(t0)
	s.clock = <-s.clockCh
	s.printInfo()
	size := c.Sizes[0]
	rep := s.report()
	// The sides that do not measure the test wait for the peer's.
	passive := s.server && (c.Test == WriteBW || c.Test == ReadBW || c.Test == AtomicBW || c.Test == ReadLat || c.Test == AtomicLat)
	if !passive {
		s.header()
	}
	if send {
		// The receives are posted: the client may send.
		if err := keys1("receives posted"); err != nil {
			return nil, err
		}
	}
	var r *SizeResult
	if !passive {
		if s.server && c.Test == SendBW {
			r, _, err = s.bwRecv(size)
		} else {
			r, err = s.runSize(size)
		}
		if err != nil {
			return nil, fmt.Errorf("%v, %d bytes: %w", c.Test, size, s.ptLoopErr(err))
		}
		s.line(r)
		rep.Results = append(rep.Results, r)
	}
	if c.Test.IsBW() && !send {
		if err := keys1("end of the run"); err != nil {
			return nil, err
		}
		var my ptwire.BWReport
		if r != nil && r.BW != nil {
			my = ptwire.BWReport{Size: uint64(size), Iters: r.BW.Iters, Peak: r.BW.Peak, Average: r.BW.Average, MsgRate: r.BW.MsgRate}
		}
		peer, err := pc.Reports(my)
		if err != nil {
			return nil, err
		}
		if passive {
			if s.adapted && !c.set("s", "size") && peer.Size > 0 && peer.Size <= uint64(c.MaxMsg()) {
				// A server that found perftest without being told
				// (runServer) takes the client's size, as from an
				// rdmaperf client: its buffers held the client's writes.
				size = int(peer.Size)
			}
			if peer.Size != uint64(size) {
				return nil, fmt.Errorf("the peer reports %d-byte messages, this side was given -s %d: give both the same size", peer.Size, size)
			}
			// The client's figures, as perftest's server prints them.
			pr := &SizeResult{Size: size, Ops: peer.Iters, BW: &BWStats{Size: size, Iters: peer.Iters, Peak: peer.Peak, Average: peer.Average, MsgRate: peer.MsgRate, Gbits: c.Gbits}}
			s.header()
			s.line(pr)
			rep.Peer = append(rep.Peer, pr)
		}
	}
	if c.Test != WriteLat { // ib_write_lat ends without a word
		if err := pc.Done(mine[0]); err != nil {
			return nil, err
		}
	}
	if s.out != nil {
		WriteEnd(s.out)
	}
	return rep, nil
}

// ptLoopErr explains a loop that the context ended: with perftest the peer
// never says why it stopped.
func (s *session) ptLoopErr(err error) error {
	if errors.Is(err, errStopped) {
		return fmt.Errorf("the peer did not complete its part within --timeout %v: is it running %v with the same -s, -n and -q?", s.cfg.Deadline, s.cfg.Test)
	}
	return err
}
