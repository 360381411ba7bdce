package memory

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// addrSpaceEnd is the first address past the 32-bit address space. Every
// region end is computed in uint64 and compared with it, so base+size never
// wraps silently.
const addrSpaceEnd = uint64(1) << 32

// hostLE reports whether the host stores a uint32 little-endian, which is
// the byte order of words in every Space.
var hostLE = binary.NativeEndian.Uint32([]byte{1, 0, 0, 0}) == 1

// toHost converts a little-endian word value to the host's native order, and
// back: the conversion is its own inverse.
func toHost(v uint32) uint32 {
	if hostLE {
		return v
	}
	return bits.ReverseBytes32(v)
}

// checkRange validates a region [base, base+size) of the 32-bit address
// space for the constructor named by what.
func checkRange(what string, base uint32, size uint64) error {
	if size == 0 {
		return fmt.Errorf("%s at %#x has size 0; give a size of at least 1 byte", what, base)
	}
	if uint64(base)+size > addrSpaceEnd {
		return fmt.Errorf("%s at %#x with size %#x ends at %#x, past the 32-bit address space; base+size must be at most 0x100000000", what, base, size, uint64(base)+size)
	}
	return nil
}

// checkStorage validates a region that stores its bytes: checkRange, and
// the size must fit a Go slice (it always does on 64-bit platforms).
func checkStorage(what string, base uint32, size uint64) error {
	if err := checkRange(what, base, size); err != nil {
		return err
	}
	if size > uint64(maxInt) {
		return fmt.Errorf("%s at %#x with size %#x does not fit in this platform's memory (max %#x bytes)", what, base, size, uint64(maxInt))
	}
	return nil
}

// maxInt is the largest int, the limit of a Go slice length.
const maxInt = int(^uint(0) >> 1)

// bytesSpace is the access logic shared by RAM and File: address base+i is
// byte b[i]. Byte b[i] lies at a host address congruent to base+i modulo 4,
// so each aligned 32-bit word of the address space is an aligned uint32 in
// host memory and can be accessed with sync/atomic.
type bytesSpace struct {
	base uint32
	b    []byte
}

// offset returns the index in s.b of addr and whether [addr, addr+n) lies
// inside s. An empty access is decoded like a one-byte access at addr.
func (s *bytesSpace) offset(addr uint32, n int) (int, bool) {
	if addr < s.base {
		return 0, false
	}
	o := uint64(addr - s.base)
	need := uint64(n)
	if need == 0 {
		need = 1
	}
	if o+need > uint64(len(s.b)) {
		return 0, false
	}
	return int(o), true
}

// word returns the host uint32 holding the aligned word at addr.
func (s *bytesSpace) word(addr uint32) (*uint32, bool) {
	if addr%4 != 0 {
		return nil, false
	}
	o, ok := s.offset(addr, 4)
	if !ok {
		return nil, false
	}
	return (*uint32)(unsafe.Pointer(&s.b[o])), true
}

// ReadAt copies [addr, addr+len(p)) into p. An access that does not lie
// entirely inside the space answers DECERR and copies nothing. An empty p is
// decoded like a one-byte access at addr: OKAY inside the space, DECERR
// outside. Bulk accesses are plain copies: concurrent accesses to the same
// bytes interleave like real memory and are data races in the Go sense.
func (s *bytesSpace) ReadAt(p []byte, addr uint32) Resp {
	o, ok := s.offset(addr, len(p))
	if !ok {
		return DECERR
	}
	copy(p, s.b[o:])
	return OKAY
}

// WriteAt stores p at [addr, addr+len(p)). An access that does not lie
// entirely inside the space answers DECERR and stores nothing. Empty
// accesses and concurrency are as for ReadAt.
func (s *bytesSpace) WriteAt(p []byte, addr uint32) Resp {
	o, ok := s.offset(addr, len(p))
	if !ok {
		return DECERR
	}
	copy(s.b[o:], p)
	return OKAY
}

// ReadWord atomically reads the little-endian word at addr. ok is false if
// addr is not a multiple of 4 or the word is not entirely inside the space.
func (s *bytesSpace) ReadWord(addr uint32) (data uint32, ok bool) {
	w, ok := s.word(addr)
	if !ok {
		return 0, false
	}
	return toHost(atomic.LoadUint32(w)), true
}

// WriteWord replaces the bits of the little-endian word at addr selected by
// mask with those of data, as one atomic read-modify-write: concurrent
// WriteWord calls on the same word never lose each other's bits. A zero
// mask changes nothing and reports ok for a valid address. ok is false if
// addr is not a multiple of 4 or the word is not entirely inside the space.
func (s *bytesSpace) WriteWord(addr uint32, data, mask uint32) (ok bool) {
	w, ok := s.word(addr)
	if !ok {
		return false
	}
	if mask == 0 {
		return true
	}
	data, mask = toHost(data), toHost(mask)
	if mask == ^uint32(0) {
		atomic.StoreUint32(w, data)
		return true
	}
	for {
		old := atomic.LoadUint32(w)
		v := old&^mask | data&mask
		if v == old || atomic.CompareAndSwapUint32(w, old, v) {
			return true
		}
	}
}

// Bytes returns the contents of the space, byte i at address Base()+i. The
// slice aliases the memory: writes through it are visible to accesses and
// the reverse.
func (s *bytesSpace) Bytes() []byte { return s.b }

// Base returns the first address of the space.
func (s *bytesSpace) Base() uint32 { return s.base }

// Size returns the number of bytes in the space.
func (s *bytesSpace) Size() uint64 { return uint64(len(s.b)) }
