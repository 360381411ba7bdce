package transport

import (
	"time"

	"github.com/openenoc/oetp/wire"
	"github.com/openenoc/oetp/wire/reliable"
)

// SenderState is the state of a session's initiator side.
type SenderState uint8

// Sender states (docs/reliable.md, "Initiator").
const (
	// Closed: no session; Open starts one.
	Closed SenderState = iota
	// SynSent: a SYN is out, resent every InitialRTO, SynAttempts in all.
	SynSent
	// Established: requests flow.
	Established
	// Failed: the handshake went unanswered, the retries ran out or the
	// responder reset the session. Open starts a new one.
	Failed
)

var senderStateNames = [...]string{"closed", "syn-sent", "established", "failed"}

func (s SenderState) String() string {
	if int(s) < len(senderStateNames) {
		return senderStateNames[s]
	}
	return "state(?)"
}

// Event is what a frame or a timer did to a Sender.
type Event uint8

// Events.
const (
	// EventNone: consumed (an ACK, a NAK, a duplicate) or dropped.
	EventNone Event = iota
	// EventEstablished: the handshake completed; requests may flow.
	EventEstablished
	// EventResponse: the frame carries the response to the request with
	// Result.PSN; reliable.Decapsulate gives the v1 frame.
	EventResponse
	// EventFailed: the session failed (ErrSessionFailed). Every request
	// outstanding on it is abandoned: it may or may not have executed.
	EventFailed
)

// Result is the outcome of a Sender event.
type Result struct {
	Event Event
	PSN   uint32
}

// SenderStats are a Sender's counters.
type SenderStats struct {
	Sent            uint64 // request frames sent for the first time
	Retransmitted   uint64 // request frames sent again (every cause)
	FastRetransmits uint64 // requests resent because a later response arrived first
	Timeouts        uint64 // retransmission timer expiries
	NAKs            uint64 // NAKs received
	Responses       uint64 // responses accepted
	Duplicates      uint64 // responses for PSNs already answered or outside the window
	Stale           uint64 // frames of another session, or in a state that does not expect them
	CRCDrops        uint64 // frames dropped for a bad CRC32C
	Resets          uint64 // RSTs received for this session
	Syns            uint64 // SYNs sent
	// SpuriousTimeouts counts timeout episodes found spurious: a request
	// the timer resent was answered twice, so its first transmission had
	// arrived and been answered (the timer fired on a delay, not a loss),
	// and the congestion window's cut was undone.
	SpuriousTimeouts uint64
}

// sendSlot is one request frame kept for retransmission.
type sendSlot struct {
	buf    []byte // the sealed frame; cap MaxFrame
	sent   bool   // handed out at least once
	psn    uint32
	sentAt time.Duration
	seq    uint64 // transmission order of the latest transmission
	retx   bool   // sent more than once: no RTT sample (Karn)
	done   bool   // its response arrived
	queued bool   // waiting in the retransmission queue
}

// rtoMark is a request a retransmission timeout resent after its only
// earlier transmission: a second response to it shows the timeout was
// spurious. Kept apart from the slots, which are reused before the
// second response arrives.
type rtoMark struct {
	psn uint32
	set bool
}

// Sender is the initiator side of one session to one responder MAC.
type Sender struct {
	cfg         Config
	local, peer wire.MAC

	state   SenderState
	session uint32
	isn     uint32
	depth   int // negotiated
	synBuf  []byte
	synN    int // SYNs sent in this handshake
	synAt   time.Duration
	synOut  bool // the SYN waits in the queue
	rtt     RTT
	retries int

	next    uint32 // the next PSN to assign
	unsent  uint32 // the oldest PSN queued but never sent (== next when none)
	una     uint32 // the oldest PSN without its response
	lost    uint32 // in a failed session, una when it failed
	acked   uint32 // the responder's APSN: every request before it received
	credits int
	txSeq   uint64
	slots   []sendSlot
	queued  int // slots waiting for retransmission

	// AIMD congestion control, in 1/1024 frames.
	cwnd, ssthresh int
	recover        uint32 // loss events before this PSN do not cut cwnd again

	// Spurious-timeout undo: the congestion state before the first
	// timeout of an episode, restored when a request the timer resent is
	// answered twice (see OnFrame). Disarmed by a loss event.
	undoArmed              bool
	undoCwnd, undoSsthresh int
	marks                  []rtoMark // by PSN mod Depth

	st SenderStats
}

const cwndUnit = 1024

// NewSender makes the initiator side of a session from local to peer.
func NewSender(cfg Config, local, peer wire.MAC) (*Sender, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Sender{cfg: c, local: local, peer: peer, slots: make([]sendSlot, c.Depth), marks: make([]rtoMark, c.Depth),
		synBuf: make([]byte, 0, 64), rtt: newRTT(c.InitialRTO, c.MinRTO, c.MaxRTO)}
	for i := range s.slots {
		s.slots[i].buf = make([]byte, 0, c.MaxFrame)
	}
	return s, nil
}

// State returns the session state.
func (s *Sender) State() SenderState { return s.state }

// Session returns the session ID in use.
func (s *Sender) Session() uint32 { return s.session }

// Stats returns the counters.
func (s *Sender) Stats() SenderStats { return s.st }

// RTO returns the retransmission timeout in force; SRTT the smoothed RTT.
func (s *Sender) RTO() time.Duration  { return s.rtt.RTO() }
func (s *Sender) SRTT() time.Duration { return s.rtt.SRTT() }

// Cwnd returns the congestion window in frames.
func (s *Sender) Cwnd() float64 { return float64(s.cwnd) / cwndUnit }

// Depth returns the negotiated depth (0 before the handshake).
func (s *Sender) Depth() int { return s.depth }

// Outstanding returns the number of requests queued or sent whose
// responses have not all arrived (next - una).
func (s *Sender) Outstanding() int { return seqDiff(s.next, s.una) }

// Open starts a new session with the given ID and initial PSN (random
// numbers chosen by the caller, so a restarted process does not resume an
// old session) and queues its SYN. Whatever the old session had
// outstanding is abandoned.
func (s *Sender) Open(now time.Duration, session, isn uint32) {
	s.state = SynSent
	s.session, s.isn = session, isn
	s.next, s.unsent, s.una, s.acked = isn, isn, isn, isn
	s.depth, s.credits, s.retries, s.queued = 0, 0, 0, 0
	for i := range s.slots {
		s.slots[i] = sendSlot{buf: s.slots[i].buf[:0]}
	}
	s.rtt = newRTT(s.cfg.InitialRTO, s.cfg.MinRTO, s.cfg.MaxRTO)
	s.synN = 0
	s.cwnd = s.cfg.InitialCwnd * cwndUnit
	s.ssthresh = s.cfg.Depth * cwndUnit
	s.recover = isn
	s.undoArmed = false
	s.synBuf = reliable.AppendSyn(s.synBuf[:0], s.peer, s.local,
		reliable.Header{Flags: reliable.FlagSyn, Session: session, PSN: isn},
		reliable.Syn{Depth: uint16(s.cfg.Depth), Congestion: reliable.CongestionAIMD, MaxFrame: uint16(s.cfg.MaxFrame)})
	s.synOut = true
	s.synAt = now
}

// CanSend reports whether a new request may go now: the session is
// established and the window has room (fewer than min(cwnd, depth)
// requests outstanding, and the responder's credits allow another).
func (s *Sender) CanSend() bool {
	return s.state == Established && s.unsent == s.next && s.windowOpen(s.next)
}

// windowOpen reports whether PSN p may be sent for the first time: fewer
// than min(cwnd, depth) requests outstanding before it, and within the
// responder's credits.
func (s *Sender) windowOpen(p uint32) bool {
	out := seqDiff(p, s.una)
	if out >= s.depth || out >= max(s.cwnd/cwndUnit, 1) {
		return false
	}
	return seqDiff(p, s.acked) < s.credits
}

// Room reports whether a request may be queued (Queue): the session is
// being opened or is established, and fewer than Depth requests are queued
// or outstanding.
func (s *Sender) Room() bool {
	if s.state != Established && s.state != SynSent {
		return false
	}
	return seqDiff(s.next, s.una) < len(s.slots)
}

// Queue seals the request encoded in b (from Buffer) with the next PSN and
// keeps it; Pending hands it out as soon as the session is established and
// the window has room. Call it only when Room. It returns the PSN.
func (s *Sender) Queue(b []byte) uint32 {
	psn := s.next
	sl := &s.slots[psn%uint32(len(s.slots))]
	frame := reliable.Encapsulate(b, reliable.Header{Flags: reliable.FlagAck,
		Session: s.session, PSN: psn, APSN: s.una, Credits: 0})
	*sl = sendSlot{buf: frame, psn: psn}
	s.next++
	return psn
}

// Unsent appends to out the requests queued but never sent, and returns
// it: after a failed handshake, their owner may send them another way (as
// v1 frames: reliable.Decapsulate gives them back). Valid until Open.
func (s *Sender) Unsent(out [][]byte) [][]byte {
	for p := s.unsent; p != s.next; p++ {
		out = append(out, s.slots[p%uint32(len(s.slots))].buf)
	}
	return out
}

// Buffer returns the buffer for the next request: encode its v1 frame by
// appending to it (the first reliable.Headroom bytes are reserved for the
// transport header), then Push it. Call it only when CanSend.
func (s *Sender) Buffer() []byte {
	b := s.slots[s.next%uint32(len(s.slots))].buf
	return b[:reliable.Headroom]
}

// MaxV1Frame is the largest v1 frame a request may be: MaxFrame less the
// transport's overhead.
func (s *Sender) MaxV1Frame() int { return s.cfg.MaxFrame - reliable.Overhead }

// Push seals the request encoded in b (from Buffer) with the next PSN and
// returns the PSN and the frame to hand to the link now. The frame stays
// the slot's until its response arrives: it is not to be modified.
func (s *Sender) Push(now time.Duration, b []byte) (psn uint32, frame []byte) {
	psn = s.next
	sl := &s.slots[psn%uint32(len(s.slots))]
	frame = reliable.Encapsulate(b, reliable.Header{Flags: reliable.FlagAck,
		Session: s.session, PSN: psn, APSN: s.una, Credits: 0})
	s.txSeq++
	*sl = sendSlot{buf: frame, psn: psn, sentAt: now, seq: s.txSeq, sent: true}
	s.next++
	s.unsent = s.next
	s.st.Sent++
	return psn, frame
}

// Pending appends to out the frames that wait for (re)transmission, and
// returns it: the SYN, retransmitted requests in PSN order, then queued
// requests the window now admits. They are to
// be handed to the link now: their timers run from now.
func (s *Sender) Pending(now time.Duration, out [][]byte) [][]byte {
	s.pending(now, &out, &out)
	return out
}

// PendingSplit is Pending with the frames in two lists: again gets the
// SYN and the retransmissions, first the requests sent for the first
// time. A first transmission's bytes stay unchanged until its response
// has arrived (its slot is reused only after that), so its owner may hand
// it to the link a little later, with other frames in one batch; a SYN or
// a retransmission may be rewritten sooner (by Open, or by a new request
// in its slot once an earlier transmission was answered), so it goes now.
func (s *Sender) PendingSplit(now time.Duration, again, first [][]byte) ([][]byte, [][]byte) {
	s.pending(now, &again, &first)
	return again, first
}

func (s *Sender) pending(now time.Duration, again, first *[][]byte) {
	if s.synOut {
		s.synOut = false
		s.synN++
		s.st.Syns++
		s.synAt = now
		*again = append(*again, s.synBuf)
	}
	if s.state != Established {
		return
	}
	if s.queued != 0 {
		*again = s.resend(now, *again)
	}
	for s.unsent != s.next && s.windowOpen(s.unsent) {
		sl := &s.slots[s.unsent%uint32(len(s.slots))]
		s.txSeq++
		sl.sent, sl.sentAt, sl.seq = true, now, s.txSeq
		s.st.Sent++
		*first = append(*first, sl.buf)
		s.unsent++
	}
}

func (s *Sender) resend(now time.Duration, out [][]byte) [][]byte {
	for p := s.una; p != s.unsent; p++ {
		sl := &s.slots[p%uint32(len(s.slots))]
		if !sl.queued {
			continue
		}
		sl.queued = false
		s.txSeq++
		sl.seq, sl.sentAt, sl.retx = s.txSeq, now, true
		s.st.Retransmitted++
		out = append(out, sl.buf)
	}
	s.queued = 0
	return out
}

// Deadline returns when OnTimer next needs to run, and false when no timer
// is armed.
func (s *Sender) Deadline() (time.Duration, bool) {
	switch s.state {
	case SynSent:
		return s.synAt + s.cfg.InitialRTO, true
	case Established:
		if s.una == s.unsent {
			return 0, false
		}
		sl := &s.slots[s.una%uint32(len(s.slots))]
		return sl.sentAt + s.rtt.RTO(), true
	}
	return 0, false
}

// OnTimer runs the timers at now: a SYN is resent or the handshake fails,
// an expired retransmission timer resends every outstanding request whose
// response is missing (Go-Back-N from the oldest), or fails the session
// after MaxRetries expiries without progress.
func (s *Sender) OnTimer(now time.Duration) Result {
	d, ok := s.Deadline()
	if !ok || now < d {
		return Result{}
	}
	if s.state == SynSent {
		if s.synN >= s.cfg.SynAttempts {
			s.fail()
			return Result{Event: EventFailed}
		}
		s.synOut = true
		return Result{}
	}
	s.st.Timeouts++
	s.retries++
	if s.retries > s.cfg.MaxRetries {
		s.fail()
		return Result{Event: EventFailed}
	}
	s.rtt.Backoff()
	if s.retries == 1 {
		// The first timeout of an episode: what a spurious one undoes.
		s.undoArmed, s.undoCwnd, s.undoSsthresh = true, s.cwnd, s.ssthresh
		clear(s.marks)
	}
	// RTO: multiplicative decrease to one frame.
	s.ssthresh = max(s.cwnd/2, 2*cwndUnit)
	s.cwnd = cwndUnit
	s.recover = s.unsent
	for p := s.una; p != s.unsent; p++ {
		// Only a request sent once before: a second response to one sent
		// more often could answer two of its retransmissions.
		if sl := &s.slots[p%uint32(len(s.slots))]; !sl.done {
			s.marks[p%uint32(len(s.marks))] = rtoMark{psn: p, set: !sl.retx}
		}
	}
	s.queueFrom(s.una)
	return Result{}
}

func (s *Sender) fail() {
	s.state = Failed
	s.synOut = false
	s.queued = 0
	for i := range s.slots {
		s.slots[i].queued = false
	}
	s.lost = s.una
	s.una = s.unsent // what was sent is abandoned; Unsent gives the rest
}

// Unanswered appends to out the requests queued or sent and not answered,
// and returns it: in a failed session those it abandoned (until Open), in
// another those outstanding.
func (s *Sender) Unanswered(out [][]byte) [][]byte {
	p := s.una
	if s.state == Failed {
		p = s.lost
	}
	for ; p != s.next; p++ {
		if sl := &s.slots[p%uint32(len(s.slots))]; !sl.done {
			out = append(out, sl.buf)
		}
	}
	return out
}

// queueFrom queues every request from PSN p on whose response is missing.
func (s *Sender) queueFrom(p uint32) {
	for ; p != s.unsent; p++ {
		sl := &s.slots[p%uint32(len(s.slots))]
		if !sl.done && !sl.queued {
			sl.queued = true
			s.queued++
		}
	}
}

// lossEvent halves the congestion window once per window of data.
func (s *Sender) lossEvent(psn uint32) {
	s.undoArmed = false // a frame was lost: a timeout's cut stands
	if seqDiff(psn, s.recover) < 0 {
		return
	}
	s.ssthresh = max(s.cwnd/2, 2*cwndUnit)
	s.cwnd = s.ssthresh
	s.recover = s.unsent
}

// OnFrame handles a frame from the responder side of this session whose
// cheap fields reliable.Parse accepted (h). It checks the session and the
// PSN, then the CRC, as docs/reliable.md orders them; a frame failing a
// check is dropped and counted (as a CRC drop when its CRC is bad too,
// since its other fields are then untrustworthy).
func (s *Sender) OnFrame(now time.Duration, frame []byte, h reliable.Header) Result {
	if h.Flags&reliable.FlagRsp == 0 || h.Session != s.session || s.state == Closed || s.state == Failed {
		s.drop(frame, h, &s.st.Stale)
		return Result{}
	}
	switch {
	case h.Flags&reliable.FlagSyn != 0:
		if s.state != SynSent || h.APSN != s.isn {
			s.drop(frame, h, &s.st.Stale)
			return Result{}
		}
		if !reliable.CheckCRC(frame, h) {
			s.st.CRCDrops++
			return Result{}
		}
		syn, ok := reliable.ParseSyn(reliable.Body(frame, h))
		if !ok || syn.Depth == 0 || syn.Congestion != reliable.CongestionAIMD {
			s.st.Stale++
			return Result{}
		}
		s.depth = min(int(syn.Depth), s.cfg.Depth)
		s.credits = min(int(h.Credits), s.depth)
		s.acked = h.APSN
		if s.synN == 1 {
			s.rtt.Sample(now - s.synAt)
		}
		s.state = Established
		return Result{Event: EventEstablished}
	case h.Flags&reliable.FlagRst != 0:
		if !reliable.CheckCRC(frame, h) {
			s.st.CRCDrops++
			return Result{}
		}
		s.st.Resets++
		s.fail()
		return Result{Event: EventFailed}
	}
	if s.state != Established {
		s.drop(frame, h, &s.st.Stale)
		return Result{}
	}
	data := h.Flags&reliable.FlagData != 0
	if data {
		off := seqDiff(h.PSN, s.una)
		if sl := &s.slots[h.PSN%uint32(len(s.slots))]; off < 0 || off >= seqDiff(s.unsent, s.una) || sl.done {
			s.drop(frame, h, &s.st.Duplicates)
			if m := &s.marks[h.PSN%uint32(len(s.marks))]; s.undoArmed && m.set && m.psn == h.PSN && off < seqDiff(s.unsent, s.una) && (off < 0 || sl.done) && reliable.CheckCRC(frame, h) {
				s.spurious()
			}
			return Result{}
		}
	}
	// APSN must lie within what was sent.
	if a := seqDiff(h.APSN, s.una); a < -s.depth || seqDiff(h.APSN, s.unsent) > 0 {
		s.drop(frame, h, &s.st.Stale)
		return Result{}
	}
	if !reliable.CheckCRC(frame, h) {
		s.st.CRCDrops++
		return Result{}
	}
	if seqDiff(h.APSN, s.acked) >= 0 {
		s.acked = h.APSN
		s.credits = min(int(h.Credits), s.depth)
	}
	if h.Flags&reliable.FlagNak != 0 {
		s.st.NAKs++
		s.lossEvent(h.APSN)
		s.queueFrom(s.una)
		return Result{}
	}
	if !data {
		return Result{}
	}
	sl := &s.slots[h.PSN%uint32(len(s.slots))]
	sl.done = true
	if sl.queued {
		sl.queued = false
		s.queued--
	}
	s.st.Responses++
	if !sl.retx {
		s.rtt.Sample(now - sl.sentAt)
	}
	s.retries = 0
	// Responses come in PSN order: one still missing before this one whose
	// request went out before this one's latest transmission was lost.
	for p := s.una; p != h.PSN; p++ {
		q := &s.slots[p%uint32(len(s.slots))]
		if !q.done && !q.queued && q.seq < sl.seq {
			q.queued = true
			s.queued++
			s.st.FastRetransmits++
			s.lossEvent(p)
		}
	}
	// Additive increase: one frame per response in slow start, one per
	// window of responses after it.
	if s.cwnd < s.ssthresh {
		s.cwnd += cwndUnit
	} else {
		s.cwnd += cwndUnit * cwndUnit / max(s.cwnd, 1)
	}
	s.cwnd = min(s.cwnd, s.depth*cwndUnit)
	for s.una != s.unsent && s.slots[s.una%uint32(len(s.slots))].done {
		s.una++
	}
	return Result{Event: EventResponse, PSN: h.PSN}
}

// spurious undoes the congestion window's cut of a timeout episode found
// spurious: the second response to a request the timer resent, whose first
// transmission came before the timeout, shows that transmission arrived
// and was answered (the responder replays a retransmitted request from its
// cache; a lost request or a lost response gives one response), so the
// timer fired on a delay (a stalled host), not on a loss. Like TCP's
// DSACK-based undo (RFC 3708): cwnd and ssthresh go back to what they
// were before the first timeout, and the timer's backoff ends. It takes
// one round trip after the resent requests to learn, so the window was
// resent (Go-Back-N) as before: only its cost to the rate is undone.
func (s *Sender) spurious() {
	s.undoArmed = false
	clear(s.marks)
	s.st.SpuriousTimeouts++
	s.cwnd = max(s.cwnd, s.undoCwnd)
	s.ssthresh = max(s.ssthresh, s.undoSsthresh)
	s.rtt.EndBackoff()
}

func (s *Sender) drop(frame []byte, h reliable.Header, counter *uint64) {
	if !reliable.CheckCRC(frame, h) {
		s.st.CRCDrops++
		return
	}
	*counter++
}
