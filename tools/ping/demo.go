// Copyright 2026 The rdmago Authors.

package ping

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/rdmago/rdmago/uverbs"
)

// The demo modes.
var Modes = []string{"send", "send-imm", "write", "write-imm", "read", "atomic", "send-inv"}

// DemoConfig are a demo's settings.
type DemoConfig struct {
	Mode  string
	Count int // iterations, default 10
	Size  int // bytes per iteration, default 64 (atomics use 8)
	Out   io.Writer
}

// Demo is one of the classic verbs demos between two rdmaping processes,
// every iteration checked on both sides:
//
//	send       client SENDs Size bytes, the server checks and SENDs them back
//	send-imm   the same with SEND_WITH_IMM carrying the iteration number
//	write      the server advertises a buffer (an Info message); the client
//	           RDMA WRITEs into it and SENDs the iteration number; the
//	           server checks the buffer and acknowledges
//	write-imm  the client RDMA_WRITE_WITH_IMMs (the immediate is the
//	           iteration number), which completes a receive at the server
//	read       the server fills a buffer and advertises it; the client RDMA
//	           READs and checks it, and acknowledges
//	send-inv   the server binds a type 2 memory window over its buffer and
//	           advertises the window's rkey; the client RDMA WRITEs
//	           through it and SENDs WITH INVALIDATE naming that rkey; the
//	           server checks the data and that the receive reports the
//	           rkey invalidated, and binds the window again (a new rkey)
//	           for the next iteration; at the end the client writes
//	           under the last, invalidated rkey and must be refused
//	           (IBV_WC_REM_ACCESS_ERR)
//	atomic     the server advertises an 8-byte counter; the client
//	           FETCH_AND_ADDs 1 Count times checking each old value, then
//	           COMPARE_AND_SWAPs Count for a marker the server checks
type Demo struct {
	cfg     DemoConfig
	l       *Link
	ctrlIn  Buf // control messages: an Info or a 4-byte sequence number
	ctrlOut Buf
	in      Buf // data received (send modes), written or read into
	out     Buf // data sent, advertised for READ, the atomic counter
}

// Atomic marker the client swaps in at the end of the atomic demo.
const swapMarker = 0x0123456789abcdef

// NewDemo checks cfg.
func NewDemo(cfg DemoConfig) (*Demo, error) {
	ok := false
	for _, m := range Modes {
		ok = ok || m == cfg.Mode
	}
	if !ok {
		return nil, fmt.Errorf("unknown demo mode %q", cfg.Mode)
	}
	if cfg.Count <= 0 {
		cfg.Count = 10
	}
	if cfg.Size <= 0 {
		cfg.Size = DefaultSize
	}
	if cfg.Mode == "atomic" {
		cfg.Size = 8
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	return &Demo{cfg: cfg}, nil
}

// Depth is the queue depth the demo needs.
func (d *Demo) Depth() int { return 4 }

// sendModes receive their data as messages.
func (d *Demo) sendMode() bool { return d.cfg.Mode == "send" || d.cfg.Mode == "send-imm" }

// Setup registers the buffers and posts the first receive (before the
// connection exists, so the peer's first message finds it).
func (d *Demo) Setup(l *Link) error {
	d.l = l
	all := uverbs.AccessLocalWrite | uverbs.AccessRemoteRead | uverbs.AccessRemoteWrite | uverbs.AccessRemoteAtomic
	if d.cfg.Mode == "send-inv" {
		all |= uverbs.AccessMWBind
	}
	var err error
	for _, b := range []struct {
		p *Buf
		n int
	}{{&d.ctrlIn, InfoSize}, {&d.ctrlOut, InfoSize}, {&d.in, d.cfg.Size}, {&d.out, d.cfg.Size}} {
		if *b.p, err = l.NewBuf(b.n, all); err != nil {
			return err
		}
	}
	return d.postRecv()
}

func (d *Demo) postRecv() error {
	sge := d.ctrlIn.SGE(InfoSize)
	if d.sendMode() {
		sge = d.in.SGE(d.cfg.Size)
	}
	return d.l.PostRecv(uverbs.RecvWR{ID: 1, SGL: sge})
}

// pattern fills b with iteration i's bytes.
func pattern(b []byte, i int) {
	for j := range b {
		b[j] = byte(i*7 + j*13 + 1)
	}
}

func expect(b []byte, i int, what string) error {
	want := make([]byte, len(b))
	pattern(want, i)
	if !bytes.Equal(b, want) {
		if isFill(b, 0) {
			return fmt.Errorf("iteration %d: %s mismatch: the peer sends a 0x7b buffer, as rdma-core's ibv_*_pingpong programs do: run rdmaping --tcp without --mode to talk to them", i, what)
		}
		return fmt.Errorf("iteration %d: %s mismatch (starts % x): is the peer rdmaping in the same --mode?", i, what, b[:min(len(b), 16)])
	}
	return nil
}

// recv waits for the next receive completion (op: WCRecv or
// WCRecvRDMAWithImm) and re-posts the receive.
func (d *Demo) recv(ctx context.Context, op uverbs.WCOpcode) (uverbs.WC, error) {
	wc, err := d.l.Await(ctx, op, nil)
	if err != nil {
		return wc, err
	}
	if d.sendMode() {
		// The data sits in d.in: copy it out before the buffer is re-posted.
		copy(d.out.B, d.in.B[:wc.ByteLen])
	}
	return wc, d.postRecv()
}

func (d *Demo) sendCtrl(ctx context.Context, b []byte) error {
	copy(d.ctrlOut.B, b)
	_, err := d.postCtx(ctx, uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, SGL: d.ctrlOut.SGE(len(b))}, uverbs.WCSend)
	return err
}

func (d *Demo) postCtx(ctx context.Context, wr uverbs.SendWR, op uverbs.WCOpcode) (uverbs.WC, error) {
	wr.Flags |= uverbs.SendSignaled
	if err := d.l.PostSend(wr); err != nil {
		return uverbs.WC{}, err
	}
	if op == uverbs.WCSend || op == uverbs.WCRDMAWrite {
		// The peer's answer, awaited next, says whether it arrived.
		return d.l.AwaitSent(ctx, op)
	}
	return d.l.Await(ctx, op, nil)
}

func seq(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }

func (d *Demo) recvSeq(ctx context.Context, i int) error {
	wc, err := d.recv(ctx, uverbs.WCRecv)
	if err != nil {
		return err
	}
	if wc.ByteLen != 4 || binary.BigEndian.Uint32(d.ctrlIn.B) != uint32(i) {
		return fmt.Errorf("iteration %d: got control message %x (%d bytes)", i, d.ctrlIn.B[:min(int(wc.ByteLen), InfoSize)], wc.ByteLen)
	}
	return nil
}

func (d *Demo) recvInfo(ctx context.Context) (Info, error) {
	wc, err := d.recv(ctx, uverbs.WCRecv)
	if err != nil {
		return Info{}, err
	}
	return ParseInfo(d.ctrlIn.B[:wc.ByteLen])
}

// Server runs the server side.
func (d *Demo) Server(ctx context.Context) error {
	c, l := d.cfg, d.l
	switch c.Mode {
	case "send", "send-imm":
		for i := 0; i < c.Count; i++ {
			wc, err := d.recv(ctx, uverbs.WCRecv)
			if err != nil {
				return err
			}
			if int(wc.ByteLen) != c.Size {
				return fmt.Errorf("iteration %d: received %d bytes, want %d", i, wc.ByteLen, c.Size)
			}
			if err := expect(d.out.B, i, "received data"); err != nil {
				return err
			}
			wr := uverbs.SendWR{ID: 3, Opcode: uverbs.WRSend, SGL: d.out.SGE(c.Size)}
			if c.Mode == "send-imm" {
				if wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != uint32(i) {
					return fmt.Errorf("iteration %d: immediate %#x (flags %v), want %#x", i, wc.Imm, wc.Flags, i)
				}
				wr.Opcode, wr.Imm = uverbs.WRSendWithImm, uint32(i)
			}
			if _, err := d.postCtx(ctx, wr, uverbs.WCSend); err != nil {
				return err
			}
			l.debugf("iteration %d: echoed %d bytes", i, c.Size)
		}
	case "write", "write-imm":
		if err := d.sendCtrl(ctx, d.in.Info(c.Size).Marshal(nil)); err != nil {
			return err
		}
		for i := 0; i < c.Count; i++ {
			if c.Mode == "write" {
				if err := d.recvSeq(ctx, i); err != nil {
					return err
				}
			} else {
				wc, err := d.recv(ctx, uverbs.WCRecvRDMAWithImm)
				if err != nil {
					return err
				}
				if wc.Imm != uint32(i) || int(wc.ByteLen) != c.Size {
					return fmt.Errorf("iteration %d: write with immediate %#x of %d bytes, want %#x of %d", i, wc.Imm, wc.ByteLen, i, c.Size)
				}
			}
			if err := expect(d.in.B, i, "written data"); err != nil {
				return err
			}
			if err := d.sendCtrl(ctx, seq(i)); err != nil {
				return err
			}
			l.debugf("iteration %d: %d bytes written by the client checked", i, c.Size)
		}
	case "read":
		for i := 0; i < c.Count; i++ {
			pattern(d.out.B, i)
			if err := d.sendCtrl(ctx, d.out.Info(c.Size).Marshal(nil)); err != nil {
				return err
			}
			if err := d.recvSeq(ctx, i); err != nil {
				return err
			}
			l.debugf("iteration %d: the client read %d bytes", i, c.Size)
		}
	case "send-inv":
		if err := d.serveSendInv(ctx); err != nil {
			return err
		}
	case "atomic":
		binary.NativeEndian.PutUint64(d.out.B, 0)
		if err := d.sendCtrl(ctx, d.out.Info(8).Marshal(nil)); err != nil {
			return err
		}
		if err := d.recvSeq(ctx, c.Count); err != nil {
			return err
		}
		if v := binary.NativeEndian.Uint64(d.out.B); v != swapMarker {
			return fmt.Errorf("counter is %#x after the client's compare-and-swap, want %#x", v, uint64(swapMarker))
		}
		if err := d.sendCtrl(ctx, seq(c.Count)); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.Out, "%s: %d iterations of %d bytes checked\n", c.Mode, c.Count, c.Size)
	return nil
}

// Client runs the client side.
func (d *Demo) Client(ctx context.Context) error {
	c, l := d.cfg, d.l
	switch c.Mode {
	case "send", "send-imm":
		src := make([]byte, c.Size)
		for i := 0; i < c.Count; i++ {
			pattern(src, i)
			// Send from a buffer of its own: d.out also receives the echo.
			wr := uverbs.SendWR{ID: 3, Opcode: uverbs.WRSend}
			if c.Mode == "send-imm" {
				wr.Opcode, wr.Imm = uverbs.WRSendWithImm, uint32(i)
			}
			copy(d.out.B, src)
			wr.SGL = d.out.SGE(c.Size)
			if _, err := d.postCtx(ctx, wr, uverbs.WCSend); err != nil {
				return err
			}
			wc, err := d.recv(ctx, uverbs.WCRecv)
			if err != nil {
				return err
			}
			if int(wc.ByteLen) != c.Size {
				return fmt.Errorf("iteration %d: echo of %d bytes, want %d", i, wc.ByteLen, c.Size)
			}
			if c.Mode == "send-imm" && (wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != uint32(i)) {
				return fmt.Errorf("iteration %d: echo immediate %#x, want %#x", i, wc.Imm, i)
			}
			if err := expect(d.out.B, i, "echoed data"); err != nil {
				return err
			}
			l.debugf("iteration %d: %d bytes sent and echoed", i, c.Size)
		}
	case "write", "write-imm":
		info, err := d.recvInfo(ctx)
		if err != nil {
			return err
		}
		l.debugf("server buffer: %v", info)
		if int(info.Size) < c.Size {
			return fmt.Errorf("the server advertises %d bytes, fewer than -S %d", info.Size, c.Size)
		}
		for i := 0; i < c.Count; i++ {
			pattern(d.out.B, i)
			wr := uverbs.SendWR{ID: 4, Opcode: uverbs.WRRDMAWrite, SGL: d.out.SGE(c.Size), RemoteAddr: info.Buf, RKey: info.RKey}
			if c.Mode == "write-imm" {
				wr.Opcode, wr.Imm = uverbs.WRRDMAWriteWithImm, uint32(i)
			}
			if _, err := d.postCtx(ctx, wr, uverbs.WCRDMAWrite); err != nil {
				return err
			}
			if c.Mode == "write" {
				if err := d.sendCtrl(ctx, seq(i)); err != nil {
					return err
				}
			}
			if err := d.recvSeq(ctx, i); err != nil {
				return err
			}
			l.debugf("iteration %d: wrote %d bytes at %#x", i, c.Size, info.Buf)
		}
	case "read":
		for i := 0; i < c.Count; i++ {
			info, err := d.recvInfo(ctx)
			if err != nil {
				return err
			}
			if int(info.Size) < c.Size {
				return fmt.Errorf("the server advertises %d bytes, fewer than -S %d", info.Size, c.Size)
			}
			wr := uverbs.SendWR{ID: 5, Opcode: uverbs.WRRDMARead, SGL: d.in.SGE(c.Size), RemoteAddr: info.Buf, RKey: info.RKey}
			if _, err := d.postCtx(ctx, wr, uverbs.WCRDMARead); err != nil {
				return err
			}
			if err := expect(d.in.B, i, "read data"); err != nil {
				return err
			}
			if err := d.sendCtrl(ctx, seq(i)); err != nil {
				return err
			}
			l.debugf("iteration %d: read %d bytes from %#x", i, c.Size, info.Buf)
		}
	case "send-inv":
		if err := d.clientSendInv(ctx); err != nil {
			return err
		}
	case "atomic":
		info, err := d.recvInfo(ctx)
		if err != nil {
			return err
		}
		for i := 0; i < c.Count; i++ {
			wr := uverbs.SendWR{ID: 6, Opcode: uverbs.WRAtomicFetchAndAdd, SGL: d.in.SGE(8), RemoteAddr: info.Buf, RKey: info.RKey, CompareAdd: 1}
			if _, err := d.postCtx(ctx, wr, uverbs.WCFetchAdd); err != nil {
				return err
			}
			if old := binary.NativeEndian.Uint64(d.in.B); old != uint64(i) {
				return fmt.Errorf("fetch-and-add %d returned %d, want %d", i, old, i)
			}
			l.debugf("iteration %d: fetch-and-add returned %d", i, i)
		}
		wr := uverbs.SendWR{ID: 7, Opcode: uverbs.WRAtomicCmpAndSwp, SGL: d.in.SGE(8), RemoteAddr: info.Buf, RKey: info.RKey,
			CompareAdd: uint64(c.Count), Swap: swapMarker}
		if _, err := d.postCtx(ctx, wr, uverbs.WCCompSwap); err != nil {
			return err
		}
		if old := binary.NativeEndian.Uint64(d.in.B); old != uint64(c.Count) {
			return fmt.Errorf("compare-and-swap returned %d, want %d", old, c.Count)
		}
		if err := d.sendCtrl(ctx, seq(c.Count)); err != nil {
			return err
		}
		if err := d.recvSeq(ctx, c.Count); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.Out, "%s: %d iterations of %d bytes checked\n", c.Mode, c.Count, c.Size)
	return nil
}
