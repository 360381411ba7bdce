// Package memory provides the local address spaces that an oETP endpoint
// serves to its peers and uses for its own transfers: RAM, shared file
// mappings, region maps whose holes answer DECERR, and fault regions that
// answer SLVERR.
//
// Bulk accesses model AXI bursts (OKAY, SLVERR, DECERR); word accesses model
// the CPUIF used by RMEM, which reports one error bit.
package memory

// Resp is the response of a bulk access, named after the AXI responses.
type Resp uint8

const (
	// OKAY is a successful access.
	OKAY Resp = 0
	// SLVERR is a slave error: the target exists but failed the access.
	SLVERR Resp = 2
	// DECERR is a decode error: no target at that address.
	DECERR Resp = 3
)

// String returns the AXI name of r.
func (r Resp) String() string {
	if int(r) < len(respNames) && respNames[r] != "" {
		return respNames[r]
	}
	return "Resp(?)"
}

var respNames = [...]string{OKAY: "OKAY", SLVERR: "SLVERR", DECERR: "DECERR"}

// Space is a 32-bit byte-addressed local address space. Implementations are
// safe for concurrent use. Addresses are absolute; callers check windows.
type Space interface {
	// ReadAt fills p from [addr, addr+len(p)). On an error some bytes of p
	// may have been filled.
	ReadAt(p []byte, addr uint32) Resp
	// WriteAt stores p at [addr, addr+len(p)). On an error a prefix may have
	// been written; there is no rollback.
	WriteAt(p []byte, addr uint32) Resp
	// ReadWord reads the aligned 32-bit little-endian word at addr. ok is
	// false on any bus error (CPUIF has one error bit).
	ReadWord(addr uint32) (data uint32, ok bool)
	// WriteWord writes the bits of data selected by mask into the aligned
	// word at addr (bit i of mask enables bit i). A zero mask is never
	// passed by the engine. ok is false on any bus error.
	WriteWord(addr uint32, data, mask uint32) (ok bool)
}

// Immediate is implemented by spaces whose accesses complete at once,
// without waiting on another goroutine, a device or a lock held across an
// access: RAM, File (a page fault aside), Fault, and a Map whose regions are
// all immediate. An endpoint serves requests to an immediate space directly
// in its receive loop; any other space is served by responder contexts, so
// a slow access never holds up the receive path.
type Immediate interface {
	Immediate() bool
}

// IsImmediate reports whether s declares itself immediate.
func IsImmediate(s Space) bool {
	i, ok := s.(Immediate)
	return ok && i.Immediate()
}

// Immediate reports true: a byte-backed space never waits.
func (s *bytesSpace) Immediate() bool { return true }

// Immediate reports true: a fault region answers at once.
func (f *Fault) Immediate() bool { return true }

// Immediate reports whether every region of m is immediate (an empty map
// answers DECERR at once). It reflects the regions at the time of the call.
func (m *Map) Immediate() bool {
	for _, r := range m.load() {
		if !IsImmediate(r.s) {
			return false
		}
	}
	return true
}
