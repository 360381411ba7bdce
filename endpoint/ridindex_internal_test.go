package endpoint

import (
	"math/rand/v2"
	"testing"
	"time"
)

func dur(n int64) time.Duration { return time.Duration(n) }

// TestRIDIndex checks the Request ID index against a map through random
// puts and deletes, with sequential IDs (the engine's pattern, wrapping at
// 2^32) and arbitrary ones, for several table sizes.
func TestRIDIndex(t *testing.T) {
	for _, entries := range []int{1, 2, 3, 8, 100} {
		for _, seq := range []bool{true, false} {
			var x ridIndex
			x.init(entries)
			ref := map[uint32]int{}
			free := make([]int, 0, entries)
			for i := range entries {
				free = append(free, i)
			}
			rng := rand.New(rand.NewPCG(uint64(entries), 7))
			next := uint32(0xFFFFFFF0) // wraps during the run
			for step := range 20000 {
				if len(free) > 0 && (len(ref) == 0 || rng.IntN(2) == 0) {
					rid := next
					if seq {
						next++
					} else {
						rid = rng.Uint32() & 0x3FF
						if _, dup := ref[rid]; dup {
							continue
						}
					}
					e := free[len(free)-1]
					free = free[:len(free)-1]
					x.put(rid, e)
					ref[rid] = e
				} else {
					for rid, e := range ref {
						x.del(rid)
						delete(ref, rid)
						free = append(free, e)
						break
					}
				}
				for rid, e := range ref {
					if got := x.get(rid); got != e {
						t.Fatalf("entries %d seq %v step %d: get(%#x) = %d, want %d", entries, seq, step, rid, got, e)
					}
				}
				if got := x.get(next + 12345); got != -1 {
					t.Fatalf("get of an absent ID = %d", got)
				}
			}
		}
	}
}

// TestTryTimeout: the adaptive timeout of each try.
func TestTryTimeout(t *testing.T) {
	const ms = 1_000_000
	for _, c := range []struct {
		t, rto, floor int64
		tries         int
		want          int64
	}{
		{1000 * ms, 0, 10 * ms, 1, 1000 * ms},    // no sample: the configured timeout
		{1000 * ms, 0, 10 * ms, 3, 1000 * ms},    // ... for every try
		{1000 * ms, 2 * ms, 10 * ms, 1, 10 * ms}, // the floor
		{1000 * ms, 2 * ms, 10 * ms, 2, 20 * ms}, // doubled per retry
		{1000 * ms, 2 * ms, 10 * ms, 4, 80 * ms},
		{1000 * ms, 2 * ms, 10 * ms, 9, 1000 * ms}, // at most the timeout
		{1000 * ms, 30 * ms, 10 * ms, 1, 30 * ms},
		{20 * ms, 30 * ms, 10 * ms, 1, 20 * ms}, // RTO above the timeout
		{0, 30 * ms, 10 * ms, 3, 120 * ms},      // no timeout: no cap
	} {
		if got := tryTimeout(dur(c.t), dur(c.rto), dur(c.floor), c.tries); got != dur(c.want) {
			t.Errorf("tryTimeout(%v, rto %v, floor %v, try %d) = %v, want %v", dur(c.t), dur(c.rto), dur(c.floor), c.tries, got, dur(c.want))
		}
	}
}

// TestRTTEstimator: RFC 6298's first sample and update rules.
func TestRTTEstimator(t *testing.T) {
	var p peerRTT
	p.sample(dur(100))
	if p.est.SRTT() != 100 || p.est.RTTVar() != 50 || p.rto() != 300 {
		t.Fatalf("after the first sample: srtt %v rttvar %v rto %v", p.est.SRTT(), p.est.RTTVar(), p.rto())
	}
	p.sample(dur(200))
	// RTTVAR = 3/4·50 + 1/4·|100-200| = 62.5 -> 62; SRTT = 7/8·100 + 1/8·200 = 112.5 -> 112
	if p.est.SRTT() != 112 || p.est.RTTVar() != 62 {
		t.Fatalf("after the second sample: srtt %v rttvar %v", p.est.SRTT(), p.est.RTTVar())
	}
	s := p.stats(3)
	if s.RTTMin != 100 || s.RTTMax != 200 || s.RTTMean != 150 || s.RTTSamples != 2 || s.Peer != 3 {
		t.Fatalf("stats %+v", s)
	}
}
