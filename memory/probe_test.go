package memory

import (
	"fmt"
	"testing"
)

// opaque hides every optional interface of a Space.
type opaque struct{ Space }

// TestProbeAgreesWithAccess: on the test map, Probe answers exactly what
// ReadAt and WriteAt answer for ranges that start and end in every region,
// hole and boundary, and it changes nothing.
func TestProbeAgreesWithAccess(t *testing.T) {
	starts := []uint32{0xFFF, 0x1000, 0x100F, 0x1010, 0x101F, 0x1020, 0x102F, 0x1030, 0x1FF0, 0x1FFF, 0x2000, 0x200F, 0x2010, 0x2020, 0xFFFFFFF0, 0xFFFFFFFF}
	sizes := []int{0, 1, 2, 15, 16, 17, 32, 48}
	for _, write := range []bool{false, true} {
		for _, a := range starts {
			for _, n := range sizes {
				tm := newTestMap(t)
				got := tm.m.Probe(a, n, write)
				before := tm.snapshot()
				if tm.snapshot() != before {
					t.Fatal("Probe changed memory")
				}
				p := make([]byte, n)
				for i := range p {
					p[i] = 0xA5
				}
				var want Resp
				if write {
					want = tm.m.WriteAt(p, a)
				} else {
					want = tm.m.ReadAt(p, a)
				}
				if got != want {
					t.Errorf("Probe(%#x, %d, write=%v) = %v, the access answers %v", a, n, write, got, want)
				}
			}
		}
	}
}

// snapshot returns the RAM contents of the map.
func (tm *testMap) snapshot() string {
	var s string
	for _, r := range []*RAM{tm.a, tm.b, tm.c, tm.d, tm.t} {
		s += fmt.Sprintf("%x|", r.b)
	}
	return s
}

// TestProbeSpace: a Space that is no Prober cannot tell, and a Map assumes
// such a region answers OKAY.
func TestProbeSpace(t *testing.T) {
	ram, _ := NewRAM(0x1000, 16)
	if r, ok := ProbeSpace(opaque{ram}, 0x1000, 4, true); ok || r != OKAY {
		t.Errorf("ProbeSpace(opaque) = %v, %v; want OKAY, false", r, ok)
	}
	if r, ok := ProbeSpace(ram, 0x100E, 4, true); !ok || r != DECERR {
		t.Errorf("ProbeSpace(RAM past its end) = %v, %v; want DECERR, true", r, ok)
	}
	m := NewMap()
	m.Add(0x1000, 16, opaque{ram})
	f, _ := NewFault(0x1010, 16, SLVERR)
	m.Add(0x1010, 16, f)
	for _, c := range []struct {
		a    uint32
		n    int
		want Resp
	}{{0x1000, 16, OKAY}, {0x1008, 16, SLVERR}, {0x1018, 16, SLVERR}, {0x1020, 4, DECERR}, {0xFFC, 8, DECERR}} {
		if got := m.Probe(c.a, c.n, true); got != c.want {
			t.Errorf("Map.Probe(%#x, %d) = %v, want %v", c.a, c.n, got, c.want)
		}
	}
}
