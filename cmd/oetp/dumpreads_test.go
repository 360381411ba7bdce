package main

import (
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

// TestDumpForgetsUnansweredReads feeds the dumper, as a live view would,
// DMA_READ_REQs that nobody answers: through the decoder path (record), 20
// times its bound (lowered to 1024 to keep the test fast), then a million
// (200000 under the race detector) with the real bound through the table
// the decoder path fills. What it
// remembers stays within the bound, and every forgotten request is counted.
func TestDumpForgetsUnansweredReads(t *testing.T) {
	a, _ := wire.ParseMAC(macA)
	b, _ := wire.ParseMAC(macB)
	d := newDumper(io.Discard, &dumpOptions{maxFrame: intFlag{v: wire.MaxFrameLen}})
	d.reads = newReadTable(readMaxAge, 1024)
	frame := wire.AppendDMAReadReq(nil, b, a, 0, 0x1000, 64)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 20 * 1024 {
		frame = wire.AppendDMAReadReq(frame[:0], b, a, uint32(i), 0x1000, 64)
		d.frame = pcap.Frame{Bytes: frame, DstKnown: true}
		if err := d.record(t0.Add(time.Duration(i)*time.Microsecond), len(frame), len(frame), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, aged := len(d.reads.m), d.reads.aged; got != 2*1024 || aged != 19*1024 {
		t.Errorf("after 20480 unanswered requests through record: %d keys remembered (want 2048), %d aged out (want 19456)", got, aged)
	}

	d.reads = newReadTable(readMaxAge, readMaxOutstanding)
	n := 1_000_000
	if testutil.Race {
		n = 200_000 // still three times the bound; the race detector makes map operations slow
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		// One request per microsecond: only the count bound applies.
		d.reads.request(a, b, uint32(i), 64, t0.Add(time.Duration(i)*time.Microsecond))
	}
	if got := len(d.reads.m); got > 2*readMaxOutstanding {
		t.Errorf("after %d unanswered requests the dumper remembers %d keys, want at most %d", n, got, 2*readMaxOutstanding)
	}
	if got, want := d.reads.aged, uint64(n-readMaxOutstanding); got != want {
		t.Errorf("aged-out count %d, want %d", got, want)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap growth over %d unanswered requests: %d bytes", n, grown)
	if grown > 32<<20 {
		t.Errorf("the heap grew by %d bytes over %d unanswered requests, want at most 32 MiB", grown, n)
	}

	// The last request is answered: its length is known. Then, more than
	// readMaxAge later, the rest is forgotten by age (the answered one is
	// not counted) and a late response has no length.
	last := t0.Add(time.Duration(n) * time.Microsecond)
	if l, ok := d.reads.response(readKey{a, b, uint32(n - 1)}, last); !ok || l != 64 {
		t.Fatalf("response to the last request: %d, %v", l, ok)
	}
	if _, ok := d.reads.response(readKey{a, b, 7}, last.Add(readMaxAge+time.Second)); ok {
		t.Error("a response more than readMaxAge after its request still matched")
	}
	if got, want := d.reads.aged, uint64(n-1); got != want || len(d.reads.m) != 0 || d.reads.n != 0 {
		t.Errorf("after readMaxAge: aged-out %d (want %d), %d keys and %d requests remembered (want none)", got, want, len(d.reads.m), d.reads.n)
	}
}

// TestDumpAgedOutSummary dumps a capture with requests unanswered for more
// than readMaxAge: the summary on standard error counts them, and a late
// response says why its length is unknown.
func TestDumpAgedOutSummary(t *testing.T) {
	a, _ := wire.ParseMAC(macA)
	b, _ := wire.ParseMAC(macB)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	file := filepath.Join(t.TempDir(), "late.pcap")
	// writePcap spaces frames 1 ms apart: pad with frames to pass readMaxAge
	// would take 60000 frames, so write the late one with its own time.
	var frames [][]byte
	for rid := range uint32(3) {
		frames = append(frames, wire.AppendDMAReadReq(nil, b, a, rid, 0x1000, 5))
	}
	writePcapAt(t, file, []time.Time{t0, t0, t0, t0.Add(readMaxAge + time.Second)},
		append(frames, wire.AppendDMAReadRsp(nil, a, b, 1, []byte{1, 2, 3, 4, 5}))...)
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
