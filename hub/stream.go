package hub

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
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

// streamBufs keep the buffers of streamed blocks for the next block, one
// pool per power-of-two capacity from streamMin to proto.MaxBlock: a fresh
// 64 MiB buffer per block cost its 16,384 page faults and a garbage
// collection, and a sync.Pool still lets an idle hub's buffers go after two
// collections.
var streamBufs [streamClasses]sync.Pool

// streamClasses is the number of pools: 1 MiB (streamMin) to 256 MiB
// (proto.MaxBlock); TestStreamBufs checks it.
const streamClasses = 9

// streamClass is the pool of a block of n bytes (streamMin <= n <=
// proto.MaxBlock): the smallest power of two from streamMin that holds n.
func streamClass(n int) int { return max(0, bits.Len(uint(n-1))-bits.Len(streamMin)+1) }

func getStreamBuf(n int) []byte {
	c := streamClass(n)
	if c >= streamClasses {
		return make([]byte, n)
	}
	if b, ok := streamBufs[c].Get().(*[]byte); ok {
		return (*b)[:n]
	}
	return make([]byte, n, streamMin<<c)
}

func putStreamBuf(b []byte) {
	c := streamClass(cap(b))
	if c < streamClasses && cap(b) == streamMin<<c {
		streamBufs[c].Put(&b)
	}
}

// streamSpace is the source of a streamed DMA write: a memory.Space over the
// block's bytes whose reads wait until the bytes have arrived.
type streamSpace struct {
	buf  []byte
	mu   sync.Mutex
	cond sync.Cond
	have int   // bytes received
	err  error // the socket read failed: the rest never arrives
}

func (s *streamSpace) ReadAt(p []byte, addr uint32) memory.Resp {
	end := int(addr) + len(p)
	s.mu.Lock()
	for s.have < end && s.err == nil {
		s.cond.Wait()
	}
	ok := s.have >= end
	s.mu.Unlock()
	if !ok {
		return memory.SLVERR
	}
	copy(p, s.buf[addr:end])
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

// fill reads the block's bytes from r.
func (s *streamSpace) fill(r io.Reader) {
	for off := 0; off < len(s.buf); {
		n, err := io.ReadFull(r, s.buf[off:min(off+streamChunk, len(s.buf))])
		off += n
		s.mu.Lock()
		s.have = off
		if err != nil {
			s.err = err
		}
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// streamWriteBlock serves a large WRITE_BLOCK whose header has been read:
// it reads the address, then runs the DMA block from a streamSpace while a
// goroutine fills it from the socket. It returns false when the connection
// broke.
func (c *conn) streamWriteBlock(hdr proto.Header, d *Device, out []byte) ([]byte, bool) {
	var a [4]byte
	if _, err := io.ReadFull(c.br, a[:]); err != nil {
		return out, false
	}
	addr := binary.LittleEndian.Uint32(a[:])
	n := hdr.BodyLen() - 4
	s := &streamSpace{buf: getStreamBuf(n)}
	s.cond.L = &s.mu
	done := make(chan struct{})
	go func() { s.fill(c.br); close(done) }()
	t, err := d.writeBlockFrom(addr, s, uint32(n))
	<-done // the whole body is read (or the connection broke) before the reply
	putStreamBuf(s.buf)
	if s.err != nil {
		return out, false
	}
	if err != nil {
		out = opFailed(out, hdr, fmt.Sprintf("write_block 0x%08x+%d", addr, n), err, t.Bytes > 0)
	} else {
		out = ok(out, hdr)
	}
	out = binary.LittleEndian.AppendUint32(out, uint32(t.Bytes))
	out = binary.LittleEndian.AppendUint32(out, uint32(t.Fragments))
	return proto.Finish(out, 0), true
}

var _ endpoint.Transfer
