package endpoint_test

import (
	"bytes"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// spinLink is a link that says it busy-polls (link.Spinner).
type spinLink struct{ link.Link }

func (spinLink) BusyPoll() time.Duration { return time.Millisecond }

// touchLog is a RAM (Immediate) that records every Touch.
type touchLog struct {
	*memory.RAM
	mu  sync.Mutex
	got [][2]uint32 // address, length asked for
}

func (l *touchLog) Touch(addr uint32, n int) int {
	l.mu.Lock()
	l.got = append(l.got, [2]uint32{addr, uint32(n)})
	l.mu.Unlock()
	return l.RAM.Touch(addr, n)
}

// await waits until l has recorded n touches: a responder touches after its
// reply, so the initiator's operation may return first.
func (l *touchLog) await(t *testing.T, n int) {
	t.Helper()
	eventually(t, "touches", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.got) == n
	})
}

func (l *touchLog) take() [][2]uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	g := l.got
	l.got = nil
	return g
}

// TestWarmNextFragment: over a link that busy-polls, the initiator of a
// chained DMA block touches the local memory of the next fragment after
// sending each one (a write's next source, a read's destination of the
// fragment in flight), and the responder touches [A+L, A+2L) after
// replying to a fragment of L bytes at A; the frames and memory are as
// without it. Over a link that does not busy-poll nothing is touched.
func TestWarmNextFragment(t *testing.T) {
	const n = 2*wire.MaxFragment + 100
	const remote = ramBase + 0x100
	for _, spin := range []bool{false, true} {
		sw := newSwitch(t)
		var la, lb link.Link = attach(t, sw, macA), attach(t, sw, macB)
		if spin {
			la, lb = spinLink{la}, spinLink{lb}
		}
		remoteMem := &touchLog{RAM: newRAM(t)}
		local := &touchLog{RAM: newRAM(t)}
		a := newEPOn(t, la, newRAM(t), endpoint.Config{DMATimeout: waitLong})
		b := newEPOn(t, lb, remoteMem, endpoint.Config{})
		src := pattern(n, 7)
		if r := local.WriteAt(src, ramBase); r != memory.OKAY {
			t.Fatal(r)
		}

		dmaPath(t, a, 0, b, 0)
		tr, err := a.DMAWriteFrom(bg(), 0, remote, local, ramBase, n)
		if err != nil || tr != (endpoint.Transfer{Bytes: n, Fragments: 3}) {
			t.Fatalf("spin %v: DMAWriteFrom = %+v, %v", spin, tr, err)
		}
		// The responder touches after its reply: wait for the third.
		if spin {
			remoteMem.await(t, 3)
		}
		got := make([]byte, n)
		if b.Stats().ServedDMAWrite != 3 {
			t.Fatalf("spin %v: B served %d writes", spin, b.Stats().ServedDMAWrite)
		}
		remoteMem.ReadAt(got, remote)
		if !bytes.Equal(got, src) {
			t.Fatalf("spin %v: B's memory differs from the block written", spin)
		}
		checkTouches(t, spin, "write: initiator's source", local.take(),
			[][2]uint32{{ramBase + 2*wire.MaxFragment, 100}}, [2]uint32{ramBase + wire.MaxFragment, wire.MaxFragment})
		checkTouches(t, spin, "write: responder", remoteMem.take(), [][2]uint32{
			{remote + wire.MaxFragment, wire.MaxFragment}, {remote + 2*wire.MaxFragment, wire.MaxFragment}, {remote + n, 100},
		}, [2]uint32{})

		setPeer(t, a, 0, win(macB, endpoint.ModeDMAWrite))
		setPeer(t, b, 0, win(macA, endpoint.ModeDMARead))
		dst := &touchLog{RAM: newRAM(t)}
		tr, err = a.DMAReadInto(bg(), 0, remote, dst, ramBase+4, n)
		if err != nil || tr != (endpoint.Transfer{Bytes: n, Fragments: 3}) {
			t.Fatalf("spin %v: DMAReadInto = %+v, %v", spin, tr, err)
		}
		if spin {
			remoteMem.await(t, 3)
		}
		dst.ReadAt(got, ramBase+4)
		if !bytes.Equal(got, src) {
			t.Fatalf("spin %v: the block read back differs", spin)
		}
		checkTouches(t, spin, "read: initiator's destination", dst.take(),
			[][2]uint32{{ramBase + 4 + wire.MaxFragment, wire.MaxFragment}, {ramBase + 4 + 2*wire.MaxFragment, 100}},
			[2]uint32{ramBase + 4, wire.MaxFragment})
		checkTouches(t, spin, "read: responder", remoteMem.take(), [][2]uint32{
			{remote + wire.MaxFragment, wire.MaxFragment}, {remote + 2*wire.MaxFragment, wire.MaxFragment}, {remote + n, 100},
		}, [2]uint32{})
	}
}

// checkTouches checks the touches of one memory: none without spin; with
// it, want in order, and before them optional (the first fragment's, which
// the caller makes only if the response has not already come), if not zero.
func checkTouches(t *testing.T, spin bool, what string, got, want [][2]uint32, optional [2]uint32) {
	t.Helper()
	if !spin {
		if len(got) != 0 {
			t.Errorf("%s: touched %v over a link that does not busy-poll, want nothing", what, got)
		}
		return
	}
	if optional != ([2]uint32{}) && len(got) > 0 && got[0] == optional {
		got = got[1:]
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s: touches (address, length) differ (-want +got):\n%s", what, cmp.Diff(want, got))
	}
}
