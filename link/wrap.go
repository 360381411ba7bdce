package link

import (
	"errors"
	"sync"

	"github.com/openenoc/oetp/wire"
)

// errShortWrite is Write's error when a Write hook accepted no frame and
// gave no reason.
var errShortWrite = errors.New("link: the wrapper accepted no frame")

// Hooks say what a wrapper made with Wrap changes about the link it wraps.
// A nil hook changes nothing.
type Hooks struct {
	// Read sees every batch of frames read from the inner link, through
	// ReadBatch or ReadLoop, before the reader does: bufs[i][:sizes[i]] for
	// i < n. It must not keep the buffers.
	Read func(bufs [][]byte, sizes []int, n int)
	// Write is called for every Write and WriteBatch with the frames to
	// write (one frame for Write) and the inner link's WriteBatch. It
	// returns what WriteBatch returns: the frames accepted, in order, and
	// the error that stopped it. It may delay, drop (report a frame as
	// accepted without writing it, as a lossy wire does) or record frames,
	// and may hold a lock around next.
	Write func(frames [][]byte, next func([][]byte) (int, error)) (int, error)
	// Close, if not nil, is called instead of the inner link's Close and
	// is given it.
	Close func(next func() error) error
}

// Wrap returns a link that behaves like inner, changed by h, and that
// implements exactly the optional interfaces that inner implements
// (Filter, Looper, Spinner, FillWriter), forwarding them to inner: a
// capture, a lossy wire or a pacer around a busy-polling AF_PACKET link
// keeps its group filter, its receive loop and its busy polling. ReadLoop
// passes each batch through h.Read on its way to the callback. WriteFill
// goes to inner's when there is no Write hook; with one, the data is
// filled into the caller's frame, which then takes the path of Write
// through the hook (so the hook sees, delays, drops or records the whole
// frame, as for Write). Every wrapper is also a Tracker, a Batcher, a
// Carrier and an OffsetReader: Dropped, Hold, Release and SetLost reach
// inner when it implements them and do nothing otherwise; Carries is
// inner's answer when there is no Write hook, and false with one (a hook
// may drop or delay a request that inner then never carries: the endpoint
// keeps its timer); ReadBatchAt is inner's, or its ReadBatch with every
// frame at offset 0. The result's Unwrap returns inner, for its own
// methods (such as Stats).
//
// Wrap allocates nothing per frame: a Write through the wrapper costs one
// single-frame slice that lives on the wrapper, guarded by a lock.
func Wrap(inner Link, h Hooks) Link {
	w := &wrapped{inner: inner, h: h}
	w.one = make([][]byte, 1)
	// Method values made once: made per call, they would allocate.
	w.batch, w.single = inner.WriteBatch, w.writeInner
	f, isF := inner.(Filter)
	s, isS := inner.(Spinner)
	l, isL := inner.(Looper)
	fw, isW := inner.(FillWriter)
	var lp *loop
	if isL {
		lp = &loop{w: w, l: l}
		lp.fn = lp.step
	}
	var fp *fill
	if isW {
		fp = &fill{w: w, fw: fw}
	}
	// One case per combination, so that the result implements exactly the
	// inner link's optional interfaces.
	switch mask := b2i(isF) | b2i(isS)<<1 | b2i(isL)<<2 | b2i(isW)<<3; mask {
	case 15:
		return &struct {
			*wrapped
			Filter
			Spinner
			*loop
			*fill
		}{w, f, s, lp, fp}
	case 14:
		return &struct {
			*wrapped
			Spinner
			*loop
			*fill
		}{w, s, lp, fp}
	case 13:
		return &struct {
			*wrapped
			Filter
			*loop
			*fill
		}{w, f, lp, fp}
	case 12:
		return &struct {
			*wrapped
			*loop
			*fill
		}{w, lp, fp}
	case 11:
		return &struct {
			*wrapped
			Filter
			Spinner
			*fill
		}{w, f, s, fp}
	case 10:
		return &struct {
			*wrapped
			Spinner
			*fill
		}{w, s, fp}
	case 9:
		return &struct {
			*wrapped
			Filter
			*fill
		}{w, f, fp}
	case 8:
		return &struct {
			*wrapped
			*fill
		}{w, fp}
	case 7:
		return &struct {
			*wrapped
			Filter
			Spinner
			*loop
		}{w, f, s, lp}
	case 6:
		return &struct {
			*wrapped
			Spinner
			*loop
		}{w, s, lp}
	case 5:
		return &struct {
			*wrapped
			Filter
			*loop
		}{w, f, lp}
	case 4:
		return &struct {
			*wrapped
			*loop
		}{w, lp}
	case 3:
		return &struct {
			*wrapped
			Filter
			Spinner
		}{w, f, s}
	case 2:
		return &struct {
			*wrapped
			Spinner
		}{w, s}
	case 1:
		return &struct {
			*wrapped
			Filter
		}{w, f}
	}
	return w
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Unwrapper is implemented by links that wrap another (Wrap's links,
// pcap.Tee): Unwrap returns the wrapped link.
type Unwrapper interface {
	Unwrap() Link
}

// Innermost follows Unwrap from l to the link that wraps no other.
func Innermost(l Link) Link {
	for {
		u, ok := l.(Unwrapper)
		if !ok {
			return l
		}
		l = u.Unwrap()
	}
}

// wrapped is the Link part of every wrapper.
type wrapped struct {
	inner Link
	h     Hooks
	oneMu sync.Mutex
	one   [][]byte // Write's single-frame batch, under oneMu
	// batch is inner.WriteBatch and single writeInner, the next steps of
	// the Write hook.
	batch, single func([][]byte) (int, error)
}

func (w *wrapped) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	n, err := w.inner.ReadBatch(bufs, sizes)
	if n > 0 && w.h.Read != nil {
		w.h.Read(bufs, sizes, n)
	}
	return n, err
}

// ReadBatchAt (OffsetReader) is inner's ReadBatchAt when it has one, the
// frames moved to the start of their buffers first when a Read hook is to
// see them; otherwise ReadBatch, every frame at offset 0.
func (w *wrapped) ReadBatchAt(bufs [][]byte, offs, sizes []int) (int, error) {
	o, ok := w.inner.(OffsetReader)
	if !ok {
		n, err := w.ReadBatch(bufs, sizes)
		clear(offs[:n])
		return n, err
	}
	n, err := o.ReadBatchAt(bufs, offs, sizes)
	if n > 0 && w.h.Read != nil {
		for i := range n {
			if offs[i] != 0 {
				copy(bufs[i], bufs[i][offs[i]:offs[i]+sizes[i]])
				offs[i] = 0
			}
		}
		w.h.Read(bufs, sizes, n)
	}
	return n, err
}

func (w *wrapped) WriteBatch(frames [][]byte) (int, error) {
	if w.h.Write == nil {
		return w.inner.WriteBatch(frames)
	}
	return w.h.Write(frames, w.batch)
}

func (w *wrapped) Write(frame []byte) error {
	if w.h.Write == nil {
		return w.inner.Write(frame)
	}
	w.oneMu.Lock()
	w.one[0] = frame
	n, err := w.h.Write(w.one, w.single)
	w.one[0] = nil
	w.oneMu.Unlock()
	if err == nil && n != 1 {
		err = errShortWrite
	}
	return err
}

// writeInner writes a single-frame batch with the inner link's Write.
func (w *wrapped) writeInner(frames [][]byte) (int, error) {
	for i, f := range frames {
		if err := w.inner.Write(f); err != nil {
			return i, err
		}
	}
	return len(frames), nil
}

func (w *wrapped) Addr() wire.MAC { return w.inner.Addr() }

func (w *wrapped) MaxFrame() int { return w.inner.MaxFrame() }

func (w *wrapped) Close() error {
	if w.h.Close != nil {
		return w.h.Close(w.inner.Close)
	}
	return w.inner.Close()
}

// Unwrap returns the wrapped link.
func (w *wrapped) Unwrap() Link { return w.inner }

// Dropped forwards to the inner link when it tracks requests (Tracker),
// and does nothing otherwise: a link that does not track has nothing to
// forget.
func (w *wrapped) Dropped(f []byte) {
	if t, ok := w.inner.(Tracker); ok {
		t.Dropped(f)
	}
}

// Hold and Release forward to the inner link when it batches (Batcher),
// and do nothing otherwise: its writes go out as they are made.
func (w *wrapped) Hold() {
	if b, ok := w.inner.(Batcher); ok {
		b.Hold()
	}
}

func (w *wrapped) Release() {
	if b, ok := w.inner.(Batcher); ok {
		b.Release()
	}
}

// Carries is inner's answer (Carrier) when no Write hook stands between
// the endpoint and inner, false otherwise.
func (w *wrapped) Carries(dst wire.MAC) bool {
	c, ok := w.inner.(Carrier)
	return ok && w.h.Write == nil && c.Carries(dst)
}

// SetLost forwards to the inner link when it carries requests (Carrier).
func (w *wrapped) SetLost(fn func(dst wire.MAC, rid uint32, plain bool)) {
	if c, ok := w.inner.(Carrier); ok {
		c.SetLost(fn)
	}
}

// loop is the Looper part of a wrapper of a Looper.
type loop struct {
	w *wrapped
	l Looper
	// The ReadLoop call in progress, under mu for the whole call: a
	// reader whose batch function passed the receive role on (an
	// endpoint's workers) still clears it after the inner loop returned,
	// while the next reader may already call ReadLoop. step is a method
	// value made once, so a call allocates nothing.
	mu    sync.Mutex
	bufs  [][]byte
	sizes []int
	batch func(n int) bool
	fn    func(n int) bool
}

// ReadLoop runs the inner link's ReadLoop, passing each batch through the
// Read hook.
func (p *loop) ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error {
	if p.w.h.Read == nil {
		return p.l.ReadLoop(bufs, sizes, batch)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bufs, p.sizes, p.batch = bufs, sizes, batch
	err := p.l.ReadLoop(bufs, sizes, p.fn)
	p.bufs, p.sizes, p.batch = nil, nil, nil
	return err
}

func (p *loop) step(n int) bool {
	if n > 0 {
		p.w.h.Read(p.bufs, p.sizes, n)
	}
	return p.batch(n)
}

// fill is the FillWriter part of a wrapper of a FillWriter.
type fill struct {
	w  *wrapped
	fw FillWriter
}

// WriteFill writes through the inner link's WriteFill, or, with a Write
// hook, fills the caller's frame and writes it as Write does.
func (p *fill) WriteFill(frame []byte, at, m int, fill func(data []byte) bool) (bool, error) {
	if p.w.h.Write == nil {
		return p.fw.WriteFill(frame, at, m, fill)
	}
	if !fill(frame[at : at+m]) {
		return false, nil
	}
	return true, p.w.Write(frame)
}
