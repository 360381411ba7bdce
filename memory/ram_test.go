package memory

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// pattern returns n bytes 0x01, 0x02, ...
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i + 1)
	}
	return p
}

func fill(n int, v byte) []byte { return bytes.Repeat([]byte{v}, n) }

func mustRAM(t testing.TB, base uint32, size uint64) *RAM {
	t.Helper()
	r, err := NewRAM(base, size)
	if err != nil {
		t.Fatalf("NewRAM(%#x, %#x): %v", base, size, err)
	}
	return r
}

func TestNewRAMErrors(t *testing.T) {
	tests := []struct {
		base uint32
		size uint64
		want string // substring of the error; "" for success
	}{
		{0x1000, 0, "size 0"},
		{0xFFFFFFFF, 2, "past the 32-bit address space"},
		{0, 1<<32 + 1, "past the 32-bit address space"},
		{0xFFFFFFFF, 1, ""},
		{0xFFFFFFF0, 16, ""},
		{0x1001, 3, ""},
	}
	for _, tt := range tests {
		r, err := NewRAM(tt.base, tt.size)
		if tt.want == "" {
			if err != nil {
				t.Errorf("NewRAM(%#x, %#x): %v", tt.base, tt.size, err)
				continue
			}
			if r.Base() != tt.base || r.Size() != tt.size || len(r.Bytes()) != int(tt.size) {
				t.Errorf("NewRAM(%#x, %#x): Base %#x Size %#x len(Bytes) %d", tt.base, tt.size, r.Base(), r.Size(), len(r.Bytes()))
			}
			if !bytes.Equal(r.Bytes(), make([]byte, tt.size)) {
				t.Errorf("NewRAM(%#x, %#x) not zeroed", tt.base, tt.size)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewRAM(%#x, %#x) error = %v, want one containing %q", tt.base, tt.size, err, tt.want)
		}
	}
}

// bulkCase is one bulk access to a space holding pattern(size) at base.
type bulkCase struct {
	name string
	addr uint32
	n    int
	want Resp
}

func TestRAMBulk(t *testing.T) {
	for _, base := range []uint32{0x1000, 0x1001, 0xFFFFFFF0} {
		const size = 16
		end := uint64(base) + size
		cases := []bulkCase{
			{"first byte", base, 1, OKAY},
			{"first word", base, 4, OKAY},
			{"whole", base, size, OKAY},
			{"middle", base + 3, 7, OKAY},
			{"last byte", uint32(end - 1), 1, OKAY},
			{"last word", uint32(end - 4), 4, OKAY},
			{"empty at base", base, 0, OKAY},
			{"empty at last byte", uint32(end - 1), 0, OKAY},
			{"below", base - 4, 4, DECERR},
			{"straddle start", base - 1, 2, DECERR},
			{"straddle end", uint32(end - 2), 4, DECERR},
			{"one too long", base, size + 1, DECERR},
			{"empty below", base - 1, 0, DECERR},
			{"far below", 0, 4, DECERR},
		}
		if end < 1<<32 {
			cases = append(cases,
				bulkCase{"just past end", uint32(end), 1, DECERR},
				bulkCase{"empty at end", uint32(end), 0, DECERR},
				bulkCase{"far above", 0xFFFFFF00, 4, DECERR})
		} else {
			cases = append(cases, bulkCase{"wraps past 2^32", 0xFFFFFFFE, 4, DECERR})
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := mustRAM(t, base, size)
				src := fill(tc.n, 0xA5)
				if got := r.WriteAt(src, tc.addr); got != tc.want {
					t.Fatalf("WriteAt(%d bytes, %#x) = %v, want %v", tc.n, tc.addr, got, tc.want)
				}
				want := make([]byte, size)
				if tc.want == OKAY {
					copy(want[tc.addr-base:], src)
				}
				if !bytes.Equal(r.Bytes(), want) {
					t.Fatalf("after WriteAt(%d bytes, %#x): memory\n% x\nwant\n% x", tc.n, tc.addr, r.Bytes(), want)
				}

				copy(r.Bytes(), pattern(size))
				p := fill(tc.n, 0xEE)
				if got := r.ReadAt(p, tc.addr); got != tc.want {
					t.Fatalf("ReadAt(%d bytes, %#x) = %v, want %v", tc.n, tc.addr, got, tc.want)
				}
				wantP := fill(tc.n, 0xEE)
				if tc.want == OKAY {
					off := tc.addr - base
					copy(wantP, pattern(size)[off:])
				}
				if !bytes.Equal(p, wantP) {
					t.Fatalf("ReadAt(%d bytes, %#x) read % x, want % x", tc.n, tc.addr, p, wantP)
				}
			})
		}
	}
}

// wordCase is one word access to a space.
type wordCase struct {
	name       string
	addr       uint32
	init       []byte // the 4 bytes at addr before the write (ignored if !ok)
	data, mask uint32
	ok         bool
	after      []byte // the 4 bytes at addr after the write
}

func wordCases(base uint32, end uint64) []wordCase {
	return []wordCase{
		{"full mask is little-endian", base, []byte{0, 0, 0, 0}, 0x11223344, 0xFFFFFFFF, true, []byte{0x44, 0x33, 0x22, 0x11}},
		{"mask 0x5 sets bits 0 and 2", base, []byte{0, 0, 0, 0}, 0xFFFFFFFF, 0x5, true, []byte{0x05, 0, 0, 0}},
		{"mask 0x5 clears bits 0 and 2", base, []byte{0xFF, 0xFF, 0xFF, 0xFF}, 0, 0x5, true, []byte{0xFA, 0xFF, 0xFF, 0xFF}},
		{"mask across lanes", base + 4, []byte{0x0F, 0xF0, 0x0F, 0xF0}, 0x80FF0001, 0x8001FF01, true, []byte{0x0F, 0x00, 0x0F, 0xF0}},
		{"mask keeps unselected bits", base + 4, []byte{0x12, 0x34, 0x56, 0x78}, 0xAABBCCDD, 0x0000FF00, true, []byte{0x12, 0xCC, 0x56, 0x78}},
		{"zero mask is a no-op", base, []byte{1, 2, 3, 4}, 0xFFFFFFFF, 0, true, []byte{1, 2, 3, 4}},
		{"last word", uint32(end - 4), []byte{9, 9, 9, 9}, 0xDEADBEEF, 0xFFFFFFFF, true, []byte{0xEF, 0xBE, 0xAD, 0xDE}},
		{"unaligned +1", base + 1, nil, 0xFFFFFFFF, 0xFFFFFFFF, false, nil},
		{"unaligned +2", base + 2, nil, 0xFFFFFFFF, 0xFFFFFFFF, false, nil},
		{"unaligned +3", base + 3, nil, 0xFFFFFFFF, 0xFFFFFFFF, false, nil},
		{"below", base - 4, nil, 0xFFFFFFFF, 0xFFFFFFFF, false, nil},
		{"zero mask below still fails", base - 4, nil, 0, 0, false, nil},
		{"far below", 0, nil, 0xFFFFFFFF, 0xFFFFFFFF, false, nil},
	}
}

// wantWordFails checks that a word read and a word write at addr of s
// both fail, the read returning 0.
func wantWordFails(t *testing.T, what string, s Space, addr uint32) {
	t.Helper()
	if d, ok := s.ReadWord(addr); ok || d != 0 {
		t.Errorf("%s: ReadWord(%#x) = %#x, %v; want 0, false", what, addr, d, ok)
	}
	if s.WriteWord(addr, 1, 0xFFFFFFFF) {
		t.Errorf("%s: WriteWord(%#x) succeeded", what, addr)
	}
}

func testWords(t *testing.T, s interface {
	Space
	Bytes() []byte
	Base() uint32
}, cases []wordCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := s.Bytes()
			clear(mem)
			before := make([]byte, len(mem))
			if tc.ok {
				copy(mem[tc.addr-s.Base():], tc.init)
				copy(before, mem)
			}
			if got := s.WriteWord(tc.addr, tc.data, tc.mask); got != tc.ok {
				t.Fatalf("WriteWord(%#x, %#x, %#x) = %v, want %v", tc.addr, tc.data, tc.mask, got, tc.ok)
			}
			if !tc.ok {
				if !bytes.Equal(mem, before) {
					t.Fatalf("failed WriteWord(%#x) changed memory to % x", tc.addr, mem)
				}
				if d, ok := s.ReadWord(tc.addr); ok || d != 0 {
					t.Fatalf("ReadWord(%#x) = %#x, %v; want 0, false", tc.addr, d, ok)
				}
				return
			}
			want := append([]byte(nil), before...)
			copy(want[tc.addr-s.Base():], tc.after)
			if !bytes.Equal(mem, want) {
				t.Fatalf("after WriteWord(%#x, %#x, %#x): memory\n% x\nwant\n% x", tc.addr, tc.data, tc.mask, mem, want)
			}
			wantWord := uint32(tc.after[0]) | uint32(tc.after[1])<<8 | uint32(tc.after[2])<<16 | uint32(tc.after[3])<<24
			if d, ok := s.ReadWord(tc.addr); !ok || d != wantWord {
				t.Fatalf("ReadWord(%#x) = %#x, %v; want %#x, true", tc.addr, d, ok, wantWord)
			}
		})
	}
}

func TestRAMWord(t *testing.T) {
	t.Run("aligned base", func(t *testing.T) {
		r := mustRAM(t, 0x1000, 16)
		testWords(t, r, append(wordCases(0x1000, 0x1010),
			wordCase{"past end", 0x1010, nil, 1, 1, false, nil}))
	})
	t.Run("top of address space", func(t *testing.T) {
		r := mustRAM(t, 0xFFFFFFF0, 16)
		testWords(t, r, wordCases(0xFFFFFFF0, 1<<32))
	})
	t.Run("size not a multiple of 4", func(t *testing.T) {
		r := mustRAM(t, 0x1000, 14) // last whole word is 0x1008
		testWords(t, r, []wordCase{
			{"last whole word", 0x1008, []byte{0, 0, 0, 0}, 0x04030201, 0xFFFFFFFF, true, []byte{1, 2, 3, 4}},
			{"partial last word", 0x100C, nil, 1, 1, false, nil},
		})
	})
	t.Run("unaligned base", func(t *testing.T) {
		r := mustRAM(t, 0x1001, 16) // [0x1001, 0x1011): whole words 0x1004..0x100C
		testWords(t, r, []wordCase{
			{"first whole word", 0x1004, []byte{0, 0, 0, 0}, 0x11223344, 0xFFFFFFFF, true, []byte{0x44, 0x33, 0x22, 0x11}},
			{"masked", 0x1008, []byte{0xFF, 0xFF, 0xFF, 0xFF}, 0, 0x5, true, []byte{0xFA, 0xFF, 0xFF, 0xFF}},
			{"last whole word", 0x100C, []byte{0, 0, 0, 0}, 0xFFFFFFFF, 0xFFFFFFFF, true, []byte{0xFF, 0xFF, 0xFF, 0xFF}},
			{"word holding base", 0x1000, nil, 1, 1, false, nil},
			{"word holding end", 0x1010, nil, 1, 1, false, nil},
		})
	})
}

func TestRAMBytesAliases(t *testing.T) {
	r := mustRAM(t, 0x40, 8)
	r.Bytes()[4] = 0x7F
	if d, ok := r.ReadWord(0x44); !ok || d != 0x7F {
		t.Fatalf("ReadWord after Bytes()[4]=0x7F = %#x, %v; want 0x7f, true", d, ok)
	}
	if resp := r.WriteAt([]byte{1, 2}, 0x46); resp != OKAY {
		t.Fatalf("WriteAt = %v", resp)
	}
	if want := []byte{0, 0, 0, 0, 0x7F, 0, 1, 2}; !bytes.Equal(r.Bytes(), want) {
		t.Fatalf("Bytes() = % x, want % x", r.Bytes(), want)
	}
}

// hammerWord has 32 goroutines each toggle its own bit of the word at addr
// through masked WriteWord calls, ending with the bit set. A read-modify-
// write that is not atomic loses some goroutine's final set.
func hammerWord(t *testing.T, s Space, addr uint32) {
	t.Helper()
	if !s.WriteWord(addr, 0, 0xFFFFFFFF) {
		t.Fatalf("WriteWord(%#x) failed", addr)
	}
	const rounds = 2000
	var wg sync.WaitGroup
	for bit := range 32 {
		wg.Go(func() {
			m := uint32(1) << bit
			for i := range rounds {
				// odd i clears, even i sets; the last pass (i = rounds-1
				// is odd) is followed by a final set below.
				if !s.WriteWord(addr, ^uint32(i&1)*m, m) {
					t.Errorf("WriteWord(%#x, mask %#x) failed", addr, m)
					return
				}
			}
			s.WriteWord(addr, m, m)
		})
	}
	wg.Wait()
	if d, ok := s.ReadWord(addr); !ok || d != 0xFFFFFFFF {
		t.Fatalf("after concurrent disjoint-mask writes word = %#x, %v; want 0xffffffff, true", d, ok)
	}
}

func TestRAMConcurrentWriteWord(t *testing.T) {
	r := mustRAM(t, 0x1000, 64)
	hammerWord(t, r, 0x1020)
	// The neighbours are untouched.
	if d, _ := r.ReadWord(0x101C); d != 0 {
		t.Fatalf("neighbour word = %#x, want 0", d)
	}
	if d, _ := r.ReadWord(0x1024); d != 0 {
		t.Fatalf("neighbour word = %#x, want 0", d)
	}
}
