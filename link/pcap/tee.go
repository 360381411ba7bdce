package pcap

import (
	"sync"
	"time"

	"github.com/openenoc/oetp/link"
)

// Tee returns a link that behaves like l and records in w every frame read
// from l and every frame l accepted for writing, stamped with the time the
// read or write returned. It is built on link.Wrap, so it implements
// exactly the optional interfaces l implements (link.Filter, link.Looper,
// link.Spinner, link.FillWriter), forwarding them to l: a capture of a
// busy-polling AF_PACKET link keeps its receive loop and its busy polling.
// A WriteFill through the capture fills the caller's frame and records it
// as a Write (Wrap's Write hook needs the whole frame). Unwrap()
// returns l. Tee does not allocate per frame. A failing w does not disturb
// the link: Tee drops the records and w.Err reports the first error. Close
// closes l, not w.
//
// The capture keeps causal order: a write holds an ordering lock from the
// call into l until its frame is recorded, and a read records its frames
// under the same lock, so a reply that arrives while its request's write
// call is still returning is recorded after the request, as on the wire.
// Recording a read may therefore wait for a concurrent write call.
func Tee(l link.Link, w *Writer) link.Link {
	t := &tee{w: w}
	return link.Wrap(l, link.Hooks{Read: t.read, Write: t.write})
}

type tee struct {
	w     *Writer
	order sync.Mutex // orders records: see Tee
}

// read records the frames read.
func (t *tee) read(bufs [][]byte, sizes []int, n int) {
	t.order.Lock()
	now := time.Now()
	for i := range n {
		t.w.WritePacket(now, bufs[i][:sizes[i]])
	}
	t.order.Unlock()
}

// write writes to the wrapped link and records the frames it accepted.
func (t *tee) write(frames [][]byte, next func([][]byte) (int, error)) (int, error) {
	t.order.Lock()
	defer t.order.Unlock()
	n, err := next(frames)
	now := time.Now()
	for _, f := range frames[:n] {
		t.w.WritePacket(now, f)
	}
	return n, err
}
