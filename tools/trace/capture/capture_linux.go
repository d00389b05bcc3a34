// Copyright 2026 The rdmago Authors.

package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Handle is an open capture: a packet socket bound to one interface with the
// RoCEv2 filter attached. Close releases it; Close may be called while
// another goroutine waits in ReadPacket, which then returns ErrClosed.
type Handle struct {
	f        *os.File // set by Open, never changed: Close closes it
	closed   atomic.Bool
	ifindex  int
	loopback bool
	snapLen  int
	ring     *ring        // the TPACKET_V3 receive ring (ring_linux.go)
	mu       sync.RWMutex // read-held while reading the ring; Close unmaps it under the write lock
}

// Open opens a packet socket on interface name (e.g. "eth0") that receives
// only RoCEv2 frames, in both directions, keeping snapLen bytes of each
// (0 means DefaultSnapLen). It is pcap_open_live + pcap_setfilter. The caller
// must Close the Handle.
func Open(name string, snapLen int) (*Handle, error) {
	if snapLen == 0 {
		snapLen = DefaultSnapLen
	}
	if snapLen < 64 || snapLen > 262144 {
		return nil, fmt.Errorf("capture: snapshot length %d out of range 64..262144", snapLen)
	}
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("capture: interface %q: %w (see `ip link` for names)", name, err)
	}
	// Protocol 0 receives nothing until bind, so no unfiltered frame can queue
	// up before the filter is attached.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("capture: open packet socket: %w (needs root or CAP_NET_RAW)", err)
		}
		return nil, fmt.Errorf("capture: open packet socket: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	prog := RoCEv2Filter(uint32(snapLen))
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		return nil, fmt.Errorf("capture: attach RoCEv2 socket filter: %w", err)
	}
	rg, err := setupRing(fd, snapLen)
	if err != nil {
		return nil, err
	}
	defer func() {
		if !ok {
			rg.close()
		}
	}()
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}
	if err := unix.Bind(fd, sa); err != nil {
		return nil, fmt.Errorf("capture: bind packet socket to %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), "packet:"+name)
	ok = true
	return &Handle{
		f:        f,
		ifindex:  ifi.Index,
		loopback: ifi.Flags&net.FlagLoopback != 0,
		snapLen:  snapLen,
		ring:     rg,
	}, nil
}

func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// ReadPacket waits for the next frame until ctx is done. The returned Data is
// a fresh copy. On the loopback interface the outgoing copy of each frame is
// skipped (it is seen again incoming), as libpcap does.
func (h *Handle) ReadPacket(ctx context.Context) (Packet, error) {
	if h.closed.Load() {
		return Packet{}, ErrClosed
	}
	return h.readRing(ctx)
}

// Stats returns the frames the kernel passed the filter and the frames it
// dropped because the receive ring was full, since the last call
// (PACKET_STATISTICS).
func (h *Handle) Stats() (received, dropped uint32, err error) {
	if h.closed.Load() {
		return 0, 0, ErrClosed
	}
	rc, err := h.f.SyscallConn()
	if err != nil {
		return 0, 0, fmt.Errorf("capture: %w", err)
	}
	var st *unix.TpacketStats
	var serr error
	if err := rc.Control(func(fd uintptr) {
		st, serr = unix.GetsockoptTpacketStats(int(fd), unix.SOL_PACKET, unix.PACKET_STATISTICS)
	}); err != nil {
		return 0, 0, fmt.Errorf("capture: %w", err)
	}
	if serr != nil {
		return 0, 0, fmt.Errorf("capture: get PACKET_STATISTICS: %w", serr)
	}
	return st.Packets, st.Drops, nil
}

// Close closes the socket. It is idempotent.
func (h *Handle) Close() error {
	if !h.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := h.f.Close() // wakes a ReadPacket waiting on the socket
	h.mu.Lock()
	uerr := h.ring.close()
	h.mu.Unlock()
	if err == nil && uerr != nil {
		err = uerr
	}
	if err != nil {
		return fmt.Errorf("capture: close: %w", err)
	}
	return nil
}
