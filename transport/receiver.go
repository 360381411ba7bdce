package transport

import (
	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// Verdict is what a Receiver decided about a request frame.
type Verdict uint8

// Verdicts.
const (
	// Drop: the frame is consumed; Control may hold a frame to send (an
	// ACK, a NAK, a SYN answer or an RST).
	Drop Verdict = iota
	// Execute: the frame is the next request in PSN order (Decision.PSN).
	// Hand its v1 frame (reliable.Decapsulate) to the v1 responder, then
	// call RespondPSN with the v1 response, or RefusePSN when the v1 layer
	// dropped the request without an answer. Several requests may be
	// executing at once (handed to the v1 layer together, in PSN order).
	Execute
	// Replay: a retransmitted request that was already executed; Control
	// is its cached response, to be sent again. Nothing executes.
	Replay
)

var verdictNames = [...]string{"drop", "execute", "replay"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "verdict(?)"
}

// Decision is the outcome of Receiver.OnFrame.
type Decision struct {
	Verdict Verdict
	PSN     uint32
	// Control is a frame to hand to the link now, or nil. It is valid
	// until the next call on the Receiver.
	Control []byte
}

// ReceiverStats are a Receiver's counters.
type ReceiverStats struct {
	Executed  uint64 // requests handed to the v1 layer in PSN order
	Replays   uint64 // retransmitted requests answered from the replay cache
	Refused   uint64 // requests the v1 layer dropped without an answer (not acknowledged)
	Gaps      uint64 // requests after a missing PSN (dropped)
	NAKs      uint64 // NAKs sent (one per gap)
	Stale     uint64 // requests older than the replay cache, or without a cached answer
	NoSession uint64 // frames of an unknown session (answered with RST)
	Syns      uint64 // SYNs accepted
	CRCDrops  uint64 // frames dropped for a bad CRC32C
	Malformed uint64 // SYNs with bad parameters
	AcksSent  uint64 // pure ACKs sent
	Responses uint64 // responses sent for the first time
}

type cacheSlot struct {
	buf   []byte // the sealed response frame
	psn   uint32
	valid bool     // buf is the response to psn
	run   runState // for psn in [expected, expected+depth): executing or refused
}

// runState is where a request handed to the v1 layer stands.
type runState uint8

const (
	runNone      runState = iota
	runExecuting          // handed to the v1 layer, no answer yet
	runRefused            // dropped by the v1 layer without an answer: executes again when resent
)

// Receiver is the responder side of one session from one initiator MAC.
// Its session is replaced by every SYN with a new session ID.
type Receiver struct {
	cfg         Config
	local, peer wire.MAC

	open      bool
	session   uint32
	isn       uint32
	depth     int
	expected  uint32 // the oldest PSN without a response: every request before it is answered
	next      uint32 // the next PSN to execute (expected <= next <= expected+depth)
	executing int    // requests between Execute and RespondPSN/RefusePSN
	peerAck   uint32 // the initiator's APSN: responses before it arrived
	nakSent   bool   // a NAK for expected is out
	ackOwed   bool   // a pure ACK is owed (coalesced until FlushAck)
	nakOwed   bool   // a later request arrived while some executed: NAK at FlushAck
	cache     []cacheSlot
	ctl       []byte

	st ReceiverStats
}

// NewReceiver makes the responder side of sessions from peer to local.
func NewReceiver(cfg Config, local, peer wire.MAC) (*Receiver, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Receiver{cfg: c, local: local, peer: peer, cache: make([]cacheSlot, c.Depth), ctl: make([]byte, 0, 64)}
	for i := range r.cache {
		r.cache[i].buf = make([]byte, 0, c.MaxFrame)
	}
	return r, nil
}

// Stats returns the counters.
func (r *Receiver) Stats() ReceiverStats { return r.st }

// Expected returns the oldest PSN without a response (the cumulative
// acknowledgement): the next PSN the receiver executes when none is
// executing.
func (r *Receiver) Expected() uint32 { return r.expected }

// Executing reports whether a request is being executed: Execute was
// decided and neither RespondPSN nor RefusePSN has been called for it
// since.
func (r *Receiver) Executing() bool { return r.executing > 0 }

// ExecutingPSN reports whether the request with PSN psn is being executed.
func (r *Receiver) ExecutingPSN(psn uint32) bool {
	sl := &r.cache[psn%uint32(len(r.cache))]
	return r.open && sl.psn == psn && sl.run == runExecuting && seqDiff(psn, r.expected) >= 0
}

// Session returns the session ID and whether one is open.
func (r *Receiver) Session() (uint32, bool) { return r.session, r.open }

func (r *Receiver) header(flags reliable.Flags, psn uint32) reliable.Header {
	return reliable.Header{Flags: flags | reliable.FlagAck | reliable.FlagRsp, Session: r.session,
		PSN: psn, APSN: r.expected, Credits: uint16(r.cfg.Credits)}
}

// OnFrame handles a frame from the initiator side whose cheap fields
// reliable.Parse accepted (h): a SYN, a request, or a pure ACK. It checks
// the session and the PSN, then the CRC, and decides (docs/reliable.md,
// "Responder").
func (r *Receiver) OnFrame(frame []byte, h reliable.Header) Decision {
	if h.Flags&reliable.FlagRsp != 0 {
		// Not ours: a frame of the responder side of some session.
		r.drop(frame, h, &r.st.Stale)
		return Decision{}
	}
	if h.Flags&reliable.FlagSyn != 0 {
		return r.onSyn(frame, h)
	}
	if !r.open || h.Session != r.session {
		if !reliable.CheckCRC(frame, h) {
			r.st.CRCDrops++
			return Decision{}
		}
		r.st.NoSession++
		r.ctl = reliable.AppendControl(r.ctl[:0], r.peer, r.local, reliable.Header{
			Flags: reliable.FlagRst | reliable.FlagRsp, Session: h.Session, PSN: h.PSN})
		return Decision{Control: r.ctl}
	}
	if h.Flags&reliable.FlagData == 0 {
		// A pure ACK of responses.
		if !reliable.CheckCRC(frame, h) {
			r.st.CRCDrops++
			return Decision{}
		}
		r.noteAck(h.APSN)
		return Decision{}
	}
	if off := seqDiff(h.PSN, r.expected); off >= 0 {
		return r.onRequest(frame, h, off)
	}
	// Before expected: a retransmission of a request already answered.
	d := seqDiff(h.PSN, r.expected)
	sl := &r.cache[h.PSN%uint32(len(r.cache))]
	if d < -r.depth || !sl.valid || sl.psn != h.PSN {
		if !reliable.CheckCRC(frame, h) {
			r.st.CRCDrops++
			return Decision{}
		}
		r.st.Stale++
		r.ackOwed = true
		return Decision{}
	}
	return r.replay(frame, h, sl)
}

// replay answers a request whose response sl holds, once its CRC holds.
func (r *Receiver) replay(frame []byte, h reliable.Header, sl *cacheSlot) Decision {
	if !reliable.CheckCRC(frame, h) {
		r.st.CRCDrops++
		return Decision{}
	}
	r.noteAck(h.APSN)
	r.st.Replays++
	return Decision{Verdict: Replay, PSN: h.PSN, Control: sl.buf}
}

// onRequest decides about a request off PSNs at or after expected: the
// next one in order executes; one already answered (while an older one
// waits for its retransmission) is replayed; one executing is a
// duplicate; one after the next is a gap.
func (r *Receiver) onRequest(frame []byte, h reliable.Header, off int) Decision {
	if off >= r.depth {
		// Beyond any window the initiator may use.
		r.drop(frame, h, &r.st.Stale)
		return Decision{}
	}
	sl := &r.cache[h.PSN%uint32(len(r.cache))]
	if sl.psn == h.PSN {
		switch {
		case sl.run == runExecuting:
			// The same PSN again while its first copy executes.
			r.drop(frame, h, &r.st.Stale)
			return Decision{}
		case sl.valid:
			return r.replay(frame, h, sl)
		}
	}
	if h.PSN != r.next {
		if !reliable.CheckCRC(frame, h) {
			r.st.CRCDrops++
			return Decision{}
		}
		r.st.Gaps++
		if r.executing > 0 {
			r.nakOwed = true
			return Decision{}
		}
		if r.nakSent {
			return Decision{}
		}
		r.nakSent = true
		r.st.NAKs++
		r.ctl = reliable.AppendControl(r.ctl[:0], r.peer, r.local, r.header(reliable.FlagNak, 0))
		return Decision{Control: r.ctl}
	}
	if !reliable.CheckCRC(frame, h) {
		r.st.CRCDrops++
		return Decision{}
	}
	r.noteAck(h.APSN)
	sl.psn, sl.valid, sl.run = h.PSN, false, runExecuting
	r.executing++
	r.next++
	// Past requests answered while this one waited for its retransmission.
	for seqDiff(r.next, r.expected) < r.depth {
		n := &r.cache[r.next%uint32(len(r.cache))]
		if n.psn != r.next || !(n.valid || n.run == runExecuting) {
			break
		}
		r.next++
	}
	return Decision{Verdict: Execute, PSN: h.PSN}
}

func (r *Receiver) noteAck(apsn uint32) {
	if seqDiff(apsn, r.peerAck) > 0 && seqDiff(apsn, r.expected) <= 0 {
		r.peerAck = apsn
	}
}

func (r *Receiver) onSyn(frame []byte, h reliable.Header) Decision {
	if !reliable.CheckCRC(frame, h) {
		r.st.CRCDrops++
		return Decision{}
	}
	syn, ok := reliable.ParseSyn(reliable.Body(frame, h))
	if !ok || syn.Depth == 0 || int(syn.MaxFrame) < reliable.MinFrameLen+6 {
		r.st.Malformed++
		return Decision{}
	}
	if syn.Congestion != reliable.CongestionAIMD {
		// Both ends must run the same algorithm: refuse.
		r.st.Malformed++
		r.ctl = reliable.AppendControl(r.ctl[:0], r.peer, r.local, reliable.Header{
			Flags: reliable.FlagRst | reliable.FlagRsp, Session: h.Session, PSN: h.PSN})
		return Decision{Control: r.ctl}
	}
	if !r.open || h.Session != r.session || h.PSN != r.isn {
		// A new session replaces the old one and its cache.
		r.open, r.session, r.isn = true, h.Session, h.PSN
		r.expected, r.next, r.peerAck = h.PSN, h.PSN, h.PSN
		r.depth = min(int(syn.Depth), r.cfg.Depth)
		r.executing = 0
		r.nakSent, r.ackOwed, r.nakOwed = false, false, false
		for i := range r.cache {
			r.cache[i].valid, r.cache[i].run = false, runNone
			r.cache[i].psn = h.PSN - 1 // matches no PSN of the window
		}
		r.st.Syns++
	}
	// A repeated SYN of the open session gets the same answer again.
	r.ctl = reliable.AppendSyn(r.ctl[:0], r.peer, r.local,
		reliable.Header{Flags: reliable.FlagSyn | reliable.FlagAck | reliable.FlagRsp, Session: r.session,
			APSN: r.isn, Credits: uint16(min(r.cfg.Credits, r.depth))},
		reliable.Syn{Depth: uint16(r.depth), Congestion: reliable.CongestionAIMD, MaxFrame: uint16(r.cfg.MaxFrame)})
	return Decision{Control: r.ctl}
}

// oldest returns the oldest PSN being executed, and false when none is.
func (r *Receiver) oldest() (uint32, bool) {
	if r.executing == 0 {
		return 0, false
	}
	for p := r.expected; p != r.next; p++ {
		if r.ExecutingPSN(p) {
			return p, true
		}
	}
	return 0, false
}

// ResponseBuffer is ResponseBufferPSN for the oldest request being
// executed.
func (r *Receiver) ResponseBuffer() []byte {
	p, _ := r.oldest()
	return r.ResponseBufferPSN(p)
}

// ResponseBufferPSN returns the buffer for the response to the request
// psn being executed: append its v1 frame (the first reliable.Headroom
// bytes are reserved), then pass it to RespondPSN. It is the request's
// replay cache slot.
func (r *Receiver) ResponseBufferPSN(psn uint32) []byte {
	sl := &r.cache[psn%uint32(len(r.cache))]
	return sl.buf[:reliable.Headroom]
}

// MaxV1Frame is the largest v1 response frame: MaxFrame less the
// transport's overhead.
func (r *Receiver) MaxV1Frame() int { return r.cfg.MaxFrame - reliable.Overhead }

// Respond is RespondPSN for the oldest request being executed.
func (r *Receiver) Respond(b []byte) []byte {
	p, _ := r.oldest()
	return r.RespondPSN(p, b)
}

// RespondPSN seals the v1 response in b (from ResponseBufferPSN) for the
// request psn being executed (ExecutingPSN), keeps it in the replay cache,
// advances the cumulative acknowledgement over every answered request and
// returns the frame to hand to the link: the response with the cumulative
// ACK and the credits piggy-backed. The frame stays unchanged until the
// initiator has sent Depth later requests, so it may be handed to the link
// a little later, batched with others. It returns nil when psn is not being
// executed.
func (r *Receiver) RespondPSN(psn uint32, b []byte) []byte {
	if !r.ExecutingPSN(psn) {
		return nil
	}
	sl := &r.cache[psn%uint32(len(r.cache))]
	sl.run, sl.valid = runNone, true
	r.executing--
	if psn == r.expected {
		for r.expected != r.next {
			c := &r.cache[r.expected%uint32(len(r.cache))]
			if c.psn != r.expected || !c.valid {
				break
			}
			r.expected++
		}
		r.nakSent, r.ackOwed = false, false
	}
	sl.buf = reliable.Encapsulate(b, r.header(0, psn))
	r.st.Executed++
	r.st.Responses++
	return sl.buf
}

// Refuse is RefusePSN for the oldest request being executed.
func (r *Receiver) Refuse() {
	if p, ok := r.oldest(); ok {
		r.RefusePSN(p)
	}
}

// RefusePSN records that the v1 layer dropped the request psn being
// executed without an answer (a busy responder, an unparseable PDU): it is
// not acknowledged, so the initiator resends it, and it executes when it
// arrives again; no later request executes before it does.
func (r *Receiver) RefusePSN(psn uint32) {
	if !r.ExecutingPSN(psn) {
		return
	}
	r.cache[psn%uint32(len(r.cache))].run = runRefused
	r.executing--
	if seqDiff(psn, r.next) < 0 {
		r.next = psn
	}
	r.st.Refused++
}

// FlushAck returns a NAK if a request arrived ahead of its turn while
// another executed, else a pure cumulative ACK if one is owed (stale
// duplicates arrived since the last response), or nil: call it once per batch of
// received frames, so ACKs coalesce.
func (r *Receiver) FlushAck() []byte {
	if !r.open || r.executing > 0 {
		return nil
	}
	if r.nakOwed && !r.nakSent {
		r.nakOwed, r.nakSent, r.ackOwed = false, true, false
		r.st.NAKs++
		r.ctl = reliable.AppendControl(r.ctl[:0], r.peer, r.local, r.header(reliable.FlagNak, 0))
		return r.ctl
	}
	r.nakOwed = false
	if !r.ackOwed {
		return nil
	}
	r.ackOwed = false
	r.st.AcksSent++
	r.ctl = reliable.AppendControl(r.ctl[:0], r.peer, r.local, r.header(0, 0))
	return r.ctl
}

func (r *Receiver) drop(frame []byte, h reliable.Header, counter *uint64) {
	if !reliable.CheckCRC(frame, h) {
		r.st.CRCDrops++
		return
	}
	*counter++
}
