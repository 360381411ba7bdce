package pace

import (
	"testing"
	"time"
)

// TestSchedule: with a fake clock, frames go out at the rate, a sender
// ahead by at most Slack does not sleep, and idle time earns no credit.
func TestSchedule(t *testing.T) {
	clock := time.Unix(0, 0)
	var slept []time.Duration
	p := &pacer{perByte: float64(time.Second) / 1e6, now: func() time.Time { return clock },
		sleep: func(d time.Duration) { slept = append(slept, d); clock = clock.Add(d) }}
	var sent []time.Duration // send times relative to the start
	next := func(f [][]byte) (int, error) { sent = append(sent, clock.Sub(time.Unix(0, 0))); return len(f), nil }
	// 1000-byte frames at 1 MB/s: one per millisecond.
	frames := [][]byte{make([]byte, 1000), make([]byte, 1000), make([]byte, 1000)}
	if n, err := p.write(frames, next); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	want := []time.Duration{0, time.Millisecond, 2 * time.Millisecond}
	for i := range want {
		if sent[i] != want[i] {
			t.Fatalf("send times %v, want %v", sent, want)
		}
	}
	// 100-byte frames (100 µs each): the first two fit in the slack.
	sent, slept = nil, nil
	clock = clock.Add(10 * time.Second) // idle: no credit
	small := [][]byte{make([]byte, 100), make([]byte, 100), make([]byte, 100), make([]byte, 100)}
	p.write(small, next)
	base := 10*time.Second + 2*time.Millisecond
	want = []time.Duration{base, base, base, base + 300*time.Microsecond}
	for i := range want {
		if sent[i] != want[i] {
			t.Fatalf("send times %v, want %v (slept %v)", sent, want, slept)
		}
	}
}
