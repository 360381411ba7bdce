package dmafile

import (
	"sync"

	"github.com/openenoc/oetp/memory"
)

// chunkSize is how many bytes of a regular --in or --out file one system
// call reads or writes. The engine asks for one fragment (up to 8 KiB) at
// a time; serving them from a chunk makes a 64 MiB block 512 preads or
// pwrites instead of 8,000, which on the reliable transport is a fifth of
// a command's CPU time (docs/benchmarks.md). A larger chunk saves little
// more and costs a fresh process a page fault per 4 KiB of it before the
// first fragment leaves (about 17 µs each on a paravirtualized host).
const chunkSize = 128 << 10

// readSpace is a regular --in as a memory.Space, address a at file offset
// base+a, read ahead a chunk at a time. A read behind the chunk (a
// retransmission) is a pread of its own and keeps the chunk; a read past
// it reads the next chunk from its address. A short file fails the read
// that reaches past its end, as a fragment-sized pread would.
type readSpace struct {
	fileSpace       // the file, base, and the reads the chunk does not serve
	size      int64 // bytes from base the block reads

	mu  sync.Mutex
	buf []byte // allocated at the first read
	off int64  // address of buf[0]
	n   int    // bytes of buf read from the file
}

func (s *readSpace) ReadAt(p []byte, addr uint32) memory.Resp {
	a := int64(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if a >= s.off && a+int64(len(p)) <= s.off+int64(s.n) {
		copy(p, s.buf[a-s.off:])
		return memory.OKAY
	}
	if a < s.off || len(p) > chunkSize/2 {
		return s.fileSpace.ReadAt(p, addr)
	}
	if s.buf == nil {
		s.buf = make([]byte, chunkSize)
	}
	want := int(min(int64(chunkSize), max(s.size-a, int64(len(p)))))
	n, _ := s.f.ReadAt(s.buf[:want], s.base+a)
	s.off, s.n = a, n
	if n < len(p) {
		return memory.SLVERR // a read error, or the file shrank
	}
	copy(p, s.buf[:len(p)])
	return memory.OKAY
}

func (s *readSpace) WriteAt(p []byte, addr uint32) memory.Resp { return memory.SLVERR }

// writeSpace is a regular --out's temporary file as a memory.Space,
// written a chunk at a time: fragments that follow one another are
// gathered and written with one pwrite when the chunk is full, when the
// block's last byte (end) is in it, or before a fragment that does not
// follow (Flush writes the rest). A failed write fails the fragment that
// wrote the chunk out and every later one; the error is kept in failed
// (the engine's LOCAL_AXI_WR_SLVERR does not say "no space left on
// device"). The file is only renamed over --out when the whole block
// arrived and every chunk was written, so no failed byte is ever claimed.
type writeSpace struct {
	fileSpace       // the file and where its first error goes; writes the chunk out
	end       int64 // the block's length; 0: unknown

	mu  sync.Mutex
	buf []byte // allocated at the first write
	off int64  // address of buf[0]
	n   int    // bytes gathered in buf
	bad bool   // a write failed
}

func (s *writeSpace) WriteAt(p []byte, addr uint32) memory.Resp {
	a := int64(addr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad {
		return memory.SLVERR
	}
	if s.n > 0 && (a != s.off+int64(s.n) || s.n+len(p) > chunkSize) && !s.flushLocked() {
		return memory.SLVERR
	}
	if len(p) > chunkSize/2 {
		if r := s.fileSpace.WriteAt(p, addr); r != memory.OKAY {
			s.bad = true
			return r
		}
		return memory.OKAY
	}
	if s.buf == nil {
		s.buf = make([]byte, chunkSize)
	}
	if s.n == 0 {
		s.off = a
	}
	s.n += copy(s.buf[s.n:], p)
	if (s.n == chunkSize || s.off+int64(s.n) >= s.end && s.end > 0) && !s.flushLocked() {
		return memory.SLVERR
	}
	return memory.OKAY
}

// Flush writes out the gathered bytes; false if this or an earlier write
// failed.
func (s *writeSpace) Flush() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.bad && s.flushLocked()
}

func (s *writeSpace) flushLocked() bool {
	if s.n == 0 {
		return true
	}
	r := s.fileSpace.WriteAt(s.buf[:s.n], uint32(s.off))
	s.n = 0
	if r != memory.OKAY {
		s.bad = true
		return false
	}
	return true
}

func (s *writeSpace) ReadAt(p []byte, addr uint32) memory.Resp { return memory.SLVERR }
func (s *writeSpace) ReadWord(addr uint32) (uint32, bool)      { return 0, false }
