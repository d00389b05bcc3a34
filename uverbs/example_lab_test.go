//go:build rdmalab

// Copyright 2026 The rdmago Authors.

package uverbs_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"
	"os"
	"time"

	"github.com/rdmago/rdmago/uverbs"
)

// Two RC QPs on one device, connected to each other through the device's own
// RoCE address, exchange a SEND. RDMALAB_DEV names the device ("" opens the
// only one) and RDMALAB_ADDR is an IP address of its network interface.
func Example() {
	dev, err := uverbs.Open(os.Getenv("RDMALAB_DEV"))
	if err != nil {
		log.Fatal(err)
	}
	defer dev.Close()
	gid, err := dev.GIDForIP(1, netip.MustParseAddr(os.Getenv("RDMALAB_ADDR")))
	if err != nil {
		log.Fatal(err)
	}
	pd, err := dev.AllocPD()
	if err != nil {
		log.Fatal(err)
	}
	defer pd.Close()
	cq, err := dev.CreateCQ(16, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cq.Close()

	sendBuf, recvBuf := make([]byte, 64), make([]byte, 64)
	sendMR, err := pd.RegMR(sendBuf, uverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer sendMR.Close()
	recvMR, err := pd.RegMR(recvBuf, uverbs.AccessLocalWrite)
	if err != nil {
		log.Fatal(err)
	}
	defer recvMR.Close()

	newQP := func() *uverbs.QP {
		qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
			Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			log.Fatal(err)
		}
		if err := qp.ModifyToInit(1, uverbs.AccessLocalWrite, 0); err != nil {
			log.Fatal(err)
		}
		return qp
	}
	a, b := newQP(), newQP()
	defer a.Close() // QPs close before their CQ, MRs and PD (defers run last first)
	defer b.Close()
	opts := &uverbs.ConnectOptions{SGIDIndex: gid.Index}
	if err := a.Connect(uverbs.Dest{QPN: b.Num(), PSN: 200, GID: gid.GID}, 100, opts); err != nil {
		log.Fatal(err)
	}
	if err := b.Connect(uverbs.Dest{QPN: a.Num(), PSN: 100, GID: gid.GID}, 200, opts); err != nil {
		log.Fatal(err)
	}

	if err := b.PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{recvMR.SGE(0, len(recvBuf))}}); err != nil {
		log.Fatal(err)
	}
	n := copy(sendBuf, "hello")
	if err := a.PostSend(uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
		SGL: []uverbs.SGE{sendMR.SGE(0, n)}}); err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wcs := make([]uverbs.WC, 2) // the SEND's completion and the RECV's
	got, err := cq.PollN(ctx, wcs, len(wcs))
	if err != nil {
		log.Fatal(err)
	}
	for _, wc := range wcs[:got] {
		if wc.Status != uverbs.WCSuccess {
			log.Fatalf("work request %d: %v", wc.WRID, wc.Status)
		}
		if wc.Opcode == uverbs.WCRecv {
			fmt.Printf("received: %s\n", recvBuf[:wc.ByteLen])
		}
	}
	// Output: received: hello
}
