package hub

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/memory"
)

// streamMin is the WRITE_BLOCK size from which the hub streams: it starts
// the DMA block while the data is still arriving from the client, so that
// copying the data through the socket overlaps with sending it on the wire.
// The block is still ONE DMA write (DMAWriteFrom): the device sees exactly
// the frames of a block written from memory.
const streamMin = 1 << 20

// streamChunk is how much the socket reader hands over at a time.
const streamChunk = 256 << 10

// streamRing is the buffer a streamed block's data passes through, whatever
// the block's size: the socket reader stays at most this far ahead of the
// DMA write, which may read again (a retried fragment) up to streamKeep
// bytes behind the furthest byte it read.
const (
	streamRing = 4 << 20
	streamKeep = streamRing / 2
)

// streamBufs keeps ring buffers for the next streamed block: a fresh 4 MiB
// buffer per block cost its page faults and a garbage collection.
var streamBufs = sync.Pool{New: func() any { b := make([]byte, streamRing); return &b }}

// streamSpace is the source of a streamed DMA write: a memory.Space over
// the block's n bytes, held in a ring, whose reads wait until the bytes
// have arrived.
type streamSpace struct {
	ringSpace
	have int   // bytes received
	low  int   // bytes below this are no longer needed: the ring may overwrite them
	err  error // the socket read failed: the rest never arrives
	// started: the DMA write has read its first bytes.
	started bool
}

func newStreamSpace(n int) *streamSpace {
	s := &streamSpace{}
	s.init(n)
	return s
}

// ringSpace is what the space of a streamed block (streamSpace, readSpace)
// holds: the block's n bytes pass through ring, taken from streamBufs;
// cond, on mu, wakes the side waiting for bytes or for room.
type ringSpace struct {
	ring []byte
	n    int
	mu   sync.Mutex
	cond sync.Cond
}

// init takes a ring from streamBufs for a block of n bytes.
func (s *ringSpace) init(n int) {
	s.ring, s.n = *streamBufs.Get().(*[]byte), n
	s.cond.L = &s.mu
}

// free returns the ring to streamBufs.
func (s *ringSpace) free() { streamBufs.Put(&s.ring) }

func (s *streamSpace) ReadAt(p []byte, addr uint32) memory.Resp {
	a, end := int(addr), int(addr)+len(p)
	s.mu.Lock()
	s.started = true
	for s.have < end && s.err == nil {
		s.cond.Wait()
	}
	// The ring holds [have-len(ring), have); what the DMA write read again
	// beyond streamKeep back may have been overwritten.
	ok := s.have >= end && a >= s.have-len(s.ring) && end <= s.n
	if ok {
		for off := a; off < end; {
			pos := off % len(s.ring)
			k := copy(p[off-a:end-a], s.ring[pos:])
			off += k
		}
		if low := end - streamKeep; low > s.low {
			s.low = low
			s.cond.Broadcast()
		}
	}
	s.mu.Unlock()
	if !ok {
		return memory.SLVERR
	}
	return memory.OKAY
}

func (s *streamSpace) WriteAt(p []byte, addr uint32) memory.Resp { return memory.DECERR }
func (s *streamSpace) ReadWord(addr uint32) (uint32, bool) {
	var w [4]byte
	if s.ReadAt(w[:], addr) != memory.OKAY {
		return 0, false
	}
	return binary.LittleEndian.Uint32(w[:]), true
}
func (s *streamSpace) WriteWord(addr, data, mask uint32) bool { return false }

// fill reads the block's bytes from r into the ring, waiting while the
// ring is full. On a read error the waiting reads fail (SLVERR: the DMA
// write stops before the fragment whose bytes did not come), and failed is
// called if the DMA write has not begun.
func (s *streamSpace) fill(r io.Reader, failed func()) {
	for off := 0; off < s.n; {
		s.mu.Lock()
		for off-s.low >= len(s.ring) {
			s.cond.Wait()
		}
		room := len(s.ring) - (off - s.low)
		s.mu.Unlock()
		pos := off % len(s.ring)
		k := min(room, streamChunk, s.n-off, len(s.ring)-pos)
		m, err := io.ReadFull(r, s.ring[pos:pos+k])
		off += m
		s.mu.Lock()
		s.have = off
		if err != nil {
			s.err = err
		}
		started := s.started
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			if !started {
				failed() // the DMA write has not begun: it need not
			}
			return
		}
	}
}

// discard lets the rest of the block be read and dropped: the DMA write
// ended and needs none of it.
func (s *streamSpace) discard() {
	s.mu.Lock()
	s.low = s.n
	s.cond.Broadcast()
	s.mu.Unlock()
}

// streamWriteBlock serves a large WRITE_BLOCK whose header has been read:
// it reads the address, then runs the DMA block from a streamSpace while a
// goroutine fills it from the socket. It returns false when the connection
// broke. A stalled body (no byte for the read deadline) aborts the block:
// the reply says how far it got, and that it may have executed, and the
// connection is then closed, since the rest of the body is not read.
func (c *conn) streamWriteBlock(hdr proto.Header, d *Device, out []byte) ([]byte, bool) {
	var a [4]byte
	if _, err := io.ReadFull(c.br, a[:]); err != nil {
		return out, false
	}
	addr := binary.LittleEndian.Uint32(a[:])
	n := hdr.BodyLen() - 4
	if !c.h.mem.acquire(streamRing, c.h.lim.ReadDeadline) {
		c.h.busy.Add(1)
		if _, err := io.CopyN(io.Discard, c.br, int64(n)); err != nil {
			return out, false
		}
		return c.busyReply(out, hdr, int64(n)), true
	}
	defer c.h.mem.release(streamRing)
	s := newStreamSpace(n)
	ctx, cancel := context.WithCancel(opCtx)
	defer cancel()
	done := make(chan struct{})
	go func() { s.fill(c.br, cancel); close(done) }()
	t, err := d.writeBlockFrom(ctx, addr, s, uint32(n))
	s.discard()
	<-done // the whole body is read (or the connection broke) before the reply
	s.free()
	if s.err != nil {
		if !isTimeout(s.err) {
			return out, false
		}
		// The client stopped sending: abort, tell it how far the block got,
		// and close (the rest of its body will not be read).
		c.h.stalls.Add(1)
		c.closeAfter = true
		var oe *endpoint.OpError
		if !errors.As(err, &oe) {
			oe = &endpoint.OpError{Op: "DMA write", Addr: addr, Code: endpoint.CodeOf(err)}
		}
		cause := fmt.Errorf("%w for %v after %d of %d bytes (the hub's read_deadline): the hub aborted the block", proto.ErrStalled, c.h.lim.ReadDeadline, s.have, n)
		err = &endpoint.OpError{Op: oe.Op, Peer: oe.Peer, Addr: oe.Addr, Code: oe.Code, Err: cause, Retries: oe.Retries, OutcomeUnknown: oe.OutcomeUnknown, Bytes: t.Bytes}
	}
	if err != nil {
		out = opFailed(out, hdr, fmt.Sprintf("write_block 0x%08x+%d", addr, n), err, t)
	} else {
		out = ok(out, hdr)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(t.Bytes))
	out = binary.LittleEndian.AppendUint32(out, uint32(t.Fragments))
	return proto.Finish(out, 0), true
}
