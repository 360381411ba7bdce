package link_test

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/linktest"
	"github.com/openenoc/oetp/wire"
)

// base is the scripted link the wrappers wrap.
type base = linktest.Fake

// The optional capabilities, each alone, so any combination can be built.
type filterPart struct{ joined []wire.MAC }

func (f *filterPart) JoinGroup(m wire.MAC) error  { f.joined = append(f.joined, m); return nil }
func (f *filterPart) LeaveGroup(m wire.MAC) error { return nil }
func (f *filterPart) SetPromiscuous(bool) error   { return nil }

type spinPart struct{}

func (spinPart) BusyPoll() time.Duration { return 42 * time.Microsecond }

type loopPart struct{ b *base }

// ReadLoop delivers the queued frames one batch of up to len(bufs) at a
// time until batch returns false or the queue is empty.
func (l loopPart) ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error {
	return link.ReadBatches(l.b, bufs, sizes, batch)
}

// capabilities are the optional interfaces of package link that Wrap
// forwards, by name.
var capabilities = map[string]reflect.Type{
	"Filter":     reflect.TypeFor[link.Filter](),
	"Spinner":    reflect.TypeFor[link.Spinner](),
	"Looper":     reflect.TypeFor[link.Looper](),
	"FillWriter": reflect.TypeFor[link.FillWriter](),
}

// everyWrapper are the optional interfaces that every wrapper implements,
// forwarding to the inner link when it implements them and doing nothing
// otherwise.
var everyWrapper = map[string]reflect.Type{
	"Tracker":      reflect.TypeFor[link.Tracker](),
	"Batcher":      reflect.TypeFor[link.Batcher](),
	"Carrier":      reflect.TypeFor[link.Carrier](),
	"OffsetReader": reflect.TypeFor[link.OffsetReader](),
}

// trackPart is a Tracker and a Batcher that records the calls.
type trackPart struct {
	dropped         [][]byte
	holds, releases int
	lost            func(wire.MAC, uint32, bool)
	b               *base
}

func (p *trackPart) Dropped(f []byte) { p.dropped = append(p.dropped, bytes.Clone(f)) }
func (p *trackPart) Hold()            { p.holds++ }
func (p *trackPart) Release()         { p.releases++ }
func (p *trackPart) Carries(dst wire.MAC) bool {
	return dst == wire.MAC{2, 0, 0, 0, 0, 1}
}
func (p *trackPart) SetLost(fn func(wire.MAC, uint32, bool)) { p.lost = fn }

// ReadBatchAt delivers base's frames 3 bytes in.
func (p *trackPart) ReadBatchAt(bufs [][]byte, offs, sizes []int) (int, error) {
	n, err := p.b.ReadBatch(bufs, sizes)
	for i := range n {
		offs[i], sizes[i] = 3, sizes[i]-3
	}
	return n, err
}

// Dropped, Hold, Release, Carries and SetLost go through a wrapper, and
// through a wrapper of a wrapper, to the link that implements them; around
// a link that does not, they do nothing (Carries: false), and a wrapper
// with a Write hook carries nothing.
func TestWrapForwardsTrackerAndBatcher(t *testing.T) {
	b := &base{}
	tp := &trackPart{b: b}
	inner := &struct {
		*base
		*trackPart
	}{b, tp}
	w := link.Wrap(link.Wrap(inner, link.Hooks{}), link.Hooks{})
	for name, typ := range everyWrapper {
		if !reflect.TypeOf(w).Implements(typ) {
			t.Fatalf("the wrapper is not a %s", name)
		}
	}
	f := []byte{2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x88, 0xb5}
	w.(link.Tracker).Dropped(f)
	w.(link.Batcher).Hold()
	w.(link.Batcher).Release()
	if len(tp.dropped) != 1 || !bytes.Equal(tp.dropped[0], f) || tp.holds != 1 || tp.releases != 1 {
		t.Fatalf("inner saw dropped %x, %d holds, %d releases; want the frame once, 1 and 1", tp.dropped, tp.holds, tp.releases)
	}
	carried, other := wire.MAC{2, 0, 0, 0, 0, 1}, wire.MAC{2, 0, 0, 0, 0, 2}
	lost := 0
	w.(link.Carrier).SetLost(func(wire.MAC, uint32, bool) { lost++ })
	if tp.lost == nil {
		t.Fatal("SetLost did not reach the inner link")
	}
	tp.lost(carried, 1, false)
	if !w.(link.Carrier).Carries(carried) || w.(link.Carrier).Carries(other) || lost != 1 {
		t.Fatalf("Carries through wrappers: %v %v, lost calls %d; want true false 1", w.(link.Carrier).Carries(carried), w.(link.Carrier).Carries(other), lost)
	}
	hooked := link.Wrap(inner, link.Hooks{Write: func(fs [][]byte, next func([][]byte) (int, error)) (int, error) { return next(fs) }})
	if hooked.(link.Carrier).Carries(carried) {
		t.Fatal("a wrapper with a Write hook carries requests")
	}
	// ReadBatchAt: inner's frames where they lie; with a Read hook,
	// moved to the start of their buffers for the hook; around a link
	// without it, ReadBatch's frames at offset 0.
	var seen []byte
	hook := link.Hooks{Read: func(bufs [][]byte, sizes []int, n int) { seen = bytes.Clone(bufs[0][:sizes[0]]) }}
	for _, c := range []struct {
		name string
		w    link.Link
		off  int
		want []byte
	}{
		{"wrapped twice", w, 3, []byte{1, 2, 3}},
		{"with a Read hook", link.Wrap(inner, hook), 0, []byte{1, 2, 3}},
		{"around ReadBatch", link.Wrap(b, link.Hooks{}), 0, []byte{9, 9, 9, 1, 2, 3}},
	} {
		b.In = [][]byte{{9, 9, 9, 1, 2, 3}}
		bufs, offs, sizes := [][]byte{make([]byte, 16)}, []int{7}, []int{0}
		n, err := c.w.(link.OffsetReader).ReadBatchAt(bufs, offs, sizes)
		if got := bufs[0][offs[0] : offs[0]+sizes[0]]; n != 1 || err != nil || offs[0] != c.off || !bytes.Equal(got, c.want) {
			t.Errorf("%s: ReadBatchAt %d %v, frame at %d: % x; want 1 frame % x at %d", c.name, n, err, offs[0], got, c.want, c.off)
		}
	}
	if !bytes.Equal(seen, []byte{1, 2, 3}) {
		t.Errorf("the Read hook saw % x, want 01 02 03", seen)
	}
	plain := link.Wrap(b, link.Hooks{})
	plain.(link.Tracker).Dropped(f)
	plain.(link.Batcher).Hold()
	plain.(link.Batcher).Release()
	plain.(link.Carrier).SetLost(nil)
	if plain.(link.Carrier).Carries(carried) {
		t.Fatal("a wrapper of a plain link carries requests")
	}
}

// fillPart is a FillWriter that fills into a buffer of its own and keeps
// the frame with the base's writes.
type fillPart struct {
	b     *base
	calls int
}

func (p *fillPart) WriteFill(frame []byte, at, m int, fill func([]byte) bool) (bool, error) {
	p.calls++
	own := bytes.Clone(frame)
	if !fill(own[at : at+m]) {
		return false, nil
	}
	p.b.Out = append(p.b.Out, own)
	return true, nil
}

// makeLink builds a link with the capabilities whose bits are set in mask
// (1 Filter, 2 Spinner, 4 Looper, 8 FillWriter).
func makeLink(mask int, b *base, f *filterPart, fl *fillPart) link.Link {
	l := loopPart{b}
	switch mask {
	case 0:
		return b
	case 1:
		return &struct {
			*base
			*filterPart
		}{b, f}
	case 2:
		return &struct {
			*base
			spinPart
		}{b, spinPart{}}
	case 3:
		return &struct {
			*base
			*filterPart
			spinPart
		}{b, f, spinPart{}}
	case 4:
		return &struct {
			*base
			loopPart
		}{b, l}
	case 5:
		return &struct {
			*base
			*filterPart
			loopPart
		}{b, f, l}
	case 6:
		return &struct {
			*base
			spinPart
			loopPart
		}{b, spinPart{}, l}
	case 7:
		return &struct {
			*base
			*filterPart
			spinPart
			loopPart
		}{b, f, spinPart{}, l}
	case 8:
		return &struct {
			*base
			*fillPart
		}{b, fl}
	case 9:
		return &struct {
			*base
			*filterPart
			*fillPart
		}{b, f, fl}
	case 10:
		return &struct {
			*base
			spinPart
			*fillPart
		}{b, spinPart{}, fl}
	case 11:
		return &struct {
			*base
			*filterPart
			spinPart
			*fillPart
		}{b, f, spinPart{}, fl}
	case 12:
		return &struct {
			*base
			loopPart
			*fillPart
		}{b, l, fl}
	case 13:
		return &struct {
			*base
			*filterPart
			loopPart
			*fillPart
		}{b, f, l, fl}
	case 14:
		return &struct {
			*base
			spinPart
			loopPart
			*fillPart
		}{b, spinPart{}, l, fl}
	case 15:
		return &struct {
			*base
			*filterPart
			spinPart
			loopPart
			*fillPart
		}{b, f, spinPart{}, l, fl}
	}
	panic("makeLink: mask out of range")
}

// TestWrapCapabilities checks every combination of capabilities: the
// wrapper has exactly the inner link's, and each reaches the inner link.
func TestWrapCapabilities(t *testing.T) {
	names := []string{"Filter", "Spinner", "Looper", "FillWriter"}
	for mask := range 16 {
		b := &base{In: [][]byte{{1, 2, 3}, {4, 5}}}
		f := &filterPart{}
		fl := &fillPart{b: b}
		inner := makeLink(mask, b, f, fl)
		var seen [][]byte
		w := link.Wrap(inner, link.Hooks{Read: func(bufs [][]byte, sizes []int, n int) {
			for i := range n {
				seen = append(seen, bytes.Clone(bufs[i][:sizes[i]]))
			}
		}})
		for i, name := range names {
			want := mask&(1<<i) != 0
			if got := reflect.TypeOf(w).Implements(capabilities[name]); got != want {
				t.Errorf("mask %04b: wrapper implements %s = %v, want %v", mask, name, got, want)
			}
		}
		if fl, ok := w.(link.Filter); ok {
			g := wire.MAC{3, 0, 0, 0, 0, 1}
			if err := fl.JoinGroup(g); err != nil || len(f.joined) != 1 || f.joined[0] != g {
				t.Errorf("mask %04b: JoinGroup: %v, inner joined %v", mask, err, f.joined)
			}
		}
		if s, ok := w.(link.Spinner); ok && s.BusyPoll() != 42*time.Microsecond {
			t.Errorf("mask %04b: BusyPoll %v, want the inner link's 42µs", mask, s.BusyPoll())
		}
		if fw, ok := w.(link.FillWriter); ok {
			frame := []byte{1, 2, 0, 0, 5}
			filled, err := fw.WriteFill(frame, 2, 2, func(d []byte) bool { d[0], d[1] = 3, 4; return true })
			if !filled || err != nil || fl.calls != 1 || len(b.Out) != 1 || !bytes.Equal(b.Out[0], []byte{1, 2, 3, 4, 5}) {
				t.Errorf("mask %04b: WriteFill = %v, %v; inner called %d times, wrote %v", mask, filled, err, fl.calls, b.Out)
			}
			b.Out = nil
		}
		bufs, sizes := [][]byte{make([]byte, 16)}, []int{0}
		if lp, ok := w.(link.Looper); ok {
			var got []int
			err := lp.ReadLoop(bufs, sizes, func(n int) bool { got = append(got, sizes[0]); return len(got) < 2 })
			if err != nil || !reflect.DeepEqual(got, []int{3, 2}) {
				t.Errorf("mask %04b: ReadLoop: %v, batches of sizes %v", mask, err, got)
			}
		} else {
			for range 2 {
				if n, err := w.ReadBatch(bufs, sizes); n != 1 || err != nil {
					t.Fatalf("mask %04b: ReadBatch = %d, %v", mask, n, err)
				}
			}
		}
		if want := [][]byte{{1, 2, 3}, {4, 5}}; !reflect.DeepEqual(seen, want) {
			t.Errorf("mask %04b: the Read hook saw %v, want %v", mask, seen, want)
		}
		if w.Addr() != b.Addr() || w.MaxFrame() != linktest.MaxFrame {
			t.Errorf("mask %04b: Addr %v MaxFrame %d", mask, w.Addr(), w.MaxFrame())
		}
		if u, ok := w.(link.Unwrapper); !ok || u.Unwrap() != inner || link.Innermost(w) != inner {
			t.Errorf("mask %04b: Unwrap does not return the inner link", mask)
		}
		if err := w.Close(); err != nil || !b.Closed {
			t.Errorf("mask %04b: Close: %v, inner closed %v", mask, err, b.Closed)
		}
	}
}

// TestWrapForwardsEveryCapability fails when package link gains an
// optional interface that the capabilities table (and so Wrap) does not
// know: every interface type declared in the package but Link and
// Unwrapper must be forwarded.
func TestWrapForwardsEveryCapability(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				if _, isIface := ts.Type.(*ast.InterfaceType); !isIface || !ts.Name.IsExported() {
					return true
				}
				switch name := ts.Name.Name; {
				case name == "Link" || name == "Unwrapper":
				case capabilities[name] == nil && everyWrapper[name] == nil:
					t.Errorf("link.%s is an optional interface that Wrap does not forward: add it to Wrap and to this test", name)
				}
				return true
			})
		}
	}
}

func TestWrapHooks(t *testing.T) {
	b := &base{}
	var closes int
	drop := true
	w := link.Wrap(b, link.Hooks{
		// Drops every other frame, reporting it accepted, like a lossy wire.
		Write: func(frames [][]byte, next func([][]byte) (int, error)) (int, error) {
			for i, f := range frames {
				drop = !drop
				if drop {
					continue
				}
				if _, err := next(frames[i : i+1 : i+1]); err != nil {
					return i, err
				}
				_ = f
			}
			return len(frames), nil
		},
		Close: func(next func() error) error { closes++; return next() },
	})
	if err := w.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]byte{2}); err != nil {
		t.Fatal(err)
	}
	if n, err := w.WriteBatch([][]byte{{3}, {4}, {5}}); n != 3 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if want := [][]byte{{1}, {3}, {5}}; !reflect.DeepEqual(b.Out, want) {
		t.Errorf("inner link got %v, want %v", b.Out, want)
	}
	if err := w.Close(); err != nil || closes != 1 || !b.Closed {
		t.Errorf("Close: %v, hook called %d times, inner closed %v", err, closes, b.Closed)
	}

	// A Write hook that accepts nothing without a reason fails Write.
	w = link.Wrap(&base{}, link.Hooks{Write: func([][]byte, func([][]byte) (int, error)) (int, error) { return 0, nil }})
	if err := w.Write([]byte{1}); err == nil {
		t.Error("Write succeeded although the hook accepted no frame")
	}
	// An error of the inner link comes back.
	boom := errors.New("boom")
	w = link.Wrap(&base{}, link.Hooks{Write: func([][]byte, func([][]byte) (int, error)) (int, error) { return 0, boom }})
	if err := w.Write([]byte{1}); !errors.Is(err, boom) {
		t.Errorf("Write = %v, want %v", err, boom)
	}
}

// nopLink is a Looper that reads nothing and writes nowhere, for
// allocation counts.
type nopLink struct{ base }

func (*nopLink) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	sizes[0] = len(bufs[0])
	return 1, nil
}
func (*nopLink) WriteBatch(frames [][]byte) (int, error) { return len(frames), nil }
func (*nopLink) Write([]byte) error                      { return nil }
func (*nopLink) ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error {
	sizes[0] = len(bufs[0])
	batch(1)
	return nil
}
func (*nopLink) WriteFill(frame []byte, at, m int, fill func([]byte) bool) (bool, error) {
	return fill(frame[at : at+m]), nil
}

func TestWrapNoAllocs(t *testing.T) {
	var frames int
	w := link.Wrap(&nopLink{}, link.Hooks{
		Read:  func(_ [][]byte, _ []int, n int) { frames += n },
		Write: func(f [][]byte, next func([][]byte) (int, error)) (int, error) { return next(f) },
	})
	lp := w.(link.Looper)
	fw := w.(link.FillWriter)
	bare := link.Wrap(&nopLink{}, link.Hooks{}).(link.FillWriter)
	bufs, sizes := [][]byte{make([]byte, 64)}, []int{0}
	batch := [][]byte{make([]byte, 64), make([]byte, 64)}
	cb := func(int) bool { return false }
	fill := func(d []byte) bool { d[0] = 1; return true }
	allocs := testing.AllocsPerRun(100, func() {
		_ = w.Write(batch[0])
		_, _ = w.WriteBatch(batch)
		_, _ = w.ReadBatch(bufs, sizes)
		_ = lp.ReadLoop(bufs, sizes, cb)
		_, _ = fw.WriteFill(batch[0], 4, 8, fill)
		_, _ = bare.WriteFill(batch[0], 4, 8, fill)
	})
	if allocs != 0 || frames == 0 {
		t.Errorf("Write+WriteBatch+ReadBatch+ReadLoop+WriteFill: %v allocations (%d frames read), want 0", allocs, frames)
	}
}

// TestWrapWriteFillHook checks WriteFill through a wrapper with a Write
// hook: the data is filled into the caller's frame, the hook sees the whole
// frame, and the inner link's WriteFill is not used; a fill that cancels
// writes nothing, with or without a hook.
func TestWrapWriteFillHook(t *testing.T) {
	b := &base{}
	fl := &fillPart{b: b}
	inner := makeLink(8, b, nil, fl)
	var hooked [][]byte
	w := link.Wrap(inner, link.Hooks{Write: func(frames [][]byte, next func([][]byte) (int, error)) (int, error) {
		for _, f := range frames {
			hooked = append(hooked, bytes.Clone(f))
		}
		return next(frames)
	}}).(link.FillWriter)
	frame := []byte{9, 0, 0, 0, 8}
	filled, err := w.WriteFill(frame, 1, 3, func(d []byte) bool { copy(d, []byte{1, 2, 3}); return true })
	want := [][]byte{{9, 1, 2, 3, 8}}
	if !filled || err != nil || !reflect.DeepEqual(hooked, want) || !reflect.DeepEqual(b.Out, want) || fl.calls != 0 {
		t.Errorf("WriteFill = %v, %v; hook saw %v, inner got %v, inner WriteFill called %d times; want %v through Write", filled, err, hooked, b.Out, fl.calls, want)
	}
	if filled, err := w.WriteFill(frame, 1, 3, func([]byte) bool { return false }); filled || err != nil || len(b.Out) != 1 || len(hooked) != 1 {
		t.Errorf("cancelled WriteFill = %v, %v; %d frames written, want none more", filled, err, len(b.Out)-1)
	}
	// Without a Write hook, WriteFill is the inner link's, cancel included.
	w = link.Wrap(inner, link.Hooks{}).(link.FillWriter)
	if filled, err := w.WriteFill(frame, 1, 3, func([]byte) bool { return false }); filled || err != nil || fl.calls != 1 || len(b.Out) != 1 {
		t.Errorf("cancelled WriteFill without a hook = %v, %v; inner called %d times, %d frames written", filled, err, fl.calls, len(b.Out))
	}
	// A refusing hook's error comes back with filled true.
	boom := errors.New("boom")
	w = link.Wrap(inner, link.Hooks{Write: func([][]byte, func([][]byte) (int, error)) (int, error) { return 0, boom }}).(link.FillWriter)
	if filled, err := w.WriteFill(frame, 1, 3, func([]byte) bool { return true }); !filled || !errors.Is(err, boom) {
		t.Errorf("WriteFill through a refusing hook = %v, %v; want true, %v", filled, err, boom)
	}
}

// TestWrapReadLoopHandOff: a reader whose batch function passes the
// receive role to another goroutine, as an endpoint's workers do, returns
// from ReadLoop after the next reader may have started its own; every
// reader's batch still reaches the Read hook with that reader's buffers.
func TestWrapReadLoopHandOff(t *testing.T) {
	const readers = 50
	var mu sync.Mutex
	var seen []int
	w := link.Wrap(&nopLink{}, link.Hooks{Read: func(bufs [][]byte, sizes []int, n int) {
		mu.Lock()
		seen = append(seen, int(bufs[0][0]))
		mu.Unlock()
	}}).(link.Looper)
	var wg sync.WaitGroup
	var read func(i int)
	read = func(i int) {
		defer wg.Done()
		bufs, sizes := [][]byte{{byte(i), 0, 0, 0}}, make([]int, 1)
		err := w.ReadLoop(bufs, sizes, func(n int) bool {
			if i+1 < readers {
				wg.Add(1)
				go read(i + 1) // the receive role passes on
			}
			return false
		})
		if err != nil {
			t.Error(err)
		}
	}
	wg.Add(1)
	go read(0)
	wg.Wait()
	want := make([]int, readers)
	for i := range want {
		want[i] = i
	}
	slices.Sort(seen)
	if !slices.Equal(seen, want) {
		t.Fatalf("the Read hook saw the buffers of readers %v, want each of 0..%d once", seen, readers-1)
	}
}
