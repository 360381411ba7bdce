package e2e_test

import (
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// B's served memory in TestErrorReplies: [0x8000, 0x9000) answers SLVERR,
// [0x9000, 0xA000) DECERR, [0xA000, ramBase) is a hole (DECERR), then the
// test RAM. B's window for A is [0x8000, windowEnd), ending inside the RAM.
const (
	slverrBase = 0x8000
	decerrBase = 0x9000
	windowEnd  = ramBase + 0x1000
)

// TestErrorReplies: requests that fail at the responder, over the kernel.
// Each one is answered by an ERROR_RSP with the right cause and the
// original Request ID on the wire; the initiator completes with, and
// records, the remote code 8+cause in its entry for the responder; the
// responder records the local code in its entry for the initiator; both
// raise their enabled event for their own local peer index; memory is
// untouched. Among them the specification's worked example: a DMA write
// into SLVERR memory records 14 at the initiator and 6 at the responder.
// A zero-mask RMEM write to the SLVERR word succeeds (no CPUIF write is
// issued), a zero-mask write outside the window does not.
func TestErrorReplies(t *testing.T) {
	ram := newRAM(t)
	space := memory.NewMap()
	slverr, _ := memory.NewFault(slverrBase, 0x1000, memory.SLVERR)
	decerr, _ := memory.NewFault(decerrBase, 0x1000, memory.DECERR)
	for _, r := range []struct {
		base uint32
		size uint64
		s    memory.Space
	}{{slverrBase, 0x1000, slverr}, {decerrBase, 0x1000, decerr}, {ramBase, ramSize, ram}} {
		if err := space.Add(r.base, r.size, r.s); err != nil {
			t.Fatal(err)
		}
	}
	// The RAM around the window's end is 0xEE, written before B starts.
	ram.WriteAt(fill(16, 0xEE), windowEnd-8)
	events := endpoint.Config{Events: endpoint.EventEnable{PeerDMAComplete: true, RMEMError: true}}
	window := endpoint.Peer{WindowBase: slverrBase, WindowSize: windowEnd - slverrBase, EventEnable: true}
	p := newPair(t, pairSetup{cfgA: events, cfgB: events, spaceB: space, winBA: &window})

	type op func() error
	dmaWrite := func(addr uint32, n int) (op, []byte) {
		src := random(n, uint64(addr))
		return func() error { _, err := p.a.DMAWrite(bg(), peerAB, addr, src); return err }, src
	}
	dmaRead := func(addr uint32, n int) op {
		return func() error { _, err := p.a.DMARead(bg(), peerAB, addr, make([]byte, n)); return err }
	}
	rmemWrite := func(addr, data, mask uint32) op {
		return func() error { return p.a.RMEMWrite(bg(), peerAB, addr, data, mask) }
	}
	rmemRead := func(addr uint32) op {
		return func() error {
			v, err := p.a.RMEMRead(bg(), peerAB, addr)
			if v != 0xFFFFFFFF {
				t.Errorf("failed RMEMRead returned %#x, want 0xffffffff", v)
			}
			return err
		}
	}
	w1, d1 := dmaWrite(slverrBase+0x101, 9)
	w2, d2 := dmaWrite(decerrBase+0x10, 8)
	w3, d3 := dmaWrite(0xA000, 4)
	w4, d4 := dmaWrite(windowEnd-4, 5)
	rid := uint32(0)
	for _, tc := range []struct {
		name   string
		ab, ba endpoint.Mode
		op     op
		req    func(rid uint32) []byte // the request as A sends it
		cause  uint32                  // 0: success
		local  wire.Code               // B's record
	}{
		{"DMA write into SLVERR", endpoint.ModeDMARead, endpoint.ModeDMAWrite, w1,
			func(r uint32) []byte { return wire.AppendDMAWriteReq(nil, p.macB, p.macA, r, slverrBase+0x101, d1) },
			wire.CauseAXIWrSlverr, wire.CodeLocalAXIWrSlverr},
		{"DMA write into DECERR", endpoint.ModeDMARead, endpoint.ModeDMAWrite, w2,
			func(r uint32) []byte { return wire.AppendDMAWriteReq(nil, p.macB, p.macA, r, decerrBase+0x10, d2) },
			wire.CauseAXIWrDecerr, wire.CodeLocalAXIWrDecerr},
		{"DMA write into a hole", endpoint.ModeDMARead, endpoint.ModeDMAWrite, w3,
			func(r uint32) []byte { return wire.AppendDMAWriteReq(nil, p.macB, p.macA, r, 0xA000, d3) },
			wire.CauseAXIWrDecerr, wire.CodeLocalAXIWrDecerr},
		{"DMA write across the window's end", endpoint.ModeDMARead, endpoint.ModeDMAWrite, w4,
			func(r uint32) []byte { return wire.AppendDMAWriteReq(nil, p.macB, p.macA, r, windowEnd-4, d4) },
			wire.CauseInvalid, wire.CodeLocalInvalid},
		{"DMA read from SLVERR", endpoint.ModeDMAWrite, endpoint.ModeDMARead, dmaRead(slverrBase, 100),
			func(r uint32) []byte { return wire.AppendDMAReadReq(nil, p.macB, p.macA, r, slverrBase, 100) },
			wire.CauseAXIRdSlverr, wire.CodeLocalAXIRdSlverr},
		{"DMA read beyond the window", endpoint.ModeDMAWrite, endpoint.ModeDMARead, dmaRead(windowEnd, 1),
			func(r uint32) []byte { return wire.AppendDMAReadReq(nil, p.macB, p.macA, r, windowEnd, 1) },
			wire.CauseInvalid, wire.CodeLocalInvalid},
		{"DMA read in a mode that forbids it", endpoint.ModeDMAWrite, endpoint.ModeDMAWrite, dmaRead(ramBase, 4),
			func(r uint32) []byte { return wire.AppendDMAReadReq(nil, p.macB, p.macA, r, ramBase, 4) },
			wire.CauseInvalid, wire.CodeLocalInvalid},
		{"RMEM write into SLVERR", endpoint.ModeRMEM, endpoint.ModeRMEM, rmemWrite(slverrBase+4, 1, 0xFFFFFFFF),
			func(r uint32) []byte {
				return wire.AppendRMEMWriteReq(nil, p.macB, p.macA, r, slverrBase+4, 0xFFFFFFFF, 1)
			},
			wire.CauseAXIWrSlverr, wire.CodeLocalAXIWrSlverr},
		{"RMEM read from SLVERR", endpoint.ModeRMEM, endpoint.ModeRMEM, rmemRead(slverrBase + 8),
			func(r uint32) []byte { return wire.AppendRMEMReadReq(nil, p.macB, p.macA, r, slverrBase+8) },
			wire.CauseAXIRdSlverr, wire.CodeLocalAXIRdSlverr},
		{"RMEM zero-mask write to SLVERR (no-op)", endpoint.ModeRMEM, endpoint.ModeRMEM, rmemWrite(slverrBase+4, 1, 0),
			func(r uint32) []byte { return wire.AppendRMEMWriteReq(nil, p.macB, p.macA, r, slverrBase+4, 0, 1) },
			0, 0},
		{"RMEM zero-mask write beyond the window", endpoint.ModeRMEM, endpoint.ModeRMEM, rmemWrite(windowEnd, 1, 0),
			func(r uint32) []byte { return wire.AppendRMEMWriteReq(nil, p.macB, p.macA, r, windowEnd, 0, 1) },
			wire.CauseInvalid, wire.CodeLocalInvalid},
		{"RMEM read in a mode that forbids it", endpoint.ModeRMEM, endpoint.ModeDMAWrite, rmemRead(ramBase),
			func(r uint32) []byte { return wire.AppendRMEMReadReq(nil, p.macB, p.macA, r, ramBase) },
			wire.CauseInvalid, wire.CodeLocalInvalid},
	} {
		p.modes(t, tc.ab, tc.ba)
		p.a.ClearError(peerAB)
		p.b.ClearError(peerBA)
		err := tc.op()
		remote := wire.CodeNone
		if tc.cause != 0 {
			remote = wire.CodeFromCause(tc.cause)
		}
		wantCode(t, tc.name, err, remote)
		req := tc.req(rid)
		p.snB.expect(t, tc.name, req)
		if tc.cause == 0 {
			p.snA.expect(t, tc.name, wire.AppendRMEMWriteRsp(nil, p.macA, p.macB, rid))
			wantStatus(t, tc.name+": A", p.a, peerAB, endpoint.PeerStatus{})
			wantStatus(t, tc.name+": B", p.b, peerBA, endpoint.PeerStatus{})
			rid++
			continue
		}
		p.snA.expect(t, tc.name+": ERROR_RSP", wire.AppendErrorRsp(nil, p.macA, p.macB, rid, tc.cause))
		rid++
		wantStatus(t, tc.name+": A", p.a, peerAB, failed(remote))
		wantStatus(t, tc.name+": B", p.b, peerBA, failed(tc.local))
		src := endpoint.PeerDMAComplete
		if wire.Frame(req).Cmd().IsRMEM() {
			src = endpoint.RMEMError
		}
		wantEvent(t, tc.name+": A", p.a, endpoint.Event{Source: src, Peer: peerAB, Code: remote})
		wantEvent(t, tc.name+": B", p.b, endpoint.Event{Source: src, Peer: peerBA, Code: tc.local})
	}
	noEvent(t, "A", p.a)
	noEvent(t, "B", p.b)
	p.quiet(t)

	// The worked example's error text, and the counters.
	p.modes(t, endpoint.ModeDMARead, endpoint.ModeDMAWrite)
	_, err := p.a.DMAWrite(bg(), peerAB, slverrBase, []byte{1})
	if want := "oetp: DMA write to peer 3: REMOTE_AXI_WR_SLVERR (14)"; err == nil || err.Error() != want {
		t.Fatalf("DMAWrite into SLVERR: %v, want %s", err, want)
	}
	// ErrorsSent counts a reply once the link has taken it, which may be
	// after A has it.
	eventually(t, "B's ERROR_RSP count", func() bool { return p.b.Stats().ErrorsSent[wire.CauseAXIWrSlverr] == 3 })
	s := p.b.Stats()
	if want := [8]uint64{0, 5, 0, 0, 2, 0, 3, 2}; s.ErrorsSent != want || s.ResponderFailures != 12 || s.ServedRMEMWrite != 1 {
		t.Fatalf("B's ErrorsSent %v, ResponderFailures %d, ServedRMEMWrite %d; want %v, 12, 1", s.ErrorsSent, s.ResponderFailures, s.ServedRMEMWrite, want)
	}
	// Nothing of the rejected write across the window's end reached memory.
	eqMem(t, "RAM at the window's end", ram, windowEnd-8, fill(16, 0xEE))
}
