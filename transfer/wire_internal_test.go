package transfer

import (
	"testing"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// TestWireConstants checks that the constants transfer exports with literal
// values equal the wire format's.
func TestWireConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"MaxSlots", MaxSlots, rdcp.MaxSlots},
		{"MaxSlotSize", MaxSlotSize, rdcp.MaxSlotSize},
		{"MaxWindow", MaxWindow, rdcp.MaxWindow},
		{"DigestSize", DigestSize, rdcp.DigestSize},
		{"MaxMessageSize", MaxMessageSize, rdcp.MaxMessageSize},
		{"KindFile", int64(KindFile), int64(rdcp.KindFile)},
		{"KindDir", int64(KindDir), int64(rdcp.KindDir)},
		{"VerifyCRC32C", int64(VerifyCRC32C), int64(rdcp.VerifyCRC32C)},
		{"VerifySHA256", int64(VerifySHA256), int64(rdcp.VerifySHA256)},
		{"VerifyNone", int64(VerifyNone), int64(rdcp.VerifyNone)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, the wire's is %d", c.name, c.got, c.want)
		}
	}
	for c := CodeOK; c <= CodeVerify; c++ {
		if c.String() == "" {
			t.Errorf("code %d has no name", c)
		}
	}
	wire := []rdcp.Code{rdcp.CodeOK, rdcp.CodeProtocol, rdcp.CodeVersion, rdcp.CodeAuthRequired,
		rdcp.CodeAuthFailed, rdcp.CodeBadName, rdcp.CodeExists, rdcp.CodeTooLarge, rdcp.CodeTooMany,
		rdcp.CodeNoSpace, rdcp.CodePermission, rdcp.CodeIO, rdcp.CodeDigest, rdcp.CodeBusy,
		rdcp.CodeAborted, rdcp.CodeInternal, rdcp.CodeNotDir, rdcp.CodeShutdown,
		rdcp.CodeHandshakeBusy, rdcp.CodeVerify}
	mine := []Code{CodeOK, CodeProtocol, CodeVersion, CodeAuthRequired,
		CodeAuthFailed, CodeBadName, CodeExists, CodeTooLarge, CodeTooMany,
		CodeNoSpace, CodePermission, CodeIO, CodeDigest, CodeBusy,
		CodeAborted, CodeInternal, CodeNotDir, CodeShutdown,
		CodeHandshakeBusy, CodeVerify}
	for i := range wire {
		if uint16(wire[i]) != uint16(mine[i]) {
			t.Errorf("%v = %d, the wire's is %d", mine[i], mine[i], wire[i])
		}
	}
}
