// Copyright 2026 The rdmago Authors.

package ping

import (
	"testing"

	"github.com/rdmago/rdmago/uverbs"
)

// TestDataPathNarration: -v tells each post and completion of the data
// phase in the terms of the verbs a learner looks up.
func TestDataPathNarration(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{SendText(uverbs.SendWR{ID: 3, Opcode: uverbs.WRRDMAWrite, Flags: uverbs.SendSignaled,
			SGL: []uverbs.SGE{{Addr: 0x1000, Length: 40}, {Addr: 0x2000, Length: 24}}, RemoteAddr: 0x7f0012340000, RKey: 0x857}),
			"verbs: post IBV_WR_RDMA_WRITE 64 B → va 0x7f0012340000 rkey 0x857 (signaled, wr_id 3)"},
		{SendText(uverbs.SendWR{ID: 2, Opcode: uverbs.WRSend, SGL: []uverbs.SGE{{Length: 16}}}),
			"verbs: post IBV_WR_SEND 16 B (unsignaled: no completion, wr_id 2)"},
		{WCText(uverbs.WC{WRID: 3, Opcode: uverbs.WCRDMARead, ByteLen: 64, QPNum: 0x12}),
			"verbs: completion IBV_WC_RDMA_READ 64 B on QPN 0x12 (wr_id 3): IBV_WC_SUCCESS"},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
}
