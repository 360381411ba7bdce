package mem

import (
	"bytes"
	"testing"

	"github.com/openenoc/oetp/link"
)

// TestReadLoopHandsOverSlots checks that ReadLoop delivers every frame in
// order without copying into a buffer of MaxFrame bytes or more (the
// buffer is swapped with the queue slot), copies into a shorter one, and
// never touches a buffer it has handed back to the caller.
func TestReadLoopHandsOverSlots(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	var lp link.Looper = b
	const n = 20
	for i := range n {
		write(t, a, seqFrame(macB, macA, uint32(i), 100+i))
	}
	own := make([]byte, sw.MaxFrame()+1)
	bufs, sizes := [][]byte{own, make([]byte, 64)}, make([]int, 2)
	var kept [][]byte // buffers handed to us, and what they held
	var want [][]byte
	got := 0
	err := lp.ReadLoop(bufs, sizes, func(k int) bool {
		for i := range k {
			f := bufs[i][:sizes[i]]
			if i == 1 && len(bufs[1]) != 64 {
				t.Errorf("the 64-byte buffer was replaced by %d bytes", len(bufs[1]))
			}
			wantLen := 100 + got
			if i == 1 {
				wantLen = min(wantLen, 64) // truncated copy
			}
			if len(f) != wantLen || seqOf(f) != uint32(got) {
				t.Errorf("frame %d: %d bytes, seq %d", got, len(f), seqOf(f))
			}
			if i == 0 {
				if &bufs[0][0] == &own[0] {
					t.Errorf("frame %d was copied into the caller's buffer, not handed over", got)
				}
				// Keep the handed-over slot; give the link a fresh buffer.
				kept = append(kept, bufs[0])
				want = append(want, bytes.Clone(bufs[0]))
				bufs[0] = make([]byte, sw.MaxFrame())
			}
			got++
		}
		// More traffic must never land in a buffer the caller keeps.
		write(t, a, seqFrame(macB, macA, 999, 8000))
		return got < n
	})
	if err != nil || got < n {
		t.Fatalf("ReadLoop: %v after %d frames", err, got)
	}
	for i := range kept {
		if !bytes.Equal(kept[i], want[i]) {
			t.Errorf("buffer %d handed to the caller changed afterwards", i)
		}
	}
}

func TestReadLoopNoAllocs(t *testing.T) {
	sw := newSwitch(t, Config{})
	a, b := attach(t, sw, macA), attach(t, sw, macB)
	f := seqFrame(macB, macA, 1, 8192)
	bufs, sizes := [][]byte{make([]byte, 8193)}, make([]int, 1)
	stop := func(int) bool { return false }
	step := func() {
		if err := a.Write(f); err != nil {
			t.Fatal(err)
		}
		if err := b.ReadLoop(bufs, sizes, stop); err != nil || sizes[0] != len(f) {
			t.Fatalf("ReadLoop = %v, size %d", err, sizes[0])
		}
	}
	step()
	if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
		t.Errorf("Write+ReadLoop allocates %v times per frame, want 0", allocs)
	}
}

func TestReadLoopClosed(t *testing.T) {
	sw := newSwitch(t, Config{})
	b := attach(t, sw, macB)
	b.Close()
	if err := b.ReadLoop([][]byte{make([]byte, 64)}, []int{0}, func(int) bool { return true }); err != link.ErrClosed {
		t.Errorf("ReadLoop after Close = %v, want link.ErrClosed", err)
	}
}
