package transport

import "time"

// RTT is the retransmission timer's estimator (RFC 6298): a smoothed round
// trip time SRTT, its variation RTTVAR, and RTO = SRTT + 4*RTTVAR within
// [MinRTO, MaxRTO], doubled on every timeout (Backoff) until a new sample
// arrives. Samples come only from frames sent once (Karn's rule). The zero
// value is not ready: use newRTT.
type RTT struct {
	srtt, rttvar time.Duration
	sampled      bool
	initial      time.Duration
	min, max     time.Duration
	backoff      uint // timeouts since the last sample
}

func newRTT(initial, min, max time.Duration) RTT {
	return RTT{initial: initial, min: min, max: max}
}

// Sample feeds one measured round trip.
func (r *RTT) Sample(d time.Duration) {
	if d <= 0 {
		d = 1
	}
	if !r.sampled {
		r.srtt, r.rttvar, r.sampled = d, d/2, true
	} else {
		diff := r.srtt - d
		if diff < 0 {
			diff = -diff
		}
		r.rttvar = (3*r.rttvar + diff) / 4
		r.srtt = (7*r.srtt + d) / 8
	}
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
	if r.sampled {
		rto = r.srtt + 4*r.rttvar
	}
	rto = max(rto, r.min)
	rto <<= r.backoff
	return min(rto, r.max)
}

// SRTT returns the smoothed round trip time, 0 before the first sample.
func (r *RTT) SRTT() time.Duration { return r.srtt }
