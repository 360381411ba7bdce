package endpoint_test

import (
	"bytes"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// TestDMAWriteAdmissionOrder: a DMA_WRITE_REQ runs the checks that need only
// its header first (peer mode, positive Length, Length within the fragment
// ceiling, window), then the framing checks (frame length against Length,
// EndOfData); a framing failure whose data would fail in memory reports the
// memory's error (6 or 7) instead of 2. Each case is the exact request, the
// exact ERROR_RSP, the code recorded for the peer and the memory contents,
// which a malformed request never changes.
func TestDMAWriteAdmissionOrder(t *testing.T) {
	sw := newSwitch(t, mem.Config{})
	p := newTap(t, sw, macP, false)
	// B: RAM [0x1000, 0x9000), SLVERR [0x9000, 0xA000), a hole above; the
	// Map tells how an access would answer without performing it.
	space := memory.NewMap()
	ram, _ := memory.NewRAM(0x1000, 0x8000)
	fault, _ := memory.NewFault(0x9000, 0x1000, memory.SLVERR)
	space.Add(0x1000, 0x8000, ram)
	space.Add(0x9000, 0x1000, fault)
	// MaxFrame 1000: fragment ceiling 968.
	b := newEP(t, sw, macB, space, endpoint.Config{MaxFrame: 1000})
	five := []byte{1, 2, 3, 4, 5}
	dw := func(rid, addr, n uint32, payload []byte, trailer []byte) []byte {
		return frame(macB, macP, 0x40, le(rid), le(addr), le(n), data(payload), trailer)
	}
	badEOD := []byte{0xd0, 0xe0, 0xd0, 0xe1}
	pad60 := func(f []byte) []byte { return append(f, make([]byte, 60-len(f))...) }
	cases := []struct {
		name   string
		mode   endpoint.Mode
		req    []byte
		cause  uint32
		record wire.Code
	}{
		// Mode before framing: was cause 2, record 10.
		{"bad EndOfData, mode 1", endpoint.ModeRMEM, dw(1, 0x2000, 5, five, badEOD), 1, 1},
		{"bad EndOfData, mode 3", endpoint.ModeDMARead, dw(2, 0x2000, 5, five, badEOD), 1, 1},
		{"header cut short, mode 0", endpoint.ModeNone, frame(macB, macP, 0x40, le(3), le(0x2000), []byte{5, 0}), 1, 1},
		{"header cut short, mode 2", endpoint.ModeDMAWrite, frame(macB, macP, 0x40, le(4), le(0x2000), []byte{5, 0}), 2, 10},
		// Positive Length before framing.
		{"Length 0, bad EndOfData", endpoint.ModeDMAWrite, dw(5, 0x2000, 0, nil, badEOD), 1, 1},
		// The ceiling before framing: was cause 2 whenever the frame fit.
		{"Length over the ceiling, 5 bytes of data", endpoint.ModeDMAWrite, dw(6, 0x2000, 969, five, eod), 3, 3},
		{"Length over the ceiling, padded frame", endpoint.ModeDMAWrite, pad60(dw(7, 0x2000, 0x10000, nil, nil)), 3, 3},
		// The window before framing.
		{"past the window, bad EndOfData", endpoint.ModeDMAWrite, dw(8, 0xB000, 5, five, badEOD), 1, 1},
		// Framing after the header checks: cause 2, record 10.
		{"bad EndOfData in RAM", endpoint.ModeDMAWrite, dw(9, 0x2000, 5, five, badEOD), 2, 10},
		{"EndOfData missing in RAM", endpoint.ModeDMAWrite, dw(10, 0x2000, 5, five, nil), 2, 10},
		// The memory's error wins over the framing error.
		{"bad EndOfData into SLVERR", endpoint.ModeDMAWrite, dw(11, 0x9000, 5, five, badEOD), 6, 6},
		{"bad EndOfData into a hole", endpoint.ModeDMAWrite, dw(12, 0xA000, 5, five, badEOD), 7, 7},
		{"excess word into SLVERR", endpoint.ModeDMAWrite, append(dw(13, 0x8FFE, 5, five, eod), 0, 0, 0, 0), 6, 6},
		// Only the data the frame carries counts: the first 4 bytes lie
		// in RAM, the missing fifth in SLVERR.
		{"truncated before SLVERR", endpoint.ModeDMAWrite, dw(14, 0x8FFC, 5, five[:4], nil), 2, 10},
		{"truncated inside SLVERR", endpoint.ModeDMAWrite, dw(15, 0x8FFD, 5, five[:4], nil), 6, 6},
	}
	for _, c := range cases {
		setPeer(t, b, 0, endpoint.Peer{MAC: macP, Mode: c.mode, WindowBase: 0x1000, WindowSize: 0xA000})
		b.ClearError(0)
		before := make([]byte, 0x8000)
		ram.ReadAt(before, 0x1000)
		p.send(t, c.req)
		eqBytes(t, c.name+": reply", frame(macP, macB, 0xFF, le(wire.Frame(c.req).RequestID()), le(c.cause)), p.next(t))
		wantStatus(t, c.name, b, 0, failed(c.record))
		after := make([]byte, 0x8000)
		ram.ReadAt(after, 0x1000)
		if !bytes.Equal(before, after) {
			t.Fatalf("%s: a rejected request changed memory", c.name)
		}
	}

	// A memory that cannot tell (no memory.Prober) reports the framing
	// error.
	sw2 := newSwitch(t, mem.Config{})
	p2 := newTap(t, sw2, macP, false)
	b2 := newEP(t, sw2, macB, &countingSpace{Space: space}, endpoint.Config{MaxFrame: 1000})
	setPeer(t, b2, 0, endpoint.Peer{MAC: macP, Mode: endpoint.ModeDMAWrite, WindowBase: 0x1000, WindowSize: 0xA000})
	p2.send(t, dw(16, 0x9000, 5, five, badEOD))
	eqBytes(t, "opaque memory: reply", frame(macP, macB, 0xFF, le(16), le(2)), p2.next(t))
	wantStatus(t, "opaque memory", b2, 0, failed(wire.CodeRemoteAXIS))
}
