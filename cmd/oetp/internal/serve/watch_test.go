package serve

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/openenoc/oetp/wire"
)

// TestRawFloodLogBudget logs a minute of raw frames from random source MACs
// (1000 a second, --raw-policy filtered with --json-events) through serve's
// watch, its summaries flushed every second as serve does: the log and the
// JSON lines together stay within about 10 KB, the budget of the other
// floods, and the summaries count every frame held back.
func TestRawFloodLogBudget(t *testing.T) {
	var logBuf, jsonBuf bytes.Buffer
	w := newWatch(nil, slog.New(slog.NewTextHandler(&logBuf, nil)), &lineWriter{w: &jsonBuf}, true)
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w.raws.Now = func() time.Time { return clock }
	rng := rand.New(rand.NewPCG(1, 2))
	dst := wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 1}
	const perSecond, seconds = 1000, 60
	frame := make([]byte, 60)
	for range seconds {
		for range perSecond {
			src := wire.MAC{byte(rng.Uint32()) &^ 1, byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32()), byte(rng.Uint32())}
			copy(frame, dst[:])
			copy(frame[6:], src[:])
			frame[12], frame[13] = 0x08, 0x00
			w.rawFrame(wire.Frame(frame), len(frame))
			clock = clock.Add(time.Second / perSecond)
		}
		w.rawSummaries(false)
	}
	w.rawSummaries(true)
	total := logBuf.Len() + jsonBuf.Len()
	t.Logf("%d frames from random MACs in %ds: %d bytes of log, %d of JSON", perSecond*seconds, seconds, logBuf.Len(), jsonBuf.Len())
	if total > 10<<10 {
		t.Errorf("a minute of raw frames from random MACs logged %d bytes (log %d, JSON %d), want at most 10 KiB", total, logBuf.Len(), jsonBuf.Len())
	}
	lines := bytes.Count(logBuf.Bytes(), []byte("msg=\"raw frame\""))
	var held int
	for _, l := range bytes.Split(logBuf.Bytes(), []byte("\n")) {
		if i := bytes.Index(l, []byte(" count=")); i >= 0 && bytes.Contains(l, []byte("raw frames suppressed")) {
			var n int
			for _, c := range l[i+7:] {
				if c < '0' || c > '9' {
					break
				}
				n = n*10 + int(c-'0')
			}
			held += n
		}
	}
	if lines+held != perSecond*seconds {
		t.Errorf("%d raw frame lines + %d held back in summaries = %d, want %d", lines, held, lines+held, perSecond*seconds)
	}
}
