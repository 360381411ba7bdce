package memory

import "testing"

func TestAllocs(t *testing.T) {
	r := mustRAM(t, 0x1000, 64)
	m := NewMap()
	for _, base := range []uint32{0x1000, 0x1040, 0x2000} {
		if err := m.Add(base, 64, mustRAM(t, base, 64)); err != nil {
			t.Fatal(err)
		}
	}
	p := make([]byte, 16)
	var word uint32
	var ok bool
	tests := []struct {
		name string
		f    func()
	}{
		{"RAM.ReadAt", func() { r.ReadAt(p, 0x1004) }},
		{"RAM.WriteAt", func() { r.WriteAt(p, 0x1004) }},
		{"RAM.ReadWord", func() { word, ok = r.ReadWord(0x1008) }},
		{"RAM.WriteWord", func() { r.WriteWord(0x1008, 0x12345678, 0x00FF00FF) }},
		{"RAM.WriteAt miss", func() { r.WriteAt(p, 0x3000) }},
		{"Map.ReadAt", func() { m.ReadAt(p, 0x2004) }},
		{"Map.ReadAt spanning", func() { m.ReadAt(p, 0x1038) }},
		{"Map.WriteAt spanning", func() { m.WriteAt(p, 0x1038) }},
		{"Map.WriteAt hole", func() { m.WriteAt(p, 0x1078) }},
		{"Map.ReadWord", func() { word, ok = m.ReadWord(0x2008) }},
		{"Map.WriteWord", func() { m.WriteWord(0x1040, 0x12345678, 0x5) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, tt.f); n != 0 {
			t.Errorf("%s allocates %v times per call, want 0", tt.name, n)
		}
	}
	_, _ = word, ok
}

func BenchmarkMapReadAt(b *testing.B) {
	m := NewMap()
	for i := range 64 {
		base := uint32(i) * 0x10000
		r, err := NewRAM(base, 0x10000)
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Add(base, 0x10000, r); err != nil {
			b.Fatal(err)
		}
	}
	p := make([]byte, 1024)
	b.SetBytes(int64(len(p)))
	for i := 0; b.Loop(); i++ {
		m.ReadAt(p, uint32(i%64)*0x10000+0x100)
	}
}

func BenchmarkRAMWriteWord(b *testing.B) {
	r, err := NewRAM(0, 4096)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		r.WriteWord(uint32(i%1024)*4, uint32(i), 0x00FF00FF)
	}
}
