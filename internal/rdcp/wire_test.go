package rdcp

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Golden encodings, written out by hand from the layouts in wire.go.
func TestWireGolden(t *testing.T) {
	var nonce [NonceSize]byte
	for i := range nonce {
		nonce[i] = 0xaa
	}
	var dig [DigestSize]byte
	for i := range dig {
		dig[i] = byte(i)
	}
	digHex := "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	nonceHex := strings.Repeat("aa", NonceSize)
	for _, tc := range []struct {
		m    Message
		want string
	}{
		{&Hello{Role: RoleSender, Flags: HelloPSK, MinVersion: 1, MaxVersion: 1, Slots: 16, SlotSize: 1 << 20, Nonce: nonce},
			"52444350 0001 0001 00000030  01 01 0001 0001 0000 00000010 00100000" + nonceHex},
		{&Auth{MAC: dig}, "52444350 0001 0002 00000020" + digHex},
		{&File{ID: 1, Kind: KindFile, Flags: FileResume, Mode: 0o644, Size: 0x0102030405060708, MTime: 0x1122334455667788, Name: "a/b"},
			"52444350 0001 0003 0000001f  00000001 01 01 0003 000001a4 0102030405060708 1122334455667788 612f62"},
		{&Window{ID: 2, Slots: 16, SlotSize: 4096, RKey: 0xdeadbeef, Addr: 0x7f0000001000},
			"52444350 0001 0004 00000018  00000002 00000010 00001000 deadbeef 00007f0000001000"},
		{&ResumeOffset{ID: 3, Offset: 0x10000, Digest: dig}, "52444350 0001 0005 00000030  00000003 00000000 0000000000010000" + digHex},
		{&Credit{ID: 4, Consumed: 9}, "52444350 0001 0006 00000010  00000004 00000000 0000000000000009"},
		{&Done{ID: 5, Flags: DoneAborted, Chunks: 7, Digest: dig}, "52444350 0001 0007 00000030  00000005 00000001 0000000000000007" + digHex},
		{&Result{ID: 6, Code: CodeExists, Digest: dig, Text: "no"}, "52444350 0001 0008 0000002a  00000006 0006 0002" + digHex + "6e6f"},
		{&ErrorMsg{Code: CodeAuthFailed, Text: "key"}, "52444350 0001 0009 00000007  0004 0003 6b6579"},
		{&Bye{}, "52444350 0001 000a 00000000"},
		// Version 3: the receiver's verification in HELLO's byte 6, RESEND.
		{&Hello{Role: RoleReceiver, MinVersion: 3, MaxVersion: 3, Verify: VerifySHA256, Slots: 16, SlotSize: 1 << 20, Nonce: nonce},
			"52444350 0001 0001 00000030  02 00 0003 0003 02 00 00000010 00100000" + nonceHex},
		{&Resend{ID: 7, Chunk: 0x0102030405}, "52444350 0001 000c 00000010  00000007 00000000 0000000102030405"},
	} {
		t.Run(tc.m.Type().String(), func(t *testing.T) {
			want := unhex(t, tc.want)
			got, err := Encode(tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encode:\n got %x\nwant %x", got, want)
			}
			back, err := Decode(want)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(back, tc.m) {
				t.Errorf("decode: %+v, want %+v", back, tc.m)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	good := func(m Message) []byte { b, _ := Encode(m); return b }
	patch := func(b []byte, off int, v ...byte) []byte {
		b = append([]byte{}, b...)
		copy(b[off:], v)
		return b
	}
	file := good(&File{ID: 1, Kind: KindFile, Name: "f"})
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short header", []byte{0x52, 0x44}, "shorter than"},
		{"HELLO role 0", patch(good(&Hello{Role: RoleSender, MinVersion: 1, MaxVersion: 1}), HeaderSize, 0), "unknown role"},
		{"HELLO unknown flag", patch(good(&Hello{Role: RoleSender, MinVersion: 1, MaxVersion: 1}), HeaderSize+1, 2), "unknown flags"},
		{"HELLO empty range", good(&Hello{Role: RoleSender, MinVersion: 2, MaxVersion: 1}), "is empty"},
		{"HELLO version 0", good(&Hello{Role: RoleSender}), "is empty"},
		{"HELLO too many slots", good(&Hello{Role: RoleSender, MinVersion: 1, MaxVersion: 1, Slots: MaxSlots + 1}), "slots exceed"},
		{"HELLO huge slot", good(&Hello{Role: RoleSender, MinVersion: 1, MaxVersion: 1, SlotSize: MaxSlotSize + 1}), "slot size"},
		{"AUTH short", good(&Auth{})[:HeaderSize+31], "announces"},
		{"FILE kind 3", patch(file, HeaderSize+4, 3), "unknown kind"},
		{"FILE flag 2", patch(file, HeaderSize+5, 2), "unknown flags"},
		{"FILE name length", patch(file, HeaderSize+6, 0, 2), "does not match"},
		{"FILE huge size", good(&File{ID: 1, Kind: KindFile, Size: 1<<62 + 1, Name: "f"}), "out of range"},
		{"FILE dir resume", good(&File{ID: 1, Kind: KindDir, Flags: FileResume, Name: "d"}), "directory with a size or flags"},
		{"WINDOW 0 slots", good(&Window{ID: 1, SlotSize: 1}), "0 slots"},
		{"WINDOW slot 0 bytes", good(&Window{ID: 1, Slots: 1}), "slot size 0"},
		{"WINDOW too big", good(&Window{ID: 1, Slots: MaxSlots, SlotSize: MaxSlotSize}), "exceeds"},
		{"WINDOW wraps", good(&Window{ID: 1, Slots: 1, SlotSize: 4096, Addr: ^uint64(0) - 10}), "wraps"},
		{"RESUME reserved", patch(good(&ResumeOffset{ID: 1}), HeaderSize+7, 1), "reserved"},
		{"RESUME huge", good(&ResumeOffset{ID: 1, Offset: 1<<62 + 1}), "out of range"},
		{"CREDIT id 0", good(&Credit{}), "transfer id 0"},
		{"CREDIT reserved", patch(good(&Credit{ID: 1}), HeaderSize+4, 1), "reserved"},
		{"DONE flags", good(&Done{ID: 1, Flags: 6}), "unknown flags"},
		{"RESULT id 0", good(&Result{}), "transfer id 0"},
		{"RESULT bad UTF-8", good(&Result{ID: 1, Text: "\xff"}), "not UTF-8"},
		{"ERROR code 0", good(&ErrorMsg{Text: "x"}), "code 0"},
		{"ERROR text length", patch(good(&ErrorMsg{Code: 1, Text: "xy"}), HeaderSize+3, 3), "does not match"},
		{"BYE payload", append(patch(good(&Bye{}), 11, 1), 0), "want 0"},
		{"HELLO unknown verify", patch(good(&Hello{Role: RoleReceiver, MinVersion: 3, MaxVersion: 3}), HeaderSize+6, 4), "unknown verification 4"},
		{"RESEND id 0", good(&Resend{Chunk: 1}), "transfer id 0"},
		{"RESEND reserved", patch(good(&Resend{ID: 1}), HeaderSize+5, 1), "reserved"},
		{"RESEND huge", good(&Resend{ID: 1, Chunk: 1<<62 + 1}), "out of range"},
		{"RESEND short", good(&Resend{ID: 1})[:HeaderSize+15], "announces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.b)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want a protocol error containing %q", err, tc.want)
			}
		})
	}
}

func TestEncodeLimits(t *testing.T) {
	if _, err := Encode(&File{ID: 1, Kind: KindFile, Name: strings.Repeat("a", MaxNameLen+1)}); err == nil {
		t.Error("oversized name encoded")
	}
	if _, err := Encode(&ErrorMsg{Code: 1, Text: strings.Repeat("a", MaxText+1)}); err == nil {
		t.Error("oversized text encoded")
	}
	long := TruncText(strings.Repeat("é", MaxText))
	if len(long) > MaxText {
		t.Errorf("TruncText left %d bytes", len(long))
	}
	if _, err := Encode(&Result{ID: 1, Code: 1, Text: long}); err != nil {
		t.Error(err)
	}
	if got := TruncText("a\xffb"); got != "a\uFFFDb" {
		t.Errorf("TruncText(invalid) = %q", got)
	}
	// The largest FILE fits a message.
	b, err := Encode(&File{ID: 1, Kind: KindFile, Name: strings.Repeat("a/", MaxNameLen/2-1) + "bb"})
	if err != nil || len(b) > MaxMessageSize {
		t.Errorf("largest FILE: %d bytes, %v", len(b), err)
	}
}

func TestCheckName(t *testing.T) {
	long := strings.Repeat("x", MaxComponentLen)
	for name, ok := range map[string]bool{
		"a": true, "a/b/c": true, ".hidden": true, "a/.b": true, "..a": true, "a..": true, "ü/ß": true,
		"with space": true, long: true, "a\\b": true,
		"": false, "/a": false, "a/": false, "a//b": false, ".": false, "..": false, "a/./b": false,
		"a/../b": false, "../a": false, "a/..": false, "a\nb": false, "a\x00": false, "a\x7f": false,
		long + "x": false, strings.Repeat("a/", MaxNameLen/2) + "a": false,
		".f" + PartialSuffix: false, "d/.f" + PartialSuffix + "/x": false,
	} {
		if err := CheckName(name); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok=%v", name, err, ok)
		}
	}
	if got := PartialName("a/b/c.txt"); got != "a/b/.c.txt"+PartialSuffix {
		t.Errorf("PartialName = %q", got)
	}
	if got := PartialName("c"); got != ".c"+PartialSuffix {
		t.Errorf("PartialName = %q", got)
	}
}

func TestImm(t *testing.T) {
	for _, tc := range []struct {
		slot int
		seq  uint64
	}{{0, 0}, {1, 1}, {MaxSlots - 1, ImmSeqMask}, {5, ImmSeqMask + 3}} {
		slot, seq := DecodeImm(EncodeImm(tc.slot, tc.seq))
		if slot != tc.slot || seq != uint32(tc.seq&ImmSeqMask) {
			t.Errorf("imm(%d,%d) → %d,%d", tc.slot, tc.seq, slot, seq)
		}
	}
}
