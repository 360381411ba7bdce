package endpoint

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/openenoc/oetp/wire"
)

// rawQueue is the bounded queue of admitted raw frames. Frames are not
// copied in: the receive loop swaps its ring buffer with the queue slot's.
type rawQueue struct {
	mu   sync.Mutex
	bufs [][]byte // slot buffers, allocated on first use, bufLen bytes each
	lens []int
	head int
	n    int
	sig  chan struct{}
}

func newRawQueue(n int) *rawQueue {
	return &rawQueue{bufs: make([][]byte, n), lens: make([]int, n), sig: make(chan struct{}, 1)}
}

// put takes *buf (n bytes valid) into the queue and gives the caller an
// empty buffer of the same size in exchange. It reports false, leaving
// *buf alone, when the queue is full.
func (q *rawQueue) put(buf *[]byte, n int) bool {
	q.mu.Lock()
	if q.n == len(q.bufs) {
		q.mu.Unlock()
		return false
	}
	i := (q.head + q.n) % len(q.bufs)
	spare := q.bufs[i]
	if spare == nil {
		spare = make([]byte, len(*buf))
	}
	q.bufs[i], *buf = *buf, spare
	q.lens[i] = n
	q.n++
	q.mu.Unlock()
	q.signal()
	return true
}

func (q *rawQueue) signal() {
	select {
	case q.sig <- struct{}{}:
	default:
	}
}

func (q *rawQueue) get(p []byte) (copied, n int, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return 0, 0, false
	}
	n = q.lens[q.head]
	copied = copy(p, q.bufs[q.head][:n])
	q.head = (q.head + 1) % len(q.bufs)
	q.n--
	if q.n > 0 {
		q.signal() // another waiter may take the next frame
	}
	return copied, n, true
}

func (q *rawQueue) clear() {
	q.mu.Lock()
	q.head, q.n = 0, 0
	q.mu.Unlock()
}

// admitRaw reports whether the raw policy admits a non-oETP frame with
// destination dst.
func admitRaw(cfg *Config, dst wire.MAC) bool {
	switch cfg.RawPolicy {
	case RawFiltered:
		return dst == cfg.MAC
	case RawMulticast:
		return dst == cfg.MAC || dst.IsGroup()
	case RawPromiscuous:
		return true
	}
	return false
}

// RecvRaw waits for the next admitted non-oETP frame and copies it, the
// complete frame from the destination MAC through any Ethernet padding,
// into buf. It returns the frame's length. If buf is shorter, the first
// len(buf) bytes are copied and the error wraps io.ErrShortBuffer. It
// returns ctx.Err() when ctx ends first and ErrClosed after Close.
func (e *Endpoint) RecvRaw(ctx context.Context, buf []byte) (int, error) {
	for {
		if c, n, ok := e.raw.get(buf); ok {
			if c < n {
				return c, fmt.Errorf("endpoint: raw frame of %d bytes truncated to %d: %w; pass a buffer of Config().MaxFrame bytes", n, c, io.ErrShortBuffer)
			}
			return n, nil
		}
		select {
		case <-e.raw.sig:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-e.done:
			return 0, ErrClosed
		}
	}
}

// SendRaw transmits frame unchanged: no oETP fields, no padding, no
// EndOfData. It must be a complete Ethernet frame of 14..MaxFrame bytes.
// Raw frames share the initiating transmit priority: replies to received
// requests go first. SendRaw returns when the link has accepted the frame.
func (e *Endpoint) SendRaw(frame []byte) error {
	if e.isClosed() {
		return ErrClosed
	}
	if len(frame) < wire.HeaderLen || len(frame) > e.maxFrame {
		return fmt.Errorf("endpoint: raw frame of %d bytes: want %d..%d bytes (a complete Ethernet frame without FCS, at most Config.MaxFrame)", len(frame), wire.HeaderLen, e.maxFrame)
	}
	if err := e.write(frame, false); err != nil {
		return fmt.Errorf("endpoint: raw frame: %w", err)
	}
	e.st.rawSent.Add(1)
	return nil
}
