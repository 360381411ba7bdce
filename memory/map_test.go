package memory

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// testMap is a Map with
//
//	A    RAM    [0x1000, 0x1010)
//	B    RAM    [0x1010, 0x1020)   adjacent to A
//	     hole   [0x1020, 0x1030)
//	C    RAM    [0x1030, 0x1040)
//	D    RAM    [0x1FF0, 0x2000)
//	S    Fault  [0x2000, 0x2010)   SLVERR, adjacent to D
//	E    Fault  [0x2010, 0x2020)   DECERR
//	T    RAM    [0xFFFFFFF0, 2^32)
//
// added out of address order.
type testMap struct {
	m             *Map
	a, b, c, d, t *RAM
}

func newTestMap(t *testing.T) *testMap {
	t.Helper()
	tm := &testMap{
		m: NewMap(),
		a: mustRAM(t, 0x1000, 16), b: mustRAM(t, 0x1010, 16), c: mustRAM(t, 0x1030, 16),
		d: mustRAM(t, 0x1FF0, 16), t: mustRAM(t, 0xFFFFFFF0, 16),
	}
	slv, err := NewFault(0x2000, 16, SLVERR)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewFault(0x2010, 16, DECERR)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		base uint32
		s    Space
	}{{0x1030, tm.c}, {0xFFFFFFF0, tm.t}, {0x1010, tm.b}, {0x2010, dec}, {0x1000, tm.a}, {0x2000, slv}, {0x1FF0, tm.d}} {
		if err := tm.m.Add(r.base, 16, r.s); err != nil {
			t.Fatalf("Add(%#x): %v", r.base, err)
		}
	}
	return tm
}

// mem returns the concatenated contents of the RAM regions A, B, C, D, T.
func (tm *testMap) mem() []byte {
	return bytes.Join([][]byte{tm.a.Bytes(), tm.b.Bytes(), tm.c.Bytes(), tm.d.Bytes(), tm.t.Bytes()}, nil)
}

// offsetOf returns the index in mem() of address a, or -1.
func offsetOf(a uint64) int {
	for i, base := range []uint64{0x1000, 0x1010, 0x1030, 0x1FF0, 0xFFFFFFF0} {
		if a >= base && a < base+16 {
			return i*16 + int(a-base)
		}
	}
	return -1
}

func TestMapAddErrors(t *testing.T) {
	ram := mustRAM(t, 0, 16)
	tests := []struct {
		name string
		base uint32
		size uint64
		s    Space
		want string
	}{
		{"size 0", 0x5000, 0, ram, "size 0"},
		{"beyond 2^32", 0xFFFFFF00, 0x101, ram, "past the 32-bit address space"},
		{"huge", 0, 1 << 40, ram, "past the 32-bit address space"},
		{"nil space", 0x5000, 16, nil, "nil Space"},
		{"same range", 0x1000, 16, ram, "overlaps region [0x1000, 0x1010)"},
		{"overlaps end of A", 0x100F, 1, ram, "overlaps region [0x1000, 0x1010)"},
		{"overlaps start of C", 0x1020, 0x11, ram, "overlaps region [0x1030, 0x1040)"},
		{"contains C", 0x1020, 0x100, ram, "overlaps region [0x1030, 0x1040)"},
		{"inside B", 0x1014, 4, ram, "overlaps region [0x1010, 0x1020)"},
		{"overlaps top", 0xFFFFFFFF, 1, ram, "overlaps region [0xfffffff0, 0x100000000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := newTestMap(t)
			err := tm.m.Add(tt.base, tt.size, tt.s)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Add(%#x, %#x) error = %v, want one containing %q", tt.base, tt.size, err, tt.want)
			}
			// The map is unchanged: the hole still answers DECERR.
			if resp := tm.m.WriteAt([]byte{1}, 0x1020); resp != DECERR {
				t.Fatalf("hole after failed Add answers %v", resp)
			}
		})
	}
	t.Run("fills hole exactly", func(t *testing.T) {
		tm := newTestMap(t)
		h := mustRAM(t, 0x1020, 16)
		if err := tm.m.Add(0x1020, 16, h); err != nil {
			t.Fatal(err)
		}
		if resp := tm.m.WriteAt(fill(0x40, 0x33), 0x1000); resp != OKAY {
			t.Fatalf("write across A, B, filled hole, C = %v", resp)
		}
		if !bytes.Equal(h.Bytes(), fill(16, 0x33)) || !bytes.Equal(tm.c.Bytes(), fill(16, 0x33)) {
			t.Fatalf("filled hole % x, C % x", h.Bytes(), tm.c.Bytes())
		}
	})
}

func TestMapBulk(t *testing.T) {
	tests := []struct {
		name string
		addr uint32
		n    int
		want Resp
		done int // bytes performed from the start before the failure (all on OKAY)
	}{
		{"inside A", 0x1004, 8, OKAY, 8},
		{"last byte of B", 0x101F, 1, OKAY, 1},
		{"A to B", 0x100C, 8, OKAY, 8},
		{"all of A and B", 0x1000, 32, OKAY, 32},
		{"A, B, then hole", 0x100C, 0x18, DECERR, 0x14},
		{"B into hole", 0x101E, 4, DECERR, 2},
		{"start in hole", 0x1020, 4, DECERR, 0},
		{"hole into C", 0x102E, 4, DECERR, 0},
		{"C then past it", 0x103E, 4, DECERR, 2},
		{"below everything", 0x0, 4, DECERR, 0},
		{"D into SLVERR fault", 0x1FFC, 8, SLVERR, 4},
		{"in SLVERR fault", 0x2004, 4, SLVERR, 0},
		{"SLVERR fault into DECERR fault", 0x200C, 8, SLVERR, 0},
		{"in DECERR fault", 0x2010, 4, DECERR, 0},
		{"top region last word", 0xFFFFFFFC, 4, OKAY, 4},
		{"top region wraps past 2^32", 0xFFFFFFFC, 8, DECERR, 4},
		{"empty in A", 0x1000, 0, OKAY, 0},
		{"empty in hole", 0x1020, 0, DECERR, 0},
		{"empty in SLVERR fault", 0x2000, 0, SLVERR, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := newTestMap(t)
			src := pattern(tt.n)
			if got := tm.m.WriteAt(src, tt.addr); got != tt.want {
				t.Fatalf("WriteAt(%d bytes, %#x) = %v, want %v", tt.n, tt.addr, got, tt.want)
			}
			want := make([]byte, 5*16)
			for i := range tt.done {
				o := offsetOf(uint64(tt.addr) + uint64(i))
				if o < 0 {
					t.Fatalf("bad test: %#x+%d is in no RAM", tt.addr, i)
				}
				want[o] = src[i]
			}
			if got := tm.mem(); !bytes.Equal(got, want) {
				t.Fatalf("after WriteAt: RAM A B C D T\n% x\nwant\n% x", got, want)
			}

			// Read back from memory holding a known pattern.
			all := pattern(5 * 16)
			for i, r := range []*RAM{tm.a, tm.b, tm.c, tm.d, tm.t} {
				copy(r.Bytes(), all[i*16:])
			}
			p := fill(tt.n, 0xEE)
			if got := tm.m.ReadAt(p, tt.addr); got != tt.want {
				t.Fatalf("ReadAt(%d bytes, %#x) = %v, want %v", tt.n, tt.addr, got, tt.want)
			}
			wantP := fill(tt.n, 0xEE)
			for i := range tt.done {
				wantP[i] = all[offsetOf(uint64(tt.addr)+uint64(i))]
			}
			if !bytes.Equal(p, wantP) {
				t.Fatalf("ReadAt read % x, want % x", p, wantP)
			}
		})
	}
}

func TestMapWord(t *testing.T) {
	tests := []struct {
		name       string
		addr       uint32
		data, mask uint32
		ok         bool
		read       uint32 // ReadWord after the write
	}{
		{"A", 0x1000, 0x11223344, 0xFFFFFFFF, true, 0x11223344},
		{"last word of A", 0x100C, 0xFFFFFFFF, 0x5, true, 0x5},
		{"first word of B", 0x1010, 0xCAFEF00D, 0xFFFF0000, true, 0xCAFE0000},
		{"zero mask", 0x1010, 0xFFFFFFFF, 0, true, 0},
		{"C", 0x1034, 0x12345678, 0xFFFFFFFF, true, 0x12345678},
		{"top word", 0xFFFFFFFC, 0x01020304, 0xFFFFFFFF, true, 0x01020304},
		{"unaligned", 0x1002, 1, 1, false, 0},
		{"hole", 0x1020, 1, 1, false, 0},
		{"SLVERR fault", 0x2000, 1, 1, false, 0},
		{"DECERR fault", 0x2010, 1, 1, false, 0},
		{"below everything", 0, 1, 1, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := newTestMap(t)
			if got := tm.m.WriteWord(tt.addr, tt.data, tt.mask); got != tt.ok {
				t.Fatalf("WriteWord(%#x) = %v, want %v", tt.addr, got, tt.ok)
			}
			if !tt.ok && !bytes.Equal(tm.mem(), make([]byte, 5*16)) {
				t.Fatalf("failed WriteWord changed memory: % x", tm.mem())
			}
			d, ok := tm.m.ReadWord(tt.addr)
			if ok != tt.ok || d != tt.read {
				t.Fatalf("ReadWord(%#x) = %#x, %v; want %#x, %v", tt.addr, d, ok, tt.read, tt.ok)
			}
			if tt.ok {
				// The word went to the right region at the right place.
				o := offsetOf(uint64(tt.addr))
				mem := tm.mem()[o : o+4]
				if got := uint32(mem[0]) | uint32(mem[1])<<8 | uint32(mem[2])<<16 | uint32(mem[3])<<24; got != tt.read {
					t.Fatalf("region bytes at %#x = % x, want word %#x", tt.addr, mem, tt.read)
				}
			}
		})
	}
	t.Run("word straddling two regions", func(t *testing.T) {
		m := NewMap()
		lo, hi := mustRAM(t, 0x3000, 2), mustRAM(t, 0x3002, 6)
		if err := m.Add(0x3000, 2, lo); err != nil {
			t.Fatal(err)
		}
		if err := m.Add(0x3002, 6, hi); err != nil {
			t.Fatal(err)
		}
		wantWordFails(t, "a word across two regions", m, 0x3000)
		if !m.WriteWord(0x3004, 0x04030201, 0xFFFFFFFF) || !bytes.Equal(hi.Bytes(), []byte{0, 0, 1, 2, 3, 4}) {
			t.Fatalf("WriteWord(0x3004) inside one region: hi = % x", hi.Bytes())
		}
		// Bulk accesses may span them.
		if resp := m.WriteAt([]byte{9, 8, 7, 6}, 0x3000); resp != OKAY || !bytes.Equal(lo.Bytes(), []byte{9, 8}) {
			t.Fatalf("WriteAt across lo/hi = %v, lo = % x", resp, lo.Bytes())
		}
	})
	t.Run("concurrent masked writes", func(t *testing.T) {
		hammerWord(t, newTestMap(t).m, 0x1018)
	})
}

func TestZeroMap(t *testing.T) {
	var m Map
	if resp := m.ReadAt(make([]byte, 4), 0); resp != DECERR {
		t.Fatalf("ReadAt on empty Map = %v, want DECERR", resp)
	}
	if resp := m.WriteAt(nil, 0xFFFFFFFF); resp != DECERR {
		t.Fatalf("empty WriteAt on empty Map = %v, want DECERR", resp)
	}
	wantWordFails(t, "empty Map", &m, 0)
}

// TestMapAddWhileAccessing runs under -race: Add publishes a new region
// slice while readers use the old one.
func TestMapAddWhileAccessing(t *testing.T) {
	m := NewMap()
	first := mustRAM(t, 0, 16)
	if err := m.Add(0, 16, first); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 64 {
			base := uint32(0x100 * (i + 1))
			if err := m.Add(base, 16, mustRAM(t, base, 16)); err != nil {
				t.Error(err)
				return
			}
		}
	})
	p := make([]byte, 4)
	for range 1000 {
		if resp := m.ReadAt(p, 8); resp != OKAY {
			t.Fatalf("ReadAt during Add = %v", resp)
		}
	}
	wg.Wait()
	for i := range 64 {
		if !m.WriteWord(uint32(0x100*(i+1)), 1, 1) {
			t.Fatalf("region %d missing after concurrent Add", i)
		}
	}
}
