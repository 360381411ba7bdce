package pcap

import (
	"sync"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/wire"
)

// Tee returns a link that behaves like l and records in w every frame read
// from l and every frame l accepted for writing, stamped with the time the
// read or write returned. The result implements link.Filter exactly when l
// does, forwarding to it; Unwrap() returns l. Tee does not allocate per
// frame. A failing w does not disturb the link: Tee drops the records and
// w.Err reports the first error. Close closes l, not w.
//
// The capture keeps causal order: a write holds an ordering lock from the
// call into l until its frame is recorded, and a read records its frames
// under the same lock, so a reply that arrives while its request's write
// call is still returning is recorded after the request, as on the wire.
// Recording a read may therefore wait for a concurrent write call.
func Tee(l link.Link, w *Writer) link.Link {
	t := &tee{l: l, w: w}
	if f, ok := l.(link.Filter); ok {
		return &filterTee{tee: t, f: f}
	}
	return t
}

type tee struct {
	l     link.Link
	w     *Writer
	order sync.Mutex // orders records: see Tee
}

// filterTee is a tee of a link that also implements link.Filter.
type filterTee struct {
	*tee
	f link.Filter
}

var (
	_ link.Link   = (*tee)(nil)
	_ link.Link   = (*filterTee)(nil)
	_ link.Filter = (*filterTee)(nil)
)

func (t *tee) record(frames [][]byte) {
	now := time.Now()
	for _, f := range frames {
		t.w.WritePacket(now, f)
	}
}

// ReadBatch reads from the wrapped link and records the frames read.
func (t *tee) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	n, err := t.l.ReadBatch(bufs, sizes)
	if n > 0 {
		t.order.Lock()
		now := time.Now()
		for i := range n {
			t.w.WritePacket(now, bufs[i][:sizes[i]])
		}
		t.order.Unlock()
	}
	return n, err
}

// WriteBatch writes to the wrapped link and records the frames it accepted.
func (t *tee) WriteBatch(frames [][]byte) (int, error) {
	t.order.Lock()
	defer t.order.Unlock()
	n, err := t.l.WriteBatch(frames)
	t.record(frames[:n])
	return n, err
}

// Write writes to the wrapped link and records the frame if it was accepted.
func (t *tee) Write(frame []byte) error {
	t.order.Lock()
	defer t.order.Unlock()
	err := t.l.Write(frame)
	if err == nil {
		t.w.WritePacket(time.Now(), frame)
	}
	return err
}

// Addr returns the wrapped link's address.
func (t *tee) Addr() wire.MAC { return t.l.Addr() }

// MaxFrame returns the wrapped link's frame ceiling.
func (t *tee) MaxFrame() int { return t.l.MaxFrame() }

// Close closes the wrapped link.
func (t *tee) Close() error { return t.l.Close() }

// Unwrap returns the wrapped link, for its own methods (such as Stats).
func (t *tee) Unwrap() link.Link { return t.l }

// JoinGroup forwards to the wrapped link.
func (t *filterTee) JoinGroup(mac wire.MAC) error { return t.f.JoinGroup(mac) }

// LeaveGroup forwards to the wrapped link.
func (t *filterTee) LeaveGroup(mac wire.MAC) error { return t.f.LeaveGroup(mac) }

// SetPromiscuous forwards to the wrapped link.
func (t *filterTee) SetPromiscuous(on bool) error { return t.f.SetPromiscuous(on) }
