package e2e_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/wire"
)

// TestBusyPoll: two engines whose AF_PACKET links busy-poll
// (afpacket.Config.BusyPoll) move the same frames as without it: chained
// DMA writes and reads of a 256 KiB block and RMEM writes and reads, each
// frame exact on the wire with consecutive Request IDs, memory exact at
// both ends; both links spun, and nothing else was sent.
func TestBusyPoll(t *testing.T) {
	const size = 256 << 10
	const addr = ramBase + 0x40
	p := newPair(t, pairSetup{
		link:   afpacket.Config{BusyPoll: 2 * time.Millisecond},
		modeAB: endpoint.ModeDMARead, modeBA: endpoint.ModeDMAWrite,
		cfgA: endpoint.Config{DMATimeout: waitLong, RMEMTimeout: waitLong},
	})
	src := random(size, 77)
	fragments := (size + wire.MaxFragment - 1) / wire.MaxFragment
	rid := uint32(0)
	// No progress callback: the receive loop chains the fragments.
	tr, err := p.a.DMAWrite(bg(), peerAB, addr, src)
	if err != nil || tr != (endpoint.Transfer{Bytes: size, Fragments: fragments}) {
		t.Fatalf("DMAWrite = %+v, %v; want %d fragments", tr, err, fragments)
	}
	for k := 0; k < fragments; k++ {
		off := k * wire.MaxFragment
		chunk := src[off:min(off+wire.MaxFragment, size)]
		p.snB.expect(t, fmt.Sprintf("fragment %d", k), wire.AppendDMAWriteReq(nil, p.macB, p.macA, rid, addr+uint32(off), chunk))
		p.snA.expect(t, fmt.Sprintf("fragment %d response", k), wire.AppendDMAWriteRsp(nil, p.macA, p.macB, rid))
		rid++
	}
	// B counts a fragment after writing it: reading the count orders the
	// memory check after B's writes for the race detector.
	if got := p.b.Stats().ServedDMAWrite; got != uint64(fragments) {
		t.Fatalf("B served %d fragments, want %d", got, fragments)
	}
	eqMem(t, "B's RAM", p.ramB, addr, src)

	p.modes(t, endpoint.ModeDMAWrite, endpoint.ModeDMARead)
	tr, err = p.a.DMAReadInto(bg(), peerAB, addr, p.ramA, addr+8, size)
	if err != nil || tr != (endpoint.Transfer{Bytes: size, Fragments: fragments}) {
		t.Fatalf("DMAReadInto = %+v, %v; want %d fragments", tr, err, fragments)
	}
	for k := 0; k < fragments; k++ {
		off := k * wire.MaxFragment
		chunk := src[off:min(off+wire.MaxFragment, size)]
		p.snB.expect(t, fmt.Sprintf("read fragment %d", k), wire.AppendDMAReadReq(nil, p.macB, p.macA, rid, addr+uint32(off), uint32(len(chunk))))
		p.snA.expect(t, fmt.Sprintf("read fragment %d response", k), wire.AppendDMAReadRsp(nil, p.macA, p.macB, rid, chunk))
		rid++
	}
	eqMem(t, "A's RAM", p.ramA, addr+8, src)

	p.modes(t, endpoint.ModeRMEM, endpoint.ModeRMEM)
	for i := range uint32(50) {
		a := addr + 4*i
		if err := p.a.RMEMWrite(bg(), peerAB, a, 0xC0DE0000+i, 0xFFFFFFFF); err != nil {
			t.Fatalf("RMEMWrite %d: %v", i, err)
		}
		p.snB.expect(t, "RMEM_WRITE_REQ", wire.AppendRMEMWriteReq(nil, p.macB, p.macA, rid, a, 0xFFFFFFFF, 0xC0DE0000+i))
		p.snA.expect(t, "RMEM_WRITE_RSP", wire.AppendRMEMWriteRsp(nil, p.macA, p.macB, rid))
		rid++
		v, err := p.a.RMEMRead(bg(), peerAB, a)
		if err != nil || v != 0xC0DE0000+i {
			t.Fatalf("RMEMRead %d = %#x, %v; want %#x", i, v, err, 0xC0DE0000+i)
		}
		p.snB.expect(t, "RMEM_READ_REQ", wire.AppendRMEMReadReq(nil, p.macB, p.macA, rid, a))
		p.snA.expect(t, "RMEM_READ_RSP", wire.AppendRMEMReadRsp(nil, p.macA, p.macB, rid, v))
		rid++
	}
	p.quiet(t)
	wantStatus(t, "A", p.a, peerAB, endpoint.PeerStatus{})
	wantStatus(t, "B", p.b, peerBA, endpoint.PeerStatus{})
	if a, b := p.la.Stats().BusyPolls, p.lb.Stats().BusyPolls; a == 0 || b == 0 {
		t.Errorf("BusyPolls: A's link %d, B's link %d; want both spinning", a, b)
	}
}
