package memory

import "unsafe"

// RAM is a Space of ordinary process memory covering [Base, Base+Size).
// Accesses outside it answer DECERR (bulk) or ok=false (word). It is safe
// for concurrent use; see WriteWord for the atomicity of masked writes.
type RAM struct {
	bytesSpace
}

var _ Space = (*RAM)(nil)

// NewRAM returns zeroed RAM covering [base, base+size). size must be at
// least 1 and base+size at most 2^32. base need not be aligned: the words
// of the address space stay 4-byte aligned in host memory either way.
func NewRAM(base uint32, size uint64) (*RAM, error) {
	if err := checkStorage("RAM", base, size); err != nil {
		return nil, err
	}
	lead := int(base % 4)
	n := lead + int(size)
	words := make([]uint32, (n+3)/4)
	all := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), len(words)*4)
	return &RAM{bytesSpace{base: base, b: all[lead:n:n]}}, nil
}
