package ratelog_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/internal/ratelog"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func newLimiter(c *clock) *ratelog.Limiter[string] {
	return &ratelog.Limiter[string]{Burst: 3, Interval: time.Second, MaxKeys: 2, Now: c.now}
}

func allowed(l *ratelog.Limiter[string], key string, n int) int {
	k := 0
	for range n {
		if l.Allow(key) {
			k++
		}
	}
	return k
}

// TestFlood: a sustained flood logs Burst lines, then one summary per
// interval with the exact count; after a quiet interval the burst returns.
func TestFlood(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := newLimiter(c)
	t0 := c.t
	if got := allowed(l, "a", 100); got != 3 {
		t.Fatalf("first interval logged %d, want 3", got)
	}
	c.add(500 * time.Millisecond)
	if s := l.Flush(); len(s) != 0 {
		t.Fatalf("summary before the interval ended: %+v", s)
	}
	c.add(500 * time.Millisecond)
	want := []ratelog.Summary[string]{{Key: "a", Suppressed: 97, Weight: 97, Since: t0, Until: c.t}}
	if d := cmp.Diff(want, l.Flush()); d != "" {
		t.Fatalf("first summary (-want +got):\n%s", d)
	}
	t1 := c.t
	if got := allowed(l, "a", 50); got != 0 {
		t.Fatalf("second interval of the flood logged %d lines, want 0", got)
	}
	c.add(time.Second)
	want = []ratelog.Summary[string]{{Key: "a", Suppressed: 50, Weight: 50, Since: t1, Until: c.t}}
	if d := cmp.Diff(want, l.Flush()); d != "" {
		t.Fatalf("second summary (-want +got):\n%s", d)
	}
	c.add(time.Second) // quiet
	if s := l.Flush(); len(s) != 0 {
		t.Fatalf("summary of a quiet interval: %+v", s)
	}
	if got := allowed(l, "a", 4); got != 3 {
		t.Fatalf("after a quiet interval logged %d, want the burst 3", got)
	}
	c.add(100 * time.Millisecond)
	if d := cmp.Diff([]ratelog.Summary[string]{{Key: "a", Suppressed: 1, Weight: 1, Since: c.t.Add(-100 * time.Millisecond), Until: c.t}}, l.FlushAll()); d != "" {
		t.Fatalf("FlushAll (-want +got):\n%s", d)
	}
	if got := allowed(l, "a", 1); got != 1 {
		t.Fatal("FlushAll did not forget the key")
	}
}

// TestKeys: keys are limited independently; keys beyond MaxKeys share the
// overflow entry; AllowN sums weights.
func TestKeys(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := newLimiter(c)
	if allowed(l, "a", 5) != 3 || allowed(l, "b", 5) != 3 {
		t.Fatal("keys not independent")
	}
	// c, d and e overflow into one entry: 3 lines between them.
	if got := allowed(l, "c", 2) + allowed(l, "d", 2) + allowed(l, "e", 2); got != 3 {
		t.Fatalf("overflow keys logged %d, want 3", got)
	}
	if l.AllowN("b", 10) {
		t.Fatal("AllowN past the burst")
	}
	c.add(time.Second)
	got := map[string]ratelog.Summary[string]{}
	for _, s := range l.Flush() {
		k := s.Key
		if s.Overflow {
			k = "overflow"
		}
		got[k] = s
	}
	if got["a"].Suppressed != 2 || got["b"].Suppressed != 3 || got["b"].Weight != 12 || got["overflow"].Suppressed != 3 || !got["overflow"].Overflow || len(got) != 3 {
		t.Fatalf("summaries %+v", got)
	}
}

// TestBound: 100,000 events of one key over 10 s give at most Burst lines
// and one summary per interval.
func TestBound(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := &ratelog.Limiter[int]{Now: c.now}
	lines, total := 0, uint64(0)
	for i := range 100000 {
		if l.Allow(7) {
			lines++
		}
		c.add(100 * time.Microsecond)
		if i%1000 == 0 {
			for _, s := range l.Flush() {
				lines++
				total += s.Suppressed
			}
		}
	}
	for _, s := range l.FlushAll() {
		lines++
		total += s.Suppressed
	}
	if max := ratelog.DefaultBurst + 10*time.Second/ratelog.DefaultInterval + 1; lines > int(max) || total+ratelog.DefaultBurst != 100000 {
		t.Fatalf("%d lines (want at most %d), %d suppressed", lines, max, total)
	}
}
