// Copyright 2026 The rdmago Authors.

package netlink

import (
	"errors"
	"fmt"

	"syscall"

	"golang.org/x/sys/unix"
)

// Conn is a request/response netlink socket of one protocol (NETLINK_ROUTE,
// NETLINK_RDMA, ...). It is not safe for concurrent use. The caller must Close it.
type Conn struct {
	fd  int
	seq uint32
	pid uint32
}

// Dial opens an AF_NETLINK socket of the given protocol (unix.NETLINK_*), asking
// the kernel for extended acks (error text) where it supports them.
func Dial(proto int) (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return nil, fmt.Errorf("netlink socket (protocol %d): %w", proto, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlink getsockname: %w", err)
	}
	// Best effort: older kernels lack these options.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	c := &Conn{fd: fd}
	if nl, ok := sa.(*unix.SockaddrNetlink); ok {
		c.pid = nl.Pid
	}
	return c, nil
}

// Close closes the socket. It is idempotent.
func (c *Conn) Close() error {
	if c == nil || c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	if err != nil {
		return fmt.Errorf("netlink close: %w", err)
	}
	return nil
}

// Execute sends one request and collects the replies. flags are added to
// NLM_F_REQUEST; for requests without NLM_F_DUMP, NLM_F_ACK is added and the
// call returns after the kernel's ACK. A kernel error comes back as *Error.
func (c *Conn) Execute(typ, flags uint16, payload []byte) ([]Message, error) {
	if c == nil || c.fd < 0 {
		return nil, errors.New("netlink: use of closed connection")
	}
	dump := flags&NLM_F_DUMP == NLM_F_DUMP
	flags |= NLM_F_REQUEST
	if !dump {
		flags |= NLM_F_ACK
	}
	c.seq++
	req := Message{Header: Header{Type: typ, Flags: flags, Seq: c.seq}, Data: payload}
	if err := unix.Sendto(c.fd, req.Marshal(), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, fmt.Errorf("netlink send: %w", err)
	}
	var out []Message
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("netlink receive: %w", err)
		}
		msgs, err := ParseMessages(buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.Header.Seq != c.seq || (m.Header.PID != 0 && m.Header.PID != c.pid) {
				continue // a stale reply to an earlier request
			}
			switch m.Header.Type {
			case NLMSG_NOOP:
				continue
			case NLMSG_ERROR:
				code, msg, err := parseError(m)
				if err != nil {
					return nil, err
				}
				if code != 0 {
					return nil, &Error{Errno: syscall.Errno(-code), Msg: msg}
				}
				return out, nil // ACK
			case NLMSG_DONE:
				if len(m.Data) >= 4 {
					if code := int32(nativeUint32(m.Data)); code < 0 {
						return nil, &Error{Errno: syscall.Errno(-code)}
					}
				}
				return out, nil
			}
			// Copy: buf is reused for the next datagram.
			d := append([]byte(nil), m.Data...)
			out = append(out, Message{Header: m.Header, Data: d})
			if !dump && m.Header.Flags&NLM_F_MULTI == 0 && flags&NLM_F_ACK == 0 {
				return out, nil
			}
		}
	}
}
