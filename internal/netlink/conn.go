// Copyright 2026 The rdmago Authors.

package netlink

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmago/rdmago/internal/sys"
)

// Conn is a request/response netlink socket of one protocol (NETLINK_ROUTE,
// NETLINK_RDMA, ...). It is not safe for concurrent use. The caller must Close it.
type Conn struct {
	fd  int
	seq uint32
	pid uint32
}

// Dial opens an AF_NETLINK socket of the given protocol (NETLINK_ROUTE,
// NETLINK_RDMA), asking the kernel for extended acks (error text) where it
// supports them.
func Dial(proto int) (*Conn, error) {
	fd, err := sys.NetlinkSocket(proto)
	if err != nil {
		return nil, fmt.Errorf("netlink socket (protocol %d): %w", proto, err)
	}
	if err := sys.NetlinkBind(fd); err != nil {
		sys.Close(fd)
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	pid, err := sys.NetlinkPortID(fd)
	if err != nil {
		sys.Close(fd)
		return nil, fmt.Errorf("netlink getsockname: %w", err)
	}
	sys.NetlinkExtAck(fd)
	return &Conn{fd: fd, pid: pid}, nil
}

// Close closes the socket. It is idempotent.
func (c *Conn) Close() error {
	if c == nil || c.fd < 0 {
		return nil
	}
	err := sys.Close(c.fd)
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
	if err := sys.NetlinkSend(c.fd, req.Marshal()); err != nil {
		return nil, fmt.Errorf("netlink send: %w", err)
	}
	var out []Message
	buf := make([]byte, 1<<16)
	for {
		n, err := sys.NetlinkRecv(c.fd, buf)
		if err == syscall.EINTR {
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
