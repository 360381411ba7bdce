package endpoint

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/openenoc/oetp/internal/rtt"
)

// Recovery from a lossy link.
//
// oETP v1 hardware never retransmits ("Software manages timeout handling
// and any deliberate restart of a transfer"). The initiator of this engine
// can: opt in per peer (SetRetryPolicy) or per operation (WithRetry), it
// retries an RMEM operation or a DMA fragment whose try ended in TIMEOUT or
// in a directly detected malformed response (a bad length or EndOfData).
// A try answered by a valid ERROR_RSP is never retried: that is the device's
// answer. Each retry is a new request with a new Request ID, exactly as a v1
// device expects; the old ID stays invalid, so a late reply to it is
// discarded and can never complete the retry. Nothing else changes on the
// wire: with Retries 0 (the default) the engine behaves exactly as v1.
//
// Timeouts follow the link: for each peer the initiator measures the round
// trip of every successful first try (Karn's rule: an operation that was
// retried gives no sample) and keeps SRTT and RTTVAR as RFC 6298 does. With
// retries on, a try waits RTO = SRTT + 4·RTTVAR, at least MinRTO and at most
// the configured timeout (Config.RMEMTimeout or DMATimeout), doubled with
// each retry and again at most the configured timeout: the dynamic timeout
// Base·2^k of the UB transport layer. Before the peer's first sample a try
// waits the configured timeout. No try outlives the operation's Deadline.
//
// What a retry cannot change: the spec's "a retry can repeat a remote write
// whose response was lost" — a write may execute twice (harmless for memory,
// not for a FIFO port: mark it Volatile). And v1 has no duplicate
// suppression: on a link that holds a frame back longer than the try
// timeout, an earlier try of a write can arrive after the retry, and after
// later writes to the same address. Keep MinRTO above the link's worst
// delay variation (the default 2ms does on a FIFO link such as one cable or
// a switch, where a late try still arrives before the retry), or use
// the reliable transport, whose replay cache executes a request once.

// DefaultDeadline is the RetryPolicy.Deadline used when it is zero.
const DefaultDeadline = 5 * time.Second

// DefaultMinRTO is the RetryPolicy.MinRTO used when it is zero: the floor of
// an adaptive try timeout. A LAN round trip is tens of microseconds, but a
// loaded host delays one by milliseconds now and then; below the floor such
// a hiccup would cost a spurious retry (one frame, the late answer
// discarded: harmless on a link that keeps frames in order). The floor is
// also what each lost frame costs, so it is kept low.
const DefaultMinRTO = 2 * time.Millisecond

// MaxRetries is the largest RetryPolicy.Retries.
const MaxRetries = 1000

// AddrRange is the byte range [Base, Base+Size) of a peer's memory.
type AddrRange struct {
	Base uint32
	Size uint64
}

// overlaps reports whether [addr, addr+n) meets r.
func (r AddrRange) overlaps(addr uint32, n uint64) bool {
	return uint64(addr) < uint64(r.Base)+r.Size && uint64(r.Base) < uint64(addr)+n
}

// RetryPolicy says how the initiator recovers from lost and malformed
// responses of one peer (SetRetryPolicy) or one operation (WithRetry).
// The zero value is v1: one try, no retry.
type RetryPolicy struct {
	// Retries is the number of retransmissions allowed for one RMEM
	// operation or one DMA fragment, 0..MaxRetries. 0 sends exactly one
	// try, with the configured timeout, as v1 does.
	Retries int
	// Deadline bounds one RMEM operation or one DMA fragment with all its
	// tries, from its acceptance (a whole block may take longer). Zero
	// selects DefaultDeadline. It applies only when Retries > 0.
	Deadline time.Duration
	// MinRTO is the floor of the adaptive try timeout. Zero selects
	// DefaultMinRTO.
	MinRTO time.Duration
	// Volatile lists address ranges whose accesses have side effects: a
	// FIFO port, a clear-on-read register. An RMEM operation or DMA
	// fragment that touches one is never retried, whatever Retries says,
	// so it cannot execute twice because of recovery.
	Volatile []AddrRange
}

// Volatile reports whether the n bytes at addr touch a volatile range.
func (p *RetryPolicy) volatile(addr uint32, n uint64) bool {
	for _, r := range p.Volatile {
		if r.overlaps(addr, n) {
			return true
		}
	}
	return false
}

func (p RetryPolicy) check() (RetryPolicy, error) {
	if p.Retries < 0 || p.Retries > MaxRetries {
		return p, fmt.Errorf("endpoint: RetryPolicy.Retries %d is out of range; use 0..%d (0: one try, no retry)", p.Retries, MaxRetries)
	}
	if p.Deadline < 0 {
		return p, fmt.Errorf("endpoint: RetryPolicy.Deadline %v is negative; use a positive duration, or 0 for %v", p.Deadline, DefaultDeadline)
	}
	if p.MinRTO < 0 {
		return p, fmt.Errorf("endpoint: RetryPolicy.MinRTO %v is negative; use a positive duration, or 0 for %v", p.MinRTO, DefaultMinRTO)
	}
	if p.Deadline == 0 {
		p.Deadline = DefaultDeadline
	}
	if p.MinRTO == 0 {
		p.MinRTO = DefaultMinRTO
	}
	for i, r := range p.Volatile {
		if r.Size == 0 || uint64(r.Base)+r.Size > 1<<32 {
			return p, fmt.Errorf("endpoint: RetryPolicy.Volatile[%d] %#x + %#x is empty or ends past the 32-bit address space; give a Size of 1..2^32-Base", i, r.Base, r.Size)
		}
	}
	p.Volatile = append([]AddrRange(nil), p.Volatile...)
	return p, nil
}

// policyTable holds the per-peer policies; a nil entry is the zero policy.
type policyTable [MaxPeers]atomic.Pointer[RetryPolicy]

// SetRetryPolicy sets peer i's retry policy (0..MaxPeers-1); RetryPolicy{}
// turns recovery off again. It applies to operations and fragments accepted
// afterwards. The policy is kept when the peer entry changes.
func (e *Endpoint) SetRetryPolicy(i int, p RetryPolicy) error {
	if i < 0 || i >= MaxPeers {
		return fmt.Errorf("endpoint: peer index %d is out of range; use 0..%d", i, MaxPeers-1)
	}
	p, err := p.check()
	if err != nil {
		return fmt.Errorf("%w (peer %d)", err, i)
	}
	e.in.pols[i].Store(&p)
	return nil
}

// RetryPolicyOf returns peer i's retry policy, defaults filled in.
func (e *Endpoint) RetryPolicyOf(i int) RetryPolicy {
	if i < 0 || i >= MaxPeers {
		return RetryPolicy{}
	}
	if p := e.in.pols[i].Load(); p != nil {
		return *p
	}
	return RetryPolicy{}
}

type retryKey struct{}

// WithRetry returns a context that makes the RMEM or DMA call it is passed
// to use p instead of the peer's policy (RetryPolicy{} for one try). An
// invalid p makes the call fail with LOCAL_INVALID before anything is sent.
func WithRetry(ctx context.Context, p RetryPolicy) context.Context {
	c, err := p.check()
	return context.WithValue(ctx, retryKey{}, &retryOpt{p: c, err: err})
}

type retryOpt struct {
	p   RetryPolicy
	err error
}

// policyFor returns the policy of an operation towards peer i.
func (in *initiator) policyFor(ctx context.Context, i int) (*RetryPolicy, error) {
	if o, ok := ctx.Value(retryKey{}).(*retryOpt); ok {
		if o.err != nil {
			return nil, invalidf("WithRetry: %v", o.err)
		}
		return &o.p, nil
	}
	return in.pols[i].Load(), nil
}

// peerRTT is the initiator's view of one peer's link: the RFC 6298
// estimator (internal/rtt, which the reliable transport uses too) and the
// counters reported in Stats.Peers. Guarded by initiator.mu.
type peerRTT struct {
	est              rtt.Estimator
	samples          uint64
	min, max, sum    time.Duration
	retries, expired uint64
	timeouts         uint64
}

// sample adds a round trip measured on a try that was not retried.
func (p *peerRTT) sample(r time.Duration) {
	p.est.Sample(r)
	if p.samples == 0 {
		p.min, p.max = r, r
	} else {
		p.min, p.max = min(p.min, r), max(p.max, r)
	}
	p.samples++
	p.sum += r
}

// rto returns SRTT + 4·RTTVAR, or 0 before the first sample.
func (p *peerRTT) rto() time.Duration { return p.est.RTO() }

// tryTimeout returns the timer of a try: the configured timeout t for the
// first try of an operation without retries or before the peer's first
// sample, else the RTO at least floor and at most t, doubled per retry
// made (tries-1), at most t. t 0 (wait forever) caps nothing.
func tryTimeout(t, rto, floor time.Duration, tries int) time.Duration {
	if rto == 0 {
		return t
	}
	d := max(rto, floor)
	if t > 0 {
		d = min(d, t)
	}
	for k := 1; k < tries && (t == 0 || d < t); k++ {
		d *= 2
	}
	if t > 0 {
		d = min(d, t)
	}
	return d
}

// PeerStats are the initiator's figures for one peer entry since New, or
// since its MAC last changed (the estimator then starts over).
type PeerStats struct {
	Peer int // the peer index
	// RTT figures of the successful tries that were not retried (Karn's
	// rule), from the moment the link accepted the request to the moment
	// its response was matched.
	RTTSamples uint64
	RTTMin     time.Duration
	RTTMean    time.Duration
	RTTMax     time.Duration
	// SRTT and RTTVar are the RFC 6298 estimator; RTO is SRTT + 4·RTTVar
	// (before the floor and the caps of RetryPolicy).
	SRTT   time.Duration
	RTTVar time.Duration
	RTO    time.Duration
	// Retries counts retransmissions (new tries of an operation or
	// fragment), ExpiredTries the tries whose timer expired (each was
	// retried or failed its operation), Timeouts the operations and
	// fragments that failed with TIMEOUT.
	Retries      uint64
	ExpiredTries uint64
	Timeouts     uint64
}

// String formats the figures for a failure message, e.g. "rtt
// min/mean/max 0.12/0.15/0.31 ms (42 samples), srtt 0.14 ms, rto 0.50 ms,
// 3 retries, 3 expired tries, 0 timeouts".
func (s PeerStats) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.3g", float64(d)/1e6) }
	rtt := "rtt: no sample"
	if s.RTTSamples > 0 {
		rtt = fmt.Sprintf("rtt min/mean/max %s/%s/%s ms (%d samples), srtt %s ms, rto %s ms",
			ms(s.RTTMin), ms(s.RTTMean), ms(s.RTTMax), s.RTTSamples, ms(s.SRTT), ms(s.RTO))
	}
	return fmt.Sprintf("%s, %d retries, %d expired tries, %d timeouts", rtt, s.Retries, s.ExpiredTries, s.Timeouts)
}

func (p *peerRTT) stats(i int) PeerStats {
	s := PeerStats{Peer: i, RTTSamples: p.samples, RTTMin: p.min, RTTMax: p.max, SRTT: p.est.SRTT(), RTTVar: p.est.RTTVar(),
		RTO: p.rto(), Retries: p.retries, ExpiredTries: p.expired, Timeouts: p.timeouts}
	if p.samples > 0 {
		s.RTTMean = p.sum / time.Duration(p.samples)
	}
	return s
}

// PeerStats returns the initiator's figures for peer i.
func (e *Endpoint) PeerStats(i int) PeerStats {
	if i < 0 || i >= MaxPeers {
		return PeerStats{Peer: i}
	}
	return e.in.peerStats(i)
}

// peerStats returns the figures of peer i under the initiator's lock.
func (in *initiator) peerStats(i int) PeerStats {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rtt[i].stats(i)
}

// resetPeer starts peer i's estimator and counters over.
func (in *initiator) resetPeer(i int) {
	in.mu.Lock()
	in.rtt[i] = peerRTT{}
	in.mu.Unlock()
}
