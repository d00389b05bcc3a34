// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"fmt"
	"io"

	"github.com/rdmago/rdmago/uverbs"
)

// GRHSize is sizeof(struct ibv_grh): UD receive buffers start with it.
const GRHSize = 40

// udaddy's defaults.
const (
	UDDefaultCount = 10
	UDDefaultSize  = 100
)

// UDConfig are udaddy's settings.
type UDConfig struct {
	Count int // -C: messages each way
	Size  int // -S: message size (at most the path MTU)
	Out   io.Writer
}

// UD is udaddy's exchange (librdmacm/examples/udaddy.c) on a UD QP the CM
// resolved: the client sends Count SEND_WITH_IMM messages of Size bytes
// carrying its QP number as the immediate; the server, having received
// them all, answers each to that QP number with its own; both count
// completions.
type UD struct {
	cfg  UDConfig
	l    *Link
	recv Buf
	send Buf
}

// NewUD checks cfg.
func NewUD(cfg UDConfig) (*UD, error) {
	if cfg.Count <= 0 {
		cfg.Count = UDDefaultCount
	}
	if cfg.Size <= 0 {
		cfg.Size = UDDefaultSize
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	return &UD{cfg: cfg}, nil
}

// Depth is the send and receive queue depth udaddy uses (one per message).
func (u *UD) Depth() int { return u.cfg.Count }

// Setup registers the buffers and posts Count receives of Size plus the
// GRH (udaddy's post_recvs), before the connect or accept.
func (u *UD) Setup(l *Link, mtu int) error {
	if mtu > 0 && u.cfg.Size > mtu {
		return fmt.Errorf("message_size %d is larger than active mtu %d", u.cfg.Size, mtu)
	}
	u.l = l
	var err error
	if u.recv, err = l.NewBuf(u.cfg.Size+GRHSize, uverbs.AccessLocalWrite); err != nil {
		return err
	}
	if u.send, err = l.NewBuf(u.cfg.Size, uverbs.AccessLocalWrite); err != nil {
		return err
	}
	for i := range u.send.B {
		u.send.B[i] = byte(i)
	}
	for i := 0; i < u.cfg.Count; i++ {
		if err := l.PostRecv(uverbs.RecvWR{ID: uint64(i), SGL: u.recv.SGE(u.cfg.Size + GRHSize)}); err != nil {
			return fmt.Errorf("failed to post receives: %w", err)
		}
	}
	return nil
}

func (u *UD) sends(ah *uverbs.AH, qpn, qkey uint32) error {
	for i := 0; i < u.cfg.Count; i++ {
		wr := uverbs.SendWR{ID: uint64(1000 + i), Opcode: uverbs.WRSendWithImm, Flags: uverbs.SendSignaled,
			SGL: u.send.SGE(u.cfg.Size), Imm: u.l.QP.Num(), AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}
		if err := u.l.PostSend(wr); err != nil {
			return fmt.Errorf("failed to post sends: %w", err)
		}
	}
	return nil
}

// wait collects n completions of opcode op (others are counted in other).
func (u *UD) wait(ctx context.Context, op uverbs.WCOpcode, n int, first func(uverbs.WC)) error {
	for got := 0; got < n; got++ {
		wc, err := u.l.Await(ctx, op, nil)
		if err != nil {
			return fmt.Errorf("failed polling CQ: %w", err)
		}
		if op == uverbs.WCRecv {
			if int(wc.ByteLen) != u.cfg.Size+GRHSize {
				return fmt.Errorf("received %d bytes, want %d (+%d GRH)", int(wc.ByteLen)-GRHSize, u.cfg.Size, GRHSize)
			}
			if got == 0 && first != nil {
				first(wc)
			}
		}
		u.l.debugf("completion %d of %d: %v %d bytes from qp %#x", got+1, n, wc.Opcode, wc.ByteLen, wc.SrcQP)
	}
	return nil
}

// Client is udaddy's client side after the CM resolved the server's QP:
// send, then receive the replies.
func (u *UD) Client(ctx context.Context, ah *uverbs.AH, qpn, qkey uint32) error {
	fmt.Fprintln(u.cfg.Out, "initiating data transfers")
	if err := u.sends(ah, qpn, qkey); err != nil {
		return err
	}
	fmt.Fprintln(u.cfg.Out, "receiving data transfers")
	if err := u.wait(ctx, uverbs.WCRecv, u.cfg.Count, nil); err != nil {
		return err
	}
	fmt.Fprintln(u.cfg.Out, "data transfers complete")
	return nil
}

// Server is udaddy's server side after accepting: receive everything,
// then answer the sender (its QP number from the immediate, an AH from
// newAH) with the CM's QKey.
func (u *UD) Server(ctx context.Context, newAH func() (*uverbs.AH, error), qkey uint32) error {
	fmt.Fprintln(u.cfg.Out, "receiving data transfers")
	var qpn uint32
	if err := u.wait(ctx, uverbs.WCRecv, u.cfg.Count, func(wc uverbs.WC) {
		qpn = wc.SrcQP
		if wc.Flags&uverbs.WCWithImm != 0 {
			qpn = wc.Imm
		}
	}); err != nil {
		return err
	}
	ah, err := newAH()
	if err != nil {
		return fmt.Errorf("failed to create reply AH: %w", err)
	}
	defer ah.Close()
	fmt.Fprintln(u.cfg.Out, "sending replies")
	if err := u.sends(ah, qpn, qkey); err != nil {
		return err
	}
	if err := u.wait(ctx, uverbs.WCSend, u.cfg.Count, nil); err != nil {
		return err
	}
	fmt.Fprintln(u.cfg.Out, "data transfers complete")
	return ah.Close()
}
