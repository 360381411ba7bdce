package memory

// Prober is implemented by spaces that can tell, without performing it,
// how a bulk access would answer: RAM, File, Fault and Map. An endpoint
// that validates a received frame completely before it writes memory uses
// it to report what a streaming receiver would: a malformed DMA_WRITE_REQ
// (or DMA_READ_RSP) whose memory write fails reports the memory's error,
// since "the current DMA engine ... gives a fragment's local memory error
// precedence when both are present", while its bytes are never written.
//
// Probe must have no effect at all: no byte is read or written, no device
// is touched. A Space that cannot know without accessing (a device, a
// remote target) must not implement it.
type Prober interface {
	// Probe returns the response that an access of n bytes at addr would
	// give (ReadAt when write is false, WriteAt when it is true), without
	// performing it. n = 0 is decoded like a one-byte access, as for
	// ReadAt and WriteAt.
	Probe(addr uint32, n int, write bool) Resp
}

var (
	_ Prober = (*RAM)(nil)
	_ Prober = (*File)(nil)
	_ Prober = (*Fault)(nil)
	_ Prober = (*Map)(nil)
)

// Probe answers as ReadAt and WriteAt would: OKAY inside the space, DECERR
// outside it (or after a File is closed).
func (s *bytesSpace) Probe(addr uint32, n int, write bool) Resp {
	if _, ok := s.offset(addr, n); !ok {
		return DECERR
	}
	return OKAY
}

// Probe answers f's response inside f and DECERR outside it, as ReadAt and
// WriteAt would.
func (f *Fault) Probe(addr uint32, n int, write bool) Resp { return f.answer(addr, n) }

// Probe walks the regions of [addr, addr+n) as ReadAt and WriteAt would:
// DECERR at the first hole, else the first error a region's Probe reports.
// A region whose Space is not a Prober is assumed to answer OKAY, since
// asking it would mean accessing it.
func (m *Map) Probe(addr uint32, n int, write bool) Resp {
	rs := m.load()
	a := uint64(addr)
	end := a + uint64(max(n, 1))
	for a < end {
		i := find(rs, a)
		if i < 0 {
			return DECERR
		}
		r := &rs[i]
		part := min(end, r.end) - a
		if p, ok := r.s.(Prober); ok {
			if resp := p.Probe(uint32(a), int(part), write); resp != OKAY {
				return resp
			}
		}
		a += part
	}
	return OKAY
}

// ProbeSpace returns how an access of n bytes at addr to s would answer,
// and whether s could tell (it implements Prober); see Prober.
func ProbeSpace(s Space, addr uint32, n int, write bool) (Resp, bool) {
	p, ok := s.(Prober)
	if !ok {
		return OKAY, false
	}
	return p.Probe(addr, n, write), true
}
