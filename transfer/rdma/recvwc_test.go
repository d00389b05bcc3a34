// Copyright 2026 The rdmago Authors.

package rdma

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/uverbs"
)

// TestRecvWCErrBlamesPeer: a receive completing with IBV_WC_LOC_LEN_ERR or
// IBV_WC_LOC_QP_OP_ERR (rxe's status for a SEND overflowing the receive)
// is the peer's protocol violation, not our QP's fault (issue 33).
func TestRecvWCErrBlamesPeer(t *testing.T) {
	var tr Transport
	for _, st := range []uverbs.WCStatus{uverbs.WCLocLenErr, uverbs.WCLocQPOpErr} {
		wc := uverbs.WC{Status: st, Opcode: uverbs.WCRecv}
		err := tr.recvWCErr(&wc)
		if !errors.Is(err, transfer.ErrProtocol) {
			t.Errorf("%v: %v does not match transfer.ErrProtocol", st, err)
		}
		want := "the peer sent a message larger than the " + strconv.Itoa(transfer.MaxMessageSize) + "-byte receive"
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), st.String()) {
			t.Errorf("%v: %v, want it to say %q and name the status", st, err, want)
		}
	}
	// Other statuses keep their mapping.
	wc := uverbs.WC{Status: uverbs.WCRemAccessErr}
	if err := tr.recvWCErr(&wc); !errors.Is(err, transfer.ErrRemoteAccess) || errors.Is(err, transfer.ErrProtocol) {
		t.Errorf("REM_ACCESS_ERR: %v", err)
	}
}
