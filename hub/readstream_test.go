package hub_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// patternSpace is read-only memory whose byte at a is patternTable[a mod
// its length]: a large region without its bytes in memory. The table's
// odd length lines up with no fragment, ring or piece.
type patternSpace struct{}

var patternTable = func() []byte {
	b := make([]byte, 1<<20+7)
	rand.NewChaCha8([32]byte{1}).Read(b)
	return b
}()

func (patternSpace) ReadAt(p []byte, addr uint32) memory.Resp {
	for off := 0; off < len(p); {
		off += copy(p[off:], patternTable[(int(addr)+off)%len(patternTable):])
	}
	return memory.OKAY
}

// wantPattern fails t unless b is the pattern from addr on.
func wantPattern(t *testing.T, b []byte, addr uint32) {
	t.Helper()
	want := make([]byte, 1<<20)
	for off := 0; off < len(b); off += len(want) {
		w := want[:min(len(want), len(b)-off)]
		patternSpace{}.ReadAt(w, addr+uint32(off))
		if !bytes.Equal(b[off:off+len(w)], w) {
			t.Fatalf("wrong bytes in the MiB at offset %d", off)
		}
	}
}

func (patternSpace) WriteAt(p []byte, addr uint32) memory.Resp { return memory.SLVERR }
func (patternSpace) ReadWord(addr uint32) (uint32, bool) {
	var w [4]byte
	patternSpace{}.ReadAt(w[:], addr)
	return binary.LittleEndian.Uint32(w[:]), true
}
func (patternSpace) WriteWord(addr, data, mask uint32) bool { return false }

const patternBase, patternSize = 0x10000000, 64 << 20

// newPatternHub is a test hub whose board also has patternSize bytes of
// patternSpace at patternBase.
func newPatternHub(t *testing.T, edit func(*hub.Config)) *testHub {
	return newTestHubSpaces(t, edit, testRegion{patternBase, patternSize, patternSpace{}})
}

// A 64 MiB READ_BLOCK (16 MiB under the race detector, still four rings)
// streams through the hub's ring: the bytes arrive exact (Go and the raw
// protocol), and the memory budget never holds more than the ring, where a
// block held whole would take all of it.
func TestReadBlockStreamed(t *testing.T) {
	th := newPatternHub(t, func(*hub.Config) {})
	d := openDev(t, dial(t, th.path))
	size := patternSize
	if testutil.Race {
		size = 16 << 20
	}
	t0 := time.Now()
	got, err := d.ReadBlock(patternBase, size)
	t.Logf("read in %v", time.Since(t0))
	if err != nil {
		t.Fatal(err)
	}
	wantPattern(t, got, patternBase)
	if peak := th.h.BufferedPeak(); peak > hub.StreamRing || peak == 0 {
		t.Errorf("the hub held %d bytes of its budget at once for a %d-byte block, want 1..%d (its ring)", peak, size, hub.StreamRing)
	}
	if n := th.h.Buffered(); n != 0 {
		t.Errorf("%d bytes still held after the block", n)
	}
	// On the wire: PARTIAL pieces of at most a ring, then the counters.
	c := rawConn(t, th.path)
	h := openRaw(t, c)
	const n = 5 << 20
	req := proto.AppendHeader(nil, proto.ReadBlock, h, 2)
	req = binary.LittleEndian.AppendUint32(req, patternBase+3)
	req = proto.Finish(binary.LittleEndian.AppendUint32(req, n), 0)
	c.Write(req)
	var data []byte
	pieces := 0
	for {
		hdr, st, res := readReply(t, c)
		if hdr.Tag != 2 || hdr.Type != proto.ReadBlock|proto.Reply || st.Status != 0 {
			t.Fatalf("reply %+v %+v", hdr, st)
		}
		if st.Flags == proto.FlagPartial {
			if len(res) == 0 || len(res) > hub.StreamRing || st.Message != "" {
				t.Fatalf("piece of %d bytes, message %q", len(res), st.Message)
			}
			pieces++
			data = append(data, res...)
			continue
		}
		if st.Flags != 0 || len(res) != 8 || binary.LittleEndian.Uint32(res) != n {
			t.Fatalf("last reply: %+v, %d result bytes", st, len(res))
		}
		break
	}
	if pieces < 2 || len(data) != n {
		t.Fatalf("%d pieces, %d bytes", pieces, len(data))
	}
	wantPattern(t, data, patternBase+3)
	if peak := th.h.BufferedPeak(); peak > hub.StreamRing {
		t.Errorf("peak %d", peak)
	}
}

// A streamed read that fails part way sends the bytes done, then the
// error with its failed address and counters; the client keeps the bytes
// done, as a direct DMA read leaves them in memory.
func TestReadBlockStreamedFails(t *testing.T) {
	th := newPatternHub(t, func(*hub.Config) {})
	d := openDev(t, dial(t, th.path))
	// 1 MiB up to the SLVERR range at 0x200000, then 1 MiB into it.
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i*13 + 5)
	}
	if err := d.WriteBlock(0x100000, want); err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 2<<20)
	tr, err := d.ReadBlockTransfer(0x100000, dst)
	oe := wantOp(t, err, wire.CodeRemoteAXIRdSlverr, true)
	if tr.Bytes == 0 || tr.Bytes > 1<<20 || oe.Addr != 0x100000+uint32(tr.Bytes) || oe.Bytes != tr.Bytes {
		t.Errorf("failed at 0x%08x after %d bytes (%+v)", oe.Addr, tr.Bytes, oe)
	}
	if !bytes.Equal(dst[:tr.Bytes], want[:tr.Bytes]) {
		t.Error("the bytes done are not the board's")
	}
	if n := th.h.Buffered(); n != 0 {
		t.Errorf("%d bytes still held", n)
	}
	// The connection goes on.
	if _, err := d.ReadBlock(patternBase, 2<<20); err != nil {
		t.Fatal(err)
	}
}

// A client that stops reading a streamed block's data frees the device
// within the write deadline: the DMA read stops, another client's read
// proceeds, and the budget is returned.
func TestReadBlockStreamStalledClient(t *testing.T) {
	rd := 300 * time.Millisecond
	th := newPatternHub(t, withLimits(hub.Limits{ReadDeadline: rd}))
	c := rawConn(t, th.path)
	if uc, ok := c.(*net.UnixConn); ok {
		uc.SetReadBuffer(4096)
	}
	h := openRaw(t, c)
	req := proto.AppendHeader(nil, proto.ReadBlock, h, 2)
	req = binary.LittleEndian.AppendUint32(req, patternBase)
	req = proto.Finish(binary.LittleEndian.AppendUint32(req, patternSize), 0)
	c.Write(req)
	// The hub streams: the first piece's header has come; then the client
	// reads no more.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	d := openDev(t, dial(t, th.path))
	t0 := time.Now()
	got, err := d.ReadBlock(patternBase, 2<<20)
	if err != nil {
		t.Fatalf("another client's read: %v", err)
	}
	if took := time.Since(t0); took > rd+2*time.Second {
		t.Errorf("another client's read took %v with the deadline at %v", took, rd)
	}
	wantPattern(t, got, patternBase)
	// The stalled connection was closed: what was in the socket, then end
	// of file.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if err != nil || n >= patternSize {
		t.Errorf("the stalled reader got %d bytes, then %v; want end of file well before the block's end", n, err)
	}
	if th.h.Stalls() != 1 {
		t.Errorf("stalls counted: %d, want 1", th.h.Stalls())
	}
	waitReleased(t, th.h)
}

// waitReleased waits for the hub's memory budget to be all returned.
func waitReleased(t *testing.T, h *hub.Hub) {
	t.Helper()
	testutil.Eventually(t, "the memory budget returned", func() bool { return h.Buffered() == 0 })
}
