package pcap_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

// echoLink answers every written frame with a reply that a concurrent
// reader receives before the Write call returns, as a fast peer on a real
// link can.
type echoLink struct {
	replies chan []byte
	read    chan struct{} // the reader has taken the reply from the link
}

func (e *echoLink) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	r, ok := <-e.replies
	if !ok {
		return 0, link.ErrClosed
	}
	sizes[0] = copy(bufs[0], r)
	e.read <- struct{}{}
	return 1, nil
}

func (e *echoLink) Write(f []byte) error {
	e.replies <- append([]byte("reply:"), f...)
	select { // return only after the reader has the reply in hand
	case <-e.read:
	case <-time.After(5 * time.Second):
	}
	return nil
}

func (e *echoLink) WriteBatch(fs [][]byte) (int, error) {
	for i, f := range fs {
		if err := e.Write(f); err != nil {
			return i, err
		}
	}
	return len(fs), nil
}
func (e *echoLink) Addr() wire.MAC { return wire.MAC{2} }
func (e *echoLink) MaxFrame() int  { return 100 }
func (e *echoLink) Close() error   { close(e.replies); return nil }

// TestTeeCausalOrder: a reply read while its request's Write call is still
// returning is recorded after the request.
func TestTeeCausalOrder(t *testing.T) {
	var buf bytes.Buffer
	w, err := pcap.NewWriter(&buf, 100)
	if err != nil {
		t.Fatal(err)
	}
	el := &echoLink{replies: make(chan []byte, 1), read: make(chan struct{}, 1)}
	l := pcap.Tee(el, w)
	got1 := make(chan struct{}, 2) // like an initiator, wait for each reply before the next request
	go func() {
		bufs, sizes := [][]byte{make([]byte, 100)}, []int{0}
		for i := 0; i < 2; i++ {
			if _, err := l.ReadBatch(bufs, sizes); err != nil {
				return
			}
			got1 <- struct{}{}
		}
	}()
	for _, f := range []string{"request-1", "request-2"} {
		if err := l.Write([]byte(f)); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got1:
		case <-time.After(5 * time.Second):
			t.Fatal("reply not read")
		}
	}
	r, err := pcap.NewReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		_, f, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(f))
	}
	want := []string{"request-1", "reply:request-1", "request-2", "reply:request-2"}
	if len(got) != len(want) {
		t.Fatalf("recorded %q; want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("recorded %q; want %q", got, want)
		}
	}
}
