package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	frames := [][]byte{
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
	writePcap(t, file, 0, t0, frames...)

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
		"7 " + ts(6) + " runt, 2 bytes: " + describe(frames[6], describeOptions{MaxFrame: 8192}).Problem,
	}, "\n") + "\n"
	if code != 0 || out != want {
		t.Errorf("dump: exit %d, stderr %q\n got:\n%s\nwant:\n%s", code, errOut, out, want)
	}

	// --json: decode's objects plus index and time; the paired response
	// carries its payload.
	out, errOut, code = runCLI(t, "", "dump", "--json", file)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != len(frames) {
		t.Fatalf("dump --json: exit %d, %d lines; stderr %q", code, len(lines), errOut)
	}
	for i, line := range lines {
		var got dumpRecord
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		opt := describeOptions{MaxFrame: 8192}
		if i == 1 {
			opt.ExpectLength = ptr(uint32(5))
		}
		wantRec := dumpRecord{Index: i + 1, Time: t0.Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano), frameDescription: describe(frames[i], opt)}
		if i == 2 {
			wantRec.Problem = "no DMA_READ_REQ with this Request ID earlier in the capture: the expected length is unknown"
		}
		if diff := cmp.Diff(wantRec, got, cmp.AllowUnexported(dumpRecord{})); diff != "" {
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

	// A file that ends inside a record: the frames before it, then exit 1.
	whole, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.pcap")
	writeFile(t, cut, whole[:len(whole)-1])
	out, errOut, code = runCLI(t, "", "dump", cut)
	if n := strings.Count(out, "\n"); code != 1 || n != len(frames)-1 || !strings.Contains(errOut, "after 6 frame(s)") {
		t.Errorf("cut file: exit %d, %d lines, stderr %q", code, n, errOut)
	}
}

func TestDumpUsage(t *testing.T) {
	dir := t.TempDir()
	notPcap := filepath.Join(dir, "x.txt")
	writeFile(t, notPcap, []byte("hello, this is not a capture file"))
	ng := filepath.Join(dir, "x.pcapng")
	writeFile(t, ng, []byte{0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1c, 0, 0, 0})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dump"}, "takes one argument"},
		{[]string{"dump", "a", "b"}, "takes one argument"},
		{[]string{"dump", filepath.Join(dir, "missing.pcap")}, "missing.pcap"},
		{[]string{"dump", notPcap}, "not a classic pcap file"},
		{[]string{"dump", ng}, "editcap"},
		{[]string{"dump", "--max-frame", "20", notPcap}, "--max-frame"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}
