package bench

import (
	"testing"
	"time"
)

func TestHistogramBuckets(t *testing.T) {
	prev := -1
	for _, ns := range []int64{0, 1, 63, 64, 65, 127, 128, 1000, 8500, 1 << 20, 1<<40 - 1} {
		i := bucket(ns)
		if i < prev {
			t.Errorf("bucket(%d) = %d, below the previous %d", ns, i, prev)
		}
		prev = i
		if lo, hi := lower(i), lower(i+1); ns < lo || ns >= hi {
			t.Errorf("bucket(%d) = %d covers [%d, %d)", ns, i, lo, hi)
		}
	}
}

func TestHistogramQuantile(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Microsecond}, {0.9, 900 * time.Microsecond}, {0.99, 990 * time.Microsecond}} {
		got := h.quantile(c.q)
		if d := float64(got-c.want) / float64(c.want); d < -0.02 || d > 0.02 {
			t.Errorf("quantile(%v) = %v, want %v ± 2%%", c.q, got, c.want)
		}
	}
}
