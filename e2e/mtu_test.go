package e2e_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// TestMTU1500: over a veth pair with MTU 1500 and endpoints configured with
// MaxFrame 1514, the fragment ceiling and default MaxFragment are
// 4*floor((1514-32)/4) = 1480: a 5000-byte block goes as fragments of 1480,
// 1480, 1480 and 560 bytes (1512-byte frames, the largest the link carries
// being 1514) and is read back the same way (1504-byte responses). A block
// with MaxFragment 1484 is refused locally with LOCAL_INVALID: nothing is
// sent, no Request ID consumed. A 1600-byte raw frame cannot be sent at all.
func TestMTU1500(t *testing.T) {
	const maxFrame = 1514
	lc := afpacket.Config{MaxFrame: maxFrame}
	cfg := endpoint.Config{MaxFrame: maxFrame, DMATimeout: waitLong}
	p := newPair(t, pairSetup{
		topo: netns.Topology{MTU: 1500}, link: lc, cfgA: cfg, cfgB: cfg,
		modeAB: endpoint.ModeDMARead, modeBA: endpoint.ModeDMAWrite,
	})
	c := p.a.Config()
	if c.MaxFrame != maxFrame || c.MaxFragment != 1480 || wire.FragmentCeiling(maxFrame) != 1480 {
		t.Fatalf("MaxFrame %d, MaxFragment %d, ceiling %d; want 1514, 1480, 1480", c.MaxFrame, c.MaxFragment, wire.FragmentCeiling(maxFrame))
	}
	const addr = ramBase + 0x801
	src := random(5000, 1500)
	tr, err := p.a.DMAWrite(bg(), peerAB, addr, src)
	if err != nil || tr != (endpoint.Transfer{Bytes: 5000, Fragments: 4}) {
		t.Fatalf("DMAWrite = %+v, %v; want 5000 bytes in 4 fragments", tr, err)
	}
	rid := uint32(0)
	for k, n := range []int{1480, 1480, 1480, 560} {
		req := wire.AppendDMAWriteReq(nil, p.macB, p.macA, rid, addr+uint32(1480*k), src[1480*k:1480*k+n])
		if want := 32 + n; len(req) != want {
			t.Fatalf("encoder: %d-byte frame, want %d", len(req), want)
		}
		p.snB.expect(t, fmt.Sprintf("fragment %d", k), req)
		p.snA.expect(t, fmt.Sprintf("fragment %d response", k), wire.AppendDMAWriteRsp(nil, p.macA, p.macB, rid))
		rid++
	}
	if s := p.b.Stats(); s.ServedDMAWrite != 4 {
		t.Fatalf("B served %d fragments, want 4", s.ServedDMAWrite)
	}
	eqMem(t, "B's RAM", p.ramB, addr, src)

	p.modes(t, endpoint.ModeDMAWrite, endpoint.ModeDMARead)
	dst := make([]byte, len(src))
	if tr, err := p.a.DMARead(bg(), peerAB, addr, dst); err != nil || tr != (endpoint.Transfer{Bytes: 5000, Fragments: 4}) {
		t.Fatalf("DMARead = %+v, %v", tr, err)
	}
	for k, n := range []int{1480, 1480, 1480, 560} {
		p.snB.expect(t, fmt.Sprintf("read fragment %d", k), wire.AppendDMAReadReq(nil, p.macB, p.macA, rid, addr+uint32(1480*k), uint32(n)))
		p.snA.expect(t, fmt.Sprintf("read fragment %d response", k), wire.AppendDMAReadRsp(nil, p.macA, p.macB, rid, src[1480*k:1480*k+n]))
		rid++
	}
	eqBytesAt(t, "read back", 0, src, dst)

	// MaxFragment 1484 is above the ceiling: refused before anything is
	// sent, with no Request ID consumed. 1483 rounds down to 1480 and works.
	p.modes(t, endpoint.ModeDMARead, endpoint.ModeDMAWrite)
	for _, mfs := range []uint32{1484, 1483} {
		c.MaxFragment = mfs
		if err := p.a.SetConfig(c); err != nil {
			t.Fatal(err)
		}
		tx := p.a.Stats().TxFrames
		tr, err := p.a.DMAWrite(bg(), peerAB, addr, src[:1481])
		if mfs == 1484 {
			wantCode(t, "DMAWrite with MaxFragment 1484", err, wire.CodeLocalInvalid)
			if !errors.Is(err, endpoint.ErrInvalid) || tr != (endpoint.Transfer{}) {
				t.Fatalf("DMAWrite with MaxFragment 1484 = %+v, %v; want nothing done, ErrInvalid", tr, err)
			}
			if got := p.a.Stats().TxFrames; got != tx {
				t.Fatalf("the refused block sent %d frames", got-tx)
			}
			wantStatus(t, "A after the refused block", p.a, peerAB, failed(wire.CodeLocalInvalid))
			p.snB.quiet(t, p.a, p.macB)
			continue
		}
		if err != nil || tr != (endpoint.Transfer{Bytes: 1481, Fragments: 2}) {
			t.Fatalf("DMAWrite with MaxFragment 1483 = %+v, %v", tr, err)
		}
		p.snB.expect(t, "first fragment after the refusal", wire.AppendDMAWriteReq(nil, p.macB, p.macA, rid, addr, src[:1480]))
		p.snB.expect(t, "second fragment", wire.AppendDMAWriteReq(nil, p.macB, p.macA, rid+1, addr+1480, src[1480:1481]))
		p.snA.expect(t, "responses", wire.AppendDMAWriteRsp(nil, p.macA, p.macB, rid), wire.AppendDMAWriteRsp(nil, p.macA, p.macB, rid+1))
	}

	// A raw frame longer than the link carries: refused by the endpoint and
	// by the link itself.
	big := make([]byte, 1600)
	copy(big, p.macB[:])
	copy(big[6:], p.macA[:])
	big[12], big[13] = 0x88, 0xB5
	if err := p.a.SendRaw(big); err == nil {
		t.Fatal("SendRaw of a 1600-byte frame succeeded over MTU 1500")
	}
	if err := p.snA.l.Write(big); !errors.Is(err, afpacket.ErrFrameTooLong) {
		t.Fatalf("link Write of a 1600-byte frame = %v, want ErrFrameTooLong", err)
	}
	if err := p.snA.l.Write(big[:maxFrame]); err != nil {
		t.Fatalf("link Write of a %d-byte frame: %v", maxFrame, err)
	}
	p.snB.expect(t, "the largest frame", big[:maxFrame])
	p.quiet(t)
}
