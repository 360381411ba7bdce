package frames

import (
	"io"
	"runtime"
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
	a, _ := wire.ParseMAC("02:0e:0c:00:00:0a")
	b, _ := wire.ParseMAC("02:0e:0c:00:00:0b")
	d := newDumper(io.Discard, wire.MaxFrameLen, false, 1024)
	frame := wire.AppendDMAReadReq(nil, b, a, 0, 0x1000, 64)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range 20 * 1024 {
		frame = wire.AppendDMAReadReq(frame[:0], b, a, uint32(i), 0x1000, 64)
		d.Frame = pcap.Frame{Bytes: frame, DstKnown: true}
		if err := d.Record(t0.Add(time.Duration(i)*time.Microsecond), len(frame), len(frame), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, aged := len(d.reads.m), d.reads.aged; got != 2*1024 || aged != 19*1024 {
		t.Errorf("after 20480 unanswered requests through record: %d keys remembered (want 2048), %d aged out (want 19456)", got, aged)
	}

	d.reads = newReadTable(ReadMaxAge, ReadMaxOutstanding)
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
	if got := len(d.reads.m); got > 2*ReadMaxOutstanding {
		t.Errorf("after %d unanswered requests the dumper remembers %d keys, want at most %d", n, got, 2*ReadMaxOutstanding)
	}
	if got, want := d.reads.aged, uint64(n-ReadMaxOutstanding); got != want {
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
	// ReadMaxAge later, the rest is forgotten by age (the answered one is
	// not counted) and a late response has no length.
	last := t0.Add(time.Duration(n) * time.Microsecond)
	if l, ok := d.reads.response(readKey{a, b, uint32(n - 1)}, last); !ok || l != 64 {
		t.Fatalf("response to the last request: %d, %v", l, ok)
	}
	if _, ok := d.reads.response(readKey{a, b, 7}, last.Add(ReadMaxAge+time.Second)); ok {
		t.Error("a response more than ReadMaxAge after its request still matched")
	}
	if got, want := d.reads.aged, uint64(n-1); got != want || len(d.reads.m) != 0 || d.reads.n != 0 {
		t.Errorf("after ReadMaxAge: aged-out %d (want %d), %d keys and %d requests remembered (want none)", got, want, len(d.reads.m), d.reads.n)
	}
}
