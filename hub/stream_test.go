package hub

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/openenoc/oetp/memory"
)

// A streamed block of many times the ring passes through it whole: each
// read gets its bytes, a read again within streamKeep (a retried
// fragment) still does, and the reader never gets more than the ring
// ahead.
func TestStreamRing(t *testing.T) {
	n := 5*streamRing + 12345
	data := make([]byte, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	s := newStreamSpace(n)
	defer s.free()
	r := &aheadReader{r: bytes.NewReader(data), s: s}
	done := make(chan struct{})
	go func() { s.fill(r, func() {}); close(done) }()
	p := make([]byte, 8160)
	for off := 0; off < n; off += len(p) {
		q := p[:min(len(p), n-off)]
		if s.ReadAt(q, uint32(off)) != memory.OKAY || !bytes.Equal(q, data[off:off+len(q)]) {
			t.Fatalf("read at %d: wrong bytes", off)
		}
		if back := off - 32*8160; back >= 0 && off%(1<<20) == 0 {
			q = p[:8160]
			if s.ReadAt(q, uint32(back)) != memory.OKAY || !bytes.Equal(q, data[back:back+8160]) {
				t.Fatalf("read again at %d (at %d): wrong bytes", back, off)
			}
		}
	}
	<-done
	if r.maxAhead > streamRing {
		t.Errorf("the reader got %d bytes ahead of the reads, more than the %d-byte ring", r.maxAhead, streamRing)
	}
	// What was overwritten is refused, never read wrong.
	if s.ReadAt(p[:4], 0) != memory.SLVERR {
		t.Error("a read of overwritten bytes did not fail")
	}
}

// A body that stops arriving fails the reads waiting for it.
func TestStreamRingError(t *testing.T) {
	s := newStreamSpace(2 << 20)
	defer s.free()
	failed, done := make(chan struct{}), make(chan struct{})
	s.ReadAt(nil, 0) // the DMA write has begun
	go func() {
		s.fill(io.MultiReader(bytes.NewReader(make([]byte, 4096)), errReader{}), func() { close(failed) })
		close(done)
	}()
	p := make([]byte, 4096)
	if s.ReadAt(p, 0) != memory.OKAY {
		t.Fatal("the bytes that arrived")
	}
	if s.ReadAt(p, 4096) != memory.SLVERR {
		t.Error("a read past the failure did not fail")
	}
	<-done
	select {
	case <-failed:
		t.Error("failed was called after the DMA write had begun: it would cancel the write in progress")
	default:
	}
	// Before the DMA write begins, a failure calls failed.
	s2 := newStreamSpace(2 << 20)
	defer s2.free()
	failed2 := make(chan struct{})
	s2.fill(errReader{}, func() { close(failed2) })
	<-failed2
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("stalled") }

// aheadReader records how far its reads got ahead of the space's reads.
type aheadReader struct {
	r        io.Reader
	s        *streamSpace
	got      int
	maxAhead int
}

func (a *aheadReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	a.got += n
	a.s.mu.Lock()
	read := a.s.low + streamKeep
	a.s.mu.Unlock()
	a.maxAhead = max(a.maxAhead, a.got-read)
	return n, err
}
