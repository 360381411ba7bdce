package mem

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/wire"
)

// fillFrame returns a template of size bytes for dst whose data, 6 bytes
// at offset 16, is left stale (0xee), the rest set, and the frame that
// fillWith(tag) makes of it.
func fillFrame(dst wire.MAC, size int, tag byte) (tmpl, want []byte) {
	want = seqFrame(dst, macA, 7, size)
	for i := headerLen + 4; i < size; i++ {
		want[i] = byte(i)
	}
	copy(want[16:22], []byte{tag, tag + 1, tag + 2, tag + 3, tag + 4, tag + 5})
	tmpl = bytes.Clone(want)
	for i := 16; i < 22; i++ {
		tmpl[i] = 0xee
	}
	return tmpl, want
}

// fillWith returns a fill that writes tag, tag+1, ... and counts its calls.
func fillWith(tag byte, calls *int) func([]byte) bool {
	return func(d []byte) bool {
		*calls++
		for i := range d {
			d[i] = tag + byte(i)
		}
		return true
	}
}

// TestWriteFillUnicast checks that a filled unicast frame arrives with
// exactly the bytes Write of the filled frame would deliver, built in the
// receiver's slot (the caller's frame is left as it was), with Write's
// counters.
func TestWriteFillUnicast(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	c := attach(t, sw, macC) // must receive nothing
	var fw link.FillWriter = a
	for i, size := range []int{22, 60, 1500, sw.MaxFrame()} {
		tmpl, want := fillFrame(macB, size, byte(10*i))
		orig := bytes.Clone(tmpl)
		calls := 0
		filled, err := fw.WriteFill(tmpl, 16, 6, fillWith(byte(10*i), &calls))
		if !filled || err != nil || calls != 1 {
			t.Fatalf("%d bytes: WriteFill = %v, %v; fill called %d times", size, filled, err, calls)
		}
		if !bytes.Equal(tmpl, orig) {
			t.Errorf("%d bytes: the frame was filled in the caller's buffer, not in the receiver's slot", size)
		}
		if got := read1(t, b); !bytes.Equal(got, want) {
			t.Errorf("%d bytes: received\n% x\nwant\n% x", size, got, want)
		}
	}
	wantQueued(t, map[*Port]int{a: 0, c: 0})
	as, bs := a.Stats(), b.Stats()
	if as.TxFrames != 4 || as.TxBytes != 22+60+1500+8192 || bs.RxFrames != 4 || bs.RxBytes != as.TxBytes {
		t.Errorf("stats: a %+v, b %+v", as, bs)
	}
}

// TestWriteFillCancel checks that a cancelled fill writes nothing, counts
// nothing and gives its slot back.
func TestWriteFillCancel(t *testing.T) {
	sw := newSwitch(t, Config{QueueLen: 2})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	tmpl, _ := fillFrame(macB, 100, 0)
	for range 10 {
		if filled, err := a.WriteFill(tmpl, 16, 6, func([]byte) bool { return false }); filled || err != nil {
			t.Fatalf("cancelled WriteFill = %v, %v; want false, nil", filled, err)
		}
	}
	if s := a.Stats(); s.TxFrames != 0 || s.TxBytes != 0 {
		t.Errorf("cancelled fills counted: %+v", s)
	}
	wantQueued(t, map[*Port]int{b: 0})
	// The queue still has both of its slots.
	calls := 0
	for range 2 {
		if filled, err := a.WriteFill(tmpl, 16, 6, fillWith(1, &calls)); !filled || err != nil {
			t.Fatalf("WriteFill = %v, %v", filled, err)
		}
	}
	if s := b.Stats(); queued(b) != 2 || s.DropQueueFull != 0 {
		t.Errorf("%d frames queued, %d dropped; want 2 and 0", queued(b), s.DropQueueFull)
	}
}

// TestWriteFillOtherPaths checks the frames that are filled into the
// caller's buffer and written as Write writes them: a group destination,
// a fault, a full queue, refused lengths, a closed port. fill is called once
// each time, and the counts and errors are Write's.
func TestWriteFillOtherPaths(t *testing.T) {
	sw := newSwitch(t, Config{QueueLen: 1})
	a, b, c := attach(t, sw, macA), attach(t, sw, macB), attach(t, sw, macC)
	for _, p := range []*Port{b, c} {
		if err := p.JoinGroup(group1); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0

	// A group frame reaches both members.
	tmpl, want := fillFrame(group1, 80, 3)
	if filled, err := a.WriteFill(tmpl, 16, 6, fillWith(3, &calls)); !filled || err != nil || calls != 1 {
		t.Fatalf("group WriteFill = %v, %v, %d calls", filled, err, calls)
	}
	if !bytes.Equal(tmpl, want) {
		t.Errorf("group frame not filled into the caller's buffer")
	}
	for _, p := range []*Port{b, c} {
		if got := read1(t, p); !bytes.Equal(got, want) {
			t.Errorf("%v got % x, want % x", p.Addr(), got, want)
		}
	}

	// A full queue drops the frame and counts it, after the fill.
	calls = 0
	tmpl, _ = fillFrame(macB, 80, 4)
	write(t, a, seqFrame(macB, macA, 1, 60))
	if filled, err := a.WriteFill(tmpl, 16, 6, fillWith(4, &calls)); !filled || err != nil || calls != 1 {
		t.Fatalf("WriteFill to a full queue = %v, %v, %d calls", filled, err, calls)
	}
	if s := b.Stats(); s.DropQueueFull != 1 {
		t.Errorf("DropQueueFull %d, want 1", s.DropQueueFull)
	}
	read1(t, b)

	// A slot being filled counts against the queue: a frame written by
	// the fill itself finds the one-frame queue full.
	calls = 0
	if filled, err := a.WriteFill(tmpl, 16, 6, func(d []byte) bool {
		calls++
		write(t, a, seqFrame(macB, macA, 2, 60))
		return true
	}); !filled || err != nil || calls != 1 {
		t.Fatalf("WriteFill = %v, %v, %d calls", filled, err, calls)
	}
	if s := b.Stats(); s.DropQueueFull != 2 || queued(b) != 1 || len(read1(t, b)) != 80 {
		t.Errorf("DropQueueFull %d, %d queued; want 2 and the filled frame", s.DropQueueFull, queued(b))
	}

	// A fault sees the filled frame: a Drop rule on it.
	addRule(t, sw, Rule{To: macB, Action: Drop, Count: 1})
	calls = 0
	if filled, err := a.WriteFill(tmpl, 16, 6, fillWith(4, &calls)); !filled || err != nil || calls != 1 {
		t.Fatalf("WriteFill through a fault = %v, %v, %d calls", filled, err, calls)
	}
	if s := a.Stats(); s.DropFault != 1 || queued(b) != 0 {
		t.Errorf("DropFault %d, %d queued; want 1 and 0", s.DropFault, queued(b))
	}

	// Refused lengths: Write's errors, after the fill.
	calls = 0
	long := make([]byte, sw.MaxFrame()+1)
	copy(long, tmpl)
	if filled, err := a.WriteFill(long, 16, 6, fillWith(4, &calls)); !filled || !errors.Is(err, ErrFrameTooLong) || calls != 1 {
		t.Errorf("too long: WriteFill = %v, %v, %d calls; want true, ErrFrameTooLong, 1", filled, err, calls)
	}
	calls = 0
	if filled, err := a.WriteFill(tmpl[:13], 6, 6, fillWith(4, &calls)); !filled || !errors.Is(err, ErrFrameTooShort) || calls != 1 {
		t.Errorf("too short: WriteFill = %v, %v, %d calls; want true, ErrFrameTooShort, 1", filled, err, calls)
	}

	// The receiver closes while the frame is being filled: it is discarded.
	calls = 0
	if filled, err := a.WriteFill(tmpl, 16, 6, func([]byte) bool { calls++; b.Close(); return true }); !filled || err != nil || calls != 1 {
		t.Errorf("WriteFill to a port closed meanwhile = %v, %v, %d calls", filled, err, calls)
	}
	if filled, err := a.WriteFill(tmpl, 16, 6, func([]byte) bool { calls++; b.Close(); return false }); filled || err != nil {
		t.Errorf("cancelled WriteFill to a closed port = %v, %v", filled, err)
	}

	// The writer closed: Write's error.
	a.Close()
	calls = 0
	if filled, err := a.WriteFill(tmpl, 16, 6, fillWith(4, &calls)); !filled || !errors.Is(err, link.ErrClosed) || calls != 1 {
		t.Errorf("closed: WriteFill = %v, %v, %d calls; want true, link.ErrClosed, 1", filled, err, calls)
	}
}

// TestWriteFillConcurrent runs filled and plain writers against one reader:
// every frame arrives whole, each writer's in order.
func TestWriteFillConcurrent(t *testing.T) {
	const writers, per = 4, 200
	sw := newSwitch(t, Config{QueueLen: writers * per})
	b := attach(t, sw, macB)
	macs := []wire.MAC{macA, macC, macD, {0x02, 0, 0, 0, 0, 0x0f}}
	var wg sync.WaitGroup
	for w := range writers {
		p := attach(t, sw, macs[w])
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := seqFrame(macB, macs[w], 0, 1000)
			for i := range per {
				f[headerLen+4] = byte(w)
				var err error
				if w%2 == 0 {
					_, err = p.WriteFill(f, headerLen, 4, func(d []byte) bool {
						d[0], d[1], d[2], d[3] = 0, 0, byte(i>>8), byte(i)
						return true
					})
				} else {
					f[headerLen+2], f[headerLen+3] = byte(i>>8), byte(i)
					err = p.Write(f)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	got := readN(t, b, writers*per)
	wg.Wait()
	next := make([]uint32, writers)
	for _, f := range got {
		w := f[headerLen+4]
		if len(f) != 1000 || int(w) >= writers || seqOf(f) != next[w] {
			t.Fatalf("frame of %d bytes from writer %d seq %d, want seq %d", len(f), w, seqOf(f), next[w])
		}
		next[w]++
	}
}

func TestWriteFillNoAllocs(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	tmpl, _ := fillFrame(macB, 8192, 1)
	bufs, sizes := [][]byte{make([]byte, 8192)}, make([]int, 1)
	stop := func(int) bool { return false }
	fill := func(d []byte) bool { d[0] = 1; return true }
	step := func() {
		if filled, err := a.WriteFill(tmpl, 16, 6, fill); !filled || err != nil {
			t.Fatal(filled, err)
		}
		if err := b.ReadLoop(bufs, sizes, stop); err != nil || sizes[0] != len(tmpl) {
			t.Fatalf("ReadLoop = %v, size %d", err, sizes[0])
		}
	}
	step()
	if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
		t.Errorf("WriteFill+ReadLoop allocates %v times per frame, want 0", allocs)
	}
}
