package memory

import (
	"bytes"
	"strings"
	"testing"
)

func TestNewFaultErrors(t *testing.T) {
	tests := []struct {
		base uint32
		size uint64
		resp Resp
		want string
	}{
		{0x1000, 16, OKAY, "must answer SLVERR or DECERR"},
		{0x1000, 16, Resp(1), "must answer SLVERR or DECERR"},
		{0x1000, 0, SLVERR, "size 0"},
		{0xFFFFFFF0, 17, DECERR, "past the 32-bit address space"},
	}
	for _, tt := range tests {
		_, err := NewFault(tt.base, tt.size, tt.resp)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewFault(%#x, %#x, %v) error = %v, want one containing %q", tt.base, tt.size, tt.resp, err, tt.want)
		}
	}
}

func TestFault(t *testing.T) {
	for _, resp := range []Resp{SLVERR, DECERR} {
		f, err := NewFault(0x2000, 16, resp)
		if err != nil {
			t.Fatal(err)
		}
		if f.Resp() != resp {
			t.Fatalf("Resp() = %v, want %v", f.Resp(), resp)
		}
		tests := []struct {
			name string
			addr uint32
			n    int
			want Resp
		}{
			{"first byte", 0x2000, 1, resp},
			{"whole", 0x2000, 16, resp},
			{"last byte", 0x200F, 1, resp},
			{"empty inside", 0x2008, 0, resp},
			{"straddle start", 0x1FFF, 2, DECERR},
			{"straddle end", 0x200E, 4, DECERR},
			{"below", 0x1000, 4, DECERR},
			{"above", 0x2010, 4, DECERR},
			{"wraps", 0xFFFFFFFF, 0x10, DECERR},
		}
		for _, tt := range tests {
			t.Run(resp.String()+" "+tt.name, func(t *testing.T) {
				p := fill(tt.n, 0xEE)
				if got := f.ReadAt(p, tt.addr); got != tt.want {
					t.Fatalf("ReadAt(%d, %#x) = %v, want %v", tt.n, tt.addr, got, tt.want)
				}
				if !bytes.Equal(p, fill(tt.n, 0xEE)) {
					t.Fatalf("ReadAt changed p to % x", p)
				}
				if got := f.WriteAt(p, tt.addr); got != tt.want {
					t.Fatalf("WriteAt(%d, %#x) = %v, want %v", tt.n, tt.addr, got, tt.want)
				}
			})
		}
		wantWordFails(t, "a fault region", f, 0x2004)
	}
}

func TestRespString(t *testing.T) {
	for r, want := range map[Resp]string{OKAY: "OKAY", SLVERR: "SLVERR", DECERR: "DECERR", Resp(1): "Resp(?)"} {
		if got := r.String(); got != want {
			t.Errorf("Resp(%d).String() = %q, want %q", r, got, want)
		}
	}
}

func TestFaultWholeAddressSpace(t *testing.T) {
	f, err := NewFault(0, 1<<32, SLVERR)
	if err != nil {
		t.Fatalf("NewFault over all 4 GiB: %v", err)
	}
	m := NewMap()
	if err := m.Add(0, 1<<32, f); err != nil {
		t.Fatalf("Map.Add over all 4 GiB: %v", err)
	}
	for _, addr := range []uint32{0, 0x80000000, 0xFFFFFFFF} {
		if resp := m.ReadAt(make([]byte, 1), addr); resp != SLVERR {
			t.Errorf("ReadAt(%#x) = %v, want SLVERR", addr, resp)
		}
	}
	if err := m.Add(0x1000, 1, f); err == nil {
		t.Error("Add inside a full-space region succeeded")
	}
}
