package mem

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/linktest"
	"github.com/openenoc/oetp/wire"
)

var (
	macA   = wire.MAC{0x02, 0, 0, 0, 0, 0x0a}
	macB   = wire.MAC{0x02, 0, 0, 0, 0, 0x0b}
	macC   = wire.MAC{0x02, 0, 0, 0, 0, 0x0c}
	macD   = wire.MAC{0x02, 0, 0, 0, 0, 0x0d}
	macX   = wire.MAC{0x02, 0, 0, 0, 0, 0xee} // never attached
	group1 = wire.MAC{0x01, 0x00, 0x5e, 0, 0, 0x01}
	group2 = wire.MAC{0x01, 0x00, 0x5e, 0, 0, 0x02}
)

// frame builds dst|src|88b5|payload.
func frame(dst, src wire.MAC, payload ...byte) []byte {
	b := make([]byte, 0, headerLen+len(payload))
	b = append(b, dst[:]...)
	b = append(b, src[:]...)
	b = append(b, 0x88, 0xb5)
	return append(b, payload...)
}

// seqFrame builds a frame of size bytes whose payload starts with seq.
func seqFrame(dst, src wire.MAC, seq uint32, size int) []byte {
	f := frame(dst, src, make([]byte, size-headerLen)...)
	binary.BigEndian.PutUint32(f[headerLen:], seq)
	return f
}

func seqOf(f []byte) uint32 { return binary.BigEndian.Uint32(f[headerLen:]) }

func newSwitch(t testing.TB, cfg Config) *Switch {
	t.Helper()
	sw, err := NewSwitch(cfg)
	if err != nil {
		t.Fatalf("NewSwitch(%+v): %v", cfg, err)
	}
	return sw
}

func attach(t testing.TB, sw *Switch, mac wire.MAC) *Port {
	t.Helper()
	p, err := sw.Attach(mac)
	if err != nil {
		t.Fatalf("Attach(%v): %v", mac, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func write(t testing.TB, p *Port, f []byte) {
	t.Helper()
	if err := p.Write(f); err != nil {
		t.Fatalf("%v.Write(%d bytes): %v", p.Addr(), len(f), err)
	}
}

// queued is the number of frames in p's receive queue, ready or not.
func queued(p *Port) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.count
}

func readN(t testing.TB, p *Port, n int) [][]byte {
	t.Helper()
	return linktest.ReadN(t, p, n)
}

func read1(t testing.TB, p *Port) []byte { t.Helper(); return readN(t, p, 1)[0] }

func wantQueued(t *testing.T, want map[*Port]int) {
	t.Helper()
	for p, n := range want {
		if got := queued(p); got != n {
			t.Errorf("%v has %d frames queued, want %d", p.Addr(), got, n)
		}
	}
}

func TestUnicastExactBytes(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b, c := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC)
	f := frame(macB, macA, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01)
	want := bytes.Clone(f)
	write(t, a, f)
	for i := range f { // the caller may reuse its buffer once Write returns
		f[i] = 0x55
	}
	wantQueued(t, map[*Port]int{a: 0, b: 1, c: 0})
	if got := read1(t, b); !bytes.Equal(got, want) {
		t.Fatalf("b received % x, want % x", got, want)
	}
	if s := a.Stats(); s != (Stats{TxFrames: 1, TxBytes: uint64(len(want))}) {
		t.Errorf("a.Stats() = %+v", s)
	}
	if s := b.Stats(); s != (Stats{RxFrames: 1, RxBytes: uint64(len(want))}) {
		t.Errorf("b.Stats() = %+v", s)
	}
}

func TestGroupDeliveryOnlyToJoinedPorts(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b, c, d := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC), attach(t, sw, macD)
	for _, p := range []*Port{a, b} {
		if err := p.JoinGroup(group1); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.JoinGroup(group2); err != nil {
		t.Fatal(err)
	}
	f := frame(group1, macA, 1, 2, 3)
	write(t, a, f)
	wantQueued(t, map[*Port]int{a: 0, b: 1, c: 0, d: 0})
	if got := read1(t, b); !bytes.Equal(got, f) {
		t.Fatalf("b received % x, want % x", got, f)
	}

	write(t, d, frame(group1, macD, 4))
	wantQueued(t, map[*Port]int{a: 1, b: 1, c: 0, d: 0})
	readN(t, a, 1)
	readN(t, b, 1)

	if err := b.LeaveGroup(group1); err != nil {
		t.Fatal(err)
	}
	write(t, d, frame(group1, macD, 5))
	wantQueued(t, map[*Port]int{a: 1, b: 0, c: 0, d: 0})
	if err := b.JoinGroup(macC); err == nil || !strings.Contains(err.Error(), "not a group address") {
		t.Errorf("JoinGroup(unicast) = %v, want a not-a-group-address error", err)
	}
}

func TestBroadcastToAllButSender(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b, c, d := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC), attach(t, sw, macD)
	f := frame(wire.Broadcast, macA, 9, 8, 7)
	write(t, a, f)
	wantQueued(t, map[*Port]int{a: 0, b: 1, c: 1, d: 1})
	for _, p := range []*Port{b, c, d} {
		if got := read1(t, p); !bytes.Equal(got, f) {
			t.Errorf("%v received % x, want % x", p.Addr(), got, f)
		}
	}
	if s := sw.Stats(); s.TxFrames != 1 || s.RxFrames != 3 || s.RxBytes != 3*uint64(len(f)) {
		t.Errorf("sw.Stats() = %+v, want 1 frame sent and 3 received", s)
	}
}

func TestPromiscuous(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b, c, d := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC), attach(t, sw, macD)
	if err := d.SetPromiscuous(true); err != nil {
		t.Fatal(err)
	}
	if err := d.JoinGroup(group1); err != nil {
		t.Fatal(err)
	}
	write(t, a, frame(macB, macA, 1))   // unicast to b
	write(t, a, frame(macX, macA, 2))   // unknown unicast
	write(t, a, frame(group1, macA, 3)) // joined group: still once
	write(t, a, frame(group2, macA, 4)) // group nobody joined
	write(t, d, frame(macB, macD, 5))   // its own frame never comes back
	wantQueued(t, map[*Port]int{a: 0, b: 2, c: 0, d: 4})
	var seen []byte
	for _, f := range readN(t, d, 4) {
		seen = append(seen, f[headerLen])
	}
	if !bytes.Equal(seen, []byte{1, 2, 3, 4}) {
		t.Errorf("promiscuous port saw payloads %v, want [1 2 3 4]", seen)
	}

	if err := d.SetPromiscuous(false); err != nil {
		t.Fatal(err)
	}
	write(t, a, frame(macB, macA, 6))
	write(t, a, frame(macX, macA, 7))
	wantQueued(t, map[*Port]int{d: 0})
}

func TestUnknownUnicastGoesNowhere(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b, c := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC)
	write(t, a, frame(macX, macA, 1, 2, 3))
	wantQueued(t, map[*Port]int{a: 0, b: 0, c: 0})
	if s := sw.Stats(); s.TxFrames != 1 || s.RxFrames != 0 {
		t.Errorf("sw.Stats() = %+v, want 1 sent, 0 received", s)
	}
}

func TestFrameLengthLimits(t *testing.T) {
	sw := newSwitch(t, Config{MaxFrame: 100})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	if a.MaxFrame() != 100 || sw.MaxFrame() != 100 {
		t.Fatalf("MaxFrame = %d, %d, want 100", a.MaxFrame(), sw.MaxFrame())
	}
	err := a.Write(seqFrame(macB, macA, 1, 101))
	if !errors.Is(err, ErrFrameTooLong) || !strings.Contains(err.Error(), "101 bytes, MaxFrame is 100") {
		t.Fatalf("Write(101 bytes) = %v, want ErrFrameTooLong naming both sizes", err)
	}
	err = a.Write(frame(macB, macA)[:13])
	if !errors.Is(err, ErrFrameTooShort) {
		t.Fatalf("Write(13 bytes) = %v, want ErrFrameTooShort", err)
	}
	write(t, a, seqFrame(macB, macA, 2, 100))
	write(t, a, frame(macB, macA)) // a bare 14-byte header is a frame
	got := readN(t, b, 2)
	if len(got[0]) != 100 || seqOf(got[0]) != 2 || len(got[1]) != 14 {
		t.Errorf("b received frames of %d and %d bytes, want 100 (seq 2) and 14", len(got[0]), len(got[1]))
	}
	want := Stats{TxFrames: 2, TxBytes: 114, DropTooLong: 1, DropTooShort: 1}
	if s := a.Stats(); s != want {
		t.Errorf("a.Stats() = %+v, want %+v", s, want)
	}
}

func TestQueueOverflowCounted(t *testing.T) {
	sw := newSwitch(t, Config{QueueLen: 4})
	a, b, c := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC)
	for i := range 6 {
		write(t, a, seqFrame(wire.Broadcast, macA, uint32(i), 60))
	}
	for _, p := range []*Port{b, c} {
		if s := p.Stats(); s.DropQueueFull != 2 {
			t.Errorf("%v DropQueueFull = %d, want 2", p.Addr(), s.DropQueueFull)
		}
	}
	// The oldest frames survive, in order; freed slots are reused.
	for i, f := range readN(t, b, 4) {
		if seqOf(f) != uint32(i) {
			t.Errorf("frame %d has seq %d, want %d", i, seqOf(f), i)
		}
	}
	write(t, a, seqFrame(macB, macA, 100, 60))
	if f := read1(t, b); seqOf(f) != 100 {
		t.Errorf("after draining, b received seq %d, want 100", seqOf(f))
	}
	if s := sw.Stats(); s.DropQueueFull != 4 || s.TxFrames != 7 || s.RxFrames != 5 {
		t.Errorf("sw.Stats() = %+v, want 4 queue-full drops, 7 sent, 5 received", s)
	}
}

func TestReadBatch(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	for i := range 3 {
		write(t, a, seqFrame(macB, macA, uint32(i), 60+i))
	}
	bufs := make([][]byte, 8)
	for i := range bufs {
		bufs[i] = make([]byte, 8192)
	}
	sizes := make([]int, 8)
	n, err := b.ReadBatch(bufs[:2], sizes)
	if err != nil || n != 2 {
		t.Fatalf("ReadBatch(2 bufs) = %d, %v; want 2 frames", n, err)
	}
	n, err = b.ReadBatch(bufs, sizes)
	if err != nil || n != 1 || sizes[0] != 62 || seqOf(bufs[0]) != 2 {
		t.Fatalf("ReadBatch(8 bufs) = %d, %v, size %d; want the 1 remaining 62-byte frame", n, err, sizes[0])
	}

	// A frame longer than its buffer is truncated to the buffer.
	f := seqFrame(macB, macA, 7, 60)
	write(t, a, f)
	short := [][]byte{make([]byte, 20)}
	n, err = b.ReadBatch(short, sizes)
	if err != nil || n != 1 || sizes[0] != 20 || !bytes.Equal(short[0], f[:20]) {
		t.Fatalf("ReadBatch(20-byte buf) = %d, %v, size %d; want the first 20 bytes", n, err, sizes[0])
	}
	if s := b.Stats(); s.RxBytes != 60+61+62+60 {
		t.Errorf("RxBytes = %d, want %d (frame sizes, not buffer sizes)", s.RxBytes, 60+61+62+60)
	}

	if _, err := b.ReadBatch(nil, nil); err == nil {
		t.Error("ReadBatch(nil) succeeded, want an error")
	}
	if _, err := b.ReadBatch(bufs, sizes[:1]); err == nil || !strings.Contains(err.Error(), "sizes") {
		t.Errorf("ReadBatch with short sizes = %v, want an error naming sizes", err)
	}
}

func TestWriteBatch(t *testing.T) {
	sw := newSwitch(t, Config{MaxFrame: 64})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	frames := [][]byte{seqFrame(macB, macA, 1, 60), seqFrame(macB, macA, 2, 64), seqFrame(macB, macA, 3, 65), seqFrame(macB, macA, 4, 60)}
	n, err := a.WriteBatch(frames)
	if n != 2 || !errors.Is(err, ErrFrameTooLong) {
		t.Fatalf("WriteBatch = %d, %v; want 2 accepted then ErrFrameTooLong", n, err)
	}
	got := readN(t, b, 2)
	if seqOf(got[0]) != 1 || seqOf(got[1]) != 2 || queued(b) != 0 {
		t.Errorf("b received seqs %d, %d with %d more queued; want 1, 2 and none", seqOf(got[0]), seqOf(got[1]), queued(b))
	}
}

func TestCloseUnblocksReadBatch(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	closeUnblocks(t, b, "a ReadBatch waiting for a frame")
	if err := b.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := b.Write(frame(macA, macB)); !errors.Is(err, link.ErrClosed) {
		t.Errorf("Write after Close = %v, want link.ErrClosed", err)
	}
	if _, err := b.ReadBatch([][]byte{make([]byte, 64)}, make([]int, 1)); !errors.Is(err, link.ErrClosed) {
		t.Errorf("ReadBatch after Close = %v, want link.ErrClosed", err)
	}
	for name, err := range map[string]error{
		"JoinGroup":      b.JoinGroup(group1),
		"LeaveGroup":     b.LeaveGroup(group1),
		"SetPromiscuous": b.SetPromiscuous(true),
	} {
		if !errors.Is(err, link.ErrClosed) {
			t.Errorf("%s after Close = %v, want link.ErrClosed", name, err)
		}
	}

	// Close detached b: frames to its MAC go nowhere, and the MAC is free.
	write(t, a, frame(macB, macA, 1))
	if s := b.Stats(); s.DropQueueFull != 0 {
		t.Errorf("closed port counted %d queue-full drops", s.DropQueueFull)
	}
	b2 := attach(t, sw, macB)
	write(t, a, frame(macB, macA, 2))
	if got := read1(t, b2); got[headerLen] != 2 {
		t.Errorf("re-attached port received payload %d, want 2", got[headerLen])
	}
}

func TestCloseWhileWaitingForLatency(t *testing.T) {
	sw := newSwitch(t, Config{Latency: time.Hour})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	write(t, a, frame(macB, macA, 1))
	closeUnblocks(t, b, "a ReadBatch waiting for a delayed frame")
}

// closeUnblocks starts a ReadBatch of p, waits until it waits (it found
// nothing to read), closes p and checks that the ReadBatch returns
// link.ErrClosed.
func closeUnblocks(t *testing.T, p *Port, what string) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := p.ReadBatch([][]byte{make([]byte, 64)}, make([]int, 1))
		errc <- err
	}()
	testutil.Eventually(t, what, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.waiting
	})
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, link.ErrClosed) {
			t.Fatalf("%s returned %v, want link.ErrClosed", what, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Close did not unblock %s", what)
	}
}

func TestAttachRefusals(t *testing.T) {
	sw := newSwitch(t, Config{})
	attach(t, sw, macA)
	if _, err := sw.Attach(macA); !errors.Is(err, ErrAddrInUse) {
		t.Errorf("Attach(duplicate) = %v, want ErrAddrInUse", err)
	}
	if _, err := sw.Attach(group1); !errors.Is(err, ErrNotUnicast) || !strings.Contains(err.Error(), "group address") {
		t.Errorf("Attach(group) = %v, want ErrNotUnicast naming the group bit", err)
	}
	if _, err := sw.Attach(wire.Broadcast); !errors.Is(err, ErrNotUnicast) {
		t.Errorf("Attach(broadcast) = %v, want ErrNotUnicast", err)
	}
	if _, err := sw.Attach(wire.MAC{}); !errors.Is(err, ErrNotUnicast) || !strings.Contains(err.Error(), "zero") {
		t.Errorf("Attach(zero) = %v, want ErrNotUnicast naming the zero address", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxFrame: -1}, "Config.MaxFrame is -1"},
		{Config{MaxFrame: 13}, "Config.MaxFrame is 13"},
		{Config{MaxFrame: maxMaxFrame + 1}, "Config.MaxFrame is 1048577"},
		{Config{QueueLen: -5}, "Config.QueueLen is -5"},
		{Config{QueueLen: maxQueueLen + 1}, "Config.QueueLen is 65537"},
		{Config{Latency: -time.Millisecond}, "Config.Latency is -1ms"},
		{Config{Bandwidth: -1}, "Config.Bandwidth is -1"},
	} {
		sw, err := NewSwitch(tc.cfg)
		if err == nil || sw != nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewSwitch(%+v) = %v, %v; want an error containing %q", tc.cfg, sw, err, tc.want)
		}
	}
	sw := newSwitch(t, Config{})
	if sw.cfg.MaxFrame != DefaultMaxFrame || sw.cfg.QueueLen != DefaultQueueLen {
		t.Errorf("defaults: MaxFrame %d, QueueLen %d; want %d, %d", sw.cfg.MaxFrame, sw.cfg.QueueLen, DefaultMaxFrame, DefaultQueueLen)
	}
}

func TestLatencyAndBandwidth(t *testing.T) {
	t.Run("latency", func(t *testing.T) {
		const lat = 30 * time.Millisecond
		sw := newSwitch(t, Config{Latency: lat})
		a, b := attach(t, sw, macA), attach(t, sw, macB)
		start := time.Now()
		write(t, a, seqFrame(macB, macA, 1, 60))
		f := read1(t, b)
		if d := time.Since(start); d < lat || seqOf(f) != 1 {
			t.Errorf("frame seq %d readable after %v, want seq 1 no sooner than %v", seqOf(f), d, lat)
		}
	})
	t.Run("bandwidth", func(t *testing.T) {
		// 1000-byte frames at 100 kB/s take 10 ms each on the wire.
		sw := newSwitch(t, Config{Bandwidth: 100_000})
		a, b := attach(t, sw, macA), attach(t, sw, macB)
		start := time.Now()
		for i := range 5 {
			write(t, a, seqFrame(macB, macA, uint32(i), 1000))
		}
		got := readN(t, b, 5)
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("5 frames of 10 ms each arrived after %v, want no sooner than 50ms", d)
		}
		for i, f := range got {
			if seqOf(f) != uint32(i) {
				t.Errorf("frame %d has seq %d", i, seqOf(f))
			}
		}
	})
}

func TestWriteDoesNotWait(t *testing.T) {
	// Each Write returns once the frame is queued, long before it is
	// readable: an hour of latency, or a minute per frame on the wire.
	for _, cfg := range []Config{{Latency: time.Hour}, {Bandwidth: 1}} {
		sw := newSwitch(t, cfg)
		a, b := attach(t, sw, macA), attach(t, sw, macB)
		for i := range 3 {
			write(t, a, seqFrame(macB, macA, uint32(i), 60))
		}
		if queued(b) != 3 {
			t.Errorf("%+v: %d frames queued, want 3", cfg, queued(b))
		}
	}
}

func TestConcurrentWriters(t *testing.T) {
	const writers, perWriter = 4, 500
	sw := newSwitch(t, Config{MaxFrame: 64, QueueLen: writers * perWriter})
	dst := attach(t, sw, macD)
	srcs := []wire.MAC{macA, macB, macC, macX}
	var wg sync.WaitGroup
	for w, mac := range srcs {
		p := attach(t, sw, mac)
		wg.Go(func() {
			for i := range perWriter {
				if err := p.Write(seqFrame(macD, mac, uint32(w<<16|i), 60)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// Read concurrently with the writers.
	got := readN(t, dst, writers*perWriter)
	wg.Wait()
	next := make([]int, writers)
	for _, f := range got {
		w, i := int(seqOf(f)>>16), int(seqOf(f)&0xffff)
		if src := wire.MAC(f[6:12]); src != srcs[w] {
			t.Fatalf("frame seq %#x has source %v, want %v", seqOf(f), src, srcs[w])
		}
		if i != next[w] {
			t.Fatalf("writer %d: got frame %d, want %d (per-sender order must hold)", w, i, next[w])
		}
		next[w]++
	}
	if s := sw.Stats(); s.TxFrames != writers*perWriter || s.RxFrames != writers*perWriter || s.DropQueueFull != 0 {
		t.Errorf("sw.Stats() = %+v", s)
	}
}

func TestZeroAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		dst  wire.MAC
	}{
		{"unicast", Config{}, macB},
		{"broadcast", Config{}, wire.Broadcast},
		{"group", Config{}, group1},
		{"latency", Config{Latency: time.Microsecond}, macB},
		{"bandwidth", Config{Bandwidth: 1e10}, macB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sw := newSwitch(t, tc.cfg)
			a, b, c := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC)
			if err := b.JoinGroup(group1); err != nil {
				t.Fatal(err)
			}
			f := seqFrame(tc.dst, macA, 1, 1500)
			bufs := [][]byte{make([]byte, 8192)}
			sizes := make([]int, 1)
			step := func() {
				if err := a.Write(f); err != nil {
					t.Fatal(err)
				}
				if n, err := b.ReadBatch(bufs, sizes); n != 1 || err != nil || sizes[0] != len(f) {
					t.Fatalf("ReadBatch = %d, %v, size %d", n, err, sizes[0])
				}
				if tc.dst == wire.Broadcast {
					if n, err := c.ReadBatch(bufs, sizes); n != 1 || err != nil {
						t.Fatalf("c.ReadBatch = %d, %v", n, err)
					}
				}
			}
			step() // warm up: the first frame allocates its slot
			if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
				t.Errorf("Write+ReadBatch allocates %v times per frame, want 0", allocs)
			}
		})
	}
}

func TestWakesBlockedReader(t *testing.T) {
	// A reader blocked on an empty queue wakes for each new frame.
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	const n = 200
	done := make(chan []byte, n)
	go func() {
		bufs := [][]byte{make([]byte, 64)}
		sizes := make([]int, 1)
		for range n {
			if _, err := b.ReadBatch(bufs, sizes); err != nil {
				close(done)
				return
			}
			done <- bytes.Clone(bufs[0][:sizes[0]])
		}
	}()
	for i := range n {
		f := seqFrame(macB, macA, uint32(i), 60)
		write(t, a, f)
		select {
		case got := <-done:
			if !bytes.Equal(got, f) {
				t.Fatalf("frame %d: got % x", i, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("frame %d never reached the blocked reader", i)
		}
	}
}
