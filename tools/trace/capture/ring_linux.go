// Copyright 2026 The rdmago Authors.

package capture

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// The receive ring: PACKET_RX_RING with TPACKET_V3 (Linux 3.2+), the way
// libpcap captures. The kernel fills blocks of variable-size frames in
// memory mapped into the process and hands a block over when it is full or
// its retire timer fires; a burst that outruns the reader fills the ring
// rather than a socket buffer, and what does not fit is counted in
// PACKET_STATISTICS' drops.
//
// The timer hands over a block however little it holds, so a reader that
// falls behind while packets trickle in loses the ring after blocks ×
// ringRetireMS, whatever the ring's size: with 32 blocks of 1 MiB that was
// 640 ms (TestCaptureBurst with pauses loses its tail so; a whole make test
// here lost it on a one-vCPU 6.1 guest without them, 3,620 of 5,000 kept).
// Many small blocks keep both: 32 MiB for bursts and 5 s of a stalled
// reader at any rate.
const (
	ringBytes     = 32 << 20  // the whole ring: some 25,000 RoCE frames of MTU 1024
	ringBlockSize = 128 << 10 // bytes per block (a power of two of pages), more if a frame needs it
	ringFrameSize = 1 << 11   // the kernel's frame accounting (V3 frames are variable)
	ringRetireMS  = 20        // a partly filled block is handed over after this long
)

// Offsets in struct tpacket_block_desc (version, offset_to_priv, then
// struct tpacket_hdr_v1) and struct tpacket3_hdr, which is followed by a
// struct sockaddr_ll at TPACKET_ALIGN(sizeof(struct tpacket3_hdr)).
const (
	bdBlockStatus      = 8
	bdNumPkts          = 12
	bdOffsetToFirstPkt = 16
	bdHeaderLen        = 48 // sizeof(struct tpacket_block_desc)

	t3NextOffset = 0
	t3Sec        = 4
	t3Nsec       = 8
	t3Snaplen    = 12
	t3Len        = 16
	t3Mac        = 24
	t3SllPkttype = unix.SizeofTpacket3Hdr + 10 // sockaddr_ll.sll_pkttype
)

// ring is the mapped PACKET_RX_RING and the reader's place in it.
type ring struct {
	mem       []byte
	blockSize int
	blocks    int
	cur       int // the block being read or waited for
	pktOff    int // offset in the current block of the next frame
	pktLeft   int // frames of the current block not read yet (0: not handed over yet)
}

// setupRing switches the packet socket fd to TPACKET_V3 and maps a receive
// ring holding frames of up to snapLen bytes.
func setupRing(fd, snapLen int) (*ring, error) {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return nil, fmt.Errorf("capture: select TPACKET_V3 (Linux 3.2+): %w", err)
	}
	blockSize := ringBlockSize
	for blockSize < snapLen+bdHeaderLen+256 { // a whole frame must fit a block
		blockSize *= 2
	}
	blocks := max(ringBytes/blockSize, 8)
	req := unix.TpacketReq3{
		Block_size:     uint32(blockSize),
		Block_nr:       uint32(blocks),
		Frame_size:     ringFrameSize,
		Frame_nr:       uint32(blockSize / ringFrameSize * blocks),
		Retire_blk_tov: ringRetireMS,
	}
	if err := unix.SetsockoptTpacketReq3(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return nil, fmt.Errorf("capture: set up a %d MiB PACKET_RX_RING: %w", blockSize*blocks>>20, err)
	}
	mem, err := unix.Mmap(fd, 0, blockSize*blocks, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("capture: map the receive ring: %w", err)
	}
	return &ring{mem: mem, blockSize: blockSize, blocks: blocks}, nil
}

func (r *ring) block() []byte { return r.mem[r.cur*r.blockSize : (r.cur+1)*r.blockSize] }

// next returns the next frame handed over by the kernel, or ok=false when
// the current block still belongs to the kernel. The frame is copied out.
func (r *ring) next(loopback bool) (p Packet, ok bool, err error) {
	bo := binary.NativeEndian
	for {
		blk := r.block()
		if r.pktLeft == 0 {
			if loadStatus(blk)&unix.TP_STATUS_USER == 0 {
				return Packet{}, false, nil
			}
			r.pktLeft = int(bo.Uint32(blk[bdNumPkts:]))
			r.pktOff = int(bo.Uint32(blk[bdOffsetToFirstPkt:]))
			if r.pktLeft == 0 {
				r.release()
				continue
			}
		}
		if r.pktOff+t3SllPkttype >= len(blk) {
			return Packet{}, false, fmt.Errorf("capture: frame at %d beyond ring block %d", r.pktOff, r.cur)
		}
		h := blk[r.pktOff:]
		snap, mac := int(bo.Uint32(h[t3Snaplen:])), int(bo.Uint16(h[t3Mac:]))
		if mac+snap > len(h) {
			return Packet{}, false, fmt.Errorf("capture: frame of %d bytes at %d beyond ring block %d", snap, r.pktOff, r.cur)
		}
		p = Packet{
			Time:     time.Unix(int64(bo.Uint32(h[t3Sec:])), int64(bo.Uint32(h[t3Nsec:]))),
			OrigLen:  int(bo.Uint32(h[t3Len:])),
			Outgoing: h[t3SllPkttype] == unix.PACKET_OUTGOING,
		}
		skip := p.Outgoing && loopback // seen again incoming
		if !skip {
			p.Data = append([]byte(nil), h[mac:mac+snap]...)
		}
		r.pktOff += int(bo.Uint32(h[t3NextOffset:]))
		r.pktLeft--
		if r.pktLeft == 0 {
			r.release()
		}
		if !skip {
			return p, true, nil
		}
	}
}

// release hands the current block back to the kernel and moves on.
func (r *ring) release() {
	storeStatus(r.block(), unix.TP_STATUS_KERNEL)
	r.pktLeft = 0
	r.cur = (r.cur + 1) % r.blocks
}

func (r *ring) close() error {
	if r.mem == nil {
		return nil
	}
	m := r.mem
	r.mem = nil
	return unix.Munmap(m)
}

// readRing waits for the next frame until ctx is done.
func (h *Handle) readRing(ctx context.Context) (Packet, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.ring.mem == nil {
		return Packet{}, ErrClosed
	}
	rc, err := h.f.SyscallConn()
	if err != nil {
		if h.closed.Load() {
			return Packet{}, ErrClosed
		}
		return Packet{}, fmt.Errorf("capture: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { h.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	defer h.f.SetReadDeadline(time.Time{})
	for {
		var (
			p   Packet
			got bool
			rer error
		)
		// The socket polls readable when a block is handed over; Read waits
		// for that whenever the function reports nothing to read.
		err := rc.Read(func(uintptr) bool {
			p, got, rer = h.ring.next(h.loopback)
			return got || rer != nil
		})
		if err == nil {
			err = rer
		}
		if err != nil {
			if ctx.Err() != nil {
				return Packet{}, ctx.Err()
			}
			if h.closed.Load() {
				return Packet{}, ErrClosed // Close closed the socket under Read
			}
			return Packet{}, err
		}
		if got {
			return p, nil
		}
	}
}
