package memory

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Map is a Space made of disjoint regions, each served by its own Space
// that receives absolute addresses. Addresses in no region are holes: they
// answer DECERR (bulk) or ok=false (word).
//
// A bulk access that spans several adjacent regions is split across them in
// address order. If a part hits a hole or its region answers an error, the
// access stops there and answers DECERR (hole) or the region's response;
// the parts before it have been performed and are not rolled back, as on an
// AXI interconnect that forwards a burst's beats in order. A word access
// must lie inside one region.
//
// The zero Map is an empty map ready for use. Map is safe for concurrent
// use, including Add concurrently with accesses; an access sees the regions
// as they were when it started.
type Map struct {
	mu      sync.Mutex               // serializes Add
	regions atomic.Pointer[[]region] // sorted by base, disjoint, never modified once stored
}

// region is one entry of a Map: [base, end) served by s.
type region struct {
	base uint32
	end  uint64
	s    Space
}

var _ Space = (*Map)(nil)

// NewMap returns an empty Map.
func NewMap() *Map { return &Map{} }

// Add maps s at [base, base+size). size must be at least 1, base+size at
// most 2^32, and the range must not overlap a region already added. s
// receives absolute addresses, so a RAM or Fault added here is normally
// created with the same base and size.
func (m *Map) Add(base uint32, size uint64, s Space) error {
	if err := checkRange("region", base, size); err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("region %#x:%#x has a nil Space; pass a RAM, File, Fault or Map", base, size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var old []region
	if p := m.regions.Load(); p != nil {
		old = *p
	}
	end := uint64(base) + size
	i := after(old, uint64(base)) // old[i-1].base <= base < old[i].base
	if i > 0 && old[i-1].end > uint64(base) {
		return overlapErr(base, end, old[i-1])
	}
	if i < len(old) && uint64(old[i].base) < end {
		return overlapErr(base, end, old[i])
	}
	rs := make([]region, 0, len(old)+1)
	rs = append(rs, old[:i]...)
	rs = append(rs, region{base: base, end: end, s: s})
	rs = append(rs, old[i:]...)
	m.regions.Store(&rs)
	return nil
}

func overlapErr(base uint32, end uint64, r region) error {
	return fmt.Errorf("[%#x, %#x) overlaps region [%#x, %#x)", base, end, r.base, r.end)
}

// after returns the index of the first region whose base is above a.
func after(rs []region, a uint64) int {
	lo, hi := 0, len(rs)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if uint64(rs[mid].base) <= a {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// load returns the current regions.
func (m *Map) load() []region {
	if p := m.regions.Load(); p != nil {
		return *p
	}
	return nil
}

// find returns the index of the region containing a, or -1.
func find(rs []region, a uint64) int {
	i := after(rs, a) - 1
	if i < 0 || a >= rs[i].end {
		return -1
	}
	return i
}

// ReadAt reads [addr, addr+len(p)) region by region; see Map for accesses
// that span regions or hit holes. An empty p is decoded at addr: DECERR in
// a hole, else the region's answer.
func (m *Map) ReadAt(p []byte, addr uint32) Resp { return m.bulk(p, addr, false) }

// WriteAt writes [addr, addr+len(p)) region by region; see Map for accesses
// that span regions or hit holes. An empty p is decoded at addr: DECERR in
// a hole, else the region's answer.
func (m *Map) WriteAt(p []byte, addr uint32) Resp { return m.bulk(p, addr, true) }

func (m *Map) bulk(p []byte, addr uint32, write bool) Resp {
	rs := m.load()
	a := uint64(addr)
	i := find(rs, a)
	if i < 0 {
		return DECERR
	}
	end := a + uint64(len(p))
	done := 0
	for {
		r := &rs[i]
		n := int(min(end, r.end) - a)
		var resp Resp
		if write {
			resp = r.s.WriteAt(p[done:done+n], uint32(a))
		} else {
			resp = r.s.ReadAt(p[done:done+n], uint32(a))
		}
		if resp != OKAY {
			return resp
		}
		done += n
		a += uint64(n)
		if a == end {
			return OKAY
		}
		// Regions are sorted and disjoint: the rest continues only if the
		// next region starts exactly here (which also stops at 2^32).
		i++
		if i == len(rs) || uint64(rs[i].base) != a {
			return DECERR
		}
	}
}

// ReadWord reads the word at addr from the region holding it. ok is false
// if addr is not a multiple of 4, the word is not entirely inside one
// region, or the region reports an error.
func (m *Map) ReadWord(addr uint32) (data uint32, ok bool) {
	r, ok := m.wordRegion(addr)
	if !ok {
		return 0, false
	}
	return r.ReadWord(addr)
}

// WriteWord writes the bits of data selected by mask to the word at addr in
// the region holding it. ok is false if addr is not a multiple of 4, the
// word is not entirely inside one region, or the region reports an error.
func (m *Map) WriteWord(addr uint32, data, mask uint32) (ok bool) {
	r, ok := m.wordRegion(addr)
	if !ok {
		return false
	}
	return r.WriteWord(addr, data, mask)
}

func (m *Map) wordRegion(addr uint32) (Space, bool) {
	if addr%4 != 0 {
		return nil, false
	}
	rs := m.load()
	i := find(rs, uint64(addr))
	if i < 0 || uint64(addr)+4 > rs[i].end {
		return nil, false
	}
	return rs[i].s, true
}
