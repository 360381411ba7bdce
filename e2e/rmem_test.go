package e2e_test

import (
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// TestRMEM: RMEM writes with BitEnable 0x5, 0xFFFFFFFF and 0 (a successful
// no-op that is still answered), and reads, in both directions over a veth
// pair: exact request and response frames on the wire (Request IDs counting
// from 0 per endpoint), exact words in memory, nothing else sent, nothing
// recorded.
func TestRMEM(t *testing.T) {
	p := newPair(t, pairSetup{modeAB: endpoint.ModeRMEM, modeBA: endpoint.ModeRMEM})
	a, b := p.a, p.b
	const addr = ramBase + 0x100
	word := func() uint32 {
		w, ok := p.ramB.ReadWord(addr)
		if !ok {
			t.Fatal("ReadWord")
		}
		return w
	}
	p.ramB.WriteWord(addr, 0xA5A5A5A4, 0xFFFFFFFF) // bit 2 set, bit 0 clear
	rid := uint32(0)
	write := func(data, mask, want uint32) {
		t.Helper()
		if err := a.RMEMWrite(bg(), peerAB, addr, data, mask); err != nil {
			t.Fatalf("RMEMWrite(%#x, mask %#x): %v", data, mask, err)
		}
		p.snB.expect(t, "RMEM_WRITE_REQ", wire.AppendRMEMWriteReq(nil, p.macB, p.macA, rid, addr, mask, data))
		p.snA.expect(t, "RMEM_WRITE_RSP", wire.AppendRMEMWriteRsp(nil, p.macA, p.macB, rid))
		rid++
		if w := word(); w != want {
			t.Fatalf("after RMEMWrite(%#x, mask %#x): B's word %#08x, want %#08x", data, mask, w, want)
		}
		v, err := a.RMEMRead(bg(), peerAB, addr)
		if err != nil || v != want {
			t.Fatalf("RMEMRead = %#x, %v; want %#x", v, err, want)
		}
		p.snB.expect(t, "RMEM_READ_REQ", wire.AppendRMEMReadReq(nil, p.macB, p.macA, rid, addr))
		p.snA.expect(t, "RMEM_READ_RSP", wire.AppendRMEMReadRsp(nil, p.macA, p.macB, rid, want))
		rid++
	}
	// Mask 0x5: bit 0 set and bit 2 cleared from data, every other bit kept
	// although data has them all set.
	write(0xFFFFFFFB, 0x00000005, 0xA5A5A5A1)
	write(0xDEADBEEF, 0xFFFFFFFF, 0xDEADBEEF)
	write(0x12345678, 0x00000000, 0xDEADBEEF) // no-op, answered
	write(0x00000000, 0xFFFF0000, 0x0000BEEF)

	// B initiates towards A: its own Request IDs, from 0.
	if err := b.RMEMWrite(bg(), peerBA, ramBase+0x1FFFFC, 0x01020304, 0xFF00FF00); err != nil {
		t.Fatal(err)
	}
	p.snA.expect(t, "B's RMEM_WRITE_REQ", wire.AppendRMEMWriteReq(nil, p.macA, p.macB, 0, ramBase+0x1FFFFC, 0xFF00FF00, 0x01020304))
	p.snB.expect(t, "A's RMEM_WRITE_RSP", wire.AppendRMEMWriteRsp(nil, p.macB, p.macA, 0))
	if v, err := b.RMEMRead(bg(), peerBA, ramBase+0x1FFFFC); err != nil || v != 0x01000300 {
		t.Fatalf("B's RMEMRead = %#x, %v; want 0x01000300", v, err)
	}
	p.snA.expect(t, "B's RMEM_READ_REQ", wire.AppendRMEMReadReq(nil, p.macA, p.macB, 1, ramBase+0x1FFFFC))
	p.snB.expect(t, "A's RMEM_READ_RSP", wire.AppendRMEMReadRsp(nil, p.macB, p.macA, 1, 0x01000300))

	// The counters (atomics) also order the responders' memory accesses
	// before the test's reads for the race detector, which cannot see the
	// ordering the kernel provides.
	if s := a.Stats(); s.ServedRMEMWrite != 1 || s.ServedRMEMRead != 1 || s.ResponderFailures != 0 {
		t.Fatalf("A served %d writes, %d reads, %d failures; want 1, 1, 0", s.ServedRMEMWrite, s.ServedRMEMRead, s.ResponderFailures)
	}
	if s := b.Stats(); s.ServedRMEMWrite != 4 || s.ServedRMEMRead != 4 || s.ResponderFailures != 0 {
		t.Fatalf("B served %d writes, %d reads, %d failures; want 4, 4, 0", s.ServedRMEMWrite, s.ServedRMEMRead, s.ResponderFailures)
	}
	// Only the words addressed changed.
	want := make([]byte, ramSize)
	copy(want[0x1FFFFC:], []byte{0x00, 0x03, 0x00, 0x01})
	eqMem(t, "A's whole RAM", p.ramA, ramBase, want)
	want = make([]byte, ramSize)
	copy(want[0x100:], []byte{0xEF, 0xBE, 0, 0})
	eqMem(t, "B's whole RAM", p.ramB, ramBase, want)
	p.quiet(t)
	wantStatus(t, "A", a, peerAB, endpoint.PeerStatus{})
	wantStatus(t, "B", b, peerBA, endpoint.PeerStatus{})
}
