// Copyright 2026 The rdmago Authors.

package capture

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Handle is an open capture: a packet socket bound to one interface with the
// RoCEv2 filter attached. Close releases it.
type Handle struct {
	f        *os.File
	ifindex  int
	loopback bool
	snapLen  int
	buf      []byte
	oob      []byte
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
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return nil, fmt.Errorf("capture: enable SO_TIMESTAMPNS: %w", err)
	}
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
		buf:      make([]byte, snapLen),
		oob:      make([]byte, unix.CmsgSpace(16)), // one struct timespec
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
	if h.f == nil {
		return Packet{}, ErrClosed
	}
	rc, err := h.f.SyscallConn()
	if err != nil {
		return Packet{}, fmt.Errorf("capture: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { h.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	defer h.f.SetReadDeadline(time.Time{})
	for {
		var (
			n, oobn int
			from    unix.Sockaddr
			rerr    error
		)
		err := rc.Read(func(fd uintptr) bool {
			n, oobn, _, from, rerr = unix.Recvmsg(int(fd), h.buf, h.oob, unix.MSG_TRUNC)
			return !errors.Is(rerr, unix.EAGAIN)
		})
		if err == nil {
			err = rerr
		}
		if err != nil {
			if ctx.Err() != nil {
				return Packet{}, ctx.Err()
			}
			if errors.Is(err, os.ErrClosed) {
				return Packet{}, ErrClosed
			}
			return Packet{}, fmt.Errorf("capture: recvmsg: %w", err)
		}
		p := Packet{OrigLen: n, Time: time.Now()}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			if h.loopback {
				continue
			}
			p.Outgoing = true
		}
		if ts, ok := parseTimestamp(h.oob[:oobn]); ok {
			p.Time = ts
		}
		p.Data = append([]byte(nil), h.buf[:min(n, len(h.buf))]...)
		return p, nil
	}
}

func parseTimestamp(oob []byte) (time.Time, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_TIMESTAMPNS {
			continue
		}
		// struct timespec: two longs, native byte order.
		switch len(m.Data) {
		case 16:
			return time.Unix(int64(binary.NativeEndian.Uint64(m.Data)), int64(binary.NativeEndian.Uint64(m.Data[8:]))), true
		case 8:
			return time.Unix(int64(int32(binary.NativeEndian.Uint32(m.Data))), int64(binary.NativeEndian.Uint32(m.Data[4:]))), true
		}
	}
	return time.Time{}, false
}

// Stats returns the frames the kernel passed the filter and the frames it
// dropped for lack of buffer space since the last call (PACKET_STATISTICS).
func (h *Handle) Stats() (received, dropped uint32, err error) {
	if h.f == nil {
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
	if h.f == nil {
		return nil
	}
	f := h.f
	h.f = nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("capture: close: %w", err)
	}
	return nil
}
