// Copyright 2026 The rdmago Authors.

package demo

import (
	"strings"
	"testing"
)

const sum = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// demoOutput is both nodes' DEMO lines as RunCommand prefixes them.
func demoOutput(recvRehash string) string {
	return `node0| == rxe device: hca_id: rxe0;
node1| DEMO send-file-sha256 ` + sum + `
node1| DEMO bw  1048576    32           1120.50            1100.25		   0.001100
node1| DEMO send-json {"ok":true,"verified":1,"bytes":4096,"seconds":0.5,"throughput_bytes_per_second":8192,"files":[{"name":"demo.bin","sha256":"` + sum + `","verified":true}]}
node0| DEMO recv-json {"ok":true,"verified":1,"bytes":4096,"files":[{"name":"demo.bin","sha256":"` + sum + `","verified":true}]}
node0| DEMO recv-rehash ` + recvRehash + `
node0| DEMO recv-size 4096
`
}

func TestParseDemo(t *testing.T) {
	f, err := parseDemo([]byte(demoOutput(sum)))
	if err != nil {
		t.Fatal(err)
	}
	if f.sendFile != sum || f.recvRehash != sum || f.recvSize != 4096 || f.bwMBs != 1100.25 || f.send.Throughput != 8192 {
		t.Fatalf("facts %+v", f)
	}
	if bad := f.check(4096); len(bad) != 0 {
		t.Fatalf("a verified transfer fails the check: %q", bad)
	}
	if bad := f.check(4097); len(bad) != 1 || !strings.Contains(bad[0], "sizes") {
		t.Fatalf("a short file passes the check: %q", bad)
	}
}

func TestParseDemoMismatch(t *testing.T) {
	f, err := parseDemo([]byte(demoOutput(strings.Repeat("0", 64))))
	if err != nil {
		t.Fatal(err)
	}
	bad := f.check(4096)
	if len(bad) != 1 || !strings.Contains(bad[0], "sha256sum of the received file") {
		t.Fatalf("a changed file passes the check: %q", bad)
	}
}

func TestParseDemoMissing(t *testing.T) {
	out := strings.ReplaceAll(demoOutput(sum), "DEMO recv-size", "recv-size")
	if _, err := parseDemo([]byte(out)); err == nil || !strings.Contains(err.Error(), `"recv-size"`) {
		t.Fatalf("missing recv-size: err %v", err)
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, o := range []Options{{Size: 0, SlotSize: 4096}, {Size: 1, SlotSize: 4095}, {Size: 1, SlotSize: 16<<20 + 1}} {
		if o.Check() == nil {
			t.Errorf("size %d, slot %d accepted", o.Size, o.SlotSize)
		}
	}
	if err := (Options{Size: 1, SlotSize: 4096}).Check(); err != nil {
		t.Error(err)
	}
}

// rdmacp's default verification is CRC32C: its two ends must report the same
// CRC32C, and sha256sum on the nodes stays the ground truth.
func TestParseDemoCRC32C(t *testing.T) {
	crc := func(send, recv string) string {
		out := demoOutput(sum)
		out = strings.Replace(out, `"sha256":"`+sum+`"`, `"verify":"crc32c","crc32c":"`+send+`"`, 1)
		return strings.Replace(out, `"sha256":"`+sum+`"`, `"verify":"crc32c","crc32c":"`+recv+`"`, 1)
	}
	f, err := parseDemo([]byte(crc("1e4d653c", "1e4d653c")))
	if err != nil {
		t.Fatal(err)
	}
	if bad := f.check(4096); len(bad) != 0 {
		t.Fatalf("a verified transfer fails the check: %q", bad)
	}
	if mode, s := f.send.check(); mode != "crc32c" || s != "1e4d653c" {
		t.Fatalf("sender's check %q %q", mode, s)
	}
	f, err = parseDemo([]byte(crc("1e4d653c", "00000000")))
	if err != nil {
		t.Fatal(err)
	}
	if bad := f.check(4096); len(bad) != 1 || !strings.Contains(bad[0], "CRC32C") {
		t.Fatalf("differing CRC32Cs pass the check: %q", bad)
	}
	out := strings.Replace(crc("1e4d653c", "1e4d653c"), `"verify":"crc32c","crc32c":"1e4d653c"`, `"verify":"none"`, 2)
	if f, err = parseDemo([]byte(out)); err != nil {
		t.Fatal(err)
	}
	if bad := f.check(4096); len(bad) != 1 || !strings.Contains(bad[0], "did not verify") {
		t.Fatalf("an unverified transfer passes the check: %q", bad)
	}
}
