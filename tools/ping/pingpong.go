// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// Pingpong defaults, as libibverbs/examples has them.
const (
	PingpongSize   = 4096 // ibv_rc/uc/srq_pingpong -s
	PingpongUDSize = 1024 // ibv_ud_pingpong -s
	PingpongIters  = 1000 // -n
	PingpongQKey   = 0x11111111
	fillByte       = 0x7b // the examples memset their buffer to it
	pageSize       = 4096
)

// PingpongConfig are the settings of the ibv_*_pingpong traffic.
type PingpongConfig struct {
	Type   uverbs.QPType // RC, UC or UD (RC with an SRQ: ibv_srq_pingpong)
	Server bool
	Iters  int // messages each way, default PingpongIters
	Size   int // payload bytes, default PingpongSize (UD: PingpongUDSize)
	// PeerTimeout bounds each wait for a completion: the examples answer
	// every message at once, so a silent peer runs something else.
	PeerTimeout time.Duration
	Out         io.Writer
}

// PingpongQP is one of the QPs and, for UD, where it sends.
type PingpongQP struct {
	QP        *uverbs.QP
	AH        *uverbs.AH
	RemoteQPN uint32
}

// Pingpong is the traffic of rdma-core's ibv_rc_pingpong,
// ibv_uc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong
// (libibverbs/examples), step for step, so rdmaping interoperates with them
// in both roles: the client sends a message on each QP; each side sends its
// next message on a QP once its previous send there completed and a message
// arrived there, until Iters were sent and Iters received in all. UD
// receives land after a 40-byte GRH.
//
// The C programs send their buffer, memset to 0x7b (with the first byte
// of each page 0 under -c; ibv_srq_pingpong clears it to 0 instead), or
// echo what they last received. ibv_srq_pingpong receives every QP's
// messages into that one buffer while it sends from it, so a message of
// its may be torn between two of ours, or ours and its zeros. rdmaping
// sends the same fill with a header at byte 1 ("rdmaping", its role, the
// QP index and a per-QP sequence number) when Size allows; it checks a
// peer's messages in full only when they carry the header of the other
// role (the peer is rdmaping), and otherwise only that they look like a C
// program's buffer or an echo of its own. Anything else is an error saying
// what arrived.
type Pingpong struct {
	cfg    PingpongConfig
	cq     *uverbs.CQ
	qps    []PingpongQP
	srq    *uverbs.SRQ
	shared bool // the SRQ configuration: the C peer is ibv_srq_pingpong
	send   Buf  // one message per QP
	recv   Buf  // rxDepth receive slots
	slot   int  // bytes per receive slot
	depth  int
	rseq   []uint32
	sseq   []uint32
	byQPN  map[uint32]int
	Peer   string // what the peer seems to be, once a message arrived
	wcs    [16]uverbs.WC
	Logf   func(string, ...any)
}

// Pingpong header layout, from byte 1 of a message of HeaderMin bytes or
// more.
const (
	ppMagic   = "rdmaping"
	HeaderMin = 16
)

// PingpongDepth is how many receives NewPingpong posts for nqp QPs.
func PingpongDepth(nqp int) int { return max(64, 4*nqp) }

// NewPingpong registers the buffers with regMR; receives go to srq when it
// is set (all QPs share it), else to the one QP. PostRecvs must run before
// the peer can send: before the address exchange.
func NewPingpong(cfg PingpongConfig, cq *uverbs.CQ, qps []PingpongQP, srq *uverbs.SRQ,
	regMR func([]byte, uverbs.AccessFlags) (*uverbs.MR, error)) (*Pingpong, error) {
	if len(qps) == 0 || (len(qps) > 1 && srq == nil) {
		return nil, errors.New("pingpong: one QP, or several sharing an SRQ")
	}
	if cfg.Iters <= 0 {
		cfg.Iters = PingpongIters
	}
	if cfg.Size <= 0 {
		cfg.Size = PingpongSize
		if cfg.Type == uverbs.QPTypeUD {
			cfg.Size = PingpongUDSize
		}
	}
	if cfg.PeerTimeout <= 0 {
		cfg.PeerTimeout = 10 * time.Second
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	p := &Pingpong{cfg: cfg, cq: cq, qps: qps, srq: srq, slot: cfg.Size, depth: PingpongDepth(len(qps)),
		rseq: make([]uint32, len(qps)), sseq: make([]uint32, len(qps)), byQPN: map[uint32]int{},
		shared: srq != nil}
	if cfg.Type == uverbs.QPTypeUD {
		p.slot += GRHSize
	}
	for i, q := range qps {
		p.byQPN[q.QP.Num()] = i
	}
	sb := make([]byte, len(qps)*cfg.Size+1) // +1: Abort's oversized message
	rb := make([]byte, p.depth*p.slot)
	smr, err := regMR(sb, uverbs.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	rmr, err := regMR(rb, uverbs.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	p.send, p.recv = Buf{B: sb, MR: smr}, Buf{B: rb, MR: rmr}
	return p, nil
}

func (p *Pingpong) logf(f string, a ...any) {
	if p.Logf != nil {
		p.Logf(f, a...)
	}
}

// PostRecvs posts every receive slot.
func (p *Pingpong) PostRecvs() error {
	for i := range p.depth {
		if err := p.postRecv(i); err != nil {
			return err
		}
	}
	return nil
}

func (p *Pingpong) postRecv(i int) error {
	wr := uverbs.RecvWR{ID: uint64(i), SGL: []uverbs.SGE{p.recv.MR.SGE(i*p.slot, p.slot)}}
	if p.srq != nil {
		return p.srq.PostRecv(wr)
	}
	return p.qps[0].QP.PostRecv(wr)
}

const sendWRID = 1 << 32

func (p *Pingpong) role() byte {
	if p.cfg.Server {
		return 's'
	}
	return 'c'
}

// fill writes message bytes as the C programs have them: 0x7b, the first
// byte of each page 0 (their -c pattern).
func fill(b []byte) {
	for i := range b {
		b[i] = fillByte
		if i%pageSize == 0 {
			b[i] = 0
		}
	}
}

// isFill reports whether b, from offset off of a message, is a C
// program's buffer: 0x7b, the first byte of a page 0x7b or 0.
func isFill(b []byte, off int) bool {
	for i, c := range b {
		if c != fillByte && !((off+i)%pageSize == 0 && c == 0) {
			return false
		}
	}
	return true
}

// fromC reports whether m can be a C program's message: byte by byte its
// fill (0 too, anywhere, when zero is set: ibv_srq_pingpong's), or an echo
// of ours, whose header bytes 1 to 15 carry our role (the QP index and
// sequence number may be another QP's: the C programs echo from one
// buffer).
func fromC(m []byte, own byte, zero bool) bool {
	echo := len(m) >= HeaderMin && string(m[1:9]) == ppMagic && m[9] == own
	for i, c := range m {
		if echo && i > 0 && i < HeaderMin {
			continue
		}
		if c != fillByte && c != 0 || c == 0 && !zero && i%pageSize != 0 {
			return false
		}
	}
	return true
}

func (p *Pingpong) postSend(i int) error {
	n := p.cfg.Size
	m := p.send.B[i*n : (i+1)*n]
	fill(m)
	if n >= HeaderMin {
		copy(m[1:], ppMagic)
		m[9] = p.role()
		binary.BigEndian.PutUint16(m[10:], uint16(i))
		binary.BigEndian.PutUint32(m[12:], p.sseq[i])
	}
	p.sseq[i]++
	q := p.qps[i]
	wr := uverbs.SendWR{ID: sendWRID | uint64(i), Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{p.send.MR.SGE(i*n, n)}}
	if p.cfg.Type == uverbs.QPTypeUD {
		wr.AH, wr.RemoteQPN, wr.RemoteQKey = q.AH, q.RemoteQPN, PingpongQKey
	}
	return q.QP.PostSend(wr)
}

// check looks at message seq of QP i's peer.
func (p *Pingpong) check(i int, m []byte) error {
	n := p.cfg.Size
	if len(m) != n {
		return fmt.Errorf("message %d on QP %#x: %d bytes, want %d: the peer sends %d-byte messages (give the same -S as its -s)",
			p.rseq[i], p.num(i), len(m), n, len(m))
	}
	peer := "ibv_*_pingpong"
	hdr := n >= HeaderMin && string(m[1:9]) == ppMagic
	switch {
	case hdr && m[9] != p.role():
		peer = "rdmaping"
		if qi := binary.BigEndian.Uint16(m[10:]); int(qi) != i {
			return fmt.Errorf("message %d on QP %#x: the peer (rdmaping) sent it for its QP index %d, want %d", p.rseq[i], p.num(i), qi, i)
		}
		if s := binary.BigEndian.Uint32(m[12:]); s != p.rseq[i] {
			return fmt.Errorf("message on QP %#x: the peer (rdmaping) sent sequence number %d, want %d", p.num(i), s, p.rseq[i])
		}
		if !isFill(m[HeaderMin:], HeaderMin) {
			return fmt.Errorf("message %d on QP %#x from rdmaping: data mismatch after the header: % x", p.rseq[i], p.num(i), m[HeaderMin:min(n, HeaderMin+16)])
		}
	case hdr && !fromC(m, p.role(), p.shared): // our own message back: the C programs echo what they received
		return fmt.Errorf("message %d on QP %#x: our echoed data came back changed: % x", p.rseq[i], p.num(i), m[:min(n, 32)])
	case !hdr && !fromC(m, p.role(), p.shared):
		what := "0x7b bytes"
		if p.shared {
			what = "0x7b or 0 bytes"
		}
		return fmt.Errorf("message %d on QP %#x: neither rdmaping's pingpong nor an ibv_*_pingpong buffer (%s): it starts % x; is the peer running another program?",
			p.rseq[i], p.num(i), what, m[:min(n, 32)])
	}
	if p.Peer == "" {
		p.Peer = peer
		if peer == "rdmaping" {
			p.logf("pingpong: the peer is rdmaping: checking every message's header and data")
		} else {
			p.logf("pingpong: the peer seems to be rdma-core's %s (it sends its 0x7b buffer or echoes ours): checking the fill only", p.example())
		}
	} else if p.Peer != peer {
		return fmt.Errorf("message %d on QP %#x: the peer looked like %s but now sends as %s", p.rseq[i], p.num(i), p.Peer, peer)
	}
	p.rseq[i]++
	return nil
}

// num is QP i's number (0 before it exists).
func (p *Pingpong) num(i int) uint32 {
	if p.qps[i].QP == nil {
		return 0
	}
	return p.qps[i].QP.Num()
}

// example is the C program that speaks this configuration.
func (p *Pingpong) example() string {
	switch {
	case p.shared:
		return "ibv_srq_pingpong"
	case p.cfg.Type == uverbs.QPTypeUC:
		return "ibv_uc_pingpong"
	case p.cfg.Type == uverbs.QPTypeUD:
		return "ibv_ud_pingpong"
	}
	return "ibv_rc_pingpong"
}

// others names the pingpong programs this one is not, for errors.
func (p *Pingpong) others() string {
	switch p.example() {
	case "ibv_uc_pingpong":
		return "ibv_rc_pingpong or ibv_ud_pingpong (give --qp-type rc or ud)"
	case "ibv_ud_pingpong":
		return "ibv_rc_pingpong or ibv_uc_pingpong (give --qp-type rc or uc)"
	}
	return "ibv_uc_pingpong or ibv_ud_pingpong (give --qp-type uc or ud)"
}

// Run runs the traffic; the QPs are connected. It returns an error for a
// failed completion or a peer silent for PeerTimeout, saying what the
// peer seems to run.
func (p *Pingpong) Run(ctx context.Context) error {
	iters := p.cfg.Iters
	const sendP, recvP = 1, 2
	pending := make([]int, len(p.qps))
	start := time.Now()
	for i := range p.qps {
		pending[i] = recvP
		if !p.cfg.Server {
			if err := p.postSend(i); err != nil {
				return err
			}
			pending[i] |= sendP
		}
	}
	scnt, rcnt := 0, 0
	for rcnt < iters || scnt < iters {
		wctx, cancel := context.WithTimeout(ctx, p.cfg.PeerTimeout)
		n, _, err := uverbs.WaitCQs(wctx, nil, p.wcs[:], p.cq)
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return p.silent(scnt, rcnt)
			}
			return err
		}
		for _, wc := range p.wcs[:n] {
			i, ok := p.byQPN[wc.QPNum]
			if !ok {
				return fmt.Errorf("completion for unknown QP %#x", wc.QPNum)
			}
			if wc.Status != uverbs.WCSuccess {
				return p.failed(wc, scnt, rcnt)
			}
			if wc.WRID&sendWRID != 0 {
				scnt++
				pending[i] &^= sendP
			} else {
				slot := int(wc.WRID)
				m := p.recv.B[slot*p.slot : slot*p.slot+int(wc.ByteLen)]
				if p.cfg.Type == uverbs.QPTypeUD {
					if len(m) < GRHSize {
						return fmt.Errorf("UD message of %d bytes, shorter than its GRH", len(m))
					}
					m = m[GRHSize:]
				}
				if err := p.check(i, m); err != nil {
					return err
				}
				if err := p.postRecv(slot); err != nil {
					return err
				}
				rcnt++
				pending[i] &^= recvP
			}
			if scnt < iters && pending[i] == 0 {
				if err := p.postSend(i); err != nil {
					return err
				}
				pending[i] = sendP | recvP
			}
		}
	}
	usec := float64(time.Since(start).Microseconds())
	if usec <= 0 {
		usec = 1
	}
	bytes := int64(p.cfg.Size) * int64(iters) * 2
	fmt.Fprintf(p.cfg.Out, "%d bytes in %.2f seconds = %.2f Mbit/sec\n", bytes, usec/1e6, float64(bytes)*8/usec)
	fmt.Fprintf(p.cfg.Out, "%d iters in %.2f seconds = %.2f usec/iter\n", iters, usec/1e6, usec/float64(iters))
	peer := p.Peer
	if peer == "rdmaping" {
		peer += ", every message checked"
	} else {
		peer = "rdma-core's " + p.example() + ", fill checked"
	}
	fmt.Fprintf(p.cfg.Out, "pingpong: %d messages of %d bytes each way with %s\n", iters, p.cfg.Size, peer)
	return nil
}

// silent explains a peer that sent nothing for PeerTimeout.
func (p *Pingpong) silent(scnt, rcnt int) error {
	what := fmt.Sprintf("no completion for %v (%d sent, %d received)", p.cfg.PeerTimeout, scnt, rcnt)
	if rcnt == 0 {
		return fmt.Errorf("%s: the peer's messages do not arrive; a %v QP drops another type's packets, so the peer may be %s, or it exited", what, p.cfg.Type, p.others())
	}
	return fmt.Errorf("%s: the peer stopped answering; did it exit, or does it run fewer iterations (-n, our -C %d)?", what, p.cfg.Iters)
}

// failed explains a failed completion.
func (p *Pingpong) failed(wc uverbs.WC, scnt, rcnt int) error {
	err := wc.Err()
	switch {
	case wc.Status == uverbs.WCRetryExcErr && rcnt == 0:
		return fmt.Errorf("%w: the peer's QP never acknowledged: it is not an RC QP (the peer may be %s), or it exited", err, p.others())
	case wc.Status == uverbs.WCRetryExcErr:
		return fmt.Errorf("%w: after %d messages each way the peer stopped acknowledging: did it exit (fewer iterations -n than our -C %d)?", err, rcnt, p.cfg.Iters)
	case wc.Status == uverbs.WCLocLenErr:
		return fmt.Errorf("%w: the peer's message is larger than our -S %d (give the same -S as its -s)", err, p.cfg.Size)
	}
	return fmt.Errorf("%w (%d sent, %d received)", err, scnt, rcnt)
}
