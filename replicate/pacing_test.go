package replicate_test

import (
	"bytes"
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

// slowRAM takes delay per DMA write, and slow from its after-th write on:
// a member that needs time per fragment, and then more (drift).
type slowRAM struct {
	*memory.RAM
	n           *atomic.Int64
	after       int64
	delay, slow time.Duration
}

func (s slowRAM) WriteAt(p []byte, addr uint32) memory.Resp {
	d := s.delay
	if s.n.Add(1) > s.after {
		d = s.slow
	}
	time.Sleep(d)
	return s.RAM.WriteAt(p, addr)
}
func (s slowRAM) Immediate() bool { return false }

// rule is the pacing rule: the slowest member's worst round trip times
// Margin, plus its spread (worst - best).
func rule(best, worst time.Duration) time.Duration {
	return time.Duration(float64(worst)*replicate.Margin) + worst - best
}

// TestPacingSettleAndDrift: the pacing rule. B takes 10 ms per fragment, C
// nothing. Each member gets Probes unicast writes of the first fragment,
// and the slowest (B) one more after all the others' (so the group write
// starts once B has answered everything sent before); a member's time per
// fragment is the slowest of its round trips and the interval that times
// Margin plus the spread of its round trips. Then B slows down to 80 ms
// per fragment (drift) once it has taken the first run of Run fragments:
// the check after that run, a
// unicast rewrite of the run's last fragment to B, answers late, and
// raises the interval to its round trip times Margin plus the new spread; both members end byte-exact and B served exactly the
// probes, the fragments and the one check.
func TestPacingSettleAndDrift(t *testing.T) {
	const frag = 100
	sw, src, srcSpace := newBlock(t, (replicate.Run+1)*frag-30, 1) // two runs, one check
	w := newEP(t, sw, macW, nil, endpoint.Config{MaxFragment: frag})
	w.SetPeer(0, endpoint.Peer{MAC: group, Mode: endpoint.ModeDMARead, WindowSize: 1 << 32})
	macs := []wire.MAC{{0x02, 0, 0, 0, 0, 0x0b}, {0x02, 0, 0, 0, 0, 0x0c}}
	var writes atomic.Int64
	var rams []*memory.RAM
	var members []*endpoint.Endpoint
	for i, m := range macs {
		ram := endpointtest.NewRAM(t, base, 0x1000)
		var space memory.Space = ram
		if i == 0 {
			// Slow from the check on: after the probes and the first run.
			space = slowRAM{ram, &writes, replicate.Probes + 1 + replicate.Run, 10 * time.Millisecond, 80 * time.Millisecond}
		}
		// Contexts: a write slower than the interval on a loaded host queues
		// instead of dropping a fragment; this test is about the rule.
		ep := newEP(t, sw, m, space, endpoint.Config{Group: group, Contexts: 16})
		setPeer(t, ep, 0, macW, endpoint.ModeDMAWrite)
		setPeer(t, w, i+1, m, endpoint.ModeDMARead)
		rams, members = append(rams, ram), append(members, ep)
	}
	ctx := context.Background()
	peers := []int{1, 2}
	probes, err := replicate.ProbeMembers(ctx, w, peers, base, srcSpace, 0, uint64(len(src)))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{replicate.Probes + 1, replicate.Probes} {
		p := probes[i]
		if p.Member != macs[i] || len(p.RoundTrips) != want || p.PerFragment != slices.Max(p.RoundTrips) {
			t.Fatalf("member %d: %+v, want %d round trips and the slowest as its time per fragment", i, p, want)
		}
		if got := members[i].Stats().ServedDMAWrite; got != uint64(want) {
			t.Fatalf("member %d served %d probes, want %d", i, got, want)
		}
	}
	pace := replicate.NewPacing(probes, peers)
	rt := probes[0].RoundTrips
	if want := rule(slices.Min(rt), slices.Max(rt)); pace.Slowest != 0 || pace.Peer != 1 || pace.Start != want || pace.Interval != want {
		t.Fatalf("pacing %+v; want B (peer 1) the slowest and the interval %v", pace, want)
	}

	tr, err := pace.Write(ctx, w, 0, base, srcSpace, 0, uint64(len(src)), nil)
	if err != nil || tr.Bytes != uint64(len(src)) || tr.Fragments != replicate.Run+1 {
		t.Fatalf("Write = %+v, %v", tr, err)
	}
	if len(pace.Checks) != 1 || pace.Checks[0] < 80*time.Millisecond || pace.Raised != 1 ||
		pace.Interval != rule(slices.Min(rt), pace.Checks[0]) || pace.Interval <= pace.Start {
		t.Fatalf("after the drift: checks %v, raised %d, interval %v (from %v); want one check of at least 80ms raising the interval to it times %v plus the spread",
			pace.Checks, pace.Raised, pace.Interval, pace.Start, replicate.Margin)
	}
	if c := w.Config().GroupInterval; c != pace.Interval {
		t.Fatalf("the writer's GroupInterval is %v, want %v", c, pace.Interval)
	}
	for i, ep := range members {
		want := uint64(replicate.Probes + replicate.Run + 1)
		if i == 0 {
			want += 2 // the settling probe and the check
		}
		waitServed(t, i, ep, want)
		got := make([]byte, len(src))
		rams[i].ReadAt(got, base)
		if !bytes.Equal(got, src) {
			t.Fatalf("member %d's memory differs from the block", i)
		}
	}
}
