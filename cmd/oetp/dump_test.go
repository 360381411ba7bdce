package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

// writePcap writes frames into a pcap file with the given snapshot length,
// the i-th frame stamped t0 + i ms.
func writePcap(t *testing.T, path string, snaplen int, t0 time.Time, frames ...[]byte) {
	t.Helper()
	var b bytes.Buffer
	w, err := pcap.NewWriter(&b, snaplen)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(t0.Add(time.Duration(i)*time.Millisecond), f); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, path, b.Bytes())
}

func TestDump(t *testing.T) {
	a, _ := wire.ParseMAC(macA)
	b, _ := wire.ParseMAC(macB)
	g, _ := wire.ParseMAC(macG)
	payload := []byte{0xb0, 0xb1, 0xb2, 0xb3, 0xb4}
	fs := [][]byte{
		wire.AppendDMAReadReq(nil, b, a, 7, 0x1000, 5),
		wire.AppendDMAReadRsp(nil, a, b, 7, payload),                            // paired with frame 1: valid
		wire.AppendDMAReadRsp(nil, a, b, 8, payload),                            // no request with rid 8
		wire.AppendRMEMWriteReq(nil, g, a, 9, 0x20, 0xffffffff, 5),              // group write
		wire.AppendErrorRsp(nil, a, b, 3, 6),                                    // remote SLVERR
		append(append(append([]byte{}, b[:]...), a[:]...), 0x08, 0x00, 0x45, 0), // raw IPv4
		{0x01, 0x02}, // runt
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "cap.pcap")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	writePcap(t, file, 0, t0, fs...)

	out, errOut, code := runCLI(t, "", "dump", file)
	ts := func(i int) string {
		return t0.Add(time.Duration(i) * time.Millisecond).Local().Format("15:04:05.000000")
	}
	want := strings.Join([]string{
		"1 " + ts(0) + " 02:0e:0c:00:00:0a > 02:0e:0c:00:00:0b DMA_READ_REQ rid=7 addr=0x00001000 len=5, 28 bytes",
		"2 " + ts(1) + " 02:0e:0c:00:00:0b > 02:0e:0c:00:00:0a DMA_READ_RSP rid=7 len=5, 32 bytes",
		"3 " + ts(2) + " 02:0e:0c:00:00:0b > 02:0e:0c:00:00:0a DMA_READ_RSP rid=8, 32 bytes INVALID: no DMA_READ_REQ with this Request ID earlier in the capture: the expected length is unknown",
		"4 " + ts(3) + " 02:0e:0c:00:00:0a > 03:0e:0c:00:00:01 RMEM_WRITE_REQ (group) rid=9 addr=0x00000020 bit_enable=0xffffffff data=0x00000005, 32 bytes",
		"5 " + ts(4) + " 02:0e:0c:00:00:0b > 02:0e:0c:00:00:0a ERROR_RSP rid=3 error_code=6 (REMOTE_AXI_WR_SLVERR), 24 bytes",
		"6 " + ts(5) + " 02:0e:0c:00:00:0a > 02:0e:0c:00:00:0b raw ethertype 0x0800, 16 bytes",
		"7 " + ts(6) + " runt, 2 bytes: " + frames.Describe(fs[6], frames.Options{MaxFrame: 8192}).Problem,
	}, "\n") + "\n"
	if code != 0 || out != want {
		t.Errorf("dump: exit %d, stderr %q\n got:\n%s\nwant:\n%s", code, errOut, out, want)
	}

	// --json: decode's objects plus index and time; the paired response
	// carries its payload.
	out, errOut, code = runCLI(t, "", "dump", "--json", file)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(fs) {
		t.Fatalf("dump --json: exit %d, %d lines; stderr %q", code, len(lines), errOut)
	}
	for i, line := range lines {
		var got frames.DumpRecord
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		opt := frames.Options{MaxFrame: 8192}
		if i == 1 {
			five := uint32(5)
			opt.ExpectLength = &five
		}
		wantRec := frames.DumpRecord{Index: i + 1, Time: t0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano), Description: frames.Describe(fs[i], opt)}
		if i == 2 {
			wantRec.Problem = "no DMA_READ_REQ with this Request ID earlier in the capture: the expected length is unknown"
		}
		if diff := cmp.Diff(wantRec, got, cmp.AllowUnexported(frames.DumpRecord{})); diff != "" {
			t.Errorf("line %d (-want +got):\n%s", i+1, diff)
		}
	}
	if !strings.Contains(lines[1], `"valid":true`) || !strings.Contains(lines[1], `"payload":"b0b1b2b3b4"`) || !strings.Contains(lines[1], `"time":"2026-01-02T03:04:05.001006Z"`) {
		t.Errorf("paired DMA_READ_RSP: %s", lines[1])
	}

	// A capture truncated by its snapshot length shows the length on the
	// wire.
	short := filepath.Join(dir, "short.pcap")
	writePcap(t, short, 28, t0, wire.AppendDMAWriteReq(nil, b, a, 1, 0, payload))
	out, _, code = runCLI(t, "", "dump", short)
	if wantSuffix := "DMA_WRITE_REQ rid=1 addr=0x00000000 len=5, 28 bytes (40 on the wire) INVALID: "; code != 0 || !strings.Contains(out, wantSuffix) {
		t.Errorf("truncated capture: exit %d, %q, want it to contain %q", code, out, wantSuffix)
	}
	out, _, _ = runCLI(t, "", "dump", "--json", short)
	if !strings.Contains(out, `"orig_len":40`) {
		t.Errorf("truncated capture --json: %s", out)
	}

	// A file that ends inside a record: the fs before it, then exit 1.
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.pcap")
	writeFile(t, cut, whole[:len(whole)-1])
	out, errOut, code = runCLI(t, "", "dump", cut)
	if n := strings.Count(out, "\n"); code != 1 || n != len(fs)-1 || !strings.Contains(errOut, "after 6 frame(s)") {
		t.Errorf("cut file: exit %d, %d lines, stderr %q", code, n, errOut)
	}
}

func TestDumpUsage(t *testing.T) {
	dir := t.TempDir()
	notPcap := filepath.Join(dir, "x.txt")
	writeFile(t, notPcap, []byte("hello, this is not a capture file"))
	wifi := filepath.Join(dir, "wifi.pcap")
	writeFile(t, wifi, handmadePcap(105))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dump"}, "takes one argument"},
		{[]string{"dump", "a", "b"}, "takes one argument"},
		{[]string{"dump", filepath.Join(dir, "missing.pcap")}, "missing.pcap"},
		{[]string{"dump", notPcap}, "not a pcap or pcapng file: the file starts with 68 65 6c 6c"},
		{[]string{"dump", wifi}, "link type LINKTYPE 105 does not carry Ethernet; oetp reads EN10MB (1), LINUX_SLL (113) and LINUX_SLL2 (276)"},
		{[]string{"dump", "--max-frame", "20", notPcap}, "--max-frame"},
		{[]string{"dump", "--count", "3", notPcap}, "--count, --promisc and --write belong to a live view"},
		{[]string{"dump", "--write", "x.pcapng", notPcap}, "--count, --promisc and --write belong to a live view: add --iface IF"},
		{[]string{"dump", "--iface", "lo", notPcap}, "reads a file or --iface, not both"},
		{[]string{"dump", "--iface", "nosuchif0"}, "--iface nosuchif0"},
		{[]string{"dump", "--iface", "lo", "--count", "0"}, "--count 0 is out of range"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

// handmadePcap is an empty classic pcap file of the link type.
func handmadePcap(linkType uint32) []byte {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint32(b[0:], pcap.MagicMicroseconds)
	binary.LittleEndian.PutUint16(b[4:], 2)
	binary.LittleEndian.PutUint16(b[6:], 4)
	binary.LittleEndian.PutUint32(b[16:], 65535)
	binary.LittleEndian.PutUint32(b[20:], linkType)
	return b
}

// fixture is a capture that tshark or tcpdump wrote (link/pcap/testdata).
func fixture(name string) string { return filepath.Join("..", "..", "link", "pcap", "testdata", name) }

// TestDumpCaptures decodes the captures tshark and tcpdump wrote of the same
// five frames (see link/pcap's TestMakeFixtures): pcapng and pcap, EN10MB
// with VLAN tags, and the cooked LINUX_SLL and LINUX_SLL2 of 'any'.
func TestDumpCaptures(t *testing.T) {
	strip := regexp.MustCompile(`^(\d+) \S+ `) // the local-time stamp
	en10mb := []string{
		"1 02:0e:0c:00:00:01 > 02:0e:0c:00:00:02 RMEM_READ_REQ rid=7 addr=0x00001000, 24 bytes",
		"2 02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 RMEM_READ_RSP rid=7 data=0xc0ffee01, 24 bytes",
		"3 02:0e:0c:00:00:01 > 02:0e:0c:00:00:02 vlan 100 p5 RMEM_WRITE_REQ rid=8 addr=0x00001004 bit_enable=0x0000ff00 data=0x0000ab00, 32 bytes",
		"4 02:0e:0c:00:00:01 > 03:0e:0c:00:00:01 DMA_WRITE_REQ (group) rid=9 addr=0x00100000 len=16, 48 bytes",
		"5 02:0e:0c:00:00:02 > 02:0e:0c:00:00:01 vlan 200 (tpid 0x88a8) vlan 300 DMA_WRITE_REQ rid=10 addr=0x00002000 len=5, 40 bytes",
	}
	sll := []string{
		"1 02:0e:0c:00:00:01 > ? [host] RMEM_READ_REQ rid=7 addr=0x00001000, 24 bytes",
		"2 02:0e:0c:00:00:02 > ? [outgoing] RMEM_READ_RSP rid=7 data=0xc0ffee01, 24 bytes",
		"3 02:0e:0c:00:00:01 > ? [host] vlan 100 p5 RMEM_WRITE_REQ rid=8 addr=0x00001004 bit_enable=0x0000ff00 data=0x0000ab00, 32 bytes",
		"4 02:0e:0c:00:00:01 > ? [multicast] DMA_WRITE_REQ (group) rid=9 addr=0x00100000 len=16, 48 bytes",
		"5 02:0e:0c:00:00:02 > ? [outgoing] vlan 200 (tpid 0x88a8) DMA_WRITE_REQ rid=10 addr=0x00002000 len=5, 40 bytes",
	}
	sll2 := slices.Clone(sll)
	sll2[2] = strings.Replace(sll2[2], " vlan 100 p5", "", 1) // libpcap keeps no tag in LINUX_SLL2
	sll2[4] = strings.Replace(sll2[4], " vlan 200 (tpid 0x88a8)", "", 1)
	for file, want := range map[string][]string{
		"tshark-en10mb.pcapng":  en10mb,
		"tcpdump-en10mb.pcap":   en10mb,
		"tshark-any-sll.pcapng": sll,
		"tcpdump-any-sll.pcap":  sll,
		"tcpdump-any-sll2.pcap": sll2,
	} {
		out, errOut, code := runCLI(t, "", "dump", fixture(file))
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			got = append(got, strip.ReplaceAllString(l, "$1 "))
		}
		if diff := cmp.Diff(want, got); code != 0 || diff != "" {
			t.Errorf("dump %s: exit %d, stderr %q (-want +got):\n%s", file, code, errOut, diff)
		}
	}

	// Standard input, JSON: the VLANs, the packet type and the direction.
	b, err := os.ReadFile(fixture("tcpdump-any-sll.pcap"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, string(b), "dump", "--json", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 {
		t.Fatalf("dump --json -: exit %d, %d lines, stderr %q", code, len(lines), errOut)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"vlans": []any{map[string]any{"tpid": float64(0x8100), "id": float64(100), "pcp": float64(5), "dei": false}},
		"packet_type": "host", "direction": "in", "src": "02:0e:0c:00:00:01", "group": false, "cmd": "RMEM_WRITE_REQ", "valid": true}
	for k, v := range want {
		if diff := cmp.Diff(v, rec[k]); diff != "" {
			t.Errorf("record 3 %s (-want +got):\n%s", k, diff)
		}
	}
	if _, ok := rec["dst"]; ok {
		t.Errorf("record 3 of a cooked capture has a dst: %s", lines[2])
	}
	if !strings.Contains(lines[1], `"direction":"out"`) || !strings.Contains(lines[1], `"packet_type":"outgoing"`) {
		t.Errorf("record 2: %s", lines[1])
	}
}
