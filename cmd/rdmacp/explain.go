// Copyright 2026 The rdmago Authors.

package main

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/rdmago/rdmago/cm"
	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/rdma"
	"github.com/rdmago/rdmago/uverbs"
)

// hint says what to do about err; "" when the error says it already or
// nothing helps.
func hint(err error, peer string) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "interrupted: run the same command with --resume to continue where it stopped"
	case errors.Is(err, uverbs.ErrNoDevice), errors.Is(err, cm.ErrNoDevice):
		if strings.Contains(err.Error(), "rdma link add") {
			return "" // the error says how already
		}
		return "this machine has no RDMA device: load rdma_rxe and create one with `rdma link add rxe0 type rxe netdev IFACE`, or run inside the lab (go run ./cmd/rdmalab run -- ...)"
	case errors.Is(err, rdma.ErrForeignPeer):
		return "run `rdmacp recv DIR` there"
	case errors.Is(err, cm.ErrNoListener), errors.Is(err, cm.ErrRejected):
		return "no rdmacp receiver listens at " + peer + ": start `rdmacp recv DIR` there, or give it longer with --wait"
	case errors.Is(err, cm.ErrUnreachable):
		return "the RDMA stack at " + peer + " did not answer: is the host up and its RDMA device on that address?"
	case errors.Is(err, cm.ErrAddrResolution), errors.Is(err, cm.ErrRouteResolution):
		return "cannot reach " + peer + " over RDMA: the address must be on an interface with an RDMA device at both ends (`rdma link show`)"
	case errors.Is(err, transfer.ErrAuthFailed):
		return "the keys differ: use the same --psk-file on both ends"
	case errors.Is(err, transfer.ErrAuthRequired):
		return "only one end has a key: give both ends the same --psk-file (rdmacp send and rdmacp recv)"
	case errors.Is(err, transfer.ErrRemoteAccess):
		return "the receiver withdrew its memory while data was in flight; run again with --resume"
	case errors.Is(err, transfer.ErrPeerGone):
		return "the other end went away mid-transfer: partial files are kept; run again with --resume to continue"
	case errors.Is(err, transfer.ErrNoSpace):
		return "the receiver's disk is full: free space there and send again"
	case errors.Is(err, transfer.ErrPermission), errors.Is(err, fs.ErrPermission):
		return "permission denied: check who may write the destination (receiver) or read the source (sender)"
	case errors.Is(err, transfer.ErrExists):
		return "remove it, or start the receiver with --force to replace existing files"
	case errors.Is(err, transfer.ErrDigest):
		return "the data was corrupted on the way (checksum mismatch); nothing was kept: send again (--retries does so automatically)"
	case errors.Is(err, transfer.ErrVerify):
		return "the sender's --verify asks for more than the receiver's --verify: raise the receiver's, or lower the sender's"
	case errors.Is(err, transfer.ErrHandshakeBusy):
		return "give it longer with --wait, or let it take more handshakes at once with rdmacp recv --max-handshakes"
	case errors.Is(err, transfer.ErrAborted):
		return "the partial copy is kept: send again with --resume to continue"
	case errors.Is(err, transfer.ErrBusy):
		return "another sender is writing the same name (or the receiver is at --max-conns): try again when it is done"
	case errors.Is(err, transfer.ErrProtocol), errors.Is(err, transfer.ErrVersion):
		return "the two ends disagree on the protocol: use the same rdmacp version on both"
	}
	return ""
}
