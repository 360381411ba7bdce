package transport

import (
	"time"

	"github.com/openenoc/oetp/internal/rtt"
)

// RTT is the retransmission timer: the RFC 6298 estimator (internal/rtt,
// which the endpoint's retries use too) and RTO = SRTT + 4*RTTVAR within
// [MinRTO, MaxRTO], doubled on every timeout (Backoff) until a new sample
// arrives. Samples come only from frames sent once (Karn's rule). The zero
// value is not ready: use newRTT.
type RTT struct {
	est      rtt.Estimator
	initial  time.Duration
	min, max time.Duration
	backoff  uint // timeouts since the last sample
}

func newRTT(initial, min, max time.Duration) RTT {
	return RTT{initial: initial, min: min, max: max}
}

// Sample feeds one measured round trip.
func (r *RTT) Sample(d time.Duration) {
	r.est.Sample(d)
	r.backoff = 0
}

// Backoff doubles the timeout after an expiry.
func (r *RTT) Backoff() {
	if r.backoff < 16 {
		r.backoff++
	}
}

// EndBackoff ends the doubling of the timeout (a timeout found spurious).
func (r *RTT) EndBackoff() { r.backoff = 0 }

// RTO returns the retransmission timeout in force.
func (r *RTT) RTO() time.Duration {
	rto := r.initial
	if r.est.Sampled() {
		rto = r.est.RTO()
	}
	rto = max(rto, r.min)
	rto <<= r.backoff
	return min(rto, r.max)
}

// SRTT returns the smoothed round trip time, 0 before the first sample.
func (r *RTT) SRTT() time.Duration { return r.est.SRTT() }
