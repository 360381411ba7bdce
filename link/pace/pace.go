// Package pace is a link wrapper that paces the frames written to a link
// to a byte rate, for senders that would otherwise overrun their
// receivers: a group DMA write completes as soon as its frames are sent,
// and software receivers (oetp serve behind a kernel socket queue) drop
// what arrives faster than they read.
//
// The rate counts the bytes of each frame as the link takes it (Ethernet
// header through payload, no FCS): a DMA fragment of F data bytes is F+32
// bytes, so at 8160-byte fragments the data rate is 99.6 % of the frame
// rate. Pacing sleeps in Write and WriteBatch before handing a frame to
// the inner link, so a response timer (which starts when the request has
// been handed over) does not run while it waits. Bursts are bounded by
// Slack worth of bytes; a link left idle earns no credit.
//
// The wrapper sleeps in the writing goroutine, which for a chained DMA
// block can be the endpoint's receive loop: use it where only the paced
// transfer waits, such as a one-shot initiator (oetp dma write --rate),
// never beneath a responder that others depend on.
package pace

import (
	"fmt"
	"sync"
	"time"

	"github.com/openenoc/oetp/link"
)

// Slack is the largest lead, in time, that the pacer lets a sender build
// before it sleeps: sleeping for every frame would cost more than the
// frame at high rates (a timer's granularity is tens of microseconds).
const Slack = 200 * time.Microsecond

// New returns l paced to bytesPerSecond (at least 1), built on link.Wrap:
// it implements exactly the optional interfaces l implements, and Unwrap
// returns l.
func New(l link.Link, bytesPerSecond float64) (link.Link, error) {
	if !(bytesPerSecond >= 1) {
		return nil, fmt.Errorf("pace: rate %v bytes/s: use at least 1", bytesPerSecond)
	}
	p := &pacer{perByte: float64(time.Second) / bytesPerSecond, now: time.Now, sleep: time.Sleep}
	return link.Wrap(l, link.Hooks{Write: p.write}), nil
}

// pacer holds the time at which the link may take the next byte.
type pacer struct {
	perByte float64 // nanoseconds per byte
	now     func() time.Time
	sleep   func(time.Duration)

	mu   sync.Mutex // serialises writers, so the schedule is theirs in order
	next time.Time
}

// write hands the frames over one at a time, each when its turn comes.
func (p *pacer) write(frames [][]byte, next func([][]byte) (int, error)) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range frames {
		now := p.now()
		if p.next.Before(now) {
			p.next = now // idle time earns no credit
		}
		if lead := p.next.Sub(now); lead > Slack {
			p.sleep(lead)
		}
		p.next = p.next.Add(time.Duration(float64(len(frames[i])) * p.perByte))
		if n, err := next(frames[i : i+1]); n != 1 || err != nil {
			return i, err
		}
	}
	return len(frames), nil
}
