//go:build linux

package node

import (
	"testing"

	"golang.org/x/net/bpf"
)

// TestTapFilter runs the socket filter of a Tap on frames.
func TestTapFilter(t *testing.T) {
	vm, err := bpf.NewVM(func() []bpf.Instruction {
		var ins []bpf.Instruction
		for _, r := range tapFilter {
			ins = append(ins, r.Disassemble())
		}
		return ins
	}())
	if err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 12)
	tag := func(tpid ...byte) []byte { return append(append([]byte{}, tpid...), 0, 100) }
	for _, c := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"oetp", append(append([]byte{}, hdr...), 0x88, 0xb5, 0x0e, 0x10), true},
		{"ipv4", append(append([]byte{}, hdr...), 0x08, 0x00, 0x45, 0x00), false},
		{"802.1Q oetp", append(append(append([]byte{}, hdr...), tag(0x81, 0x00)...), 0x88, 0xb5, 0x0e), true},
		{"802.1Q ipv4", append(append(append([]byte{}, hdr...), tag(0x81, 0x00)...), 0x08, 0x00, 0x45), false},
		{"QinQ oetp", append(append(append(append([]byte{}, hdr...), tag(0x88, 0xa8)...), tag(0x81, 0x00)...), 0x88, 0xb5, 0x0e), true},
		{"QinQ ipv6", append(append(append(append([]byte{}, hdr...), tag(0x88, 0xa8)...), tag(0x81, 0x00)...), 0x86, 0xdd, 0x60), false},
		{"runt", hdr, false},
	} {
		n, err := vm.Run(c.b)
		if (n > 0) != c.ok || err != nil && c.ok {
			t.Errorf("%s: %d, %v; want accepted %v", c.name, n, err, c.ok)
		}
	}
}
