package pace_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/link/pace"
	"github.com/openenoc/oetp/wire"
)

// TestPaced: frames arrive intact and in order, no faster than the rate,
// and the wrapper keeps the inner link's capabilities.
func TestPaced(t *testing.T) {
	sw, err := mem.NewSwitch(mem.Config{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := sw.Attach(wire.MAC{2, 0, 0, 0, 0, 1})
	b, _ := sw.Attach(wire.MAC{2, 0, 0, 0, 0, 2})
	defer b.Close()
	if _, err := pace.New(a, 0); err == nil {
		t.Fatal("rate 0 accepted")
	}
	p, err := pace.New(a, 1e6) // 1 MB/s
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, ok := p.(link.Filter); !ok {
		t.Error("pace lost link.Filter")
	}
	if _, ok := p.(link.Looper); !ok {
		t.Error("pace lost link.Looper")
	}
	if link.Innermost(p) != link.Link(a) {
		t.Error("Innermost does not reach the port")
	}
	frame := func(i int) []byte {
		f := make([]byte, 1000)
		dst, src := b.Addr(), a.Addr()
		copy(f, dst[:])
		copy(f[6:], src[:])
		f[12], f[13], f[14] = 0x88, 0xb5, byte(i)
		return f
	}
	start := time.Now()
	// 50 frames of 1000 bytes at 1 MB/s: the last leaves 49 ms after the
	// first, at the earliest.
	if err := p.Write(frame(0)); err != nil {
		t.Fatal(err)
	}
	batch := make([][]byte, 49)
	for i := range batch {
		batch[i] = frame(i + 1)
	}
	if n, err := p.WriteBatch(batch); n != 49 || err != nil {
		t.Fatal(n, err)
	}
	if el := time.Since(start); el < 49*time.Millisecond-pace.Slack-pace.Credit {
		t.Errorf("50 frames of 1000 bytes took %v at 1 MB/s, want at least %v", el, 49*time.Millisecond-pace.Slack-pace.Credit)
	}
	bufs, sizes := [][]byte{make([]byte, 2000)}, []int{0}
	for i := range 50 {
		if n, err := b.ReadBatch(bufs, sizes); n != 1 || err != nil {
			t.Fatal(n, err)
		}
		if !bytes.Equal(bufs[0][:sizes[0]], frame(i)) {
			t.Fatalf("frame %d differs", i)
		}
	}
}
