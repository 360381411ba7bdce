package bench

import (
	"math/bits"
	"runtime"
	"time"
)

// meter accumulates one measurement over one or more rounds: operation
// count, frames and payload bytes moved, time spent, mallocs, and a
// histogram of operation durations. Recording allocates nothing.
type meter struct {
	ops     int64
	frames  int64
	bytes   int64
	elapsed time.Duration
	mallocs uint64
	failed  int64
	max     time.Duration
	hist    *histogram // nil: durations are not recorded
	// noAllocs: the operations run in other processes, whose allocations
	// this one cannot see.
	noAllocs bool
}

// record adds one successful operation of duration d, timed elsewhere
// (by another process), that moved frames frames and bytes payload bytes.
func (m *meter) record(d time.Duration, frames, bytes int64) {
	m.ops++
	m.frames += frames
	m.bytes += bytes
	m.elapsed += d
	m.max = max(m.max, d)
	if m.hist != nil {
		m.hist.add(d)
	}
}

// fail counts one failed operation.
func (m *meter) fail() { m.failed++ }

// newMeter returns a meter; with record false it keeps no histogram (for
// warm-up runs).
func newMeter(record bool) *meter {
	m := &meter{}
	if record {
		m.hist = new(histogram)
	}
	return m
}

// The histogram has histSub buckets per power of two of nanoseconds, so a
// percentile is exact to within 1/histSub (1.6%), for durations up to
// 2^histPow ns (18 minutes).
const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	histPow     = 40
)

// histogram counts operation durations in log-linear buckets.
type histogram struct {
	n      int64
	counts [histPow * histSub]int64
}

// bucket returns the bucket of a duration of ns nanoseconds.
func bucket(ns int64) int {
	if ns < histSub {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 - histSubBits // ns >> e is in [histSub, 2*histSub)
	i := (e+1)*histSub + int(ns>>e) - histSub
	return min(i, histPow*histSub-1)
}

// lower returns the smallest duration in bucket i, in nanoseconds.
func lower(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	e := i/histSub - 1
	return int64(histSub+i%histSub) << e
}

func (h *histogram) add(d time.Duration) {
	h.counts[bucket(int64(d))]++
	h.n++
}

// quantile returns the duration below which a share q (0..1] of the
// recorded durations lie: the middle of its bucket.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(float64(h.n)*q + 0.5)
	rank = min(max(rank, 1), h.n)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := lower(i), lower(i+1)
			return time.Duration((lo + hi) / 2)
		}
	}
	return 0
}

// runWarm warms op up (for warmTime, at most warmOps times, measured
// apart), then runs it as run does.
func (m *meter) runWarm(d time.Duration, maxOps int64, framesPerOp, bytesPerOp int64, op func() error) error {
	if err := newMeter(false).run(warmTime, warmOps, 0, 0, op); err != nil {
		return err
	}
	return m.run(d, maxOps, framesPerOp, bytesPerOp, op)
}

// warmOnce returns a step's round that runs op with m, warmed up before the
// first round only.
func (m *meter) warmOnce(framesPerOp, bytesPerOp int64, op func() error) func(d time.Duration, maxOps int64) error {
	warm := true
	return func(d time.Duration, maxOps int64) error {
		if warm {
			warm = false
			return m.runWarm(d, maxOps, framesPerOp, bytesPerOp, op)
		}
		return m.run(d, maxOps, framesPerOp, bytesPerOp, op)
	}
}

// run calls op repeatedly for about d, at least once and at most maxOps
// times, and adds the outcome to m. Each successful op counts framesPerOp
// frames and bytesPerOp payload bytes; a failed op is counted in m.failed
// and excluded from every figure, its time included. The mallocs of the whole process during
// the loop are added to m.mallocs. run returns the first error of op after
// maxFail failures, and nil otherwise.
func (m *meter) run(d time.Duration, maxOps int64, framesPerOp, bytesPerOp int64, op func() error) error {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	start := time.Now()
	deadline := start.Add(d)
	t0 := start
	var ops int64
	var failedTime time.Duration
	var err error
	for ops < maxOps {
		e := op()
		t1 := time.Now()
		if e != nil {
			failedTime += t1.Sub(t0)
			m.failed++
			if err == nil {
				err = e
			}
			if m.failed >= maxFail {
				break
			}
		} else {
			ops++
			d := t1.Sub(t0)
			if m.hist != nil {
				m.hist.add(d)
			}
			m.max = max(m.max, d)
		}
		t0 = t1
		if !t1.Before(deadline) {
			break
		}
	}
	m.elapsed += t0.Sub(start) - failedTime
	runtime.ReadMemStats(&ms)
	m.mallocs += ms.Mallocs - before
	m.ops += ops
	m.frames += ops * framesPerOp
	m.bytes += ops * bytesPerOp
	if m.failed < maxFail {
		return nil
	}
	return err
}

// maxFail is how many failed operations end a measurement with an error.
const maxFail = 10

// percentiles returns the p-th percentiles (0 < p <= 100) of the recorded
// operation durations, 0 without any.
func (m *meter) percentiles(ps ...float64) []time.Duration {
	out := make([]time.Duration, len(ps))
	if m.hist == nil {
		return out
	}
	for i, p := range ps {
		out[i] = m.hist.quantile(p / 100)
	}
	return out
}

// mbps returns the payload rate in MB/s (10^6 bytes per second).
func (m *meter) mbps() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.bytes) / m.elapsed.Seconds() / 1e6
}

// opsPerSec returns the operation rate.
func (m *meter) opsPerSec() float64 {
	if m.elapsed <= 0 {
		return 0
	}
	return float64(m.ops) / m.elapsed.Seconds()
}

// allocsPerFrame returns the process mallocs per frame moved, or -1 when no
// frame was moved.
func (m *meter) allocsPerFrame() float64 {
	if m.frames == 0 || m.noAllocs {
		return -1
	}
	return float64(m.mallocs) / float64(m.frames)
}

// rounds runs each step in turn, rounds times, giving each step d/rounds
// per round, at least one operation, so that a baseline and the engine it
// is compared with see the same background load.
func rounds(n int, steps ...func(round int) error) error {
	for r := range n {
		for _, s := range steps {
			if err := s(r); err != nil {
				return err
			}
		}
	}
	return nil
}
