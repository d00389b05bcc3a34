// Copyright 2026 The rdmago Authors.

package ping

import (
	"context"
	"fmt"

	"github.com/rdmago/rdmago/uverbs"
)

// MsgCS is the message size of rdma_server and rdma_client
// (librdmacm/examples/rdma_server.c, rdma_client.c): 16 bytes each way.
const MsgCS = 16

// CSDefaultPort is their port.
const CSDefaultPort = 7471

// CS is the rdma_server/rdma_client exchange: the client sends 16 bytes,
// the server answers with 16, each waiting for its completions; sends are
// inline when the QP allows it, and every send is signalled (sq_sig_all).
type CS struct {
	l      *Link
	recv   Buf
	send   Buf
	inline bool
	Got    []byte // the peer's message
}

// Setup registers the message buffers and posts the receive, before the
// connect or accept (rdma_post_recv).
func (c *CS) Setup(l *Link) error {
	c.l = l
	var err error
	if c.recv, err = l.NewBuf(MsgCS, uverbs.AccessLocalWrite); err != nil {
		return err
	}
	c.inline = l.QP.Cap().MaxInlineData >= MsgCS
	if c.send, err = l.NewBuf(MsgCS, uverbs.AccessLocalWrite); err != nil {
		return err
	}
	if !c.inline {
		l.logf("device doesn't support IBV_SEND_INLINE, using sge sends")
	}
	return l.PostRecv(uverbs.RecvWR{ID: 1, SGL: c.recv.SGE(MsgCS)})
}

func (c *CS) post(msg []byte) error {
	copy(c.send.B, msg)
	wr := uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled}
	if c.inline {
		wr.Flags |= uverbs.SendInline
		wr.Inline = c.send.B
	} else {
		wr.SGL = c.send.SGE(MsgCS)
	}
	return c.l.PostSend(wr)
}

func (c *CS) recvMsg(ctx context.Context) error {
	wc, err := c.l.Await(ctx, uverbs.WCRecv, nil)
	if err != nil {
		return fmt.Errorf("rdma_get_recv_comp: %w", err)
	}
	c.Got = append([]byte(nil), c.recv.B[:wc.ByteLen]...)
	return nil
}

// Client sends msg and waits for the send completion and the answer
// (rdma_client's run after rdma_connect).
func (c *CS) Client(ctx context.Context, msg []byte) error {
	if err := c.post(msg); err != nil {
		return fmt.Errorf("rdma_post_send: %w", err)
	}
	if err := c.sent(ctx); err != nil {
		return err
	}
	return c.recvMsg(ctx)
}

// Server waits for the client's message and answers with msg (rdma_server's
// run after rdma_accept).
func (c *CS) Server(ctx context.Context, msg []byte) error {
	if err := c.recvMsg(ctx); err != nil {
		return err
	}
	if err := c.post(msg); err != nil {
		return fmt.Errorf("rdma_post_send: %w", err)
	}
	return c.sent(ctx)
}

// sent waits for the completion of this side's message (rdma_get_send_comp)
// with Link.AwaitSent: the client's message is proven by the server's
// answer, and the server's answer is the exchange's last, after which
// rdma_client disconnects. rdma_server and rdma_client in C never look at
// the disconnect and get the send's success; this ends as they do.
func (c *CS) sent(ctx context.Context) error {
	if _, err := c.l.AwaitSent(ctx, uverbs.WCSend); err != nil {
		return fmt.Errorf("rdma_get_send_comp: %w", err)
	}
	return nil
}
