package pace

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSchedule: with a fake clock, frames go out at the rate; a sender
// ahead by at most Slack does not sleep; idle time earns at most Credit;
// an oversleep is made up.
func TestSchedule(t *testing.T) {
	t0 := time.Unix(0, 0)
	clock := t0
	var slept []time.Duration
	p := &pacer{perByte: float64(time.Second) / 1e6, now: func() time.Time { return clock },
		sleep: func(d time.Duration) { slept = append(slept, d); clock = clock.Add(d) }}
	var sent []time.Duration // send times since t0
	next := func(f [][]byte) (int, error) { sent = append(sent, clock.Sub(t0)); return len(f), nil }
	frames := func(n, size int) [][]byte {
		fs := make([][]byte, n)
		for i := range fs {
			fs[i] = make([]byte, size)
		}
		return fs
	}
	ms := time.Millisecond
	us := time.Microsecond

	// 1000-byte frames at 1 MB/s, one per millisecond: a fresh pacer has
	// Credit (1) and Slack (1) in hand besides the first frame.
	if n, err := p.write(frames(6, 1000), next); n != 6 || err != nil {
		t.Fatal(n, err)
	}
	if d := cmp.Diff([]time.Duration{0, 0, 0, 2 * ms, 2 * ms, 4 * ms}, sent); d != "" {
		t.Fatalf("send times (-want +got):\n%s", d)
	}
	// After 10 s idle, 100-byte frames (100 µs each): 21 go at once (1 ms
	// of credit, the frame itself, 1 ms of slack), then the schedule.
	sent = nil
	clock = clock.Add(10 * time.Second)
	base := 10*time.Second + 4*ms
	p.write(frames(23, 100), next)
	want := make([]time.Duration, 23)
	for i := range want {
		want[i] = base
	}
	want[21], want[22] = base+1100*us, base+1100*us
	if d := cmp.Diff(want, sent); d != "" {
		t.Fatalf("send times after idling (-want +got):\n%s", d)
	}
	// Every sleep wakes 500 µs late: the frames after it catch up, so 40
	// frames of 1 ms take about 40 ms, not 40 × 1.5.
	p.sleep = func(d time.Duration) { clock = clock.Add(d + 500*us) }
	clock = clock.Add(10 * time.Second)
	start := clock
	p.write(frames(40, 1000), next)
	if total := clock.Sub(start); total > 40*ms {
		t.Errorf("40 ms of frames took %v with every sleep 500 µs late", total)
	}
}
