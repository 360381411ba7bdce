// Package rlink puts the reliable transport (docs/reliable.md) beneath an
// endpoint: a link.Link that wraps the link to the medium and, for the peers
// configured for it, carries the endpoint's v1 frames in reliable frames
// (PSN, ACK/NAK, Go-Back-N, credits, AIMD, replay cache, CRC32C), while the
// frames of every other peer pass through unchanged, byte for byte.
//
// The endpoint above it is the unchanged v1 engine. rlink turns an outgoing
// v1 request to a reliable peer into a DATA frame of that peer's session (a
// Sender) and an incoming DATA response back into the v1 response; it turns
// an incoming DATA request into the v1 request it carries (a Receiver) and
// the endpoint's v1 answer into the DATA response, kept in the replay cache.
// ACKs, NAKs, retransmissions, replays and the handshake never reach the
// endpoint. One goroutine per Link runs the retransmission timers; the
// steady state allocates nothing. A DMA fragment's payload is written once,
// by the endpoint, straight into the transport's copy of the frame
// (link.FillWriter).
//
// The responder side delivers every request of a received batch at once and
// writes the batch's responses, first transmissions and coalesced ACKs with
// one WriteBatch when the reader is about to wait again. The endpoint tells
// the link what became of each request it delivered (link.Tracker): its
// response or ERROR_RSP, matched by Request ID, is the request's answer; a
// request it reports dropped is left unacknowledged for the initiator to
// resend, and executes then, never twice.
package rlink

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/transport"
	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// Mode is how a peer is reached.
type Mode uint8

// Peer modes.
const (
	// V1: plain v1 frames, unchanged; reliable frames from the peer go to
	// the endpoint like any non-oETP frame (its raw policy).
	V1 Mode = iota
	// Reliable: requests to the peer go through the transport, and its
	// reliable requests are accepted. If the peer does not answer the
	// handshake, requests to it are not sent (their operations time out).
	Reliable
	// Auto: like Reliable when the peer answers the handshake; otherwise
	// (within 3 InitialRTOs) the peer is reached by v1, with a note.
	Auto
)

var modeNames = [...]string{"v1", "reliable", "auto"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "v1", "reliable" or "auto".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return V1, fmt.Errorf("transport %q: want v1, reliable or auto", s)
}

// Errors.
var (
	// ErrHandshake: a Reliable peer did not answer the handshake.
	ErrHandshake = errors.New("rlink: the peer does not answer the reliable transport's handshake")
	// ErrWindowFull: more requests outstanding to a peer than twice the
	// session's Depth (the window and its backlog).
	ErrWindowFull = errors.New("rlink: more requests outstanding than the transport's depth")
	// ErrTooLong: a v1 frame too long to carry with the transport's 24
	// bytes of overhead within the frame ceiling.
	ErrTooLong = errors.New("rlink: frame too long for the reliable transport (24 bytes of overhead)")
)

// Config configures a Link.
type Config struct {
	// Transport are the session parameters (Depth, timeouts, ...); its
	// MaxFrame defaults to the inner link's.
	Transport transport.Config
	// MAC is the endpoint's unicast address; zero selects the inner link's.
	MAC wire.MAC
	// Clock gives the time; nil selects the monotonic clock.
	Clock transport.Clock
	// OnFallback, if set, is called (without locks held) when an Auto peer
	// does not answer the handshake and is reached by v1 from then on.
	OnFallback func(peer wire.MAC)
}

// Stats are a Link's counters, over all its peers.
type Stats struct {
	CRCDrops  uint64 `json:"crc_drops"` // frames dropped for a bad CRC32C (or damaged in a cheaper field)
	Malformed uint64 `json:"malformed"` // reliable frames failing a cheap check with a good CRC
	NotForUs  uint64 `json:"not_for_us"`
	Passed    uint64 `json:"passed"` // frames passed through unchanged (v1 peers, raw)

	Handshakes        uint64 `json:"handshakes"`         // sessions established as initiator
	HandshakeFailures uint64 `json:"handshake_failures"` // handshakes unanswered
	Fallbacks         uint64 `json:"fallbacks"`          // Auto peers reached by v1 after an unanswered handshake
	SessionFailures   uint64 `json:"session_failures"`   // sessions failed after retries or an RST
	Unanswered        uint64 `json:"unanswered"`         // requests the endpoint reported dropped (link.Tracker)
	LateAnswers       uint64 `json:"late_answers"`       // answers written for such requests, discarded

	Sent            uint64 `json:"sent"`
	Retransmitted   uint64 `json:"retransmitted"`
	FastRetransmits uint64 `json:"fast_retransmits"`
	Timeouts        uint64 `json:"timeouts"`
	// SpuriousTimeouts: timeout episodes found spurious (a request the
	// timer resent answered twice) and their congestion-window cut undone.
	SpuriousTimeouts uint64 `json:"spurious_timeouts"`
	NAKsReceived     uint64 `json:"naks_received"`
	Responses        uint64 `json:"responses"`
	Duplicates       uint64 `json:"duplicates"`

	Executed  uint64 `json:"executed"`
	Replays   uint64 `json:"replays"`
	Gaps      uint64 `json:"gaps"`
	NAKsSent  uint64 `json:"naks_sent"`
	Stale     uint64 `json:"stale"`
	NoSession uint64 `json:"no_session"`
}

type peer struct {
	mac  wire.MAC
	mode Mode

	mu       sync.Mutex
	s        *transport.Sender   // initiator side, made on first use
	r        *transport.Receiver // responder side, made on first use
	fallback bool                // Auto peer reached by v1
	// carried: requests to the peer go through the transport (not V1,
	// not fallen back): link.Carrier, read without the lock.
	carried atomic.Bool
	// Requests the transport stopped carrying (a failed session, a
	// fallback to v1), to report (link.Carrier) once p.mu is released.
	lost   []lostReq
	change chan struct{} // signalled when the session state changes
	out    [][]byte      // frames to write, under mu

	// Requests written while the session's window had no room (the
	// oldest request without a response holds it while later ones were
	// answered): v1 frames in order, queued as room frees. At most Depth.
	backlog     [][]byte
	blHead, blN int

	outFirst [][]byte // first transmissions to write, under mu

	// Responder side: the requests delivered to the endpoint and neither
	// answered nor reported dropped (Depth slots, in any order: the
	// endpoint may answer them out of order).
	exec    []execEntry
	exN     int
	refused []refusedRID // the latest requests reported dropped (a ring)
	refNext int
	touched bool // reader-owned: an ACK may be owed
}

// lostReq is a request the transport stopped carrying: abandoned, or sent
// as a plain v1 frame.
type lostReq struct {
	rid   uint32
	plain bool
}

// refusedRID is the Request ID of a request reported dropped, whose answer,
// were one written after all, is to be discarded.
type refusedRID struct {
	rid uint32
	set bool
}

// execEntry is a request delivered to the endpoint.
type execEntry struct {
	rid, psn uint32
	set      bool
}

// Link is the reliable transport as a link. It is safe for one reader and
// several writers, like any link.
type Link struct {
	inner    link.Link
	filter   link.Filter
	fw       link.FillWriter // the inner link's, or nil
	cfg      Config
	mac      wire.MAC
	maxFrame int
	clock    transport.Clock

	mu    sync.Mutex // serialises SetPeer
	peers atomic.Pointer[map[wire.MAC]*peer]

	// Reader state.
	rbufs   [][]byte
	rsizes  []int
	rn, ri  int
	touched []*peer

	// Frames written while the reader handles a batch (see Batches),
	// under qmu: q fills while processing or flushing, qSpare is the
	// batch being written.
	qmu        sync.Mutex
	q, qSpare  [][]byte
	processing bool // the reader handles a batch: frames that may wait, wait
	flushing   bool // the reader writes q: later frames queue behind it

	// Hold and Release, under qmu: the first transmissions of one peer
	// (hp, the first whose requests were held) kept while held > 0, in hq,
	// written at the last Release under hp.mu.
	held        int
	hp          *peer
	hq, hqSpare [][]byte
	hwmu        sync.Mutex // serialises the writes of Release (hqSpare), after hp.mu and before qmu

	// onLost is the endpoint's function for the requests the transport
	// stops carrying (link.Carrier); lostDue is set while a peer has
	// some to report.
	onLost  atomic.Pointer[func(dst wire.MAC, rid uint32, plain bool)]
	lostDue atomic.Bool

	kick      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	c struct {
		crc, malformed, notForUs, passed                                    atomic.Uint64
		handshakes, handshakeFail, fallbacks, sessionFail, unanswered, late atomic.Uint64
	}
}

// New wraps inner. The Link owns inner: Close closes it.
func New(inner link.Link, cfg Config) (*Link, error) {
	tc := cfg.Transport
	if tc.MaxFrame == 0 {
		tc.MaxFrame = inner.MaxFrame()
	}
	if _, err := transport.NewSender(tc, wire.MAC{}, wire.MAC{}); err != nil {
		return nil, err
	}
	cfg.Transport = tc
	l := &Link{inner: inner, cfg: cfg, mac: cfg.MAC, maxFrame: inner.MaxFrame(), clock: cfg.Clock,
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	if l.mac.IsZero() {
		l.mac = inner.Addr()
	}
	if l.clock == nil {
		l.clock = transport.NewMonotonicClock()
	}
	l.filter, _ = inner.(link.Filter)
	l.fw, _ = inner.(link.FillWriter)
	m := map[wire.MAC]*peer{}
	l.peers.Store(&m)
	const batch = 32
	l.rbufs = make([][]byte, batch)
	l.rsizes = make([]int, batch)
	for i := range l.rbufs {
		l.rbufs[i] = make([]byte, l.maxFrame+1)
	}
	l.touched = make([]*peer, 0, batch)
	l.q = make([][]byte, 0, 4*reliable.MaxDepth)
	l.qSpare = make([][]byte, 0, 4*reliable.MaxDepth)
	l.hq = make([][]byte, 0, 2*reliable.MaxDepth)
	l.hqSpare = make([][]byte, 0, 2*reliable.MaxDepth)
	l.wg.Add(1)
	go l.timers()
	return l, nil
}

// Link returns the link to give the endpoint: l itself, with the inner
// link's group filter and promiscuous mode (link.Filter) when it has them.
func (l *Link) Link() link.Link {
	if l.filter != nil {
		return &struct {
			*Link
			link.Filter
		}{l, l.filter}
	}
	return l
}

// SetPeer sets how mac is reached. Mode V1 removes the peer's transport
// state; a peer is V1 until set.
func (l *Link) SetPeer(mac wire.MAC, m Mode) error {
	if mac.IsGroup() || mac.IsZero() {
		return fmt.Errorf("rlink: peer %v: the reliable transport is unicast only", mac)
	}
	if m > Auto {
		return fmt.Errorf("rlink: peer %v: invalid mode %d", mac, m)
	}
	l.mu.Lock()
	old := *l.peers.Load()
	n := make(map[wire.MAC]*peer, len(old)+1)
	for k, v := range old {
		n[k] = v
	}
	var gone *peer
	if m == V1 {
		gone = n[mac]
		delete(n, mac)
	} else if p, ok := n[mac]; ok {
		p.mu.Lock()
		p.mode = m
		p.mu.Unlock()
	} else {
		p := &peer{mac: mac, mode: m, change: make(chan struct{}, 1), out: make([][]byte, 0, 2*reliable.MaxDepth),
			outFirst: make([][]byte, 0, 2*reliable.MaxDepth)}
		p.carried.Store(true)
		n[mac] = p
	}
	l.peers.Store(&n)
	l.mu.Unlock()
	if gone != nil {
		// Its requests in flight are abandoned with its state.
		gone.mu.Lock()
		gone.carried.Store(false)
		l.loseLocked(gone, false)
		gone.blN = 0
		gone.mu.Unlock()
		l.reportLost(gone)
	}
	return nil
}

// Carries reports whether requests written to dst go through the
// transport (link.Carrier): dst is a Reliable or Auto peer that has not
// fallen back to v1.
func (l *Link) Carries(dst wire.MAC) bool {
	p := l.peer(dst)
	return p != nil && p.carried.Load()
}

// SetLost sets the function called for each request the transport stops
// carrying (link.Carrier): abandoned with a failed session or a removed
// peer, or sent as a v1 frame when an Auto peer falls back.
func (l *Link) SetLost(fn func(dst wire.MAC, rid uint32, plain bool)) {
	if fn == nil {
		l.onLost.Store(nil)
		return
	}
	l.onLost.Store(&fn)
}

// loseLocked records every request of p that the transport no longer
// carries (its Sender's unanswered ones and the backlog), to be reported
// by reportLost; plain: they were sent as v1 frames. Under p.mu.
func (l *Link) loseLocked(p *peer, plain bool) {
	if p.s != nil {
		p.out = p.s.Unanswered(p.out[:0])
		for _, f := range p.out {
			p.lost = append(p.lost, lostReq{rid: wire.Frame(f[reliable.Headroom:]).RequestID(), plain: plain})
		}
		p.out = p.out[:0]
	}
	for i := range p.blN {
		f := p.backlog[(p.blHead+i)%len(p.backlog)]
		p.lost = append(p.lost, lostReq{rid: wire.Frame(f).RequestID(), plain: plain})
	}
	if len(p.lost) > 0 {
		l.lostDue.Store(true)
	}
}

// reportLost reports p's lost requests to the endpoint, without locks held.
func (l *Link) reportLost(p *peer) {
	p.mu.Lock()
	list := slices.Clone(p.lost)
	p.lost = p.lost[:0]
	p.mu.Unlock()
	fn := l.onLost.Load()
	if fn == nil {
		return
	}
	for _, r := range list {
		(*fn)(p.mac, r.rid, r.plain)
	}
}

// reportAllLost reports every peer's lost requests, when some are due.
func (l *Link) reportAllLost() {
	if !l.lostDue.Load() || !l.lostDue.Swap(false) {
		return
	}
	for _, p := range *l.peers.Load() {
		l.reportLost(p)
	}
}

func (l *Link) peer(mac wire.MAC) *peer { return (*l.peers.Load())[mac] }

// Open runs the handshake with mac now, if it has not run, and waits for
// its outcome: true when the session is established, false when an Auto
// peer fell back to v1 (or the peer is V1). A Reliable peer that does not
// answer gives ErrHandshake.
func (l *Link) Open(ctx context.Context, mac wire.MAC) (bool, error) {
	p := l.peer(mac)
	if p == nil {
		return false, nil
	}
	p.mu.Lock()
	if p.fallback {
		p.mu.Unlock()
		return false, nil
	}
	if err := l.ensureSenderLocked(p); err != nil {
		p.mu.Unlock()
		return false, err
	}
	l.flushLocked(p)
	p.mu.Unlock()
	for {
		p.mu.Lock()
		st, fb := p.s.State(), p.fallback
		p.mu.Unlock()
		switch {
		case fb:
			return false, nil
		case st == transport.Established:
			return true, nil
		case st == transport.Failed:
			return false, ErrHandshake
		}
		select {
		case <-p.change:
		case <-ctx.Done():
			return false, ctx.Err()
		case <-l.done:
			return false, link.ErrClosed
		}
	}
}

// ensureSenderLocked makes p's Sender and opens a session if none is
// open or being opened.
func (l *Link) ensureSenderLocked(p *peer) error {
	if p.s == nil {
		s, err := transport.NewSender(l.cfg.Transport, l.mac, p.mac)
		if err != nil {
			return err
		}
		p.s = s
	}
	if st := p.s.State(); st == transport.Closed || st == transport.Failed {
		p.s.Open(l.clock.Now(), rand.Uint32(), rand.Uint32())
		l.wakeTimers()
	}
	return nil
}

func (l *Link) wakeTimers() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// backlogLocked keeps the v1 frame f until the window has room; false when
// the backlog is full too.
func (l *Link) backlogLocked(p *peer, f []byte) bool {
	depth := l.cfg.Transport.Depth
	if depth == 0 {
		depth = transport.DefaultDepth
	}
	if p.backlog == nil {
		p.backlog = make([][]byte, depth)
	}
	if p.blN == len(p.backlog) {
		return false
	}
	i := (p.blHead + p.blN) % len(p.backlog)
	if p.backlog[i] == nil {
		p.backlog[i] = make([]byte, 0, l.maxFrame)
	}
	p.backlog[i] = append(p.backlog[i][:0], f...)
	p.blN++
	return true
}

// flushLocked queues the backlog as far as the window has room, then
// writes what p's Sender has to send.
func (l *Link) flushLocked(p *peer) {
	if p.s == nil {
		return
	}
	for p.blN > 0 && p.s.Room() {
		p.s.Queue(append(p.s.Buffer(), p.backlog[p.blHead]...))
		p.blHead = (p.blHead + 1) % len(p.backlog)
		p.blN--
	}
	p.out, p.outFirst = p.s.PendingSplit(l.clock.Now(), p.out[:0], p.outFirst[:0])
	for _, f := range p.out {
		_ = l.inner.Write(f) // a lost frame is what the transport recovers from
	}
	if len(p.outFirst) > 0 {
		l.qmu.Lock()
		if l.held > 0 && (l.hp == nil || l.hp == p) {
			// Held (Hold): written together at Release.
			l.hp = p
			l.hq = append(l.hq, p.outFirst...)
			l.qmu.Unlock()
			return
		}
		l.qmu.Unlock()
		l.sendFirst(p.outFirst)
	}
}

// sendFirst writes frames that may wait (first transmissions, fresh
// responses: their bytes stay unchanged until the peer has answered or
// acknowledged them): with the batch the reader writes when it handles
// one, at once otherwise.
func (l *Link) sendFirst(frames [][]byte) {
	l.qmu.Lock()
	if l.processing || l.flushing {
		l.q = append(l.q, frames...)
		l.qmu.Unlock()
		return
	}
	l.qmu.Unlock()
	if len(frames) == 1 {
		_ = l.inner.Write(frames[0])
		return
	}
	_, _ = l.inner.WriteBatch(frames) // a lost frame is what the transport recovers from
}

// flush ends the handling of a batch: it writes the frames kept meanwhile,
// and those queued while it writes, then lets writers write at once again.
// Reader only.
func (l *Link) flush() {
	l.qmu.Lock()
	l.processing = false
	for len(l.q) > 0 {
		batch := l.q
		l.q, l.qSpare = l.qSpare[:0], batch
		l.flushing = true
		l.qmu.Unlock()
		l.writeAll(batch)
		clear(l.qSpare) // keep no frames alive
		l.qmu.Lock()
	}
	l.flushing = false
	l.qmu.Unlock()
}

// writeAll writes batch with as few WriteBatch calls as the inner link
// takes; a frame that fails is skipped (the transport recovers it).
func (l *Link) writeAll(batch [][]byte) {
	for len(batch) > 0 {
		n, err := l.inner.WriteBatch(batch)
		if err != nil || n == 0 {
			n++
		}
		batch = batch[min(n, len(batch)):]
	}
}

// Hold makes the first transmissions of requests wait until Release
// (link.Batcher): the endpoint holds the link while it sends the first
// window of a DMA block, so that the window goes in one WriteBatch. The
// requests of the first peer written while held wait; others go as usual.
func (l *Link) Hold() {
	l.qmu.Lock()
	l.held++
	l.qmu.Unlock()
}

// Release ends a Hold. The last one writes the requests kept, with one
// WriteBatch, under their peer's lock: a slot's frame is rewritten only
// under it (by a new request in the slot once an earlier transmission was
// answered), so the frames cannot change while the batch is written.
func (l *Link) Release() {
	var p *peer
	for {
		l.qmu.Lock()
		hp, last := l.hp, l.held == 1
		l.qmu.Unlock()
		p = nil
		if last && hp != nil {
			p = hp
			p.mu.Lock()
		}
		l.hwmu.Lock()
		l.qmu.Lock()
		if l.held != 1 || l.hp == p {
			break
		}
		// The last Release, and requests held of a peer whose lock it
		// does not hold (kept since it looked): look again.
		l.qmu.Unlock()
		l.hwmu.Unlock()
		if p != nil {
			p.mu.Unlock()
		}
	}
	defer func() {
		l.hwmu.Unlock()
		if p != nil {
			p.mu.Unlock()
		}
	}()
	l.held--
	if l.held > 0 || l.hp == nil {
		l.qmu.Unlock()
		return
	}
	batch := l.hq
	l.hq, l.hqSpare = l.hqSpare[:0], batch
	l.hp = nil
	l.qmu.Unlock()
	l.writeAll(batch)
	clear(l.hqSpare) // keep no frames alive
}

// Write hands one frame from the endpoint to the medium: through the
// transport for a reliable peer, unchanged otherwise.
func (l *Link) Write(f []byte) error {
	_, err := l.write(f, 0, 0, nil)
	return err
}

// WriteFill is Write for a frame whose data, frame[at:at+m], fill writes
// (link.FillWriter): for a reliable peer straight into the transport's copy
// of the frame (the request's slot in the window, the response's in the
// replay cache), so that a DMA fragment's payload is copied once, from its
// source; for any other peer through the inner link's WriteFill, or into
// frame before the inner link's Write.
func (l *Link) WriteFill(frame []byte, at, m int, fill func(data []byte) bool) (bool, error) {
	if at < 0 || m < 0 || at+m > len(frame) {
		panic("rlink: WriteFill: the data lies outside the frame")
	}
	return l.write(frame, at, m, fill)
}

// passFill writes f unchanged to the inner link, its data filled by fill
// when fill is set (see WriteFill).
func (l *Link) passFill(f []byte, at, m int, fill func([]byte) bool) (bool, error) {
	if fill == nil {
		return true, l.inner.Write(f)
	}
	if l.fw != nil {
		return l.fw.WriteFill(f, at, m, fill)
	}
	if !fill(f[at : at+m]) {
		return false, nil
	}
	return true, l.inner.Write(f)
}

// refuseFill lets fill, if set, write the data of a frame that is refused
// (link.FillWriter calls fill exactly once); false when it cancels it.
func refuseFill(f []byte, at, m int, fill func([]byte) bool) bool {
	return fill == nil || fill(f[at:at+m])
}

// appendFill appends frame to b, its data frame[at:at+m] written by fill
// (when set) in b instead of copied; false when fill cancels the frame. b
// has room for frame (a transport buffer of MaxFrame bytes).
func appendFill(b, frame []byte, at, m int, fill func([]byte) bool) ([]byte, bool) {
	if fill == nil {
		return append(b, frame...), true
	}
	b = append(b, frame[:at]...)
	n := len(b)
	b = slices.Grow(b, m)[:n+m]
	if !fill(b[n : n+m]) {
		return b[:n], false
	}
	return append(b, frame[at+m:]...), true
}

// write is Write and WriteFill (fill nil: f is whole).
func (l *Link) write(f []byte, at, m int, fill func([]byte) bool) (bool, error) {
	if len(f) < wire.ParamOffset+4 || f[12] != byte(wire.EtherType>>8) || f[13] != byte(wire.EtherType&0xff) || f[14] != wire.Magic {
		return l.passFill(f, at, m, fill)
	}
	p := l.peer(wire.MAC(f[0:6]))
	if p == nil {
		return l.passFill(f, at, m, fill)
	}
	cmd := wire.Cmd(f[15])
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case cmd.IsResponse():
		rid := wire.Frame(f).RequestID()
		if j := p.findExec(rid); j >= 0 {
			// The answer to the request delivered with this Request ID.
			e := p.exec[j]
			if len(f) > p.r.MaxV1Frame() {
				if !refuseFill(f, at, m, fill) {
					return false, nil
				}
				p.exec[j].set = false
				p.exN--
				p.r.RefusePSN(e.psn)
				return true, ErrTooLong
			}
			b, ok := appendFill(p.r.ResponseBufferPSN(e.psn), f, at, m, fill)
			if !ok {
				// Cancelled: the request stays delivered, for the
				// answer the endpoint writes instead.
				return false, nil
			}
			p.exec[j].set = false
			p.exN--
			if fr := p.r.RespondPSN(e.psn, b); fr != nil {
				p.outFirst = append(p.outFirst[:0], fr)
				l.sendFirst(p.outFirst)
			}
			return true, nil
		}
		if p.takeRefused(rid) {
			// The answer to a request reported dropped: the initiator
			// resends it and it executes then; sending this one too
			// would execute it twice.
			l.c.late.Add(1)
			return refuseFill(f, at, m, fill), nil
		}
		return l.passFill(f, at, m, fill) // the answer to a v1 request of the peer
	case !cmd.IsRequest() || p.fallback || p.mode == V1:
		return l.passFill(f, at, m, fill)
	}
	if err := l.ensureSenderLocked(p); err != nil {
		return refuseFill(f, at, m, fill), err
	}
	if len(f) > p.s.MaxV1Frame() {
		return refuseFill(f, at, m, fill), ErrTooLong
	}
	armed := false
	if _, ok := p.s.Deadline(); ok {
		armed = true
	}
	if p.blN > 0 || !p.s.Room() {
		if !refuseFill(f, at, m, fill) {
			return false, nil
		}
		if !l.backlogLocked(p, f) {
			return true, ErrWindowFull
		}
	} else {
		b, ok := appendFill(p.s.Buffer(), f, at, m, fill)
		if !ok {
			return false, nil
		}
		p.s.Queue(b)
	}
	l.flushLocked(p)
	if !armed {
		l.wakeTimers()
	}
	return true, nil
}

// WriteBatch writes the frames one by one; see Write.
func (l *Link) WriteBatch(frames [][]byte) (int, error) {
	for i, f := range frames {
		if err := l.Write(f); err != nil {
			return i, err
		}
	}
	return len(frames), nil
}

// findExec returns the slot of p's delivered request with Request ID rid,
// or -1. Under p.mu. A request's slot is its Request ID modulo the slots
// when that one is free (Request IDs are consecutive), else the next free.
func (p *peer) findExec(rid uint32) int {
	if p.exN == 0 {
		return -1
	}
	n := len(p.exec)
	for k, i := 0, int(rid%uint32(n)); k < n; k, i = k+1, i+1 {
		if i == n {
			i = 0
		}
		if e := &p.exec[i]; e.set && e.rid == rid {
			return i
		}
	}
	return -1
}

// addExec records a request delivered to the endpoint; false when every
// slot is taken.
func (p *peer) addExec(rid, psn uint32) bool {
	n := len(p.exec)
	if p.exN == n {
		return false
	}
	for k, i := 0, int(rid%uint32(n)); k < n; k, i = k+1, i+1 {
		if i == n {
			i = 0
		}
		if !p.exec[i].set {
			p.exec[i] = execEntry{rid: rid, psn: psn, set: true}
			p.exN++
			return true
		}
	}
	return false
}

// Dropped is the endpoint's report that it will not answer the request
// frame f it read from l (link.Tracker): a request of a reliable peer is
// then left unacknowledged, and its initiator resends it; a later answer
// to it is discarded. Frames of no delivered request are ignored.
func (l *Link) Dropped(f []byte) {
	if len(f) < wire.ParamOffset+4 || f[14] != wire.Magic || !wire.Cmd(f[15]).IsRequest() {
		return
	}
	p := l.peer(wire.MAC(f[6:12]))
	if p == nil {
		return
	}
	rid := wire.Frame(f).RequestID()
	p.mu.Lock()
	if j := p.findExec(rid); j >= 0 {
		e := p.exec[j]
		p.exec[j].set = false
		p.exN--
		p.r.RefusePSN(e.psn)
		p.refused[p.refNext] = refusedRID{rid: e.rid, set: true}
		p.refNext = (p.refNext + 1) % len(p.refused)
		l.c.unanswered.Add(1)
	}
	p.mu.Unlock()
}

// takeRefused reports whether rid is the Request ID of a request reported
// dropped, and forgets it.
func (p *peer) takeRefused(rid uint32) bool {
	for i, r := range p.refused {
		if r.set && r.rid == rid {
			p.refused[i].set = false
			return true
		}
	}
	return false
}

// ReadBatch delivers frames to the endpoint: v1 and raw frames unchanged,
// and the v1 frames reliable DATA frames carry. Control frames, duplicates
// and damaged frames are consumed here.
func (l *Link) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	for {
		if l.ri == l.rn {
			n, err := l.readInner(l.rbufs, l.rsizes)
			if err != nil {
				return 0, err
			}
			l.rn, l.ri = n, 0
		}
		k := 0
		for l.ri < l.rn && k < len(bufs) {
			f := l.rbufs[l.ri][:l.rsizes[l.ri]]
			if at, n := l.handle(f); n > 0 {
				sizes[k] = copy(bufs[k], f[at:at+n])
				k++
			}
			l.ri++
		}
		l.reportAllLost()
		if k > 0 {
			return k, nil
		}
	}
}

// ReadBatchAt is ReadBatch without a copy (link.OffsetReader): the frames
// are received into bufs and handled there; frame i for the endpoint is
// bufs[i][offs[i]:offs[i]+sizes[i]], the v1 frame inside a DATA frame
// starting 20 bytes in. Frames consumed here leave their buffers behind
// the ones returned.
func (l *Link) ReadBatchAt(bufs [][]byte, offs, sizes []int) (int, error) {
	if l.ri < l.rn {
		// Frames left by ReadBatch: delivered as it delivers them.
		n, err := l.ReadBatch(bufs, sizes)
		clear(offs[:n])
		return n, err
	}
	for {
		n, err := l.readInner(bufs, sizes)
		if err != nil {
			return 0, err
		}
		k := 0
		for i := range n {
			if at, m := l.handle(bufs[i][:sizes[i]]); m > 0 {
				bufs[k], bufs[i] = bufs[i], bufs[k]
				offs[k], sizes[k] = at, m
				k++
			}
		}
		l.reportAllLost()
		if k > 0 {
			return k, nil
		}
	}
}

// readInner reads a batch from the medium into bufs. About to wait for
// it, it writes the ACKs owed, then every frame kept while the previous
// batch was handled; after it, frames that may wait are kept until the
// next call (see sendFirst).
func (l *Link) readInner(bufs [][]byte, sizes []int) (int, error) {
	for _, p := range l.touched {
		p.touched = false
		p.mu.Lock()
		if a := p.r.FlushAck(); a != nil {
			l.qmu.Lock()
			l.q = append(l.q, a) // written below, before any further use of the Receiver
			l.qmu.Unlock()
		}
		p.mu.Unlock()
	}
	l.touched = l.touched[:0]
	l.flush()
	n, err := l.inner.ReadBatch(bufs, sizes)
	if err != nil {
		return 0, err
	}
	l.qmu.Lock()
	l.processing = true
	l.qmu.Unlock()
	return n, nil
}

// handle processes one received frame, in place. The frame for the
// endpoint, if any, is f[at:at+n] (n 0: none).
func (l *Link) handle(f []byte) (at, n int) {
	up := func(b []byte) (int, int) {
		return len(f) - cap(b), len(b) // b is f[at:at+len(b)], and f has no spare capacity
	}
	f = f[:len(f):len(f)]
	if !reliable.IsReliable(f) {
		l.c.passed.Add(1)
		return up(f)
	}
	h, prob := reliable.Parse(f, l.maxFrame)
	if prob != reliable.OK {
		if reliable.Corrupt(f) {
			l.c.crc.Add(1)
		} else {
			l.c.malformed.Add(1)
		}
		return 0, 0
	}
	if wire.MAC(f[0:6]) != l.mac {
		l.c.notForUs.Add(1)
		return 0, 0
	}
	p := l.peer(wire.MAC(f[6:12]))
	if p == nil {
		if !reliable.CheckCRC(f, h) {
			// Damaged on the way (most likely in its source MAC, which
			// now names no peer): a CRC drop like any other.
			l.c.crc.Add(1)
			return 0, 0
		}
		// Not a reliable peer: to the endpoint, whose raw policy judges
		// it as on a v1 engine.
		l.c.passed.Add(1)
		return up(f)
	}
	if h.Flags&reliable.FlagRsp != 0 {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.s == nil {
			return 0, 0 // no session of ours: nothing to answer
		}
		prev := p.s.State()
		res := p.s.OnFrame(l.clock.Now(), f, h)
		switch res.Event {
		case transport.EventEstablished:
			l.c.handshakes.Add(1)
			signal(p.change)
		case transport.EventFailed:
			l.failedLocked(p, prev)
		}
		l.flushLocked(p)
		if res.Event == transport.EventResponse {
			return up(reliable.Decapsulate(f, h))
		}
		return 0, 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.r == nil {
		r, err := transport.NewReceiver(l.cfg.Transport, l.mac, p.mac)
		if err != nil {
			return 0, 0
		}
		depth := l.cfg.Transport.Depth
		if depth == 0 {
			depth = transport.DefaultDepth
		}
		p.r = r
		p.exec = make([]execEntry, depth)
		p.refused = make([]refusedRID, depth)
	}
	if !p.touched {
		p.touched = true
		l.touched = append(l.touched, p)
	}
	d := p.r.OnFrame(f, h)
	if d.Control != nil {
		_ = l.inner.Write(d.Control)
	}
	if d.Verdict != transport.Execute {
		return 0, 0
	}
	v1 := reliable.Decapsulate(f, h)
	if len(v1) < wire.ParamOffset+4 || v1[wire.HeaderLen] != wire.Magic || !wire.Cmd(v1[wire.HeaderLen+1]).IsRequest() ||
		p.findExec(wire.Frame(v1).RequestID()) >= 0 || !p.addExec(wire.Frame(v1).RequestID(), d.PSN) {
		// Not a v1 request inside, or one whose answer could not be
		// told from another's: nothing the endpoint could answer.
		p.r.RefusePSN(d.PSN)
		l.c.malformed.Add(1)
		return 0, 0
	}
	return up(v1)
}

// failedLocked handles the end of p's session: an unanswered handshake
// (prev SynSent) makes an Auto peer a v1 peer and sends what was queued as
// v1; otherwise the session's outstanding requests are abandoned (their
// operations time out) and the next request opens a new session.
func (l *Link) failedLocked(p *peer, prev transport.SenderState) {
	defer signal(p.change)
	if prev != transport.SynSent {
		l.c.sessionFail.Add(1)
		l.loseLocked(p, false)
		p.blN = 0 // abandoned with the session: their operations time out
		return
	}
	l.c.handshakeFail.Add(1)
	if p.mode != Auto {
		l.loseLocked(p, false)
		p.blN = 0 // abandoned: their operations time out
		return
	}
	p.fallback = true
	p.carried.Store(false)
	l.c.fallbacks.Add(1)
	l.loseLocked(p, true) // sent as v1 below: their timers start now
	p.out = p.s.Unsent(p.out[:0])
	for _, f := range p.out {
		h, _ := reliable.Parse(f, 1<<16)
		_ = l.inner.Write(reliable.Decapsulate(f, h))
	}
	for ; p.blN > 0; p.blN-- {
		_ = l.inner.Write(p.backlog[p.blHead])
		p.blHead = (p.blHead + 1) % len(p.backlog)
	}
	if fn := l.cfg.OnFallback; fn != nil {
		go fn(p.mac)
	}
}

// timers runs every session's timers.
func (l *Link) timers() {
	defer l.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		next, armed := time.Duration(0), false
		for _, p := range *l.peers.Load() {
			p.mu.Lock()
			if p.s != nil {
				if d, ok := p.s.Deadline(); ok && (!armed || d < next) {
					next, armed = d, true
				}
			}
			p.mu.Unlock()
		}
		wait := time.Hour
		if armed {
			wait = max(next-l.clock.Now(), 0)
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-l.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		case <-l.done:
			return
		}
		now := l.clock.Now()
		for _, p := range *l.peers.Load() {
			p.mu.Lock()
			if p.s != nil {
				prev := p.s.State()
				if res := p.s.OnTimer(now); res.Event == transport.EventFailed {
					l.failedLocked(p, prev)
				}
				l.flushLocked(p)
			}
			p.mu.Unlock()
		}
		l.reportAllLost()
	}
}

// Addr returns the inner link's address.
func (l *Link) Addr() wire.MAC { return l.inner.Addr() }

// MaxFrame returns the inner link's frame ceiling. Frames to reliable
// peers must be 24 bytes shorter (see ErrTooLong): configure the
// endpoint's fragment size for them with FragmentCeiling.
func (l *Link) MaxFrame() int { return l.inner.MaxFrame() }

// EndpointLimits are the endpoint's DMA fragment ceiling and window
// (endpoint Config.MaxFragment and Outstanding) for peers reached through
// the transport on a medium of maxFrame-byte frames: fragments 24 bytes
// shorter than v1's, and the transport's window of fragments in flight.
// Every stack that puts an endpoint on the transport (the one-shot
// commands, the hub) opens it with these.
func EndpointLimits(maxFrame int) (maxFragment uint32, outstanding int) {
	return FragmentCeiling(maxFrame), transport.DefaultDepth
}

// FragmentCeiling returns the DMA fragment ceiling for reliable peers on a
// medium with frames of up to maxFrame bytes: 4*floor((maxFrame-56)/4).
func FragmentCeiling(maxFrame int) uint32 {
	return wire.FragmentCeiling(maxFrame - reliable.Overhead)
}

// Close stops the timers and closes the inner link.
func (l *Link) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.done)
		err = l.inner.Close()
		l.wg.Wait()
	})
	return err
}

// Unwrap returns the inner link.
func (l *Link) Unwrap() link.Link { return l.inner }

// Stats returns the counters, summed over the peers.
func (l *Link) Stats() Stats {
	st := Stats{
		CRCDrops: l.c.crc.Load(), Malformed: l.c.malformed.Load(), NotForUs: l.c.notForUs.Load(), Passed: l.c.passed.Load(),
		Handshakes: l.c.handshakes.Load(), HandshakeFailures: l.c.handshakeFail.Load(), Fallbacks: l.c.fallbacks.Load(),
		SessionFailures: l.c.sessionFail.Load(), Unanswered: l.c.unanswered.Load(), LateAnswers: l.c.late.Load(),
	}
	for _, p := range *l.peers.Load() {
		p.mu.Lock()
		if p.s != nil {
			s := p.s.Stats()
			st.Sent += s.Sent
			st.Retransmitted += s.Retransmitted
			st.FastRetransmits += s.FastRetransmits
			st.Timeouts += s.Timeouts
			st.SpuriousTimeouts += s.SpuriousTimeouts
			st.NAKsReceived += s.NAKs
			st.Responses += s.Responses
			st.Duplicates += s.Duplicates
			st.CRCDrops += s.CRCDrops
			st.Stale += s.Stale
		}
		if p.r != nil {
			r := p.r.Stats()
			st.Executed += r.Executed
			st.Replays += r.Replays
			st.Gaps += r.Gaps
			st.NAKsSent += r.NAKs
			st.Stale += r.Stale
			st.NoSession += r.NoSession
			st.CRCDrops += r.CRCDrops
		}
		p.mu.Unlock()
	}
	return st
}

// PeerInfo is the transport state towards one peer.
type PeerInfo struct {
	Mode     Mode
	State    transport.SenderState
	Fallback bool
	SRTT     time.Duration
	RTO      time.Duration
	Cwnd     float64
	Depth    int
}

// Peer returns the transport state towards mac.
func (l *Link) Peer(mac wire.MAC) (PeerInfo, bool) {
	p := l.peer(mac)
	if p == nil {
		return PeerInfo{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pi := PeerInfo{Mode: p.mode, Fallback: p.fallback}
	if p.s != nil {
		pi.State, pi.SRTT, pi.RTO, pi.Cwnd, pi.Depth = p.s.State(), p.s.SRTT(), p.s.RTO(), p.s.Cwnd(), p.s.Depth()
	}
	return pi, true
}
