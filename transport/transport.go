// Package transport is the oETP reliable transport's protocol state
// (docs/reliable.md): the initiator side of a session (Sender: PSNs, the
// window bounded by the responder's credits and a congestion window,
// Go-Back-N retransmission after a NAK or a timeout, the RTT-adaptive
// retransmission timer) and the responder side (Receiver: the expected
// PSN, cumulative ACKs, NAK on a gap, the replay cache that answers a
// retransmitted request with its cached response instead of executing it
// again).
//
// The package owns no sockets, goroutines or clocks: every event method
// takes the current time as a time.Duration on any monotonic scale (see
// Clock), so tests run deterministically, and frames go in and out as byte
// slices the caller reads from and writes to its link. Buffers are
// allocated once, when a session's state is made; the steady state
// allocates nothing. The types are not safe for concurrent use: their
// owner serialises calls (the endpoint holds a lock around them).
//
// The wire codec is package wire/reliable.
package transport

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/openenoc/oetp/wire/reliable"
)

// Defaults of Config.
const (
	DefaultDepth       = 32
	DefaultInitialRTO  = 100 * time.Millisecond
	DefaultMinRTO      = 10 * time.Millisecond
	DefaultMaxRTO      = time.Second
	DefaultMaxRetries  = 10
	DefaultSynAttempts = 3
	DefaultInitialCwnd = 4
)

// Config are the parameters of one side of a session. The zero value of a
// field selects its default.
type Config struct {
	// Depth is the most requests outstanding at once (sender) or the
	// replay cache's slots (receiver), 1..1024; default 32. A session uses
	// the smaller of the two sides' values. 32 frames of 8 KiB cover the
	// bandwidth-delay product of a veth pair (about 4 GB/s times a 50 µs
	// round trip is 200 kB, 25 frames) with room for scheduling delays.
	Depth int
	// MaxFrame is the largest frame in bytes, without FCS: buffers are this
	// large. Default 8192.
	MaxFrame int
	// InitialRTO is the retransmission timeout before the first RTT sample,
	// and the SYN's fixed timeout; default 100 ms.
	InitialRTO time.Duration
	// MinRTO and MaxRTO bound the adaptive timeout; defaults 10 ms and 1 s.
	// The floor is well above a veth round trip (tens of µs, a few
	// hundred with 32 frames of 8 KiB queued) because a busy 2-vCPU host
	// stalls a receive loop for milliseconds, and a spurious timeout
	// resends the whole window (Go-Back-N). Losses inside a window are recovered by NAKs and
	// fast retransmits without waiting for it.
	MinRTO, MaxRTO time.Duration
	// MaxRetries is how many retransmission timeouts in a row, without a
	// response in between, fail the session; default 10.
	MaxRetries int
	// SynAttempts is how many SYNs the sender sends, InitialRTO apart,
	// before the handshake fails; default 3 (the fallback of `auto` within
	// 3 RTOs).
	SynAttempts int
	// InitialCwnd is the congestion window at the start, in frames;
	// default 4.
	InitialCwnd int
	// Credits is what the receiver advertises: request frames it accepts
	// beyond the acknowledged PSN. Default and maximum: Depth.
	Credits int
}

func (c Config) withDefaults() (Config, error) {
	c.Depth = cmp.Or(c.Depth, DefaultDepth)
	if c.Depth < 1 || c.Depth > reliable.MaxDepth {
		return c, fmt.Errorf("transport: Config.Depth %d outside 1..%d", c.Depth, reliable.MaxDepth)
	}
	c.MaxFrame = cmp.Or(c.MaxFrame, 8192)
	if c.MaxFrame < reliable.MinFrameLen+6 || c.MaxFrame > reliable.MaxBody {
		return c, fmt.Errorf("transport: Config.MaxFrame %d outside %d..8192", c.MaxFrame, reliable.MinFrameLen+6)
	}
	c.InitialRTO = cmp.Or(c.InitialRTO, DefaultInitialRTO)
	c.MinRTO = cmp.Or(c.MinRTO, DefaultMinRTO)
	c.MaxRTO = cmp.Or(c.MaxRTO, DefaultMaxRTO)
	if c.InitialRTO < 0 || c.MinRTO < 0 || c.MaxRTO < c.MinRTO {
		return c, errors.New("transport: Config timeouts must be positive with MinRTO <= MaxRTO")
	}
	c.MaxRetries = cmp.Or(c.MaxRetries, DefaultMaxRetries)
	c.SynAttempts = cmp.Or(c.SynAttempts, DefaultSynAttempts)
	c.InitialCwnd = min(max(cmp.Or(c.InitialCwnd, DefaultInitialCwnd), 1), c.Depth)
	if c.Credits == 0 || c.Credits > c.Depth {
		c.Credits = c.Depth
	}
	if c.MaxRetries < 0 || c.SynAttempts < 0 || c.Credits < 0 {
		return c, errors.New("transport: Config counts must not be negative")
	}
	return c, nil
}

// Clock gives the current time on a monotonic scale. The state machines
// take times as arguments; a Clock is what their owner reads them from.
type Clock interface {
	Now() time.Duration
}

// MonotonicClock is the process's monotonic clock: the time since it was
// made.
type MonotonicClock struct{ start time.Time }

// NewMonotonicClock starts a MonotonicClock.
func NewMonotonicClock() *MonotonicClock { return &MonotonicClock{start: time.Now()} }

// Now returns the time since the clock was made.
func (c *MonotonicClock) Now() time.Duration { return time.Since(c.start) }

// ErrSessionFailed is reported by a Sender whose session failed: the
// handshake went unanswered, MaxRetries timeouts passed without progress,
// or the responder reset the session. Requests outstanding on it may or
// may not have executed.
var ErrSessionFailed = errors.New("transport: session failed")

func seqDiff(a, b uint32) int { return int(int32(a - b)) }
