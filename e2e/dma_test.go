package e2e_test

import (
	"fmt"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// TestDMALengths: single-fragment DMA blocks of 1, 3, 4, 5 and 8160 bytes
// at unaligned and aligned addresses, written by A into B, then read back by
// A into its own RAM: exact frames (word padding, EndOfData, Request IDs),
// exact bytes at both ends, and the bytes around each block untouched (word
// padding and EndOfData never reach memory).
func TestDMALengths(t *testing.T) {
	lengths := []int{1, 3, 4, 5, 8160}
	addrs := []uint32{ramBase + 0x1001, ramBase + 0x2002, ramBase + 0x3000, ramBase + 0x4003, ramBase + 0x6000}
	p := newPair(t, pairSetup{modeAB: endpoint.ModeDMARead, modeBA: endpoint.ModeDMAWrite})
	if got := p.a.Config().MaxFragment; got != wire.MaxFragment {
		t.Fatalf("default MaxFragment %d, want %d", got, wire.MaxFragment)
	}
	const guard = 4
	// Guards: B's RAM is 0xEE and A's 0x5A around every block. The RAMs
	// are filled before any request reaches them; the SetPeer calls below
	// order these writes before the responders' accesses.
	srcs := make([][]byte, len(lengths))
	for i, n := range lengths {
		srcs[i] = random(n, uint64(n))
		p.ramB.WriteAt(fill(n+2*guard, 0xEE), addrs[i]-guard)
		p.ramA.WriteAt(fill(n+2*guard, 0x5A), addrs[i]-guard)
	}
	p.modes(t, endpoint.ModeDMARead, endpoint.ModeDMAWrite)

	rid := uint32(0)
	for i, n := range lengths {
		tr, err := p.a.DMAWrite(bg(), peerAB, addrs[i], srcs[i])
		if err != nil || tr != (endpoint.Transfer{Bytes: uint64(n), Fragments: 1}) {
			t.Fatalf("DMAWrite of %d bytes = %+v, %v", n, tr, err)
		}
		req := wire.AppendDMAWriteReq(nil, p.macB, p.macA, rid, addrs[i], srcs[i])
		if len(req) != 32+4*((n+3)/4) {
			t.Fatalf("encoder: %d-byte DMA_WRITE_REQ for %d bytes", len(req), n)
		}
		p.snB.expect(t, fmt.Sprintf("DMA_WRITE_REQ of %d bytes", n), req)
		p.snA.expect(t, "DMA_WRITE_RSP", wire.AppendDMAWriteRsp(nil, p.macA, p.macB, rid))
		rid++
	}
	if s := p.b.Stats(); s.ServedDMAWrite != uint64(len(lengths)) || s.ResponderFailures != 0 {
		t.Fatalf("B served %d DMA writes, %d failures", s.ServedDMAWrite, s.ResponderFailures)
	}
	for i, n := range lengths {
		want := append(append(fill(guard, 0xEE), srcs[i]...), fill(guard, 0xEE)...)
		eqMem(t, fmt.Sprintf("B's RAM after the %d-byte write", n), p.ramB, addrs[i]-guard, want)
	}

	// Read back: the mirror the other way needs mode 2 at A, 3 at B.
	p.modes(t, endpoint.ModeDMAWrite, endpoint.ModeDMARead)
	for i, n := range lengths {
		tr, err := p.a.DMAReadInto(bg(), peerAB, addrs[i], p.ramA, addrs[i], uint32(n))
		if err != nil || tr != (endpoint.Transfer{Bytes: uint64(n), Fragments: 1}) {
			t.Fatalf("DMAReadInto of %d bytes = %+v, %v", n, tr, err)
		}
		p.snB.expect(t, "DMA_READ_REQ", wire.AppendDMAReadReq(nil, p.macB, p.macA, rid, addrs[i], uint32(n)))
		rsp := wire.AppendDMAReadRsp(nil, p.macA, p.macB, rid, srcs[i])
		if len(rsp) != 24+4*((n+3)/4) {
			t.Fatalf("encoder: %d-byte DMA_READ_RSP for %d bytes", len(rsp), n)
		}
		p.snA.expect(t, fmt.Sprintf("DMA_READ_RSP of %d bytes", n), rsp)
		rid++
		want := append(append(fill(guard, 0x5A), srcs[i]...), fill(guard, 0x5A)...)
		eqMem(t, fmt.Sprintf("A's RAM after the %d-byte read", n), p.ramA, addrs[i]-guard, want)
		// The same through DMARead into a slice.
		dst := fill(n, 0x77)
		if _, err := p.a.DMARead(bg(), peerAB, addrs[i], dst); err != nil {
			t.Fatal(err)
		}
		p.snB.expect(t, "DMA_READ_REQ", wire.AppendDMAReadReq(nil, p.macB, p.macA, rid, addrs[i], uint32(n)))
		p.snA.expect(t, "DMA_READ_RSP", wire.AppendDMAReadRsp(nil, p.macA, p.macB, rid, srcs[i]))
		rid++
		eqBytesAt(t, "DMARead's slice", 0, srcs[i], dst)
	}
	p.quiet(t)
	wantStatus(t, "A", p.a, peerAB, endpoint.PeerStatus{})
	wantStatus(t, "B", p.b, peerBA, endpoint.PeerStatus{})
}

// TestDMABlocks: 1 MiB blocks of random bytes, split into 129 fragments of
// the default 8160 bytes (the last one 4096) and into 1049 fragments with
// MaxFragment 1000 (the last one 576), written and read back: every
// fragment's frame exact on the wire, in order, with consecutive Request IDs,
// and the memory exact at both ends.
func TestDMABlocks(t *testing.T) {
	const size = 1 << 20
	p := newPair(t, pairSetup{
		modeAB: endpoint.ModeDMARead, modeBA: endpoint.ModeDMAWrite,
		cfgA: endpoint.Config{DMATimeout: waitLong},
	})
	rid := uint32(0)
	for _, tc := range []struct {
		mfs       uint32 // Config.MaxFragment; 0 keeps the default
		fragment  int
		fragments int
		addr      uint32
	}{
		{0, wire.MaxFragment, 129, ramBase + 0x3},
		{1000, 1000, 1049, ramBase + 0xF_FFF6},
	} {
		t.Logf("fragment %d", tc.fragment)
		if tc.mfs != 0 {
			cfg := p.a.Config()
			cfg.MaxFragment = tc.mfs
			if err := p.a.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
		}
		src := random(size, uint64(tc.fragment))
		var progress []uint64
		ctx := endpoint.WithProgress(bg(), func(done uint64) { progress = append(progress, done) })
		p.modes(t, endpoint.ModeDMARead, endpoint.ModeDMAWrite)
		served := p.b.Stats().ServedDMAWrite
		tr, err := p.a.DMAWrite(ctx, peerAB, tc.addr, src)
		if err != nil || tr != (endpoint.Transfer{Bytes: size, Fragments: tc.fragments}) {
			t.Fatalf("DMAWrite = %+v, %v; want %d fragments", tr, err, tc.fragments)
		}
		if len(progress) != tc.fragments || progress[0] != uint64(tc.fragment) || progress[len(progress)-1] != size {
			t.Fatalf("progress reported %d times, first %d, last %d", len(progress), progress[0], progress[len(progress)-1])
		}
		last := rid
		for k := 0; k*tc.fragment < size; k++ {
			off := k * tc.fragment
			chunk := src[off:min(off+tc.fragment, size)]
			p.snB.expect(t, fmt.Sprintf("fragment %d", k), wire.AppendDMAWriteReq(nil, p.macB, p.macA, rid, tc.addr+uint32(off), chunk))
			p.snA.expect(t, fmt.Sprintf("fragment %d response", k), wire.AppendDMAWriteRsp(nil, p.macA, p.macB, rid))
			rid++
		}
		if int(rid-last) != tc.fragments {
			t.Fatalf("%d fragments on the wire, want %d", rid-last, tc.fragments)
		}
		if got := p.b.Stats().ServedDMAWrite - served; got != uint64(tc.fragments) {
			t.Fatalf("B served %d fragments, want %d", got, tc.fragments)
		}
		eqMem(t, "B's RAM", p.ramB, tc.addr, src)

		// Read back into A's RAM at the same address.
		p.modes(t, endpoint.ModeDMAWrite, endpoint.ModeDMARead)
		tr, err = p.a.DMAReadInto(bg(), peerAB, tc.addr, p.ramA, tc.addr, size)
		if err != nil || tr != (endpoint.Transfer{Bytes: size, Fragments: tc.fragments}) {
			t.Fatalf("DMAReadInto = %+v, %v; want %d fragments", tr, err, tc.fragments)
		}
		for k := 0; k*tc.fragment < size; k++ {
			off := k * tc.fragment
			chunk := src[off:min(off+tc.fragment, size)]
			p.snB.expect(t, fmt.Sprintf("read fragment %d", k), wire.AppendDMAReadReq(nil, p.macB, p.macA, rid, tc.addr+uint32(off), uint32(len(chunk))))
			p.snA.expect(t, fmt.Sprintf("read fragment %d response", k), wire.AppendDMAReadRsp(nil, p.macA, p.macB, rid, chunk))
			rid++
		}
		eqMem(t, "A's RAM", p.ramA, tc.addr, src)
	}
	p.quiet(t)
	wantStatus(t, "A", p.a, peerAB, endpoint.PeerStatus{})
	wantStatus(t, "B", p.b, peerBA, endpoint.PeerStatus{})
}
