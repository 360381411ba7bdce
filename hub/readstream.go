package hub

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/memory"
)

// readSpace is the destination of a streamed DMA read: a memory.Space over
// the block's n bytes, held in a ring. The DMA read writes each fragment's
// data at its offset; the connection sends the bytes completed in order
// (done) and frees their room (sent). A write waits while the ring has no
// room for it; it fails (the DMA read stops with LOCAL_AXI_WR_SLVERR) when
// the sending failed, or when it lies a whole ring beyond the bytes
// completed in order, since waiting could then never end.
type readSpace struct {
	ringSpace
	done int    // bytes [0, done) are written
	sent int    // bytes [0, sent) have left the ring
	pend []span // written ranges beyond done (fragments completed out of order)
	err  bool   // the sending failed: writes fail
	end  bool   // the DMA read returned
}

type span struct{ from, to int }

func newReadSpace(n int) *readSpace {
	s := &readSpace{pend: make([]span, 0, 64)}
	s.init(n)
	return s
}

func (s *readSpace) WriteAt(p []byte, addr uint32) memory.Resp {
	a, end := int(addr), int(addr)+len(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if end > s.n || end-s.done > len(s.ring) {
		return memory.SLVERR
	}
	for end-s.sent > len(s.ring) && !s.err {
		s.cond.Wait()
	}
	if s.err {
		return memory.SLVERR
	}
	// [a, end) is not in [sent, done), which the sender may be reading.
	for off := a; off < end; {
		k := copy(s.ring[off%len(s.ring):], p[off-a:])
		off += k
	}
	if a > s.done {
		s.pend = append(s.pend, span{a, end})
		return memory.OKAY
	}
	s.done = max(s.done, end)
	for merged := true; merged; {
		merged = false
		for i := 0; i < len(s.pend); i++ {
			if sp := s.pend[i]; sp.from <= s.done {
				s.done = max(s.done, sp.to)
				s.pend = append(s.pend[:i], s.pend[i+1:]...)
				merged = true
				i--
			}
		}
	}
	s.cond.Broadcast()
	return memory.OKAY
}

func (s *readSpace) ReadAt(p []byte, addr uint32) memory.Resp { return memory.DECERR }
func (s *readSpace) ReadWord(addr uint32) (uint32, bool)      { return 0, false }
func (s *readSpace) WriteWord(addr, data, mask uint32) bool {
	var w [4]byte
	binary.LittleEndian.PutUint32(w[:], data)
	return mask == 0xFFFFFFFF && s.WriteAt(w[:], addr) == memory.OKAY
}

// next waits for completed bytes not yet sent and returns them (at most
// max, not across the ring's end); empty when the DMA read has returned
// and all it completed has been taken.
func (s *readSpace) next(max int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.done == s.sent && !s.end {
		s.cond.Wait()
	}
	pos := s.sent % len(s.ring)
	k := min(s.done-s.sent, max, len(s.ring)-pos)
	return s.ring[pos : pos+k]
}

// taken frees the room of k bytes returned by next.
func (s *readSpace) taken(k int) {
	s.mu.Lock()
	s.sent += k
	s.cond.Broadcast()
	s.mu.Unlock()
}

// fail makes the waiting and later writes fail: the bytes cannot be sent.
func (s *readSpace) fail() {
	s.mu.Lock()
	s.err = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// ended records that the DMA read returned.
func (s *readSpace) ended() {
	s.mu.Lock()
	s.end = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// streamReadBlock serves a READ_BLOCK of streamMin bytes or more: the DMA
// read writes into a readSpace while this goroutine sends the bytes
// completed in order as PARTIAL replies (proto.FlagPartial), so the hub
// holds a ring of the block, never the whole of it. The last reply carries
// the counters (and on failure the error). It returns false when the
// connection broke: the DMA read was stopped (its writes fail), and no
// reply can follow.
func (c *conn) streamReadBlock(hdr proto.Header, d *Device, addr, n uint32, out []byte) ([]byte, bool) {
	if !c.hold(streamRing) {
		return c.busyReply(out, hdr, int64(n)), true
	}
	start := len(out)
	s := newReadSpace(int(n))
	ctx, cancel := context.WithCancel(opCtx)
	defer cancel()
	var t endpoint.Transfer
	var err error
	done := make(chan struct{})
	go func() {
		t, err = d.readBlockInto(ctx, addr, s, n)
		s.ended()
		close(done)
	}()
	alive := true
	for alive {
		p := s.next(streamChunk)
		if len(p) == 0 {
			break
		}
		piece := proto.AppendReplyHeader(out[start:], hdr, proto.StatusOK, proto.FlagPartial, "")
		binary.LittleEndian.PutUint32(piece, uint32(len(piece)-4+len(p)))
		_, werr := c.bw.Write(piece)
		if werr == nil {
			_, werr = c.bw.Write(p)
		}
		if werr != nil {
			alive = false
			if isTimeout(werr) {
				c.h.stalls.Add(1)
			}
		}
		s.taken(len(p))
	}
	if !alive {
		// The client stopped reading for the write deadline (the read
		// deadline, per MiB), or left: the DMA read stops at its next
		// write, freeing the device; the connection closes.
		s.fail()
		cancel()
	}
	<-done
	s.free()
	// The ring is back in the pool: its budget returns before the last
	// reply goes out, so a client that has the reply finds it returned.
	c.releaseHeld()
	if !alive {
		return out, false
	}
	if err != nil {
		out = opFailed(out[:start], hdr, fmt.Sprintf("read_block 0x%08x+%d", addr, n), err, t)
	} else {
		out = ok(out[:start], hdr)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(t.Bytes))
	out = binary.LittleEndian.AppendUint32(out, uint32(t.Fragments))
	return proto.Finish(out, start), true
}
