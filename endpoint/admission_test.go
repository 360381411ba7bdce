package endpoint_test

import (
	"bytes"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// TestDMAWriteAdmissionOrder: a DMA_WRITE_REQ runs the checks that need only
// its header first (peer mode, positive Length, Length within the fragment
// ceiling), then the framing checks (frame length against Length,
// EndOfData), whose late result replaces the window's cause 1 as the RTL's
// does; inside the window, a framing failure whose data would fail in
// memory reports the memory's error (6 or 7) instead of 2. Each case is the exact request, the
// exact ERROR_RSP, the code recorded for the peer and the memory contents,
// which a malformed request never changes.
func TestDMAWriteAdmissionOrder(t *testing.T) {
	sw := newSwitch(t)
	p := newTap(t, sw, macP, false)
	// B: RAM [0x1000, 0x9000), SLVERR [0x9000, 0xA000), a hole above; the
	// Map tells how an access would answer without performing it.
	space, ram := newSLVERRMap(t, 0x1000, 0x8000, 0x9000, 0x1000)
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
		{"header cut short, mode 1", endpoint.ModeRMEM, frame(macB, macP, 0x40, le(3), le(0x2000), []byte{5, 0}), 1, 1},
		{"header cut short, mode 2", endpoint.ModeDMAWrite, frame(macB, macP, 0x40, le(4), le(0x2000), []byte{5, 0}), 2, 10},
		// Positive Length before framing.
		{"Length 0, bad EndOfData", endpoint.ModeDMAWrite, dw(5, 0x2000, 0, nil, badEOD), 1, 1},
		// The ceiling before framing: was cause 2 whenever the frame fit.
		{"Length over the ceiling, 5 bytes of data", endpoint.ModeDMAWrite, dw(6, 0x2000, 969, five, eod), 3, 3},
		{"Length over the ceiling, padded frame", endpoint.ModeDMAWrite, pad60(dw(7, 0x2000, 0x10000, nil, nil)), 3, 3},
		// The late framing result replaces the window's cause 1, as the
		// RTL's does (the data is never written: no memory error).
		{"past the window, bad EndOfData", endpoint.ModeDMAWrite, dw(8, 0xB000, 5, five, badEOD), 2, 10},
		{"past the window, EndOfData missing", endpoint.ModeDMAWrite, dw(17, 0xB000, 5, five, nil), 2, 10},
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
	sw2 := newSwitch(t)
	p2 := newTap(t, sw2, macP, false)
	b2 := newEP(t, sw2, macB, &countingSpace{Space: space}, endpoint.Config{MaxFrame: 1000})
	setPeer(t, b2, 0, endpoint.Peer{MAC: macP, Mode: endpoint.ModeDMAWrite, WindowBase: 0x1000, WindowSize: 0xA000})
	p2.send(t, dw(16, 0x9000, 5, five, badEOD))
	eqBytes(t, "opaque memory: reply", frame(macP, macB, 0xFF, le(16), le(2)), p2.next(t))
	wantStatus(t, "opaque memory", b2, 0, failed(wire.CodeRemoteAXIS))
}

// TestMalformedResponseCodes: a recognized response with an invalid length
// from the expected peer ends the operation at once with the local framing
// code LOCAL_AXIS (2), recorded for the peer: RMEM_READ_RSP, RMEM_WRITE_RSP,
// DMA_WRITE_RSP and ERROR_RSP (whose Error Code is then not interpreted).
// Only an incomplete DMA_READ_RSP records REMOTE_AXIS (10), unless the
// local destination would fail for the data the frame carries: that write
// error (6 or 7) wins, and nothing is written. Each request is checked
// octet for octet.
func TestMalformedResponseCodes(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{})
	cases := []struct {
		name  string
		mode  endpoint.Mode
		start func() <-chan result
		req   func(rid uint32) []byte
		rsp   func(rid uint32) []byte
		want  wire.Code
	}{
		{"RMEM_READ_RSP with a trailing byte", endpoint.ModeRMEM, func() <-chan result { return rmemRead(a, 0, 0x1000) },
			func(r uint32) []byte { return frame(macP, macA, 0x10, le(r), le(0x1000)) },
			func(r uint32) []byte { return append(frame(macA, macP, 0x11, le(r), le(7)), 0) }, wire.CodeLocalAXIS},
		{"RMEM_WRITE_RSP with a trailing word", endpoint.ModeRMEM,
			func() <-chan result {
				return async(func() result { return result{err: a.RMEMWrite(bg(), 0, 0x1000, 5, 0xFFFFFFFF)} })
			},
			func(r uint32) []byte { return frame(macP, macA, 0x20, le(r), le(0x1000), le(0xFFFFFFFF), le(5)) },
			func(r uint32) []byte { return frame(macA, macP, 0x21, le(r), le(0)) }, wire.CodeLocalAXIS},
		{"RMEM_WRITE_RSP padded to 61", endpoint.ModeRMEM,
			func() <-chan result {
				return async(func() result { return result{err: a.RMEMWrite(bg(), 0, 0x1000, 5, 0xFFFFFFFF)} })
			},
			func(r uint32) []byte { return frame(macP, macA, 0x20, le(r), le(0x1000), le(0xFFFFFFFF), le(5)) },
			func(r uint32) []byte { return append(frame(macA, macP, 0x21, le(r)), make([]byte, 41)...) }, wire.CodeLocalAXIS},
		{"DMA_WRITE_RSP with a trailing byte", endpoint.ModeDMARead, func() <-chan result { return dmaWrite(a, 0, 0x1000, []byte{1, 2, 3, 4}) },
			func(r uint32) []byte {
				return frame(macP, macA, 0x40, le(r), le(0x1000), le(4), []byte{1, 2, 3, 4}, eod)
			},
			func(r uint32) []byte { return append(frame(macA, macP, 0x41, le(r)), 0) }, wire.CodeLocalAXIS},
		{"ERROR_RSP with a trailing word", endpoint.ModeRMEM, func() <-chan result { return rmemRead(a, 0, 0x1000) },
			func(r uint32) []byte { return frame(macP, macA, 0x10, le(r), le(0x1000)) },
			func(r uint32) []byte { return frame(macA, macP, 0xFF, le(r), le(6), le(0)) }, wire.CodeLocalAXIS},
		{"DMA_READ_RSP with a bad EndOfData", endpoint.ModeDMAWrite, func() <-chan result { return dmaRead(a, 0, 0x1000, make([]byte, 4)) },
			func(r uint32) []byte { return frame(macP, macA, 0x30, le(r), le(0x1000), le(4)) },
			func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), le(9), le(0)) }, wire.CodeRemoteAXIS},
	}
	for _, c := range cases {
		setPeer(t, a, 0, win(macP, c.mode))
		a.ClearError(0)
		res := c.start()
		req := p.next(t)
		rid := wire.Frame(req).RequestID()
		eqBytes(t, c.name+": request", c.req(rid), req)
		p.send(t, c.rsp(rid))
		wantCode(t, c.name, await(t, res).err, c.want)
		wantStatus(t, c.name, a, 0, failed(c.want))
	}

	// DMA reads into a local Space: RAM [0x1000, 0x1008), SLVERR
	// [0x2000, 0x3000), a hole above.
	local, ram := newSLVERRMap(t, 0x1000, 8, 0x2000, 0x1000)
	setPeer(t, a, 0, win(macP, endpoint.ModeDMAWrite))
	for _, c := range []struct {
		name  string
		local uint32
		rsp   func(rid uint32) []byte
		want  wire.Code
	}{
		{"bad EndOfData into SLVERR", 0x2000, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), le(9), le(0)) }, wire.CodeLocalAXIWrSlverr},
		{"bad EndOfData into a hole", 0x3000, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), le(9), le(0)) }, wire.CodeLocalAXIWrDecerr},
		{"bad EndOfData into RAM", 0x1000, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), le(9), le(0)) }, wire.CodeRemoteAXIS},
		// Only the data the frame carries counts: 2 bytes, in RAM.
		{"truncated before the hole", 0x1006, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), []byte{1, 2}) }, wire.CodeRemoteAXIS},
		{"truncated into the hole", 0x1006, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), []byte{1, 2, 3}) }, wire.CodeLocalAXIWrDecerr},
	} {
		a.ClearError(0)
		res := async(func() result {
			tr, err := a.DMAReadInto(bg(), 0, 0x5000, local, c.local, 4)
			return result{tr: tr, err: err}
		})
		req := p.next(t)
		rid := wire.Frame(req).RequestID()
		eqBytes(t, c.name+": request", frame(macP, macA, 0x30, le(rid), le(0x5000), le(4)), req)
		p.send(t, c.rsp(rid))
		wantCode(t, c.name, await(t, res).err, c.want)
		wantStatus(t, c.name, a, 0, failed(c.want))
		if got := make([]byte, 8); ram.ReadAt(got, 0x1000) == memory.OKAY && !bytes.Equal(got, make([]byte, 8)) {
			t.Fatalf("%s: a malformed response wrote local memory: % x", c.name, got)
		}
	}
}
