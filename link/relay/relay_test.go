package relay_test

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/link/relay"
	"github.com/openenoc/oetp/wire"
)

var (
	macA = endpointtest.MAC(0x0a)
	macB = endpointtest.MAC(0x0b)
	macR = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x02, 0x01}
	macS = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x02, 0x02}
)

// rig is A on one switch, B on another, and the relay between them.
type rig struct {
	a, b *mem.Port
	r    *relay.Relay
	got  chan []byte // frames B received, with their arrival time
	at   chan time.Time
}

func newRig(t *testing.T, cfg relay.Config) *rig {
	t.Helper()
	sw1, err := mem.NewSwitch(mem.Config{QueueLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	sw2, _ := mem.NewSwitch(mem.Config{QueueLen: 4096})
	attach := func(sw *mem.Switch, m wire.MAC) *mem.Port {
		p, err := sw.Attach(m)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	g := &rig{a: attach(sw1, macA), b: attach(sw2, macB), got: make(chan []byte, 1<<14), at: make(chan time.Time, 1<<14)}
	g.r, err = relay.New(attach(sw1, macR), attach(sw2, macS), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.r.Close(); g.a.Close(); g.b.Close() })
	go func() {
		bufs, sizes := [][]byte{make([]byte, 9100)}, []int{0}
		for {
			n, err := g.b.ReadBatch(bufs, sizes)
			if err != nil {
				return
			}
			for i := range n {
				g.at <- time.Now()
				g.got <- bytes.Clone(bufs[i][:sizes[i]])
			}
		}
	}()
	return g
}

// frame k from A to B: 60 bytes, k in the payload.
func frameK(k int) []byte {
	f := make([]byte, 60)
	copy(f, macB[:])
	copy(f[6:], macA[:])
	f[12], f[13] = 0x88, 0xB5
	binary.LittleEndian.PutUint32(f[16:], uint32(k))
	return f
}

func (g *rig) send(t *testing.T, ks ...int) {
	t.Helper()
	for _, k := range ks {
		if err := g.a.Write(frameK(k)); err != nil {
			t.Fatal(err)
		}
	}
}

// recv returns the payload numbers of the next n frames at B.
func (g *rig) recv(t *testing.T, n int) []int {
	t.Helper()
	var ks []int
	for range n {
		select {
		case f := <-g.got:
			<-g.at
			ks = append(ks, int(binary.LittleEndian.Uint32(f[16:])))
		case <-time.After(5 * time.Second):
			t.Fatalf("got %v, then nothing", ks)
		}
	}
	return ks
}

// waitSent waits until the relay has counted n frames sent a -> b: a
// frame can arrive before the relay's Write returns and counts it.
func (g *rig) waitSent(t *testing.T, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if ab, _ := g.r.Stats(); ab.Sent >= n || time.Now().After(deadline) {
			return
		}
	}
}

func (g *rig) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case f := <-g.got:
		t.Fatalf("unexpected frame % x", f)
	case <-time.After(d):
	}
}

func eq(t *testing.T, what string, want, got []int) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

func TestPassThrough(t *testing.T) {
	g := newRig(t, relay.Config{})
	g.send(t, 1, 2, 3)
	eq(t, "frames", []int{1, 2, 3}, g.recv(t, 3))
	// The other direction too.
	f := frameK(9)
	copy(f, macA[:])
	copy(f[6:], macB[:])
	if err := g.b.Write(f); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, ba := g.r.Stats(); ba.Sent == 1 || time.Now().After(deadline) {
			break
		}
	}
	if ab, ba := g.r.Stats(); ab.Received != 3 || ab.Sent != 3 || ba.Received != 1 || ba.Sent != 1 || ab.Dropped+ab.Delayed+ab.Reordered != 0 {
		t.Fatalf("stats %+v / %+v", ab, ba)
	}
}

func TestLossSeeded(t *testing.T) {
	pattern := func() []int {
		g := newRig(t, relay.Config{Loss: 0.3, Seed: 42})
		for k := range 1000 {
			g.send(t, k)
		}
		var ab relay.Stats
		for deadline := time.Now().Add(5 * time.Second); ab.Dropped+ab.Sent < 1000 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			ab, _ = g.r.Stats()
		}
		got := g.recv(t, int(ab.Sent))
		g.none(t, 20*time.Millisecond)
		if ab.Received != 1000 || ab.Dropped+ab.Sent != 1000 || ab.Dropped < 240 || ab.Dropped > 360 {
			t.Fatalf("stats %+v", ab)
		}
		return got
	}
	eq(t, "the same seed drops the same frames", pattern(), pattern())
}

func TestDuplicate(t *testing.T) {
	g := newRig(t, relay.Config{Duplicate: 1})
	g.send(t, 1, 2)
	eq(t, "frames", []int{1, 1, 2, 2}, g.recv(t, 4))
	g.waitSent(t, 4)
	if ab, _ := g.r.Stats(); ab.Duplicated != 2 || ab.Sent != 4 {
		t.Fatalf("stats %+v", ab)
	}
}

func TestReorder(t *testing.T) {
	g := newRig(t, relay.Config{Reorder: 1, ReorderHold: time.Hour})
	g.send(t, 1, 2, 3, 4)
	eq(t, "frames", []int{2, 1, 4, 3}, g.recv(t, 4))
	g.waitSent(t, 4)
	if ab, _ := g.r.Stats(); ab.Reordered != 2 || ab.Sent != 4 {
		t.Fatalf("stats %+v", ab)
	}
	// A held frame with no follower comes out after the hold.
	g2 := newRig(t, relay.Config{Reorder: 1, ReorderHold: 30 * time.Millisecond})
	start := time.Now()
	g2.send(t, 7)
	eq(t, "lone frame", []int{7}, g2.recv(t, 1))
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("held frame released after %v, before the 30ms hold", el)
	}
}

func TestCorrupt(t *testing.T) {
	g := newRig(t, relay.Config{Corrupt: 1, Seed: 3})
	for k := range 50 {
		g.send(t, k)
	}
	// A flipped bit in the destination address sends a frame elsewhere;
	// every frame that arrives differs from one that was sent in one bit.
	// The relay has handled all 50 before the arrivals are drained, so a
	// stalled host cannot end the count early.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if ab, _ := g.r.Stats(); ab.Corrupted == 50 {
			break
		}
		if time.Now().After(deadline) {
			ab, _ := g.r.Stats()
			t.Fatalf("the relay corrupted %d of 50 frames", ab.Corrupted)
		}
	}
	n := 0
	for {
		var f []byte
		select {
		case f = <-g.got:
			<-g.at
		case <-time.After(300 * time.Millisecond):
		}
		if f == nil {
			break
		}
		n++
		ok := false
		for k := range 50 {
			want := frameK(k)
			d := 0
			for i := range min(len(f), len(want)) {
				d += bits.OnesCount8(f[i] ^ want[i])
			}
			ok = ok || len(f) == len(want) && d == 1
		}
		if !ok {
			t.Fatalf("frame % x differs from every frame sent in more or less than one bit", f)
		}
	}
	if ab, _ := g.r.Stats(); ab.Corrupted != 50 || n < 40 {
		t.Fatalf("stats %+v, %d frames arrived", ab, n)
	}
}

func TestDelayJitter(t *testing.T) {
	g := newRig(t, relay.Config{Delay: 30 * time.Millisecond})
	start := time.Now()
	g.send(t, 1, 2)
	eq(t, "delayed frames", []int{1, 2}, g.recv(t, 2))
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("frames arrived after %v, before the 30ms delay", el)
	}
	// With jitter wider than the gap between frames, some overtake others.
	g = newRig(t, relay.Config{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Seed: 1})
	for k := range 200 {
		g.send(t, k)
	}
	got := g.recv(t, 200)
	inversions := 0
	seen := map[int]bool{}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			inversions++
		}
	}
	for _, k := range got {
		seen[k] = true
	}
	if len(seen) != 200 || inversions == 0 {
		t.Fatalf("%d distinct frames, %d inversions; want 200 and some", len(seen), inversions)
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []relay.Config{{Loss: -0.1}, {Duplicate: 1.5}, {Delay: -1}, {Jitter: -1}} {
		if _, err := relay.New(nil, nil, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

func TestDrop(t *testing.T) {
	g := newRig(t, relay.Config{})
	g.r.Drop(true, 2)
	g.send(t, 1, 2, 3)
	eq(t, "frames", []int{3}, g.recv(t, 1))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if ab, _ := g.r.Stats(); ab.Sent == 1 || time.Now().After(deadline) {
			break
		}
	}
	if ab, _ := g.r.Stats(); ab.Dropped != 2 || ab.Sent != 1 {
		t.Fatalf("stats %+v", ab)
	}
}
