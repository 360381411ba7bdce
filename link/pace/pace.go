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
// Slack+Credit worth of bytes: a sender that fell behind its schedule (an
// oversleep, a slow response) catches up by at most Credit, and a link
// left idle longer earns no more.
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
// frame at high rates, and a sleep overshoots by tens of microseconds (by
// milliseconds on a busy machine).
const Slack = time.Millisecond

// Credit is how far behind its schedule a sender may fall and still catch
// up: it makes up for sleeps that overshoot, so the average rate holds.
const Credit = time.Millisecond

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
		if floor := now.Add(-Credit); p.next.Before(floor) {
			p.next = floor // idle time earns no more credit
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
