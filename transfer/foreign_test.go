package transfer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/transfer"
	"github.com/rdmago/rdmago/transfer/transfertest"
)

// A receiver that answers with something other than rdmacp's HELLO (here
// text, with a terminal escape in it, or an rsockets credit update: a
// write whose immediate is RS_OP_SGL) makes the sender fail at once with
// a protocol error saying what it read, escaped.
func TestSenderSaysWhatForeignPeerSent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		peer  func(p *rawPeer) error
		wants []string
	}{
		{"text", func(p *rawPeer) error { return p.sendRaw([]byte("HTTP/1.0 400 Bad Request\x1b[2J\r\n")) },
			[]string{"bad magic", `30 bytes: "HTTP/1.0 400 Bad Request\x1b[2J\r\n"`, "not rdmacp's HELLO"}},
		{"long", func(p *rawPeer) error { return p.sendRaw([]byte(strings.Repeat("z", 100))) },
			[]string{`100 bytes: "` + strings.Repeat("z", 40) + `"...`}},
		{"write", func(p *rawPeer) error { return p.imm(4<<29|64, 0) },
			[]string{"unexpected data write before the receiver's HELLO (immediate 0x80000040, 0 bytes)", "not rdmacp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			st, rt := transfertest.Pipe(&transfertest.Options{}, &transfertest.Options{})
			defer rt.Close()
			p := &rawPeer{t: t, tr: rt, ctx: ctx}
			go func() {
				if _, err := p.recv(); err == nil { // HELLO
					tc.peer(p)
				}
			}()
			src := tree(t, t.TempDir(), map[string][]byte{"f": []byte("x")})
			_, err := (&transfer.Sender{IdleTimeout: 20 * time.Second}).Send(ctx, st, plan(t, src+"/f"))
			st.Close()
			if !errors.Is(err, transfer.ErrProtocol) {
				t.Fatalf("sender: %v, want a protocol error", err)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("sender: %q\nwant it to contain %q", err, w)
				}
			}
			if strings.ContainsAny(err.Error(), "\x1b\r") {
				t.Errorf("the error carries the peer's control characters: %q", err)
			}
		})
	}
}
