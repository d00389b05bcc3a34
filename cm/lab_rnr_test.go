// Copyright 2026 The rdmago Authors.

//go:build linux

package cm

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/uverbs"
)

// TestLabRNRRetry: each side's QP takes its RNR retry count from the
// peer's RNRRetryCount unless SendRNRRetry replaces it, and with a finite
// count a SEND to a peer that never posts a receive ends with
// IBV_WC_RNR_RETRY_EXC_ERR instead of retrying forever.
func TestLabRNRRetry(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 90*time.Second)
	port := labPort(22)
	serve := func() error {
		l, err := Listen(ctx, e.Addr+":"+port, &Options{Logf: testLogf(t), ReuseAddr: true, RNRRetryCount: 5})
		if err != nil {
			return err
		}
		defer l.Close()
		c, err := l.Accept(ctx) // posts no receive
		if err != nil {
			return err
		}
		defer c.Close()
		a, err := c.QP().Query()
		if err != nil {
			return err
		}
		if a.RNRRetry != 3 {
			return fmt.Errorf("the accepting side's QP has RNR retry %d, want the dialer's RNRRetryCount 3", a.RNRRetry)
		}
		select {
		case <-c.Done():
		case <-ctx.Done():
			return fmt.Errorf("the client never disconnected: %w", ctx.Err())
		}
		return c.Close()
	}
	client := func() error {
		c, err := dialRetry(ctx, e.Peer+":"+port, &Options{Logf: testLogf(t), RNRRetryCount: 3, SendRNRRetry: 1})
		if err != nil {
			return err
		}
		defer c.Close()
		a, err := c.QP().Query()
		if err != nil {
			return err
		}
		if a.RNRRetry != 1 {
			return fmt.Errorf("the dialing side's QP has RNR retry %d, want SendRNRRetry's 1 (not the acceptor's 5)", a.RNRRetry)
		}
		b := newMsgBuf(t, c, 16)
		if err := c.QP().PostSend(uverbs.SendWR{ID: 1, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled, SGL: []uverbs.SGE{b.mr.SGE(0, 16)}}); err != nil {
			return err
		}
		var wcs [1]uverbs.WC
		if _, _, err := c.Wait(ctx, wcs[:], c.SendCQ()); err != nil {
			return fmt.Errorf("waiting for the SEND nobody receives: %w", err)
		}
		if wcs[0].WRID != 1 || wcs[0].Status != uverbs.WCRNRRetryExcErr {
			return fmt.Errorf("SEND to a peer without receives completed with %v (wr %d), want %v", wcs[0].Status, wcs[0].WRID, uverbs.WCRNRRetryExcErr)
		}
		t.Logf("client: %v", wcs[0].Err())
		return c.Close()
	}
	e.RunRoles(t, serve, client)
}
