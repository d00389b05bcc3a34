// Copyright 2026 The rdmago Authors.

package ping

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rdmago/rdmago/uverbs"
)

// RpingConfig are rping's settings.
type RpingConfig struct {
	Size     int  // -S: ping data size (MinSize..MaxSize)
	Count    int  // -C: pings (client); 0 pings forever
	Verbose  bool // -v: print the ping data
	Validate bool // -V: compare what came back with what was sent
	Out      io.Writer
}

// rping's queue sizes (RPING_SQ_DEPTH, two receives, a CQ of twice the
// send depth).
const (
	RpingSendDepth = 16
	RpingRecvDepth = 2
	RpingCQSize    = RpingSendDepth * 2
)

// Rping is one rping connection, client or server, speaking rping.c's
// protocol:
//
//	client sends source rkey/addr/len     (SEND of an Info)
//	server RDMA READs the ping data from it
//	server sends "go ahead"               (SEND, 16 bytes)
//	client sends sink rkey/addr/len       (SEND of an Info)
//	server RDMA WRITEs the data back into it
//	server sends "go ahead"
//	... until the client disconnects.
type Rping struct {
	cfg  RpingConfig
	l    *Link
	recv Buf // one Info; the only receive buffer, re-posted after each receive
	send Buf // one Info
	rdma Buf // the server's sink/source, the client's sink
	src  Buf // the client's source (start_buf)
}

// Work request IDs, for the -d trace.
const (
	wrRecv = iota + 1
	wrSend
	wrRDMA
)

// NewRping checks cfg.
func NewRping(cfg RpingConfig) (*Rping, error) {
	if cfg.Size == 0 {
		cfg.Size = DefaultSize
	}
	if cfg.Size < MinSize || cfg.Size > MaxSize {
		return nil, fmt.Errorf("invalid size %d (valid range is %d to %d)", cfg.Size, MinSize, MaxSize)
	}
	if cfg.Count < 0 {
		return nil, fmt.Errorf("invalid count %d", cfg.Count)
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	return &Rping{cfg: cfg}, nil
}

// Setup registers rping's buffers on l and posts the first receive, as
// rping does before connecting or accepting.
func (r *Rping) Setup(l *Link, client bool) error {
	r.l = l
	var err error
	if r.recv, err = l.NewBuf(InfoSize, uverbs.AccessLocalWrite); err != nil {
		return err
	}
	if r.send, err = l.NewBuf(InfoSize, 0); err != nil {
		return err
	}
	rw := uverbs.AccessLocalWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteWrite
	if r.rdma, err = l.NewBuf(r.cfg.Size, rw); err != nil {
		return err
	}
	if client {
		if r.src, err = l.NewBuf(r.cfg.Size, rw); err != nil {
			return err
		}
	}
	l.debugf("allocated & registered buffers...")
	return r.postRecv()
}

func (r *Rping) postRecv() error {
	return r.l.PostRecv(uverbs.RecvWR{ID: wrRecv, SGL: r.recv.SGE(InfoSize)})
}

func (r *Rping) postSend() error {
	return r.l.PostSend(uverbs.SendWR{ID: wrSend, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: r.send.SGE(InfoSize)})
}

// recvInfo waits for the peer's next message, checks it is an Info and
// re-posts the receive (rping's cq handler does the same).
func (r *Rping) recvInfo(ctx context.Context) (Info, error) {
	wc, err := r.l.Await(ctx, uverbs.WCRecv, nil)
	if err != nil {
		return Info{}, err
	}
	r.l.debugf("recv completion")
	if wc.ByteLen != InfoSize {
		return Info{}, fmt.Errorf("received bogus data, size %d", wc.ByteLen)
	}
	info, err := ParseInfo(r.recv.B[:InfoSize])
	if err != nil {
		return Info{}, err
	}
	if err := r.postRecv(); err != nil {
		return Info{}, fmt.Errorf("post recv error: %w", err)
	}
	return info, nil
}

// Server serves one client until it disconnects (rping_test_server).
func (r *Rping) Server(ctx context.Context) error {
	l := r.l
	for {
		// Wait for the client's source advertisement.
		src, err := r.recvInfo(ctx)
		if errors.Is(err, ErrDisconnected) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("wait for RDMA_READ_ADV: %w", err)
		}
		l.debugf("Received rkey %x addr %x len %d from peer", src.RKey, src.Buf, src.Size)
		if int(src.Size) > len(r.rdma.B) {
			return fmt.Errorf("the client advertises %d bytes, more than this server's -S %d", src.Size, len(r.rdma.B))
		}
		l.debugf("server received sink adv")
		if err := l.PostSend(uverbs.SendWR{ID: wrRDMA, Opcode: uverbs.WRRDMARead, Flags: uverbs.SendSignaled,
			SGL: r.rdma.SGE(int(src.Size)), RemoteAddr: src.Buf, RKey: src.RKey}); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		l.debugf("server posted rdma read req")
		if _, err := l.Await(ctx, uverbs.WCRDMARead, nil); err != nil {
			return fmt.Errorf("wait for RDMA_READ_COMPLETE: %w", err)
		}
		l.debugf("server received read complete")
		if r.cfg.Verbose {
			fmt.Fprintf(r.cfg.Out, "server ping data: %s\n", CString(r.rdma.B))
		}
		// Tell the client to continue.
		if err := r.postSend(); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		l.debugf("server posted go ahead")
		sink, err := r.recvInfo(ctx)
		if err != nil {
			return fmt.Errorf("wait for RDMA_WRITE_ADV: %w", err)
		}
		l.debugf("Received rkey %x addr %x len %d from peer", sink.RKey, sink.Buf, sink.Size)
		l.debugf("server received sink adv")
		n := len(CString(r.rdma.B)) + 1
		if n > len(r.rdma.B) {
			n = len(r.rdma.B)
		}
		l.debugf("rdma write from lkey %x laddr %x len %d", r.rdma.MR.LKey(), r.rdma.MR.Addr(), n)
		if err := l.PostSend(uverbs.SendWR{ID: wrRDMA, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
			SGL: r.rdma.SGE(n), RemoteAddr: sink.Buf, RKey: sink.RKey}); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		if _, err := l.Await(ctx, uverbs.WCRDMAWrite, nil); err != nil {
			return fmt.Errorf("wait for RDMA_WRITE_COMPLETE: %w", err)
		}
		l.debugf("server rdma write complete")
		// Tell the client to begin again.
		if err := r.postSend(); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		l.debugf("server posted go ahead")
	}
}

// Client pings Count times (rping_test_client); the caller disconnects.
func (r *Rping) Client(ctx context.Context) error {
	l := r.l
	start := byte(65)
	for ping := 0; r.cfg.Count == 0 || ping < r.cfg.Count; ping++ {
		start = FillPing(r.src.B, ping, start)
		info := r.src.Info(r.cfg.Size)
		info.Put(r.send.B)
		l.debugf("RDMA addr %x rkey %x len %d", info.Buf, info.RKey, info.Size)
		if err := r.postSend(); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		// Wait for the server's go ahead: it has read the ping.
		if _, err := r.recvInfo(ctx); err != nil {
			return fmt.Errorf("wait for RDMA_WRITE_ADV: %w", err)
		}
		info = r.rdma.Info(r.cfg.Size)
		info.Put(r.send.B)
		l.debugf("RDMA addr %x rkey %x len %d", info.Buf, info.RKey, info.Size)
		if err := r.postSend(); err != nil {
			return fmt.Errorf("post send error: %w", err)
		}
		// Wait for the server to say the RDMA WRITE is complete.
		if _, err := r.recvInfo(ctx); err != nil {
			return fmt.Errorf("wait for RDMA_WRITE_COMPLETE: %w", err)
		}
		if r.cfg.Validate && !bytes.Equal(r.src.B, r.rdma.B) {
			return fmt.Errorf("data mismatch! (ping %d)", ping)
		}
		if r.cfg.Verbose {
			fmt.Fprintf(r.cfg.Out, "ping data: %s\n", CString(r.rdma.B))
		}
	}
	return nil
}
