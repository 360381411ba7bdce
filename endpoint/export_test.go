package endpoint

import (
	"sync"
	"time"
)

// SetRequestID sets the Request ID counter: the next accepted operation or
// fragment takes v.
func SetRequestID(e *Endpoint, v uint32) { e.rid.Store(v) }

// OnMatched installs a hook run by the receive loop after a response has
// been recorded and before the waiting operation is woken.
func OnMatched(e *Endpoint, f func()) { e.hookMatched = f }

// OnBlockWaited installs a hook run by a DMA block after it has taken the
// outcome of every chain and before it frees their entries.
func OnBlockWaited(e *Endpoint, f func()) { e.hookWaited = f }

// UntakenOutcomes counts the request entries holding an outcome (done or
// aborted) that no waiter is waiting to take.
func UntakenOutcomes(e *Endpoint) int {
	in := &e.in
	in.mu.Lock()
	defer in.mu.Unlock()
	n := 0
	for i := range in.reqs {
		if s := in.reqs[i].state; s == reqDone || s == reqAborted {
			n++
		}
	}
	return n
}

// OnClear installs a hook run inside ClearError between reading and
// clearing the record.
func OnClear(e *Endpoint, f func()) { e.hookClear = f }

// TxWaiting returns the replies and other frames waiting for the link.
func TxWaiting(e *Endpoint) (replies, others int) { return e.tx.waiting() }

// SlotWaiting returns the RMEM operations and DMA fragments waiting for the
// initiating slot.
func SlotWaiting(e *Endpoint) (rmem, dma int) { return e.slot.waiting() }

// ExpiredAfterResponse counts timer expiries that found a validated
// response already recorded (and let it win).
func ExpiredAfterResponse(e *Endpoint) uint64 { return e.st.expiredAfterResponse.Load() }

// ChainedFragments counts the DMA fragments the receive loop has sent (the
// chained path).
func ChainedFragments(e *Endpoint) uint64 { return e.st.chained.Load() }

// FakeTimer replaces an endpoint's response timer: it never fires by
// itself; Fire makes it fire.
type FakeTimer struct {
	mu      sync.Mutex
	starts  []time.Duration
	armed   bool
	c       chan time.Time
	started chan time.Duration
}

// InstallFakeTimer replaces e's response timer with a FakeTimer.
func InstallFakeTimer(e *Endpoint) *FakeTimer {
	f := &FakeTimer{c: make(chan time.Time, 1), started: make(chan time.Duration, 1024)}
	e.in.reqs[0].timer = f
	return f
}

// Start implements respTimer.
func (f *FakeTimer) Start(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	f.starts = append(f.starts, d)
	f.armed = true
	f.mu.Unlock()
	f.started <- d
	return f.c
}

// C implements respTimer.
func (f *FakeTimer) C() <-chan time.Time { return f.c }

// Stop implements respTimer.
func (f *FakeTimer) Stop() {
	f.mu.Lock()
	f.armed = false
	f.mu.Unlock()
	select {
	case <-f.c:
	default:
	}
}

// Fire makes the armed timer fire.
func (f *FakeTimer) Fire() {
	select {
	case f.c <- time.Now():
	default:
	}
}

// Starts returns the durations the timer was started with.
func (f *FakeTimer) Starts() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.starts...)
}

// Started returns a channel that receives each duration the timer is
// started with.
func (f *FakeTimer) Started() <-chan time.Duration { return f.started }

// SetReadClock replaces the clock of the per-source DMA read budget
// (monotonic nanoseconds, never 0).
func SetReadClock(e *Endpoint, f func() int64) {
	e.reads.mu.Lock()
	defer e.reads.mu.Unlock()
	e.reads.clock = f
}
