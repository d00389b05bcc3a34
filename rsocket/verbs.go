// Copyright 2026 The rdmago Authors.

package rsocket

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/uverbs"
)

// verbsTransport is the transport over a cm.Conn's RC queue pair: one CQ
// for sends and receives with a completion channel (rs_create_cq).
type verbsTransport struct {
	cc  *cm.Conn
	qp  *uverbs.QP
	cq  *uverbs.CQ
	ch  *uverbs.CompChannel
	buf *uverbs.Buffer
	rwr [1]uverbs.RecvWR
}

func (v *verbsTransport) post(wrs []uverbs.SendWR) error { return v.qp.PostSend(wrs...) }

func (v *verbsTransport) postRecv(n int) error {
	v.rwr[0] = uverbs.RecvWR{ID: recvWRID}
	for range n {
		if err := v.qp.PostRecv(v.rwr[:]...); err != nil {
			return err
		}
	}
	return nil
}

func (v *verbsTransport) poll(wcs []uverbs.WC) int { return v.cq.Poll(wcs) }
func (v *verbsTransport) arm() error               { return v.cq.Arm(false) }
func (v *verbsTransport) done() <-chan struct{}    { return v.cc.Done() }

// wait is ibv_get_cq_event on the connection's channel (CompChannel.Wait
// parks on the netpoller).
func (v *verbsTransport) wait(ctx context.Context, quiet func() bool) error {
	_, err := v.ch.WaitQuiet(ctx, quiet)
	return err
}

// ready looks at the connection's one CQ: cm creates it and the channel for
// this connection alone (cmOptions), sends and receives on it, so it is the
// only CQ that can queue an event on the channel (quietWait relies on that).
func (v *verbsTransport) ready() bool { return v.cq.Ready() }

func (v *verbsTransport) sendsInFlight() int { return v.qp.SendsInFlight() }

func (v *verbsTransport) abort() {
	v.qp.ModifyToErr()
	v.cc.ID().Disconnect()
}

// close disconnects and destroys the connection (cm.Conn.Close deregisters
// the memory regions); free then unmaps the memory.
func (v *verbsTransport) close() error { return v.cc.Close() }

func (v *verbsTransport) free() error {
	if v.buf == nil {
		return nil
	}
	return v.buf.Close()
}

// setup is the per-connection work done in cm's Options.Setup, with the QP
// in INIT and before the connect or accept goes out (rs_create_ep and
// rs_init_bufs): allocate and register the rings and the target SGL and
// post the receives; then Options.PrivateDataFunc (privateData) sends this
// side's connection data, which names that memory.
type setup struct {
	cfg config
	v   *verbsTransport
	mem *memory
}

func (s *setup) run(cc *cm.Conn) error {
	cfg := &s.cfg
	if cc.CompChannel() == nil {
		return errors.New("rsocket: the connection has no completion channel")
	}
	if got := cc.QP().Cap().MaxInlineData; got < cfg.inline {
		cfg.inline = got
	}
	sLen := cfg.sbufSize + qpCtrlSize*maxCtrlMsg
	tLen := sglSize * sgeLen
	buf, err := uverbs.AllocBuffer(sLen + cfg.rbufSize + tLen)
	if err != nil {
		return fmt.Errorf("rsocket: allocate buffers: %w", err)
	}
	s.v = &verbsTransport{cc: cc, qp: cc.QP(), cq: cc.RecvCQ(), ch: cc.CompChannel(), buf: buf}
	b := buf.Bytes()
	m := &memory{sbuf: b[:sLen:sLen], rbuf: b[sLen : sLen+cfg.rbufSize : sLen+cfg.rbufSize], tsgl: b[sLen+cfg.rbufSize : sLen+cfg.rbufSize+tLen]}
	smr, err := cc.RegMR(m.sbuf, uverbs.AccessLocalWrite)
	if err != nil {
		return fmt.Errorf("rsocket: register send ring: %w", err)
	}
	remote := uverbs.AccessLocalWrite | uverbs.AccessRemoteWrite
	rmr, err := cc.RegMR(m.rbuf, remote)
	if err != nil {
		return fmt.Errorf("rsocket: register receive ring: %w", err)
	}
	tmr, err := cc.RegMR(m.tsgl, remote)
	if err != nil {
		return fmt.Errorf("rsocket: register target SGL: %w", err)
	}
	m.sAddr, m.sLKey = smr.Addr(), smr.LKey()
	m.rAddr, m.rKey = rmr.Addr(), rmr.RKey()
	m.tAddr, m.tKey = tmr.Addr(), tmr.RKey()
	s.mem = m
	if err := s.v.postRecv(cfg.rqSize); err != nil {
		return fmt.Errorf("rsocket: post receives: %w", err)
	}
	return nil
}

// privateData is this side's rs_conn_data (rs_format_conn_data), after run
// registered the memory it names.
func (s *setup) privateData(*cm.Conn) ([]byte, error) {
	b := make([]byte, connDataLen)
	d := ownConnData(s.mem, &s.cfg)
	d.marshal(b)
	return b, nil
}

// free releases the memory of a setup whose connection failed (after cm
// closed the connection and its memory regions).
func (s *setup) free() {
	if s.v != nil {
		s.v.free()
	}
}

// cmOptions are the cm options of an rsocket connection: librdmacm's QP
// (rs_create_ep: one CQ of sq+rq entries with a channel, two send SGEs, one receive SGE, the inline size) and the
// connect parameters of rs_do_connect (retry and RNR retry 7).
func (s *setup) cmOptions(o *Options) *cm.Options {
	return &cm.Options{
		Source:     o.localAddr,
		SendDepth:  s.cfg.sqSize,
		RecvDepth:  s.cfg.rqSize,
		MaxSendSGE: 2,
		MaxRecvSGE: 1,
		MaxInline:  s.cfg.inline,
		CQSize:     s.cfg.sqSize + s.cfg.rqSize,
		// librdmacm signals every send (sq_sig_all); Conn.postLocked
		// signals those it needs.
		RetryCount:    7,
		RNRRetryCount: 7,
		AckTimeout:    o.AckTimeout,
		Setup:         s.run,
		// PrivateDataFunc runs after Setup: the data names its memory.
		PrivateDataFunc: s.privateData,
		CloseTimeout:    o.CloseTimeout,
		Logf:            o.Logf,
	}
}
