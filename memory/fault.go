package memory

import "fmt"

// Fault is a Space covering [base, base+size) that stores nothing and
// answers every access inside it with one error response, modelling a
// target that fails (SLVERR) or an unmapped hole (DECERR). Reads leave p
// unchanged. Accesses not entirely inside the range answer DECERR. Word
// accesses always report ok=false. Fault is safe for concurrent use.
type Fault struct {
	base uint32
	end  uint64
	resp Resp
}

var _ Space = (*Fault)(nil)

// NewFault returns a Fault covering [base, base+size) that answers resp,
// which must be SLVERR or DECERR. size must be at least 1 and base+size at
// most 2^32.
func NewFault(base uint32, size uint64, resp Resp) (*Fault, error) {
	if err := checkRange("fault region", base, size); err != nil {
		return nil, err
	}
	if resp != SLVERR && resp != DECERR {
		return nil, fmt.Errorf("fault region %#x:%#x answers %v; a fault must answer SLVERR or DECERR", base, size, resp)
	}
	return &Fault{base: base, end: uint64(base) + size, resp: resp}, nil
}

// Resp returns the response f gives to accesses inside it.
func (f *Fault) Resp() Resp { return f.resp }

// answer returns the response to [addr, addr+n); an empty access is decoded
// like a one-byte access.
func (f *Fault) answer(addr uint32, n int) Resp {
	a := uint64(addr)
	if a < uint64(f.base) || a+uint64(max(n, 1)) > f.end {
		return DECERR
	}
	return f.resp
}

// ReadAt answers f's response (DECERR outside f) and leaves p unchanged.
func (f *Fault) ReadAt(p []byte, addr uint32) Resp { return f.answer(addr, len(p)) }

// WriteAt answers f's response (DECERR outside f) and stores nothing.
func (f *Fault) WriteAt(p []byte, addr uint32) Resp { return f.answer(addr, len(p)) }

// ReadWord always fails: the CPUIF has a single error bit.
func (f *Fault) ReadWord(addr uint32) (data uint32, ok bool) { return 0, false }

// WriteWord always fails and stores nothing.
func (f *Fault) WriteWord(addr uint32, data, mask uint32) (ok bool) { return false }
