// Copyright 2026 The rdmago Authors.

package ibpkt

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// unhex turns "0a 00 ff ff | ..." into bytes; spaces and '|' separate fields.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.NewReplacer(" ", "", "|", "", "\n", "", "\t", "").Replace(s)
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatalf("bad golden hex: %v", err)
	}
	return b
}

// The golden packets below were written byte by byte from the IBTA vol. 1
// header layouts (9.2.1 BTH, 9.3 extended headers), not produced by this
// package's encoder.
func TestDecodeGolden(t *testing.T) {
	tests := []struct {
		name    string
		hex     string
		summary string
		check   func(t *testing.T, p *Packet)
	}{{
		name: "RC RDMA WRITE Only",
		// BTH: opcode 0x0a, flags 0, pkey ffff, resv8a 0, destQP 000011, A=1 PSN 000005
		// RETH: VA 00007f0000001000, R_Key 00001234, DMA len 8; payload "ABCDEFGH"; ICRC
		hex: "0a 00 ff ff | 00 00 00 11 | 80 00 00 05 | 00 00 7f 00 00 00 10 00 | 00 00 12 34 | 00 00 00 08 |" +
			"41 42 43 44 45 46 47 48 | de ad be ef",
		summary: "RC RDMA WRITE Only QP=0x000011 PSN=5 A len=8 va=0x7f0000001000 rkey=0x1234 dmalen=8",
		check: func(t *testing.T, p *Packet) {
			want := BTH{OpCode: 0x0a, PKey: 0xffff, DestQP: 0x11, AckReq: true, PSN: 5}
			if diff := cmp.Diff(want, p.BTH); diff != "" {
				t.Errorf("BTH (-want +got):\n%s", diff)
			}
			if !p.HasRETH || p.RETH != (RETH{VA: 0x7f0000001000, RKey: 0x1234, DMALen: 8}) {
				t.Errorf("RETH = %v %+v", p.HasRETH, p.RETH)
			}
			if string(p.Payload) != "ABCDEFGH" || p.ICRC != 0xdeadbeef {
				t.Errorf("payload %q icrc %#x", p.Payload, p.ICRC)
			}
		},
	}, {
		name: "RC Acknowledge with credits",
		// AETH syndrome 0x0a = ACK, credit code 10; MSN 3
		hex:     "11 00 ff ff | 00 00 00 12 | 00 00 00 05 | 0a 00 00 03 | 01 02 03 04",
		summary: "RC Acknowledge QP=0x000012 PSN=5 len=0 ACK credits=10 msn=3",
	}, {
		name:    "RC NAK PSN sequence error",
		hex:     "11 00 ff ff | 00 00 00 12 | 00 00 00 09 | 60 00 00 07 | 01 02 03 04",
		summary: "RC Acknowledge QP=0x000012 PSN=9 len=0 NAK PSN sequence error msn=7",
		check: func(t *testing.T, p *Packet) {
			if p.AETH.Kind() != AETHNak {
				t.Errorf("AETH kind %d, want NAK", p.AETH.Kind())
			}
		},
	}, {
		name:    "RC RNR NAK",
		hex:     "11 00 ff ff | 00 00 00 12 | 00 00 00 09 | 2e 00 00 07 | 01 02 03 04",
		summary: "RC Acknowledge QP=0x000012 PSN=9 len=0 RNR NAK timer=14 msn=7",
	}, {
		name: "UD SEND Only with Immediate, padded",
		// flags: SE=1, PadCnt=2 -> 0xa0; DETH Q_Key 01234567, SrcQP 000022; ImmDt cafebabe;
		// payload "xy" then two pad bytes
		hex: "65 a0 ff ff | 00 00 00 01 | 00 00 00 00 | 01 23 45 67 | 00 00 00 22 | ca fe ba be |" +
			"78 79 00 00 | aa bb cc dd",
		summary: "UD SEND Only with Immediate QP=0x000001 PSN=0 SE len=2 qkey=0x1234567 srcQP=0x000022 imm=0xcafebabe",
		check: func(t *testing.T, p *Packet) {
			if string(p.Payload) != "xy" || p.BTH.PadCount != 2 {
				t.Errorf("payload %q pad %d", p.Payload, p.BTH.PadCount)
			}
		},
	}, {
		name:    "RC RDMA READ Response Middle has no AETH",
		hex:     "0e 00 ff ff | 00 00 00 13 | 00 00 01 00 | 01 02 03 04 05 06 07 08 | 00 00 00 00",
		summary: "RC RDMA READ Response Middle QP=0x000013 PSN=256 len=8",
	}, {
		name:    "RC RDMA READ Request",
		hex:     "0c 00 ff ff | 00 00 00 13 | 80 00 00 10 | 00 00 00 00 00 00 20 00 | 00 00 00 99 | 00 00 10 00 | 00 00 00 00",
		summary: "RC RDMA READ Request QP=0x000013 PSN=16 A len=0 va=0x2000 rkey=0x99 dmalen=4096",
	}, {
		name: "RC CmpSwap",
		hex: "13 00 ff ff | 00 00 00 14 | 80 00 00 01 | 00 00 00 00 00 00 30 00 | 00 00 00 42 |" +
			"00 00 00 00 00 00 00 02 | 00 00 00 00 00 00 00 01 | 00 00 00 00",
		summary: "RC CmpSwap QP=0x000014 PSN=1 A len=0 va=0x3000 rkey=0x42 swapadd=0x2 compare=0x1",
	}, {
		name:    "RC ATOMIC Acknowledge",
		hex:     "12 00 ff ff | 00 00 00 15 | 00 00 00 01 | 00 00 00 01 | 00 00 00 00 00 00 00 07 | 00 00 00 00",
		summary: "RC ATOMIC Acknowledge QP=0x000015 PSN=1 len=0 ACK credits=0 msn=1 orig=0x7",
	}, {
		name:    "RC SEND Only with Invalidate",
		hex:     "17 00 ff ff | 00 00 00 16 | 00 00 00 02 | 00 00 56 78 | 61 | 00 00 00 00",
		summary: "RC SEND Only with Invalidate QP=0x000016 PSN=2 len=1 inv_rkey=0x5678",
	}, {
		name:    "UC RDMA WRITE Middle",
		hex:     "27 00 ff ff | 00 00 00 17 | 00 00 00 03 | 61 62 63 64 | 00 00 00 00",
		summary: "UC RDMA WRITE Middle QP=0x000017 PSN=3 len=4",
	}, {
		name:    "XRC SEND Only carries XRCETH",
		hex:     "a4 00 ff ff | 00 00 00 18 | 00 00 00 04 | 00 00 00 09 | 61 62 | 00 00 00 00",
		summary: "XRC SEND Only QP=0x000018 PSN=4 len=2 xrcsrq=0x9",
	}, {
		name: "RoCEv2 CNP, FECN/BECN bits",
		// resv8a byte 0x40 = BECN; 16 reserved bytes
		hex:     "81 00 ff ff | 40 00 00 19 | 00 00 00 00 | 00000000000000000000000000000000 | 00 00 00 00",
		summary: "CNP QP=0x000019 PSN=0 BECN len=16",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode(unhex(t, tt.hex))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got := p.Summary(); got != tt.summary {
				t.Errorf("Summary:\n got %q\nwant %q", got, tt.summary)
			}
			if tt.check != nil {
				tt.check(t, p)
			}
			// The BTH encoder must give back the first 12 golden bytes.
			if got := p.BTH.Marshal(nil); !bytes.Equal(got, unhex(t, tt.hex)[:BTHLen]) {
				t.Errorf("BTH.Marshal = % x, want % x", got, unhex(t, tt.hex)[:BTHLen])
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, hex, want string
		short           bool
	}{
		{"empty", "", "need at least 16", true},
		{"BTH only, no ICRC", "0a 00 ff ff 00 00 00 11 80 00 00 05", "need at least 16", true},
		{"reserved opcode", "15 00 ff ff 00 00 00 11 00 00 00 05 00 00 00 00", "undefined opcode 0x15", false},
		{"UD RDMA WRITE is not a UD opcode", "6a 00 ff ff 00 00 00 11 00 00 00 05 00 00 00 00", "undefined opcode 0x6a", false},
		{"truncated RETH", "0a 00 ff ff 00 00 00 11 00 00 00 05 00 00 7f 00 00 00 00 00", "decode RETH", true},
		{"pad beyond payload", "04 30 ff ff 00 00 00 11 00 00 00 05 61 00 00 00 00", "pad count 3", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(unhex(t, tt.hex))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode error = %v, want one containing %q", err, tt.want)
			}
			if errors.Is(err, ErrShort) != tt.short {
				t.Errorf("errors.Is(err, ErrShort) = %v, want %v", !tt.short, tt.short)
			}
		})
	}
}

func TestOpCodeNames(t *testing.T) {
	valid := 0
	for i := 0; i < 256; i++ {
		o := OpCode(i)
		s := o.String()
		if o.Valid() {
			valid++
			if strings.HasPrefix(s, "OpCode(") {
				t.Errorf("valid opcode %#x has no name", i)
			}
		} else if !strings.HasPrefix(s, "OpCode(") {
			t.Errorf("invalid opcode %#x named %q", i, s)
		}
	}
	// RC: 21 ops + 2 invalidate + FLUSH + ATOMIC WRITE; UC 12; RD 21; UD 2; CNP 1; XRC 23.
	if want := 25 + 12 + 21 + 2 + 1 + 23; valid != want {
		t.Errorf("%d valid opcodes, want %d", valid, want)
	}
	for o, want := range map[OpCode]string{
		0x0a: "RC RDMA WRITE Only", 0x04: "RC SEND Only", 0x64: "UD SEND Only",
		0x2b: "UC RDMA WRITE Only with Immediate", 0x10: "RC RDMA READ Response Only",
		0x81: "CNP", 0xb1: "XRC Acknowledge",
	} {
		if got := o.String(); got != want {
			t.Errorf("OpCode(%#x) = %q, want %q", uint8(o), got, want)
		}
	}
}

// frame wraps a RoCEv2 UDP payload into Ethernet (+VLAN) + IPv4/IPv6 + UDP,
// byte by byte from RFC 791 / RFC 8200 / RFC 768 layouts.
func frame(t *testing.T, v6 bool, vlan bool, dport uint16, payload []byte) []byte {
	t.Helper()
	var b []byte
	b = append(b, 0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1) // dst, src MAC
	if vlan {
		b = append(b, 0x81, 0x00, 0x00, 0x64) // VLAN 100
	}
	ulen := 8 + len(payload)
	udp := []byte{0xc0, 0x00, byte(dport >> 8), byte(dport), byte(ulen >> 8), byte(ulen), 0, 0}
	if v6 {
		b = append(b, 0x86, 0xdd)
		b = append(b, 0x60, 0x20, 0, 0) // version 6, traffic class 0x02 (ECT(0))
		b = append(b, byte(ulen>>8), byte(ulen), 17, 64)
		b = append(b, netip.MustParseAddr("fd00::1").AsSlice()...)
		b = append(b, netip.MustParseAddr("fd00::2").AsSlice()...)
	} else {
		b = append(b, 0x08, 0x00)
		tot := 20 + ulen
		b = append(b, 0x45, 0x03, byte(tot>>8), byte(tot), 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2)
	}
	b = append(b, udp...)
	return append(b, payload...)
}

func TestDecodeFrame(t *testing.T) {
	write := unhex(t, "0a 00 ff ff | 00 00 00 11 | 80 00 00 05 | 00 00 7f 00 00 00 10 00 | 00 00 12 34 | 00 00 00 08 |"+
		"41 42 43 44 45 46 47 48 | de ad be ef")

	f, err := DecodeFrame(frame(t, false, false, 4791, write))
	if err != nil {
		t.Fatal(err)
	}
	want := "10.0.0.1:49152 > 10.0.0.2:4791 CE RC RDMA WRITE Only QP=0x000011 PSN=5 A len=8 va=0x7f0000001000 rkey=0x1234 dmalen=8"
	if got := f.Summary(); got != want {
		t.Errorf("IPv4 summary\n got %q\nwant %q", got, want)
	}

	// Trailing Ethernet padding after the IP datagram must not become payload.
	padded := append(frame(t, false, false, 4791, write), 0, 0, 0, 0)
	if f, err := DecodeFrame(padded); err != nil || string(f.Packet.Payload) != "ABCDEFGH" {
		t.Errorf("padded frame: %v, %+v", err, f)
	}

	f, err = DecodeFrame(frame(t, true, true, 4791, write))
	if err != nil {
		t.Fatal(err)
	}
	if f.Src != netip.MustParseAddr("fd00::1") || len(f.VLAN) != 1 || f.VLAN[0] != 100 || f.TrafficClass != 2 {
		t.Errorf("IPv6+VLAN frame: src %v vlan %v tc %#x", f.Src, f.VLAN, f.TrafficClass)
	}
	if f.Packet.BTH.DestQP != 0x11 {
		t.Errorf("IPv6 frame dest QP %#x", f.Packet.BTH.DestQP)
	}

	if _, err := DecodeFrame(frame(t, false, false, 53, write)); err == nil || !strings.Contains(err.Error(), "port 53") {
		t.Errorf("DNS port: err = %v", err)
	}
	if _, err := DecodeFrame(frame(t, false, false, 4791, write)[:40]); !errors.Is(err, ErrShort) {
		t.Errorf("truncated frame: err = %v, want ErrShort", err)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add(unhex(f, "0a 00 ff ff 00 00 00 11 80 00 00 05 00 00 7f 00 00 00 10 00 00 00 12 34 00 00 00 08 41 42 de ad be ef"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if p, err := Decode(b); err == nil {
			_ = p.Summary()
			if len(p.Payload) > len(b) {
				t.Fatalf("payload longer than packet")
			}
		}
		if fr, err := DecodeFrame(b); err == nil {
			_ = fr.Summary()
		}
	})
}
