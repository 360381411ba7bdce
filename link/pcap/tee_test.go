package pcap_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/linktest"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

// fakeLink is the scripted link the tee wraps.
type fakeLink = linktest.Fake

// filterLink is a fakeLink that also implements link.Filter.
type filterLink struct {
	fakeLink
	groups  []wire.MAC
	promisc bool
}

func (f *filterLink) JoinGroup(m wire.MAC) error  { f.groups = append(f.groups, m); return nil }
func (f *filterLink) LeaveGroup(m wire.MAC) error { f.groups = nil; return nil }
func (f *filterLink) SetPromiscuous(on bool) error {
	f.promisc = on
	return nil
}

func TestTee(t *testing.T) {
	frames := testFrames()
	inner := &filterLink{fakeLink: fakeLink{In: [][]byte{frames[3], frames[4]}, Limited: true, Accept: 3, WriteErr: errors.New("queue full")}}
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := pcap.Tee(inner, w)
	start := time.Now().Truncate(time.Microsecond)

	if err := l.Write(frames[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := l.WriteBatch([][]byte{frames[1], frames[2]}); n != 2 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	// The inner link accepts nothing more: neither is recorded.
	if n, err := l.WriteBatch([][]byte{frames[5], frames[6]}); n != 0 || err == nil {
		t.Fatalf("WriteBatch on a full link = %d, %v", n, err)
	}
	if err := l.Write(frames[7]); err == nil {
		t.Fatal("Write on a full link succeeded")
	}
	bufs := [][]byte{make([]byte, 9100), make([]byte, 9100), make([]byte, 9100)}
	sizes := make([]int, 3)
	if n, err := l.ReadBatch(bufs, sizes); n != 2 || err != nil {
		t.Fatalf("ReadBatch = %d, %v", n, err)
	}
	if n, err := l.ReadBatch(bufs, sizes); n != 0 || err != link.ErrClosed {
		t.Fatalf("ReadBatch at the end = %d, %v", n, err)
	}
	end := time.Now()

	r, err := pcap.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]byte{frames[0], frames[1], frames[2], frames[3], frames[4]} {
		ts, got, err := r.Next()
		if err != nil {
			t.Fatalf("record %d: %v", i+1, err)
		}
		if !bytes.Equal(got, want) || ts.Before(start) || ts.After(end) {
			t.Errorf("record %d: %d bytes at %v, want %d bytes between %v and %v", i+1, len(got), ts, len(want), start, end)
		}
	}
	if _, _, err := r.Next(); err != io.EOF {
		t.Errorf("after 5 records: %v, want io.EOF (unaccepted frames are not recorded)", err)
	}
	if len(inner.Out) != 3 {
		t.Errorf("inner link got %d frames, want 3", len(inner.Out))
	}

	if l.Addr() != inner.Addr() || l.MaxFrame() != linktest.MaxFrame {
		t.Errorf("Addr %v MaxFrame %d not forwarded", l.Addr(), l.MaxFrame())
	}
	f, ok := l.(link.Filter)
	if !ok {
		t.Fatal("Tee of a link.Filter is not a link.Filter")
	}
	g := wire.MAC{3, 0, 0, 0, 0, 1}
	if err := f.JoinGroup(g); err != nil || len(inner.groups) != 1 || inner.groups[0] != g {
		t.Errorf("JoinGroup not forwarded: %v %v", err, inner.groups)
	}
	if err := f.LeaveGroup(g); err != nil || inner.groups != nil {
		t.Errorf("LeaveGroup not forwarded: %v %v", err, inner.groups)
	}
	if err := f.SetPromiscuous(true); err != nil || !inner.promisc {
		t.Errorf("SetPromiscuous not forwarded")
	}
	if u, ok := l.(interface{ Unwrap() link.Link }); !ok || u.Unwrap() != link.Link(inner) {
		t.Error("Unwrap does not return the inner link")
	}
	if err := l.Close(); err != nil || !inner.Closed {
		t.Errorf("Close not forwarded: %v", err)
	}

	plain := pcap.Tee(&fakeLink{}, w)
	if _, ok := plain.(link.Filter); ok {
		t.Error("Tee of a link without Filter implements link.Filter")
	}
}

func TestTeeWriterFailure(t *testing.T) {
	disk := errors.New("disk full")
	w, err := pcap.NewWriter(&failWriter{n: 1, err: disk}, 0)
	if err != nil {
		t.Fatal(err)
	}
	inner := &fakeLink{}
	l := pcap.Tee(inner, w)
	for range 3 {
		if err := l.Write(testFrames()[0]); err != nil {
			t.Fatalf("Write through a tee with a failing pcap writer = %v, want nil", err)
		}
	}
	if len(inner.Out) != 3 || !errors.Is(w.Err(), disk) {
		t.Errorf("inner got %d frames, Err %v; want 3 and disk full", len(inner.Out), w.Err())
	}
}

func TestTeeNoAllocs(t *testing.T) {
	w, err := pcap.NewWriter(io.Discard, 0)
	if err != nil {
		t.Fatal(err)
	}
	frame := testFrames()[6]
	inner := &loopLink{frame: frame}
	l := pcap.Tee(inner, w)
	bufs := [][]byte{make([]byte, 9100), make([]byte, 9100)}
	sizes := make([]int, 2)
	batch := [][]byte{frame, frame}
	allocs := testing.AllocsPerRun(1000, func() {
		l.Write(frame)
		l.WriteBatch(batch)
		l.ReadBatch(bufs, sizes)
	})
	if allocs != 0 {
		t.Errorf("Tee Write+WriteBatch+ReadBatch: %v allocations, want 0", allocs)
	}
}

// loopLink accepts every write and reads back copies of frame.
type loopLink struct{ frame []byte }

func (l *loopLink) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	for i := range bufs {
		sizes[i] = copy(bufs[i], l.frame)
	}
	return len(bufs), nil
}
func (l *loopLink) WriteBatch(frames [][]byte) (int, error) { return len(frames), nil }
func (l *loopLink) Write([]byte) error                      { return nil }
func (l *loopLink) Addr() wire.MAC                          { return wire.MAC{} }
func (l *loopLink) MaxFrame() int                           { return 9014 }
func (l *loopLink) Close() error                            { return nil }

// spinLoopLink is a filterLink that also implements link.Looper and
// link.Spinner, like a busy-polling AF_PACKET link.
type spinLoopLink struct{ filterLink }

func (l *spinLoopLink) BusyPoll() time.Duration { return 100 * time.Microsecond }

func (l *spinLoopLink) ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error {
	return link.ReadBatches(l, bufs, sizes, batch)
}

// TestTeeKeepsCapabilities checks that a capture keeps the receive loop and
// the busy polling of the link it wraps, and records what the
// loop reads.
func TestTeeKeepsCapabilities(t *testing.T) {
	frames := testFrames()
	inner := &spinLoopLink{filterLink{fakeLink: fakeLink{In: [][]byte{frames[0], frames[1]}}}}
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := pcap.Tee(inner, w)
	if _, ok := l.(link.Filter); !ok {
		t.Error("Tee lost link.Filter")
	}
	s, ok := l.(link.Spinner)
	if !ok || s.BusyPoll() != 100*time.Microsecond {
		t.Fatalf("Tee lost link.Spinner (%v)", ok)
	}
	lp, ok := l.(link.Looper)
	if !ok {
		t.Fatal("Tee lost link.Looper")
	}
	bufs, sizes := [][]byte{make([]byte, 9100)}, []int{0}
	got := 0
	if err := lp.ReadLoop(bufs, sizes, func(n int) bool { got += n; return got < 2 }); err != nil || got != 2 {
		t.Fatalf("ReadLoop: %v after %d frames", err, got)
	}
	r, err := pcap.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		_, data, err := r.Next()
		if err != nil || !bytes.Equal(data, frames[i]) {
			t.Fatalf("record %d: %x, %v; want frame %d read through ReadLoop", i, data, err, i)
		}
	}
}
