package rtt

import (
	"testing"
	"time"
)

// TestEstimator: the first sample sets SRTT to it and RTTVAR to half of
// it; later ones smooth with the gains 1/8 and 1/4 of RFC 6298 (2.2, 2.3).
func TestEstimator(t *testing.T) {
	var e Estimator
	if e.Sampled() || e.RTO() != 0 {
		t.Fatalf("zero value: sampled %v, RTO %v", e.Sampled(), e.RTO())
	}
	e.Sample(100 * time.Millisecond)
	if e.SRTT() != 100*time.Millisecond || e.RTTVar() != 50*time.Millisecond || e.RTO() != 300*time.Millisecond {
		t.Fatalf("first sample: srtt %v rttvar %v rto %v; want 100ms 50ms 300ms", e.SRTT(), e.RTTVar(), e.RTO())
	}
	e.Sample(20 * time.Millisecond)
	// rttvar = (3*50 + |100-20|)/4 = 57.5ms; srtt = (7*100 + 20)/8 = 90ms.
	if e.SRTT() != 90*time.Millisecond || e.RTTVar() != 57500*time.Microsecond {
		t.Fatalf("second sample: srtt %v rttvar %v; want 90ms 57.5ms", e.SRTT(), e.RTTVar())
	}
	var z Estimator
	z.Sample(0)
	if !z.Sampled() || z.SRTT() != 1 {
		t.Fatalf("a zero sample: sampled %v srtt %v; want true 1ns", z.Sampled(), z.SRTT())
	}
}
