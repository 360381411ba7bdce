// Package linktest holds a scripted link for the tests of what wraps a
// link (link.Wrap, pcap.Tee). It is imported by test files only.
package linktest

import (
	"bytes"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/wire"
)

// MaxFrame is a Fake's MaxFrame, and Addr its Addr.
const MaxFrame = 1234

// Addr is the MAC address of every Fake.
var Addr = wire.MAC{2, 0, 0, 0, 0, 7}

// Fake is a link.Link whose reads return the frames queued in In, then
// link.ErrClosed, and whose writes keep copies of the frames they accept
// in Out. It is not safe for concurrent use.
type Fake struct {
	In, Out [][]byte
	// Limited makes the writes accept Accept frames in all; the write that
	// finds no more room returns the frames it accepted and WriteErr.
	Limited  bool
	Accept   int
	WriteErr error
	Closed   bool // set by Close
}

func (f *Fake) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	if len(f.In) == 0 {
		return 0, link.ErrClosed
	}
	n := 0
	for n < len(bufs) && len(f.In) > 0 {
		sizes[n] = copy(bufs[n], f.In[0])
		f.In = f.In[1:]
		n++
	}
	return n, nil
}

func (f *Fake) WriteBatch(frames [][]byte) (int, error) {
	n := len(frames)
	if f.Limited {
		n = min(n, f.Accept)
		f.Accept -= n
	}
	for _, fr := range frames[:n] {
		f.Out = append(f.Out, bytes.Clone(fr))
	}
	if n < len(frames) {
		return n, f.WriteErr
	}
	return n, nil
}

func (f *Fake) Write(frame []byte) error {
	_, err := f.WriteBatch([][]byte{frame})
	return err
}

func (f *Fake) Addr() wire.MAC { return Addr }
func (f *Fake) MaxFrame() int  { return MaxFrame }
func (f *Fake) Close() error   { f.Closed = true; return nil }
