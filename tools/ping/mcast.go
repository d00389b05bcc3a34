// Copyright 2026 The rdmago Authors.

package ping

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// mckey's defaults (librdmacm/examples/mckey.c).
const (
	McastDefaultCount = 10
	McastDefaultSize  = 100
)

// mcastMagic starts rdmaping's multicast messages, followed by the
// sequence number; mckey sends whatever its buffer holds.
const mcastMagic = "rdmaping mcast"

// mcastSilence bounds each wait for a completion: a receiver's for the
// next datagram, a sender's for all of its sends.
const mcastSilence = 20 * time.Second

// McastConfig are mckey's settings.
type McastConfig struct {
	Count int       // -C: datagrams
	Size  int       // -S: bytes each (at most the path MTU)
	Out   io.Writer // mckey's progress lines and the summary
	// Logf, when set, gets a line per datagram received (-v).
	Logf func(format string, args ...any)
}

// Mcast is mckey's traffic on a UD QP in RTS whose group the caller joined
// through rdma_cm: the receiver posts its receives (PostReceives), then the
// caller attaches its QP to the group and calls Receive; the sender
// sends Count SEND_WITH_IMM datagrams of Size bytes to the group's QPN
// 0xffffff with its QP number as the immediate, as mckey does. rdmaping's
// datagrams carry a magic and a sequence number, so a receiver checks
// another rdmaping's in full, and mckey's only by size and immediate.
type Mcast struct {
	cfg  McastConfig
	qp   *uverbs.QP
	cq   *uverbs.CQ
	buf  Buf
	slot int
	// posted is set once PostReceives has posted the receives.
	posted bool
}

// NewMcast registers Count slots of Size bytes plus the GRH with regMR;
// qp sends and receives on cq.
func NewMcast(cfg McastConfig, qp *uverbs.QP, cq *uverbs.CQ, regMR func([]byte, uverbs.AccessFlags) (*uverbs.MR, error)) (*Mcast, error) {
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	m := &Mcast{cfg: cfg, qp: qp, cq: cq, slot: cfg.Size + GRHSize}
	b := make([]byte, max(cfg.Count, 1)*m.slot)
	mr, err := regMR(b, uverbs.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	m.buf = Buf{B: b, MR: mr}
	return m, nil
}

// mcastMessage fills rdmaping's i-th datagram: the magic, i, then a
// pattern.
func mcastMessage(m []byte, i int) {
	for j := range m {
		m[j] = byte(i + j*11)
	}
	if len(m) >= len(mcastMagic)+4 {
		copy(m, mcastMagic)
		binary.BigEndian.PutUint32(m[len(mcastMagic):], uint32(i))
	}
}

// Send sends the datagrams to the group (ah, the QPN and Q_Key the join
// reported) and waits for their completions.
func (m *Mcast) Send(ctx context.Context, ah *uverbs.AH, qpn, qkey uint32) error {
	count, size := m.cfg.Count, m.cfg.Size
	fmt.Fprintln(m.cfg.Out, "initiating data transfers")
	for i := range count {
		mcastMessage(m.buf.B[i*m.slot:i*m.slot+size], i)
		if err := m.qp.PostSend(uverbs.SendWR{ID: uint64(i), Opcode: uverbs.WRSendWithImm, Flags: uverbs.SendSignaled, Imm: m.qp.Num(),
			SGL: []uverbs.SGE{m.buf.MR.SGE(i*m.slot, size)}, AH: ah, RemoteQPN: qpn, RemoteQKey: qkey}); err != nil {
			return err
		}
	}
	wcs := make([]uverbs.WC, max(count, 1))
	wctx, cancel := context.WithTimeout(ctx, mcastSilence)
	defer cancel()
	if _, err := m.cq.PollN(wctx, wcs, count); err != nil {
		return fmt.Errorf("send completions: %w", err)
	}
	for _, wc := range wcs[:count] {
		if err := wc.Err(); err != nil {
			return err
		}
	}
	return nil
}

// PostReceives posts a receive per datagram. A receiver calls it before it
// attaches the QP to the group, as mckey posts its receives before it
// joins: a datagram that reached the QP before its receive would be
// dropped (UD has no RNR retry).
func (m *Mcast) PostReceives() error {
	if m.posted {
		return errors.New("mcast: receives already posted")
	}
	for i := range m.cfg.Count {
		if err := m.qp.PostRecv(uverbs.RecvWR{ID: uint64(i), SGL: []uverbs.SGE{m.buf.MR.SGE(i*m.slot, m.slot)}}); err != nil {
			return fmt.Errorf("post receive %d of %d: %w", i, m.cfg.Count, err)
		}
	}
	m.posted = true
	return nil
}

// Receive waits for the datagrams PostReceives made room for, each within
// 20 s of the last. The immediate must be the sender's QPN (mckey's and
// rdmaping's); the data is checked in full when the sender is rdmaping.
func (m *Mcast) Receive(ctx context.Context) error {
	count, size := m.cfg.Count, m.cfg.Size
	if !m.posted {
		return errors.New("mcast: Receive before PostReceives: post the receives before attaching the QP to the group")
	}
	fmt.Fprintln(m.cfg.Out, "receiving data transfers")
	want := make([]byte, size)
	peer := ""
	var wcs [8]uverbs.WC
	for got := 0; got < count; {
		wctx, cancel := context.WithTimeout(ctx, mcastSilence)
		n, _, err := uverbs.WaitCQs(wctx, nil, wcs[:], m.cq)
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("%d of %d datagrams after %v of silence: is the sender (mckey -s or rdmaping -c --mcast) sending to this group with -C %d?", got, count, mcastSilence, count)
			}
			return err
		}
		for _, wc := range wcs[:n] {
			who, err := m.check(got, wc, peer, want)
			if err != nil {
				return err
			}
			peer = who
			if m.cfg.Logf != nil {
				m.cfg.Logf("datagram %d: %d bytes from QPN %#x (%s)", got, size, wc.SrcQP, who)
			}
			got++
		}
	}
	checked := "immediate checked"
	if peer == "rdmaping" {
		checked = "every byte checked"
	}
	fmt.Fprintf(m.cfg.Out, "mcast: %d datagrams of %d bytes from %s, %s\n", count, size, peer, checked)
	return nil
}

// check looks at the got-th datagram, completed by wc in its receive slot:
// its size, its immediate (the sender's QPN) and, from rdmaping, every
// byte (want is scratch of Size bytes). It returns who sent it, which
// must be peer when peer is set.
func (m *Mcast) check(got int, wc uverbs.WC, peer string, want []byte) (string, error) {
	size := m.cfg.Size
	if err := wc.Err(); err != nil {
		return "", err
	}
	if int(wc.ByteLen) != size+GRHSize {
		return "", fmt.Errorf("datagram %d: %d bytes, want %d: give the sender's -S", got, int(wc.ByteLen)-GRHSize, size)
	}
	if wc.Flags&uverbs.WCWithImm == 0 || wc.Imm != wc.SrcQP {
		return "", fmt.Errorf("datagram %d from QPN %#x: immediate %#x (flags %v), want the sender's QPN as mckey sends it", got, wc.SrcQP, wc.Imm, wc.Flags)
	}
	off := int(wc.WRID)*m.slot + GRHSize
	d := m.buf.B[off : off+size]
	who := "mckey"
	if bytes.HasPrefix(d, []byte(mcastMagic)) {
		who = "rdmaping"
		i := int(binary.BigEndian.Uint32(d[len(mcastMagic):]))
		mcastMessage(want, i)
		if !bytes.Equal(d, want) {
			return "", fmt.Errorf("datagram %d from rdmaping: data mismatch", i)
		}
	}
	if peer != "" && peer != who {
		return "", fmt.Errorf("datagram %d: senders %s and %s mixed in the group", got, peer, who)
	}
	return who, nil
}
