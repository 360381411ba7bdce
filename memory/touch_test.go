package memory

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestTouch checks the exact length Touch reports for ranges inside,
// across and outside the space (the clamping), that it never changes a
// byte, and that a range ending past 2^32 does not wrap.
func TestTouch(t *testing.T) {
	r := mustRAM(t, 0x1003, 0x100) // [0x1003, 0x1103), unaligned base
	for i, b := 0, r.Bytes(); i < len(b); i++ {
		b[i] = byte(i*7 + 1)
	}
	want := bytes.Clone(r.Bytes())
	top := mustRAM(t, 0xFFFFFF00, 0x100) // ends at 2^32
	tests := []struct {
		name string
		s    Toucher
		addr uint32
		n    int
		want int
	}{
		{"inside", r, 0x1010, 0x40, 0x40},
		{"whole", r, 0x1003, 0x100, 0x100},
		{"one byte at base", r, 0x1003, 1, 1},
		{"last byte", r, 0x1102, 1, 1},
		{"over the end", r, 0x10F3, 0x40, 0x10},
		{"before the base", r, 0x0FF3, 0x20, 0x10},
		{"both sides", r, 0x0F00, 0x1000, 0x100},
		{"below", r, 0x0F00, 0x103, 0},
		{"above", r, 0x1103, 0x40, 0},
		{"empty", r, 0x1010, 0, 0},
		{"negative", r, 0x1010, -5, 0},
		{"no wrap past 2^32", r, 0xFFFFFFF0, 0x2000, 0},
		{"top of the space", top, 0xFFFFFFC0, 0x1000, 0x40},
	}
	for _, tt := range tests {
		if got := tt.s.Touch(tt.addr, tt.n); got != tt.want {
			t.Errorf("%s: Touch(%#x, %#x) = %#x, want %#x", tt.name, tt.addr, tt.n, got, tt.want)
		}
	}
	if !bytes.Equal(r.Bytes(), want) {
		t.Error("Touch changed the contents of the RAM")
	}
}

func TestTouchBytes(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 8160} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i)
		}
		want := bytes.Clone(b)
		if got := TouchBytes(b); got != n {
			t.Errorf("TouchBytes of %d bytes = %d", n, got)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("TouchBytes changed %d bytes", n)
		}
	}
	// Unaligned sub-slices: the first and last line are touched
	// wherever they start.
	b := make([]byte, 300)
	for off := range 70 {
		if got := TouchBytes(b[off : off+130]); got != 130 {
			t.Fatalf("TouchBytes(b[%d:%d]) = %d", off, off+130, got)
		}
	}
}

func TestTouchFile(t *testing.T) {
	f, err := OpenFile(filepath.Join(t.TempDir(), "mem"), 0x2000, 0x1000)
	if err != nil {
		t.Skipf("no file mapping here: %v", err)
	}
	copy(f.Bytes(), "abc")
	if got := f.Touch(0x2F00, 0x200); got != 0x100 {
		t.Errorf("File.Touch over the end = %#x, want 0x100", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := f.Touch(0x2000, 0x10); got != 0 {
		t.Errorf("File.Touch after Close = %#x, want 0", got)
	}
}

func TestTouchAllocs(t *testing.T) {
	r := mustRAM(t, 0x1000, 0x4000)
	b := make([]byte, 8160)
	var s Toucher = r
	tests := []struct {
		name string
		f    func()
	}{
		{"RAM.Touch", func() { r.Touch(0x1001, 8160) }},
		{"Toucher.Touch clamped", func() { s.Touch(0x0F00, 0x8000) }},
		{"TouchBytes", func() { TouchBytes(b) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, tt.f); n != 0 {
			t.Errorf("%s allocates %v times per call, want 0", tt.name, n)
		}
	}
}

func BenchmarkTouch8160(b *testing.B) {
	r := mustRAM(b, 0, 1<<20)
	b.SetBytes(8160)
	for i := 0; b.Loop(); i++ {
		r.Touch(uint32(i%128)*8160, 8160)
	}
}
