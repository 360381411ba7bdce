package endpoint_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// TestMaxReadRate floods a responder with 4 KiB DMA reads from one peer
// under MaxReadRate 16 KiB/s with a stopped clock: the burst (one maximum
// frame, 8192 bytes) serves two, the rest are dropped without a reply and
// counted; a second later the budget serves two more. Another peer's
// budget is its own, and RMEM requests are never charged.
func TestMaxReadRate(t *testing.T) {
	sw := newSwitch(t)
	p := newTap(t, sw, macP, false)
	q := newTap(t, sw, macQ, false)
	ram := newRAM(t)
	b := newEP(t, sw, macB, ram, endpoint.Config{MaxReadRate: 16 << 10})
	var clock atomic.Int64
	clock.Store(1)
	endpoint.SetReadClock(b, func() int64 { return clock.Load() })
	setPeer(t, b, 0, win(macP, endpoint.ModeDMARead))
	setPeer(t, b, 1, win(macQ, endpoint.ModeDMARead))
	dr := func(src wire.MAC, rid uint32) []byte { return frame(macB, src, 0x30, le(rid), le(0x1000), le(4096)) }
	replies := func(tp *tap, n int) {
		t.Helper()
		for range n {
			if f := wire.Frame(tp.next(t)); f.Cmd() != wire.DMAReadRsp {
				t.Fatalf("reply % x is not a DMA_READ_RSP", f[:16])
			}
		}
	}
	for rid := range uint32(10) {
		p.send(t, dr(macP, rid))
	}
	eventually(t, "8 drops", func() bool { return b.Stats().DropReadRate == 8 })
	replies(p, 2)
	p.none(t, 20*time.Millisecond)
	if src, ok := b.LastReadRateSource(); !ok || src != macP {
		t.Errorf("LastReadRateSource = %v, %v; want %v", src, ok, macP)
	}
	if st := b.Stats(); st.ServedDMARead != 2 {
		t.Errorf("ServedDMARead = %d, want 2", st.ServedDMARead)
	}

	// Q has a budget of its own; RMEM requests from P are not charged.
	q.send(t, dr(macQ, 100))
	replies(q, 1)
	setPeer(t, b, 0, win(macP, endpoint.ModeRMEM))
	p.send(t, frame(macB, macP, 0x10, le(200), le(0x1000)))
	if f := wire.Frame(p.next(t)); f.Cmd() != wire.RMEMReadRsp {
		t.Fatalf("RMEM read reply % x", f[:16])
	}
	setPeer(t, b, 0, win(macP, endpoint.ModeDMARead))

	// One second refills 16 KiB, capped at the burst: two more.
	clock.Add(int64(time.Second))
	for rid := range uint32(3) {
		p.send(t, dr(macP, 300+rid))
	}
	eventually(t, "9 drops", func() bool { return b.Stats().DropReadRate == 9 })
	replies(p, 2)
	p.none(t, 20*time.Millisecond)
}

// TestMaxReadRateOff: with no bound (the default) every read is served.
func TestMaxReadRateOff(t *testing.T) {
	sw := newSwitch(t)
	p := newTap(t, sw, macP, false)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	setPeer(t, b, 0, win(macP, endpoint.ModeDMARead))
	for rid := range uint32(10) {
		p.send(t, frame(macB, macP, 0x30, le(rid), le(0x1000), le(4096)))
		if f := wire.Frame(p.next(t)); f.Cmd() != wire.DMAReadRsp {
			t.Fatalf("reply % x", f[:16])
		}
	}
	if st := b.Stats(); st.DropReadRate != 0 || st.ServedDMARead != 10 {
		t.Errorf("DropReadRate %d, ServedDMARead %d; want 0 and 10", st.DropReadRate, st.ServedDMARead)
	}
	c := b.Config()
	c.MaxReadRate = -1
	if err := b.SetConfig(c); err == nil || !strings.Contains(err.Error(), "MaxReadRate -1 is negative") {
		t.Errorf("SetConfig with a negative MaxReadRate: %v", err)
	}
}
