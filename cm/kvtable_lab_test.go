// Copyright 2026 The rdmago Authors.

//go:build linux

package cm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
	"github.com/rdmago/rdmago/uverbs"
)

// The new user's program: a small remote key-value table. The server
// registers a table of slots in Setup and advertises it with the accept
// (PrivateDataFunc); clients read a slot with RDMA READ, bump its counter
// with FETCH_AND_ADD and store a value with RDMA_WRITE_WITH_IMM, whose
// immediate names the slot. The server is event driven: it sleeps in
// Conn.Wait, and for each write it bumps the slot's version and SENDs an
// acknowledgement; the wait ends when the client disconnects.
//
// A slot is 64 bytes: a uint64 counter (the FETCH_AND_ADD target, 8-byte
// aligned, the server's byte order), a uint64 version the server keeps, and
// 48 bytes of value.
const (
	kvSlot     = 64
	kvSlots    = 16
	kvValueOff = 16
	kvRecvs    = 4
)

// kvServer serves one connection of the table and returns how many writes
// it applied.
func kvServer(ctx context.Context, t *testing.T, l *Listener) (int, error) {
	var table, scratch msgBuf
	o := l.o
	o.Setup = func(c *Conn) error {
		// FETCH_AND_ADD needs remote atomic access on top of read and write.
		table.buf = make([]byte, kvSlots*kvSlot)
		var err error
		table.mr, err = c.RegMR(table.buf, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite|uverbs.AccessRemoteRead|uverbs.AccessRemoteAtomic)
		if err != nil {
			return err
		}
		scratch = newMsgBuf(t, c, 4*(kvRecvs+1))
		for i := range kvRecvs {
			if err := c.QP().PostRecv(uverbs.RecvWR{ID: uint64(i), SGL: []uverbs.SGE{scratch.mr.SGE(4*i, 4)}}); err != nil {
				return err
			}
		}
		return nil
	}
	o.PrivateDataFunc = func(*Conn) ([]byte, error) {
		p := binary.BigEndian.AppendUint64(nil, table.mr.Addr())
		p = binary.BigEndian.AppendUint32(p, table.mr.RKey())
		return binary.BigEndian.AppendUint32(p, kvSlots), nil
	}
	req, err := l.AcceptRequest(ctx)
	if err != nil {
		return 0, err
	}
	c, err := req.Accept(ctx, &o)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if table.mr.Addr()%8 != 0 {
		return 0, fmt.Errorf("table at %#x is not 8-byte aligned for FETCH_AND_ADD", table.mr.Addr())
	}
	ne := binary.NativeEndian
	ack := scratch.buf[4*kvRecvs:]
	writes := 0
	var wcs [8]uverbs.WC
	for {
		n, _, err := c.Wait(ctx, wcs[:]) // the one CQ of sends and receives
		if errors.Is(err, ErrDisconnected) {
			return writes, nil
		}
		if err != nil {
			return writes, err
		}
		for _, wc := range wcs[:n] {
			if wc.IsFlush() {
				continue // the client left; Wait says so next
			}
			if err := wc.Err(); err != nil {
				return writes, err
			}
			if wc.Opcode != uverbs.WCRecvRDMAWithImm {
				continue // an acknowledgement went out
			}
			slot := int(wc.Imm)
			if slot >= kvSlots || wc.ByteLen > kvSlot-kvValueOff {
				return writes, fmt.Errorf("write of %d bytes to slot %d", wc.ByteLen, slot)
			}
			v := table.buf[slot*kvSlot+8:]
			ne.PutUint64(v, ne.Uint64(v)+1)
			writes++
			if err := c.QP().PostRecv(uverbs.RecvWR{ID: wc.WRID, SGL: []uverbs.SGE{scratch.mr.SGE(4*int(wc.WRID), 4)}}); err != nil {
				return writes, err
			}
			binary.BigEndian.PutUint32(ack, uint32(slot))
			if err := c.QP().PostSend(uverbs.SendWR{ID: 100, Opcode: uverbs.WRSend, Flags: uverbs.SendSignaled,
				SGL: []uverbs.SGE{scratch.mr.SGE(4*kvRecvs, 4)}}); err != nil {
				return writes, err
			}
		}
	}
}

// kvClient is the table's client side.
type kvClient struct {
	c      *Conn
	addr   uint64
	rkey   uint32
	slots  int
	local  msgBuf // [0,64) a slot, [64,72) atomic result, [72,76) acknowledgement
	acks   []uint32
	wcs    [4]uverbs.WC
	nextID uint64
	doneID uint64 // the last request completed
}

func dialKV(ctx context.Context, t *testing.T, addr string) (*kvClient, error) {
	k := &kvClient{}
	o := &Options{Logf: testLogf(t), Setup: func(c *Conn) error {
		k.local = newMsgBuf(t, c, 80)
		return k.postAckRecv(c)
	}}
	c, err := dialRetry(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	k.c = c
	p := c.Peer().PrivateData
	k.addr, k.rkey, k.slots = binary.BigEndian.Uint64(p), binary.BigEndian.Uint32(p[8:]), int(binary.BigEndian.Uint32(p[12:]))
	return k, nil
}

func (k *kvClient) postAckRecv(c *Conn) error {
	return c.QP().PostRecv(uverbs.RecvWR{ID: 1, SGL: []uverbs.SGE{k.local.mr.SGE(72, 4)}})
}

// do posts wr and waits for its completion.
func (k *kvClient) do(ctx context.Context, wr uverbs.SendWR) error {
	k.nextID++
	wr.ID, wr.Flags = k.nextID, uverbs.SendSignaled
	if err := k.c.QP().PostSend(wr); err != nil {
		return err
	}
	return k.waitUntil(ctx, func() bool { return k.doneID == wr.ID })
}

// waitUntil sleeps in Conn.Wait until done, taking note of completed
// requests and of the acknowledgements that arrive.
func (k *kvClient) waitUntil(ctx context.Context, done func() bool) error {
	for !done() {
		n, _, err := k.c.Wait(ctx, k.wcs[:])
		if err != nil {
			return err
		}
		for _, wc := range k.wcs[:n] {
			if err := wc.Err(); err != nil {
				return fmt.Errorf("%v: %w", wc.Opcode, err)
			}
			if wc.Opcode != uverbs.WCRecv {
				k.doneID = wc.WRID
				continue
			}
			k.acks = append(k.acks, binary.BigEndian.Uint32(k.local.buf[72:]))
			if err := k.postAckRecv(k.c); err != nil {
				return err
			}
		}
	}
	return nil
}

func (k *kvClient) slotAddr(slot int) uint64 { return k.addr + uint64(slot*kvSlot) }

// get reads a slot: its counter, version and value.
func (k *kvClient) get(ctx context.Context, slot int) (counter, version uint64, value string, err error) {
	err = k.do(ctx, uverbs.SendWR{Opcode: uverbs.WRRDMARead, SGL: []uverbs.SGE{k.local.mr.SGE(0, kvSlot)},
		RemoteAddr: k.slotAddr(slot), RKey: k.rkey})
	ne := binary.NativeEndian // both ends of the lab share a byte order
	b := k.local.buf
	v := b[kvValueOff:kvSlot]
	for len(v) > 0 && v[len(v)-1] == 0 {
		v = v[:len(v)-1]
	}
	return ne.Uint64(b), ne.Uint64(b[8:]), string(v), err
}

// add adds n to a slot's counter and returns what it held.
func (k *kvClient) add(ctx context.Context, slot int, n uint64) (uint64, error) {
	err := k.do(ctx, uverbs.SendWR{Opcode: uverbs.WRAtomicFetchAndAdd, SGL: []uverbs.SGE{k.local.mr.SGE(64, 8)},
		RemoteAddr: k.slotAddr(slot), RKey: k.rkey, CompareAdd: n})
	return binary.NativeEndian.Uint64(k.local.buf[64:]), err
}

// put writes a value into a slot and waits for the server's acknowledgement.
func (k *kvClient) put(ctx context.Context, slot int, value string) error {
	n := copy(k.local.buf[kvValueOff:kvSlot], value)
	clear(k.local.buf[kvValueOff+n : kvSlot])
	acks := len(k.acks)
	if err := k.do(ctx, uverbs.SendWR{Opcode: uverbs.WRRDMAWriteWithImm, Imm: uint32(slot),
		SGL: []uverbs.SGE{k.local.mr.SGE(kvValueOff, kvSlot-kvValueOff)}, RemoteAddr: k.slotAddr(slot) + kvValueOff, RKey: k.rkey}); err != nil {
		return err
	}
	if err := k.waitUntil(ctx, func() bool { return len(k.acks) > acks }); err != nil {
		return fmt.Errorf("waiting for the acknowledgement: %w", err)
	}
	if got := k.acks[len(k.acks)-1]; got != uint32(slot) {
		return fmt.Errorf("acknowledgement for slot %d, want %d", got, slot)
	}
	return nil
}

// TestLabKVTable runs the new user's key-value table end to end.
func TestLabKVTable(t *testing.T) {
	e := requireLab(t)
	ctx := labtest.Context(t, 90*time.Second)
	port := labPort(23)
	serve := func() error {
		l, err := Listen(ctx, e.Addr+":"+port, &Options{Logf: testLogf(t), ReuseAddr: true})
		if err != nil {
			return err
		}
		defer l.Close()
		writes, err := kvServer(ctx, t, l)
		if err != nil {
			return fmt.Errorf("server: %w", err)
		}
		if writes != 2 {
			return fmt.Errorf("server applied %d writes, want 2", writes)
		}
		return nil
	}
	client := func() error {
		k, err := dialKV(ctx, t, e.Peer+":"+port)
		if err != nil {
			return err
		}
		defer k.c.Close()
		if k.slots != kvSlots {
			return fmt.Errorf("the accept advertised %d slots, want %d", k.slots, kvSlots)
		}
		if err := k.put(ctx, 3, "hello"); err != nil {
			return fmt.Errorf("put: %w", err)
		}
		if err := k.put(ctx, 3, "hello, table"); err != nil {
			return fmt.Errorf("put: %w", err)
		}
		for i, want := range []uint64{0, 5} {
			old, err := k.add(ctx, 3, 5)
			if err != nil {
				return fmt.Errorf("fetch-and-add: %w", err)
			}
			if old != want {
				return fmt.Errorf("fetch-and-add %d returned %d, want %d", i, old, want)
			}
		}
		counter, version, value, err := k.get(ctx, 3)
		if err != nil {
			return fmt.Errorf("get: %w", err)
		}
		if counter != 10 || version != 2 || value != "hello, table" {
			return fmt.Errorf("slot 3 holds counter %d, version %d, value %q; want 10, 2, %q", counter, version, value, "hello, table")
		}
		if counter, version, value, err := k.get(ctx, 4); err != nil || counter != 0 || version != 0 || value != "" {
			return fmt.Errorf("untouched slot 4 holds %d, %d, %q (%v); want it empty", counter, version, value, err)
		}
		return k.c.Close()
	}
	e.RunRoles(t, serve, client)
}
