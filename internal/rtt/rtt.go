// Package rtt is the round-trip time estimator of RFC 6298 that both the
// endpoint's retries (endpoint RetryPolicy) and the reliable transport's
// retransmission timer (package transport) use: a smoothed round trip time
// SRTT and its variation RTTVAR, from which a caller derives its timeout.
package rtt

import "time"

// Estimator is the RFC 6298 estimator. The zero value has no sample. It is
// not safe for concurrent use: its owner's lock guards it.
type Estimator struct {
	srtt, rttvar time.Duration
	sampled      bool
}

// Sample feeds one measured round trip, taken from a request sent once
// (Karn's rule: a retried request gives no sample). A round trip of zero
// or less counts as 1 ns.
func (e *Estimator) Sample(d time.Duration) {
	if d <= 0 {
		d = 1
	}
	if !e.sampled {
		e.srtt, e.rttvar, e.sampled = d, d/2, true
		return
	}
	diff := e.srtt - d
	if diff < 0 {
		diff = -diff
	}
	e.rttvar = (3*e.rttvar + diff) / 4
	e.srtt = (7*e.srtt + d) / 8
}

// Sampled reports whether a sample has arrived.
func (e *Estimator) Sampled() bool { return e.sampled }

// SRTT returns the smoothed round trip time, 0 before the first sample.
func (e *Estimator) SRTT() time.Duration { return e.srtt }

// RTTVar returns the round trip time's variation, 0 before the first sample.
func (e *Estimator) RTTVar() time.Duration { return e.rttvar }

// RTO returns SRTT + 4·RTTVAR, or 0 before the first sample; the caller
// bounds it and backs it off.
func (e *Estimator) RTO() time.Duration {
	if !e.sampled {
		return 0
	}
	return e.srtt + 4*e.rttvar
}
