// Package linktest holds a scripted link for the tests of what wraps a
// link (link.Wrap, pcap.Tee), and ReadN for the tests of every link. It is
// imported by test files only.
package linktest

import (
	"bytes"
	"testing"
	"time"

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

// ReadN reads n frames from l with ReadBatch, at most n and at most 64 at a
// time into buffers of l.MaxFrame() bytes, and returns copies of them in
// arrival order. It fails the test if a read fails, or if the frames do not
// arrive within five seconds (then it closes l to end the read).
func ReadN(t testing.TB, l link.Link, n int) [][]byte {
	t.Helper()
	type result struct {
		frames [][]byte
		err    error
	}
	c := make(chan result, 1)
	go func() {
		var got [][]byte
		bufs := make([][]byte, min(n, 64))
		for i := range bufs {
			bufs[i] = make([]byte, l.MaxFrame())
		}
		sizes := make([]int, len(bufs))
		for len(got) < n {
			k, err := l.ReadBatch(bufs[:min(len(bufs), n-len(got))], sizes)
			if err != nil {
				c <- result{got, err}
				return
			}
			for i := range k {
				got = append(got, bytes.Clone(bufs[i][:sizes[i]]))
			}
		}
		c <- result{got, nil}
	}()
	select {
	case r := <-c:
		if r.err != nil {
			t.Fatalf("%v: ReadBatch after %d of %d frames: %v", l.Addr(), len(r.frames), n, r.err)
		}
		return r.frames
	case <-time.After(5 * time.Second):
		l.Close()
		r := <-c
		t.Fatalf("%v: got %d of %d frames in 5s", l.Addr(), len(r.frames), n)
		return nil
	}
}
