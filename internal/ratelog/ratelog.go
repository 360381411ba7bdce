// Package ratelog bounds log output whatever the input rate: per key (a
// peer and a reason, say), the first few lines of an interval are logged,
// the rest are counted and reported as one summary line per interval.
//
// A Limiter decides; the caller logs. For each event the caller asks
// Allow(key) and logs the event only when it returns true; a ticker calls
// Flush, which returns one Summary for every key whose interval ended
// with suppressed events, for the caller to log. Counters elsewhere keep
// the exact totals: the limiter bounds lines, not counts.
//
// Under a sustained flood of one key the output is Burst lines, then one
// summary per Interval: the burst is not granted again until an interval
// passes without suppression. Keys beyond MaxKeys share one overflow entry
// (Summary.Overflow), so a flood of distinct keys (forged source MACs)
// cannot grow the limiter's memory or its output.
package ratelog

import (
	"sync"
	"time"
)

// Defaults of a Limiter's zero fields.
const (
	DefaultBurst    = 5
	DefaultInterval = 5 * time.Second
	DefaultMaxKeys  = 256
)

// Limiter is a per-key line limiter. Set the exported fields before first
// use; the zero value uses the defaults. It is safe for concurrent use.
type Limiter[K comparable] struct {
	// Burst is the number of lines logged per key before suppression
	// starts (DefaultBurst when 0).
	Burst int
	// Interval is the summary period (DefaultInterval when 0).
	Interval time.Duration
	// MaxKeys is the number of keys tracked separately (DefaultMaxKeys
	// when 0); further keys share the overflow entry.
	MaxKeys int
	// Now is the clock (time.Now when nil), for tests.
	Now func() time.Time

	mu    sync.Mutex
	keys  map[K]*entry
	other entry
}

// entry is one key's current interval.
type entry struct {
	start      time.Time // when the interval began; zero when unused
	logged     int       // lines allowed in this interval
	suppressed uint64    // events suppressed in this interval
	weight     uint64    // the events' weights summed (see AllowN)
}

// Summary reports the events of one key suppressed in one interval.
type Summary[K comparable] struct {
	Key K // the zero K for the overflow entry
	// Overflow marks the entry shared by the keys beyond MaxKeys.
	Overflow bool
	// Suppressed is the number of events not logged, Weight their
	// weights summed (equal to Suppressed when every event had weight 1).
	Suppressed, Weight uint64
	// Since and Until bound the interval.
	Since, Until time.Time
}

func (l *Limiter[K]) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Limiter[K]) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return DefaultBurst
}

func (l *Limiter[K]) interval() time.Duration {
	if l.Interval > 0 {
		return l.Interval
	}
	return DefaultInterval
}

// Allow reports whether an event of key may be logged now; false counts it
// as suppressed.
func (l *Limiter[K]) Allow(key K) bool { return l.AllowN(key, 1) }

// AllowN is Allow for an event that stands for weight events (an event
// with coalesced ones, say): a suppressed event adds weight to the
// summary's Weight.
func (l *Limiter[K]) AllowN(key K, weight uint64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = make(map[K]*entry)
	}
	e, ok := l.keys[key]
	if !ok {
		max := l.MaxKeys
		if max <= 0 {
			max = DefaultMaxKeys
		}
		if len(l.keys) < max {
			e = &entry{}
			l.keys[key] = e
		} else {
			e = &l.other
		}
	}
	if e.start.IsZero() {
		e.start = l.now()
	}
	if e.logged < l.burst() {
		e.logged++
		return true
	}
	e.suppressed++
	e.weight += weight
	return false
}

// Flush returns a summary for each key whose interval has ended with
// suppressed events and starts its next interval without a new burst;
// keys whose interval ended without suppression are forgotten, so their
// next event is logged. Call it periodically (a fraction of Interval).
func (l *Limiter[K]) Flush() []Summary[K] { return l.flush(false) }

// FlushAll returns a summary for every key with suppressed events, ended
// interval or not, and forgets every key: for the end of the program.
func (l *Limiter[K]) FlushAll() []Summary[K] { return l.flush(true) }

func (l *Limiter[K]) flush(all bool) []Summary[K] {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	iv := l.interval()
	var out []Summary[K]
	step := func(k K, over bool, e *entry) (forget bool) {
		if e.start.IsZero() || !all && now.Sub(e.start) < iv {
			return false
		}
		if e.suppressed == 0 || all {
			if e.suppressed > 0 {
				out = append(out, Summary[K]{Key: k, Overflow: over, Suppressed: e.suppressed, Weight: e.weight, Since: e.start, Until: now})
			}
			*e = entry{}
			return true
		}
		out = append(out, Summary[K]{Key: k, Overflow: over, Suppressed: e.suppressed, Weight: e.weight, Since: e.start, Until: now})
		// Still flooding: the next interval logs nothing until it has
		// passed without suppression.
		*e = entry{start: now, logged: l.burst()}
		return false
	}
	for k, e := range l.keys {
		if step(k, false, e) {
			delete(l.keys, k)
		}
	}
	var zero K
	step(zero, true, &l.other)
	return out
}
