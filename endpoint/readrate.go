package endpoint

import (
	"sync"
	"time"

	"github.com/openenoc/oetp/wire"
)

// readBudget bounds the DMA read data the responder sends to each source
// (peer entry, hence source MAC) to Config.MaxReadRate bytes per second: a
// token bucket per peer entry, refilled continuously and holding at most
// readBurst of the rate (but always one maximum fragment), so a request
// whose source has not enough left is dropped without a reply and counted
// (Stats.DropReadRate). A 28-byte DMA_READ_REQ with a forged source draws
// up to 8 KiB: without a bound the responder reflects ~300 times the
// traffic it receives towards the forged source.
type readBudget struct {
	mu     sync.Mutex
	tokens [MaxPeers]float64 // bytes available
	last   [MaxPeers]int64   // monotonic nanoseconds of the last refill; 0 = never
	clock  func() int64      // monotonic nanoseconds
}

// readBurst is the fraction of a second of MaxReadRate a source may draw at
// once after being idle.
const readBurst = 100 * time.Millisecond

var monoStart = time.Now()

func monoNow() int64 { return int64(time.Since(monoStart)) }

// allow charges n bytes to peer under rate bytes per second and reports
// whether the request may be served.
func (b *readBudget) allow(peer int, n uint32, rate int64) bool {
	now := b.clock()
	capacity := max(float64(rate)*readBurst.Seconds(), float64(wire.MaxFrameLen))
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.tokens[peer]
	if b.last[peer] == 0 {
		t = capacity
	} else {
		t = min(capacity, t+float64(now-b.last[peer])*float64(rate)/1e9)
	}
	b.last[peer] = max(now, 1)
	if t < float64(n) {
		b.tokens[peer] = t
		return false
	}
	b.tokens[peer] = t - float64(n)
	return true
}
