// Package relay forwards Ethernet frames between two links and impairs
// them on the way: loss, duplication, reordering, delay with jitter and
// corruption, each direction on its own, drawn from a seeded random source,
// with counters of what it did. It is the project's stand-in for `tc
// netem`, which these machines lack: tests put it between two network
// namespaces (netns Topology.Relay) to try the engine against a bad
// link over real AF_PACKET sockets, and `oetp relay IF1 IF2` lets users try
// host software the same way, without a bad cable.
//
// What happens to a frame read from one link, in this order:
//
//   - Loss: it is dropped with probability Config.Loss.
//   - Corruption: with probability Config.Corrupt one bit at a uniformly
//     drawn position of the frame is flipped (as netem does: the frame
//     keeps a valid FCS; oETP v1 has no integrity check of its own, so a
//     flipped data bit reaches memory; a flipped header bit makes the frame
//     malformed or misdirected).
//   - Duplication: with probability Config.Duplicate it is delivered twice,
//     back to back.
//   - Reordering: with probability Config.Reorder it is held back and
//     delivered right after the next frame of its direction (the two swap
//     places, as link/mem's Reorder rule does), or after Config.ReorderHold
//     when no frame follows in time.
//   - Delay: it is delivered Config.Delay ± a uniform Config.Jitter after
//     it was read (never earlier than read); with jitter, frames overtake
//     one another as on a real path with varying delay.
//
// The same Seed and the same sequence of frames in a direction give the
// same impairments. Without impairments a frame is written to the other link
// by the goroutine that read it, without a copy.
package relay

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openenoc/oetp/link"
)

// DefaultReorderHold is the Config.ReorderHold used when it is zero.
const DefaultReorderHold = 10 * time.Millisecond

// Config describes the impairments; they apply to each direction
// independently. Probabilities are 0 (never) through 1 (every frame).
type Config struct {
	Loss      float64
	Duplicate float64
	Reorder   float64
	Corrupt   float64
	Delay     time.Duration
	Jitter    time.Duration
	// ReorderHold bounds how long a reordered frame waits for the next
	// frame of its direction; zero selects DefaultReorderHold.
	ReorderHold time.Duration
	// Seed seeds the random source of each direction.
	Seed uint64
}

func (c *Config) check() error {
	for _, p := range []struct {
		name string
		v    float64
	}{{"Loss", c.Loss}, {"Duplicate", c.Duplicate}, {"Reorder", c.Reorder}, {"Corrupt", c.Corrupt}} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("relay: Config.%s is %v: want a probability 0 through 1 (5%% is 0.05)", p.name, p.v)
		}
	}
	if c.Delay < 0 || c.Jitter < 0 || c.ReorderHold < 0 {
		return fmt.Errorf("relay: Config.Delay %v, Jitter %v and ReorderHold %v must not be negative", c.Delay, c.Jitter, c.ReorderHold)
	}
	if c.ReorderHold == 0 {
		c.ReorderHold = DefaultReorderHold
	}
	return nil
}

// Stats counts what a direction did with the frames it read.
type Stats struct {
	Received   uint64 // frames read from the source link
	Sent       uint64 // frames written to the destination link (duplicates included)
	Dropped    uint64 // frames lost on purpose
	Duplicated uint64 // frames delivered twice
	Reordered  uint64 // frames held back behind the next frame
	Corrupted  uint64 // frames with one bit flipped
	Delayed    uint64 // frames delivered later than read (Delay, Jitter)
	WriteErrs  uint64 // frames the destination link refused
	ReadErrs   uint64 // read errors of the source link other than closure
}

// String formats the counters on one line.
func (s Stats) String() string {
	return fmt.Sprintf("received %d sent %d dropped %d duplicated %d reordered %d corrupted %d delayed %d write_errors %d read_errors %d",
		s.Received, s.Sent, s.Dropped, s.Duplicated, s.Reordered, s.Corrupted, s.Delayed, s.WriteErrs, s.ReadErrs)
}

type counters struct {
	received, sent, dropped, duplicated, reordered, corrupted, delayed, writeErrs, readErrs atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{Received: c.received.Load(), Sent: c.sent.Load(), Dropped: c.dropped.Load(), Duplicated: c.duplicated.Load(),
		Reordered: c.reordered.Load(), Corrupted: c.corrupted.Load(), Delayed: c.delayed.Load(),
		WriteErrs: c.writeErrs.Load(), ReadErrs: c.readErrs.Load()}
}

// Relay forwards frames between two links until it is closed.
type Relay struct {
	a, b      link.Link
	dirs      [2]*direction
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
}

// New starts relaying between a and b with the impairments of cfg. It puts
// both links in promiscuous mode when they implement link.Filter, so that
// frames for any address arrive. The Relay takes ownership of the links:
// Close closes them. If New fails, the links are left open.
func New(a, b link.Link, cfg Config) (*Relay, error) {
	if a == nil || b == nil {
		return nil, errors.New("relay: nil link")
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	for _, l := range []link.Link{a, b} {
		if f, ok := l.(link.Filter); ok {
			if err := f.SetPromiscuous(true); err != nil {
				return nil, fmt.Errorf("relay: promiscuous mode on %v: %w", l.Addr(), err)
			}
		}
	}
	r := &Relay{a: a, b: b, done: make(chan struct{})}
	bufLen := max(a.MaxFrame(), b.MaxFrame()) + 1
	r.dirs[0] = newDirection(a, b, cfg, 0, bufLen)
	r.dirs[1] = newDirection(b, a, cfg, 1, bufLen)
	for _, d := range r.dirs {
		r.wg.Add(2)
		go func() { defer r.wg.Done(); d.read(r.done) }()
		go func() { defer r.wg.Done(); d.send(r.done) }()
	}
	return r, nil
}

// Stats returns the counters of the direction a -> b and of b -> a.
func (r *Relay) Stats() (aToB, bToA Stats) {
	return r.dirs[0].st.snapshot(), r.dirs[1].st.snapshot()
}

// Drop makes the direction a -> b (aToB) or b -> a drop its next n frames
// whatever the configured impairments, counted as Dropped: a test loses
// exactly the frame it means to (the response of a volatile read, the first
// try of an operation after warm-up).
func (r *Relay) Drop(aToB bool, n int) {
	d := r.dirs[1]
	if aToB {
		d = r.dirs[0]
	}
	d.dropNext.Add(int64(n))
}

// Close stops the relay, closes both links and waits for its goroutines.
// Frames still held or delayed are discarded.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		close(r.done)
		ea, eb := r.a.Close(), r.b.Close()
		for _, d := range r.dirs {
			d.wake()
		}
		r.wg.Wait()
		r.closeErr = errors.Join(ea, eb)
	})
	return r.closeErr
}

// item is a frame waiting in a direction's schedule.
type item struct {
	b   []byte
	due int64 // monotonic nanoseconds since the direction's start
	seq uint64
	idx int // heap index, -1 once popped
}

type schedule []*item

func (s schedule) Len() int { return len(s) }
func (s schedule) Less(i, j int) bool {
	return s[i].due < s[j].due || s[i].due == s[j].due && s[i].seq < s[j].seq
}
func (s schedule) Swap(i, j int) { s[i], s[j] = s[j], s[i]; s[i].idx = i; s[j].idx = j }
func (s *schedule) Push(x any)   { it := x.(*item); it.idx = len(*s); *s = append(*s, it) }
func (s *schedule) Pop() any {
	old := *s
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*s = old[:len(old)-1]
	it.idx = -1
	return it
}

// direction relays the frames of src to dst.
type direction struct {
	src, dst link.Link
	cfg      Config
	rng      *rand.Rand // used by the reader only
	start    time.Time
	st       counters
	bufLen   int
	dropNext atomic.Int64 // frames to drop at once (Relay.Drop)

	mu      sync.Mutex
	sched   schedule
	seq     uint64
	held    *item // a reordered frame waiting for the next one
	sending bool  // the sender is writing a frame it took from sched
	free    []*item
	kick    chan struct{} // wakes the sender
}

func newDirection(src, dst link.Link, cfg Config, n uint64, bufLen int) *direction {
	return &direction{src: src, dst: dst, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x72656c6179+n)),
		start: time.Now(), bufLen: bufLen, kick: make(chan struct{}, 1)}
}

func (d *direction) now() int64 { return int64(time.Since(d.start)) }

func (d *direction) wake() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// chance draws an event of probability p.
func (d *direction) chance(p float64) bool { return p > 0 && d.rng.Float64() < p }

// read is the reader goroutine: it reads batches from src and decides each
// frame's fate.
func (d *direction) read(done <-chan struct{}) {
	const batch = 32
	bufs := make([][]byte, batch)
	sizes := make([]int, batch)
	for i := range bufs {
		bufs[i] = make([]byte, d.bufLen)
	}
	for {
		n, err := d.src.ReadBatch(bufs, sizes)
		if err != nil {
			select {
			case <-done:
				return
			default:
			}
			if errors.Is(err, link.ErrClosed) {
				return
			}
			d.st.readErrs.Add(1)
			time.Sleep(time.Millisecond)
			continue
		}
		for i := range n {
			d.frame(bufs[i][:sizes[i]])
		}
	}
}

// frame handles one frame read from src.
func (d *direction) frame(f []byte) {
	c := &d.cfg
	d.st.received.Add(1)
	if d.dropNext.Load() > 0 && d.dropNext.Add(-1) >= 0 {
		d.st.dropped.Add(1)
		return
	}
	if d.chance(c.Loss) {
		d.st.dropped.Add(1)
		return
	}
	var it *item
	if d.chance(c.Corrupt) && len(f) > 0 {
		it = d.copyOf(f)
		bit := d.rng.IntN(len(f) * 8)
		it.b[bit/8] ^= 1 << (bit % 8)
		f = it.b
		d.st.corrupted.Add(1)
	}
	dup := d.chance(c.Duplicate)
	reorder := d.chance(c.Reorder)
	delay := c.Delay
	if c.Jitter > 0 {
		delay += time.Duration(d.rng.Int64N(int64(2*c.Jitter)+1)) - c.Jitter
	}
	delay = max(delay, 0)
	now := d.now()
	due := now + int64(delay)
	if dup {
		d.st.duplicated.Add(1)
	}
	if delay > 0 {
		d.st.delayed.Add(1)
	}

	d.mu.Lock()
	if reorder && d.held == nil {
		if it == nil {
			it = d.copyOfLocked(f, 0)
		}
		d.st.reordered.Add(1)
		it.due = due + int64(c.ReorderHold)
		d.pushLocked(it)
		d.held = it
		if dup {
			d.pushLocked(d.copyOfLocked(f, due))
		}
		d.mu.Unlock()
		d.wake()
		return
	}
	if delay == 0 && len(d.sched) == 0 && !d.sending {
		// Nothing waits: write at once, without a copy.
		d.mu.Unlock()
		d.write(f)
		if dup {
			d.write(f)
		}
		if it != nil {
			d.recycle(it)
		}
		return
	}
	if it == nil {
		it = d.copyOfLocked(f, due)
	}
	it.due = due
	d.pushLocked(it)
	if dup {
		d.pushLocked(d.copyOfLocked(f, due))
	}
	if h := d.held; h != nil && h != it {
		// The held frame goes right after this one.
		d.held = nil
		if h.idx >= 0 {
			d.seq++
			h.due, h.seq = due, d.seq
			heap.Fix(&d.sched, h.idx)
		}
	}
	d.mu.Unlock()
	d.wake()
}

func (d *direction) pushLocked(it *item) {
	d.seq++
	it.seq = d.seq
	heap.Push(&d.sched, it)
}

func (d *direction) copyOf(f []byte) *item {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.copyOfLocked(f, 0)
}

func (d *direction) copyOfLocked(f []byte, due int64) *item {
	var it *item
	if n := len(d.free); n > 0 {
		it = d.free[n-1]
		d.free = d.free[:n-1]
	} else {
		it = &item{b: make([]byte, 0, d.bufLen)}
	}
	it.b = append(it.b[:0], f...)
	it.due, it.idx = due, -1
	return it
}

func (d *direction) recycle(it *item) {
	d.mu.Lock()
	if len(d.free) < 1024 {
		d.free = append(d.free, it)
	}
	d.mu.Unlock()
}

func (d *direction) write(f []byte) {
	if err := d.dst.Write(f); err != nil {
		d.st.writeErrs.Add(1)
		return
	}
	d.st.sent.Add(1)
}

// send is the sender goroutine: it writes scheduled frames when they are
// due.
func (d *direction) send(done <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		d.mu.Lock()
		var wait time.Duration = -1
		var it *item
		if len(d.sched) > 0 {
			top := d.sched[0]
			if w := top.due - d.now(); w > 0 {
				wait = time.Duration(w)
			} else {
				it = heap.Pop(&d.sched).(*item)
				if it == d.held {
					d.held = nil // its hold ran out
				}
				d.sending = true
			}
		}
		d.mu.Unlock()
		if it != nil {
			d.write(it.b)
			d.mu.Lock()
			d.sending = false
			if len(d.free) < 1024 {
				d.free = append(d.free, it)
			}
			d.mu.Unlock()
			continue
		}
		var tc <-chan time.Time
		if wait >= 0 {
			t.Reset(wait)
			tc = t.C
		}
		select {
		case <-done:
			t.Stop()
			return
		case <-d.kick:
			t.Stop()
		case <-tc:
		}
	}
}
