package memory

// Toucher is implemented by spaces backed by ordinary host memory (RAM and
// File) that can warm the CPU caches for an access that is likely to come,
// such as the next fragment of a DMA block. An endpoint calls Touch only on
// a space that is also Immediate, and only off the critical path of an
// exchange (after it has sent a frame and while it waits for the next one).
//
// Touch must have no observable effect: it may only read the bytes of the
// space, never write them, never fail, and never block on anything but the
// memory itself. A Space with side effects on reads (a device register, a
// counter) must not implement it.
type Toucher interface {
	// Touch loads one byte of every 64-byte cache line of the part of
	// [addr, addr+n) that lies inside the space, discards the bytes, and
	// returns the length of that part (0 when the range misses the space
	// or n <= 0). The range is computed without wrapping: it ends at
	// addr+n even past 2^32.
	Touch(addr uint32, n int) int
}

var _ Toucher = (*RAM)(nil)
var _ Toucher = (*File)(nil)

// cacheLine is the stride of the loads of Touch and TouchBytes: the cache
// line size of current x86-64 and arm64 cores. A longer line only makes a
// few loads redundant; a shorter one leaves lines cold, which costs time
// only.
const cacheLine = 64

// Touch implements Toucher for RAM and File: it reads one byte of every
// cache line of the part of [addr, addr+n) inside the space, so that an
// access that follows finds the lines in the cache instead of stalling on
// main memory. It is a plain read of memory the space owns, clamped to the
// space's bounds, with no effect on its contents, on other accesses or on
// any response: it is safe for concurrent use to the same degree as
// ReadAt, and cheaper (no copy). On a File that has been closed it touches
// nothing. Under the race detector it loads nothing (it still returns the
// length): its loads are unsynchronized by design and the race detector
// would report them against application writes to bytes that no access
// was asked for.
func (s *bytesSpace) Touch(addr uint32, n int) int {
	if n <= 0 {
		return 0
	}
	base := uint64(s.base)
	lo := max(uint64(addr), base)
	hi := min(uint64(addr)+uint64(n), base+uint64(len(s.b)))
	if lo >= hi {
		return 0
	}
	return TouchBytes(s.b[lo-base : hi-base])
}

// TouchBytes reads one byte of every 64-byte cache line of b, discards the
// bytes and returns len(b): the Toucher behaviour for a plain byte slice,
// such as the caller's buffer of a DMA block. It never writes b. Under the
// race detector it loads nothing; see RAM's Touch.
func TouchBytes(b []byte) int {
	if !raceEnabled && len(b) > 0 {
		touchLines(b)
	}
	return len(b)
}

// touchLines loads b[0], b[64], ... and the last byte of b, which covers
// every cache line b occupies whatever its alignment (samples are at most
// one line apart). The sum is returned, and the function is not inlined, so
// the compiler cannot drop the loads as dead; nothing is stored, so two
// CPUs touching at once never share a written cache line.
//
//go:noinline
func touchLines(b []byte) byte {
	var x byte
	for i := 0; i < len(b); i += cacheLine {
		x += b[i]
	}
	return x + b[len(b)-1]
}
