package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

// TestDumpAgedOutSummary dumps a capture with requests unanswered for more
// than frames.ReadMaxAge: the summary on standard error counts them, and a late
// response says why its length is unknown.
func TestDumpAgedOutSummary(t *testing.T) {
	a, _ := wire.ParseMAC(macA)
	b, _ := wire.ParseMAC(macB)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	file := filepath.Join(t.TempDir(), "late.pcap")
	// writePcap spaces reqs 1 ms apart: pad with reqs to pass frames.ReadMaxAge
	// would take 60000 reqs, so write the late one with its own time.
	var reqs [][]byte
	for rid := range uint32(3) {
		reqs = append(reqs, wire.AppendDMAReadReq(nil, b, a, rid, 0x1000, 5))
	}
	writePcapAt(t, file, []time.Time{t0, t0, t0, t0.Add(frames.ReadMaxAge + time.Second)},
		append(reqs, wire.AppendDMAReadRsp(nil, a, b, 1, []byte{1, 2, 3, 4, 5}))...)
	out, errOut, code := runCLI(t, "", "dump", file)
	if code != 0 {
		t.Fatalf("dump: exit %d, %s", code, errOut)
	}
	if want := "oetp: 3 DMA_READ_REQ(s) had no response within 1m0s or beyond 65536 outstanding and were forgotten"; !strings.Contains(errOut, want) {
		t.Errorf("stderr %q does not contain %q", errOut, want)
	}
	if want := "(requests unanswered for 1m0s, or beyond 65536 outstanding, are forgotten)"; !strings.Contains(out, want) {
		t.Errorf("stdout %q does not contain %q", out, want)
	}
}

// writePcapAt writes frames into a pcap file, frame i stamped at[i].
func writePcapAt(t *testing.T, path string, at []time.Time, frames ...[]byte) {
	t.Helper()
	var buf strings.Builder
	w, err := pcap.NewWriter(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		if err := w.WritePacket(at[i], f); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, path, []byte(buf.String()))
}
