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
// (Filter, Looper, Spinner), forwarding them to inner: a capture, a lossy
// wire or a pacer around a busy-polling AF_PACKET link keeps its group
// filter, its receive loop and its busy polling. ReadLoop passes each
// batch through h.Read on its way to the callback. The result's Unwrap
// returns inner, for its own methods (such as Stats).
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
	var lp *loop
	if isL {
		lp = &loop{w: w, l: l}
		lp.fn = lp.step
	}
	switch {
	case isF && isS && isL:
		return &struct {
			*wrapped
			Filter
			Spinner
			*loop
		}{w, f, s, lp}
	case isF && isS:
		return &struct {
			*wrapped
			Filter
			Spinner
		}{w, f, s}
	case isF && isL:
		return &struct {
			*wrapped
			Filter
			*loop
		}{w, f, lp}
	case isS && isL:
		return &struct {
			*wrapped
			Spinner
			*loop
		}{w, s, lp}
	case isF:
		return &struct {
			*wrapped
			Filter
		}{w, f}
	case isS:
		return &struct {
			*wrapped
			Spinner
		}{w, s}
	case isL:
		return &struct {
			*wrapped
			*loop
		}{w, lp}
	}
	return w
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

// loop is the Looper part of a wrapper of a Looper.
type loop struct {
	w *wrapped
	l Looper
	// The ReadLoop call in progress (a link has one reader at a time),
	// and step as a method value made once, so a call allocates nothing.
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
