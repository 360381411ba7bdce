package e2e_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/openenoc/oetp/endpoint"
)

// TestSimultaneousRequests: two endpoints request from each other at the
// same moment, over and over, each serving the other's requests while its
// own wait for a reply: several goroutines per endpoint issue RMEM writes
// and reads to the other side, then DMA writes (A into B) run against DMA
// reads (B from A). Every operation completes, with exact data at both
// ends; no request is dropped and nothing times out (the timeouts only
// keep a failing test from hanging).
func TestSimultaneousRequests(t *testing.T) {
	const (
		workers = 3
		rounds  = 300
	)
	cfg := endpoint.Config{RMEMTimeout: waitLong, DMATimeout: waitLong}
	p := newPair(t, pairSetup{cfgA: cfg, cfgB: cfg, modeAB: endpoint.ModeRMEM, modeBA: endpoint.ModeRMEM})

	// The DMA phase's source in A, written before anything can read it:
	// the SetPeer calls of modes order it before B's requests.
	const (
		dmaSlot = 0x8000 // bytes per DMA worker slot
		dmaArea = ramBase + 0x100000
	)
	srcA := random(workers*dmaSlot, 77)
	p.ramA.WriteAt(srcA, dmaArea)

	run := func(phase string, work func(side, w int) error) {
		t.Helper()
		start := make(chan struct{})
		errs := make(chan error, 2*workers)
		var wg sync.WaitGroup
		for side := range 2 {
			for w := range workers {
				wg.Go(func() {
					<-start
					if err := work(side, w); err != nil {
						errs <- fmt.Errorf("%s, side %d, worker %d: %w", phase, side, w, err)
					}
				})
			}
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	eps := [2]*endpoint.Endpoint{p.a, p.b}
	peers := [2]int{peerAB, peerBA}

	// RMEM: every worker owns words of the other side's RAM; it writes a
	// fresh value through a mask, reads the word back and checks it.
	rmemWord := func(w, r int) uint32 { return uint32(ramBase + 4*(w*rounds+r)) }
	value := func(side, w, r int) uint32 { return uint32(side)<<31 | uint32(w)<<24 | uint32(r)<<8 | 0x5A }
	run("RMEM", func(side, w int) error {
		e, peer := eps[side], peers[side]
		for r := range rounds {
			a := rmemWord(w, r)
			if err := e.RMEMWrite(bg(), peer, a, value(side, w, r), 0xFFFFFF0F); err != nil {
				return err
			}
			v, err := e.RMEMRead(bg(), peer, a)
			if err != nil {
				return err
			}
			if want := value(side, w, r) & 0xFFFFFF0F; v != want {
				return fmt.Errorf("round %d: read %#x, want %#x", r, v, want)
			}
		}
		return nil
	})

	// DMA: A writes blocks of various lengths into B while B reads A.
	p.modes(t, endpoint.ModeDMARead, endpoint.ModeDMAWrite)
	srcB := [workers][]byte{}
	for w := range workers {
		srcB[w] = random(dmaSlot, uint64(100+w))
	}
	length := func(w, r int) int { return 1 + (r*7919+w*104729)%dmaSlot }
	run("DMA", func(side, w int) error {
		for r := range rounds / 3 {
			n := length(w, r)
			if side == 0 {
				src := srcB[w][:n]
				if tr, err := p.a.DMAWrite(bg(), peerAB, dmaArea+uint32(w*dmaSlot), src); err != nil || tr.Bytes != uint64(n) {
					return fmt.Errorf("round %d: DMAWrite of %d bytes = %+v, %w", r, n, tr, err)
				}
				continue
			}
			dst := make([]byte, n)
			off := w*dmaSlot + dmaSlot - n
			if tr, err := p.b.DMARead(bg(), peerBA, dmaArea+uint32(off), dst); err != nil || tr.Bytes != uint64(n) {
				return fmt.Errorf("round %d: DMARead of %d bytes = %+v, %w", r, n, tr, err)
			}
			if string(dst) != string(srcA[off:off+n]) {
				return fmt.Errorf("round %d: DMARead of %d bytes at %#x: wrong data", r, n, off)
			}
		}
		return nil
	})

	// Every RMEM word and every DMA slot as the last round left it. The
	// counters order the responders' memory accesses before these reads.
	sa, sb := p.a.Stats(), p.b.Stats()
	for i, s := range []endpoint.Stats{sa, sb} {
		if s.ServedRMEMWrite != workers*rounds || s.ServedRMEMRead != workers*rounds || s.DropResponderBusy != 0 ||
			s.Timeouts != 0 || s.ResponderFailures != 0 || s.DropUnmatchedResponse != 0 {
			t.Fatalf("side %d: %+v", i, s)
		}
	}
	if sb.ServedDMAWrite == 0 || sa.ServedDMARead == 0 {
		t.Fatalf("no DMA served: B %d writes, A %d reads", sb.ServedDMAWrite, sa.ServedDMARead)
	}
	for side, ram := range []memoryWords{p.ramB, p.ramA} {
		for w := range workers {
			for r := range rounds {
				want := value(side, w, r) & 0xFFFFFF0F
				if got, _ := ram.ReadWord(rmemWord(w, r)); got != want {
					t.Fatalf("side %d worker %d round %d: word %#x, want %#x", side, w, r, got, want)
				}
			}
		}
	}
	for w := range workers {
		want := make([]byte, dmaSlot)
		for r := range rounds / 3 {
			copy(want, srcB[w][:length(w, r)])
		}
		eqMem(t, fmt.Sprintf("B's DMA slot %d", w), p.ramB, dmaArea+uint32(w*dmaSlot), want)
	}
	eqMem(t, "A's DMA source", p.ramA, dmaArea, srcA)
	for _, st := range []endpoint.PeerStatus{p.a.PeerStatus(peerAB), p.b.PeerStatus(peerBA)} {
		if st != (endpoint.PeerStatus{}) {
			t.Fatalf("status %+v", st)
		}
	}
}

type memoryWords interface {
	ReadWord(addr uint32) (uint32, bool)
}
