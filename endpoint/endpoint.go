package endpoint

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// rxBatch is the number of frames the receive loop asks the link for at
// once. It is half the reliable transport's window: the answers and next
// requests of one batch go out before the next batch is read, so with a
// full window waiting, each side starts on a half while the other handles
// the rest, where a whole window per batch made the two sides take turns
// (docs/benchmarks.md).
const rxBatch = 16

// Endpoint is the protocol engine of one oETP endpoint. Its methods are safe
// for concurrent use.
type Endpoint struct {
	link    link.Link
	filter  link.Filter     // nil when the link does not filter
	looper  link.Looper     // nil when the link cannot; see receive
	filler  link.FillWriter // nil when the link cannot; see request.fillData
	tracker link.Tracker    // nil when the link does not track requests; see dropped
	batcher link.Batcher    // nil when the link cannot; see runBlock
	carrier link.Carrier    // nil when the link carries no request; see initiator.send
	// offReader is the link's ReadBatchAt (link.OffsetReader), which the
	// receive loop uses instead of ReadBatch; nil when it has none.
	offReader link.OffsetReader
	mem       memory.Space
	inline    bool           // mem is memory.Immediate: the receive loop serves requests itself
	toucher   memory.Toucher // mem, when warm, inline and a memory.Toucher; see prefetch
	// warm: the link busy-polls (link.Spinner), so the receive loop spends
	// time it would spin anyway touching the memory of the next DMA
	// fragment (chainState.ahead, prefetch). A loop that would sleep
	// instead would add the touch to the round trip.
	warm     bool
	maxFrame int
	ceiling  uint32 // the fragment ceiling of maxFrame
	// invalids: each peer's last request refused with cause INVALID.
	invalids invalidLog
	bufLen   int // receive buffers: maxFrame+1, so an oversized frame shows as oversized

	cfgMu    sync.Mutex // serialises SetConfig, SetPeer and worker start
	cfg      atomic.Pointer[Config]
	peers    atomic.Pointer[peerTable]
	joined   wire.MAC // the group the link has joined; guarded by cfgMu
	promisc  bool     // the link's promiscuous mode; guarded by cfgMu
	nworkers int      // guarded by cfgMu

	status [MaxPeers]atomic.Uint32 // see record

	rid   atomic.Uint32 // the Request ID counter
	epoch atomic.Uint64 // incremented by Reset

	slot   slot
	dmaTok chan struct{} // one DMA block at a time
	in     initiator
	tx     txArb

	rx      rxRing
	lead    chan struct{} // the receive role token
	serving atomic.Int32  // responder contexts in use
	reads   readBudget    // per-source DMA read budget; see Config.MaxReadRate

	raw *rawQueue
	ev  *eventQueue
	st  counters

	done      chan struct{}
	shutOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup

	// Test hooks, set only by tests before traffic starts.
	hookMatched func() // after a response is recorded, before the initiator is woken
	hookClear   func() // inside ClearError, between reading and clearing the record
	hookWaited  func() // in runBlock, after every chain's outcome is taken, before the entries are freed
}

// New starts an endpoint on l serving mem to its peers. It validates cfg
// (the error names the field and the fix), joins Config.Group and sets
// promiscuous mode as the raw policy and MAC require when l implements
// link.Filter, and starts the receive loop. The Endpoint takes ownership of
// l: Close closes it. If New fails, l is left open. The peer table starts
// empty.
//
// A nil mem makes an initiator-only endpoint: it matches replies to its own
// requests but drops every received request silently (counted in
// Stats.DropNoResponder), without a reply, a memory access or a record. This
// is what a one-shot tool such as `oetp rmem` needs when an `oetp serve` on
// the same interface and MAC owns answering: one MAC, one responder, never
// two answers to one request.
func New(l link.Link, mem memory.Space, cfg Config) (*Endpoint, error) {
	if l == nil {
		return nil, errors.New("endpoint: nil link; pass a link.Link such as a link/mem Port")
	}
	c, err := resolve(cfg, l.Addr(), l.MaxFrame(), nil)
	if err != nil {
		return nil, err
	}
	e := &Endpoint{
		link:     l,
		mem:      mem,
		maxFrame: c.MaxFrame,
		ceiling:  wire.FragmentCeiling(c.MaxFrame),
		bufLen:   c.MaxFrame + 1,
		dmaTok:   make(chan struct{}, 1),
		reads:    readBudget{clock: monoNow},
		tx:       newTxArb(),
		lead:     make(chan struct{}, 1),
		raw:      newRawQueue(c.RawQueue),
		ev:       newEventQueue(c.EventQueue),
		done:     make(chan struct{}),
	}
	e.filter, _ = l.(link.Filter)
	e.looper, _ = l.(link.Looper)
	e.filler, _ = l.(link.FillWriter)
	e.tracker, _ = l.(link.Tracker)
	e.batcher, _ = l.(link.Batcher)
	e.carrier, _ = l.(link.Carrier)
	e.offReader, _ = l.(link.OffsetReader)
	e.inline = memory.IsImmediate(mem)
	if s, ok := l.(link.Spinner); ok && s.BusyPoll() > 0 {
		e.warm = true
	}
	if e.inline && e.warm {
		e.toucher, _ = mem.(memory.Toucher)
	}
	e.cfg.Store(&c)
	e.rid.Store(c.InitialRequestID)
	e.peers.Store(&peerTable{bySrc: map[wire.MAC]int{}, disabled: map[wire.MAC]int{}})
	e.dmaTok <- struct{}{}
	e.in.init(e, c.Outstanding, c.MaxFrame) // v1: one initiating context
	if e.carrier != nil {
		e.carrier.SetLost(e.in.lost)
	}
	e.slot.setCap(c.Outstanding)
	e.rx.init(e.bufLen)
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	if err := e.applyFilter(&c); err != nil {
		return nil, err
	}
	e.lead <- struct{}{}
	e.startWorkers(c.Contexts + 1)
	return e, nil
}

// applyFilter brings the link's group membership and promiscuous mode in
// line with c. cfgMu must be held.
func (e *Endpoint) applyFilter(c *Config) error {
	if e.filter == nil {
		return nil
	}
	if c.Group != e.joined {
		if !e.joined.IsZero() {
			if err := e.filter.LeaveGroup(e.joined); err != nil {
				return fmt.Errorf("endpoint: leaving group %v: %w", e.joined, err)
			}
			e.joined = wire.MAC{}
		}
		if !c.Group.IsZero() {
			if err := e.filter.JoinGroup(c.Group); err != nil {
				return fmt.Errorf("endpoint: joining Config.Group %v: %w", c.Group, err)
			}
			e.joined = c.Group
		}
	}
	want := c.RawPolicy == RawMulticast || c.RawPolicy == RawPromiscuous || c.MAC != e.link.Addr()
	if want != e.promisc {
		if err := e.filter.SetPromiscuous(want); err != nil {
			return fmt.Errorf("endpoint: setting promiscuous mode %v: %w", want, err)
		}
		e.promisc = want
	}
	return nil
}

// startWorkers brings the number of receive/responder goroutines up to n.
// cfgMu must be held.
func (e *Endpoint) startWorkers(n int) {
	for ; e.nworkers < n; e.nworkers++ {
		w := &worker{buf: make([]byte, e.bufLen), tx: make([]byte, 0, e.maxFrame)}
		w.batchFn = func(n int) bool { return e.onBatch(w, n) }
		w.fillFn = func(d []byte) bool { return e.fillRead(w, d) }
		e.wg.Add(1)
		go e.work(w)
	}
}

// Close stops the endpoint: it closes the link, wakes every waiting call
// (operations in flight fail with an error wrapping ErrClosed, later calls
// return ErrClosed) and waits for the receive loop and the responder
// contexts to finish; a context in the middle of a memory access finishes
// that access first. It returns the link's Close error. Closing twice
// returns the first result.
func (e *Endpoint) Close() error {
	e.closeOnce.Do(func() {
		e.shutdown()
		e.closeErr = e.link.Close()
		e.wg.Wait()
	})
	return e.closeErr
}

// shutdown marks the endpoint closed and wakes every waiter.
func (e *Endpoint) shutdown() {
	e.shutOnce.Do(func() {
		close(e.done)
		e.in.wakeAll() // after close: a waiter woken sees it closed
	})
}

func (e *Endpoint) isClosed() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// Config returns the configuration in force, defaults filled in.
func (e *Endpoint) Config() Config { return *e.cfg.Load() }

// SetConfig replaces the configuration, like live CSR writes. Zero fields
// select their defaults as in New, except MaxFragment, which is stored as
// given (see Config.MaxFragment); MaxFrame, RawQueue and EventQueue are
// fixed at New and must be zero or unchanged. Each operation, fragment and
// block samples the configuration when it is accepted, so a change affects
// only later ones. Raising Contexts starts more responder contexts;
// lowering it takes effect as busy contexts finish.
func (e *Endpoint) SetConfig(c Config) error {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	if e.isClosed() {
		return ErrClosed
	}
	r, err := resolve(c, e.link.Addr(), e.link.MaxFrame(), e.cfg.Load())
	if err != nil {
		return err
	}
	if n := len(e.in.reqs); r.Outstanding > n {
		return fmt.Errorf("endpoint: Config.Outstanding %d exceeds the %d the endpoint was created with; lower it, or create a new Endpoint", r.Outstanding, n)
	}
	if err := e.applyFilter(&r); err != nil {
		return err
	}
	e.cfg.Store(&r)
	e.slot.setCap(r.Outstanding)
	e.startWorkers(r.Contexts + 1)
	return nil
}

// SetPeer writes peer table entry i (0..MaxPeers-1); Peer{} clears it. A
// MAC may appear in several entries (see Peer.MAC for which one serves its
// requests). The change applies to requests and operations accepted afterwards; the
// entry's status is kept.
func (e *Endpoint) SetPeer(i int, p Peer) error {
	e.cfgMu.Lock()
	defer e.cfgMu.Unlock()
	t := e.peers.Load()
	if err := checkPeer(i, p); err != nil {
		return err
	}
	if t.entries[i].MAC != p.MAC {
		e.in.resetPeer(i) // another device: its round trips start over
	}
	e.peers.Store(t.with(i, p))
	return nil
}

// DisabledPeer reports whether requests from src are dropped because every
// peer table entry with that MAC is disabled (ModeNone), and the lowest
// such index. Such requests are counted as from an unknown source; a tool
// that logs them (such as `oetp serve`) can say that the entry exists but is
// disabled.
func (e *Endpoint) DisabledPeer(src wire.MAC) (index int, ok bool) {
	index, ok = e.peers.Load().disabled[src]
	return index, ok
}

// Peer returns peer table entry i; ok is false when i is out of range or
// the entry is unused.
func (e *Endpoint) Peer(i int) (p Peer, ok bool) {
	if i < 0 || i >= MaxPeers {
		return Peer{}, false
	}
	p = e.peers.Load().entries[i]
	return p, !p.MAC.IsZero()
}

// The status word of a peer: bits 0..3 the code, bit 4 the error flag, the
// bits above a count of recorded failures, so that a clear can tell
// whether a failure was recorded after it read the word.
const (
	statusError = 1 << 4
	statusSeq   = 1 << 5
)

// PeerStatus returns peer i's latched error record (zero for an index out
// of range).
func (e *Endpoint) PeerStatus(i int) PeerStatus {
	if i < 0 || i >= MaxPeers {
		return PeerStatus{}
	}
	v := e.status[i].Load()
	return PeerStatus{Error: v&statusError != 0, Code: wire.Code(v & 0xF)}
}

// ClearError clears peer i's error record (dma.clear_error). A failure
// recorded while the clear is in progress wins: it stays recorded. Clearing
// does not affect operations in progress.
func (e *Endpoint) ClearError(i int) {
	if i < 0 || i >= MaxPeers {
		return
	}
	s := &e.status[i]
	v := s.Load()
	if v&statusError == 0 {
		return
	}
	if e.hookClear != nil {
		e.hookClear()
	}
	s.CompareAndSwap(v, v&^(statusError|0xF))
}

// record latches a failure with code in peer i's status. The most recent
// failure wins.
func (e *Endpoint) record(i int, code wire.Code) {
	s := &e.status[i]
	for {
		v := s.Load()
		n := (v&^(statusSeq-1) + statusSeq) | statusError | uint32(code&0xF)
		if s.CompareAndSwap(v, n) {
			return
		}
	}
}

// Reset is the hard reset: the Request ID counter returns to 0, the
// outstanding initiating context is invalidated (the waiting operation
// fails with TIMEOUT and an error wrapping ErrReset, and a DMA block stops
// issuing fragments; nothing is recorded and no event is raised for it),
// responder contexts still working drop their results (no reply, no
// record), frames already read from the link but not yet processed are
// discarded, and the raw and event queues, coalesced events included, are
// emptied. The configuration, the peer table, the peer status records and
// the counters are kept. Frames the link delivers afterwards are processed
// normally, even replies to requests sent before the reset.
func (e *Endpoint) Reset() {
	e.in.reset()
	e.raw.clear()
	e.ev.clear()
}
