package e2e_test

import (
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// TestPaddedFrames: short requests padded to the 60-byte Ethernet minimum,
// as a NIC delivers them, sent from a raw AF_PACKET link on h1 to endpoint
// B on h2. Padding values are ignored: a padded RMEM_READ_REQ or
// RMEM_WRITE_REQ is served and answered with the exact, unpadded 24- or
// 20-byte response, and a padded DMA_WRITE_REQ with its EndOfData is
// served. Zero padding cannot stand in for a missing EndOfData: that
// DMA_WRITE_REQ gets ERROR_RSP cause 2, B records REMOTE_AXIS (10) and
// memory is untouched. A short PDU padded beyond 60 bytes is a length
// error (cause 2, LOCAL_AXIS recorded).
func TestPaddedFrames(t *testing.T) {
	n := netns.NewPair(t)
	raw := openPort(t, n.Host(0), false, afpacket.Config{})
	macR, macB := n.Host(0).MAC(), n.Host(1).MAC()
	ram := newRAM(t)
	ram.WriteWord(ramBase+0x100, 0xCAFEF00D, 0xFFFFFFFF)
	ram.WriteAt(fill(16, 0xEE), ramBase+0x200-4)
	ram.WriteAt(fill(16, 0xEE), ramBase+0x300-4)
	b := newEndpoint(t, openLink(t, n.Host(1), afpacket.Config{}), ram,
		endpoint.Config{Events: endpoint.EventEnable{PeerDMAComplete: true, RMEMError: true}})
	const peer = 5
	setPeer(t, b, peer, win(macR, endpoint.ModeRMEM))
	pad := func(f []byte, to int, v byte) []byte {
		t.Helper()
		if len(f) >= to {
			t.Fatalf("a %d-byte frame needs no padding to %d", len(f), to)
		}
		return append(f, fill(to-len(f), v)...)
	}

	// RMEM read and write, padded with non-zero bytes.
	raw.send(t, pad(wire.AppendRMEMReadReq(nil, macB, macR, 0x11223344, ramBase+0x100), 60, 0xAA))
	raw.expect(t, "RMEM_READ_RSP to a padded request", wire.AppendRMEMReadRsp(nil, macR, macB, 0x11223344, 0xCAFEF00D))
	raw.send(t, pad(wire.AppendRMEMWriteReq(nil, macB, macR, 0x11223345, ramBase+0x100, 0x0000FFFF, 0x12345678), 60, 0x55))
	raw.expect(t, "RMEM_WRITE_RSP to a padded request", wire.AppendRMEMWriteRsp(nil, macR, macB, 0x11223345))
	if w, _ := ram.ReadWord(ramBase + 0x100); w != 0xCAFE5678 {
		t.Fatalf("word after the padded write %#x, want 0xcafe5678", w)
	}
	// 64 bytes is neither the exact 24 nor the padded 60.
	raw.send(t, pad(wire.AppendRMEMReadReq(nil, macB, macR, 0x11223346, ramBase+0x100), 64, 0))
	raw.expect(t, "ERROR_RSP to a 64-byte RMEM_READ_REQ", wire.AppendErrorRsp(nil, macR, macB, 0x11223346, wire.CauseLength))
	wantStatus(t, "B after the 64-byte request", b, peer, failed(wire.CodeLocalAXIS))
	wantEvent(t, "B after the 64-byte request", b, endpoint.Event{Source: endpoint.RMEMError, Peer: peer, Code: wire.CodeLocalAXIS})
	b.ClearError(peer)

	// A padded three-byte DMA write with its EndOfData (36 bytes, zero
	// padded to 60): served; the fourth byte of its Data word is not written.
	setPeer(t, b, peer, win(macR, endpoint.ModeDMAWrite))
	req := wire.AppendDMAWriteReq(nil, macB, macR, 7, ramBase+0x200, []byte{1, 2, 3})
	raw.send(t, pad(req, 60, 0))
	raw.expect(t, "DMA_WRITE_RSP to a padded request", wire.AppendDMAWriteRsp(nil, macR, macB, 7))
	if s := b.Stats(); s.ServedDMAWrite != 1 {
		t.Fatalf("B served %d DMA writes, want 1", s.ServedDMAWrite)
	}
	eqMem(t, "after the padded DMA write", ram, ramBase+0x200-4, append(append(fill(4, 0xEE), 1, 2, 3), fill(9, 0xEE)...))

	// An eight-byte DMA write without its EndOfData: 36 bytes, which zero
	// padding extends to 60 so that zeros sit where EndOfData belongs.
	req = wire.AppendDMAWriteReq(nil, macB, macR, 8, ramBase+0x300, []byte{9, 9, 9, 9, 9, 9, 9, 9})
	if len(req) != 40 {
		t.Fatalf("encoder: %d-byte DMA_WRITE_REQ for 8 bytes", len(req))
	}
	raw.send(t, pad(req[:36], 60, 0))
	raw.expect(t, "ERROR_RSP to a DMA_WRITE_REQ without EndOfData", wire.AppendErrorRsp(nil, macR, macB, 8, wire.CauseLength))
	wantStatus(t, "B after the missing EndOfData", b, peer, failed(wire.CodeRemoteAXIS))
	wantEvent(t, "B after the missing EndOfData", b, endpoint.Event{Source: endpoint.PeerDMAComplete, Peer: peer, Code: wire.CodeRemoteAXIS})
	noEvent(t, "B", b)
	// ErrorsSent counts a reply once the link has taken it, which may be
	// after the raw port has it.
	eventually(t, "B's ERROR_RSP count", func() bool { return b.Stats().ErrorsSent[wire.CauseLength] == 2 })
	s := b.Stats()
	if s.ServedDMAWrite != 1 || s.ResponderFailures != 2 || s.ErrorsSent[wire.CauseLength] != 2 {
		t.Fatalf("B's stats: ServedDMAWrite %d, ResponderFailures %d, ErrorsSent %v", s.ServedDMAWrite, s.ResponderFailures, s.ErrorsSent)
	}
	eqMem(t, "after the DMA write without EndOfData", ram, ramBase+0x300-4, fill(16, 0xEE))
	raw.quiet(t, b, macR)
}
