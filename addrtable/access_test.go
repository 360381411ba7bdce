package addrtable

import (
	"math/big"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReads(t *testing.T) {
	tab := mustLoad(t, "testdata/uhal/top.xml")
	lx := mustLoad(t, "testdata/litex/csr8.csv")
	for _, tc := range []struct {
		tab   *Table
		node  string
		count int
		want  []uint32
		err   string
	}{
		{tab, "ctrl.mode", 0, []uint32{0}, ""},
		{tab, "scratch", 0, []uint32{0xC}, ""},
		{tab, "buf", 0, []uint32{0x800, 0x804, 0x808, 0x80C, 0x810, 0x814, 0x818, 0x81C, 0x820, 0x824, 0x828, 0x82C, 0x830, 0x834, 0x838, 0x83C}, ""},
		{tab, "buf", 2, []uint32{0x800, 0x804}, ""},
		{tab, "fifo", 3, []uint32{0xC00, 0xC00, 0xC00}, ""},
		{tab, "fifo", 9, nil, `node "fifo" holds 8 words, not 9`},
		{tab, "scratch", 2, nil, `a count applies to block and port nodes`},
		{tab, "ctrl.reset", 0, nil, `node "ctrl.reset" is write-only`},
		{tab, "fifo_in", 0, nil, `write-only`},
		{lx, "ctrl_scratch", 0, []uint32{0x82000004, 0x82000008, 0x8200000C, 0x82000010}, ""},
	} {
		n, err := tc.tab.Node(tc.node)
		if err != nil {
			t.Fatal(err)
		}
		got, err := n.Reads(tc.count)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s.Reads(%d): %v, want %q", tc.node, tc.count, err, tc.err)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("%s.Reads(%d) = %x, %v; want %x", tc.node, tc.count, got, err, tc.want)
		}
	}
}

func TestWrites(t *testing.T) {
	tab := mustLoad(t, "testdata/uhal/top.xml")
	lx := mustLoad(t, "testdata/litex/csr8.csv")
	n := func(tab *Table, name string) Node {
		t.Helper()
		x, err := tab.Node(name)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	hex := func(s string) *big.Int {
		v, ok := new(big.Int).SetString(s, 0)
		if !ok {
			t.Fatal(s)
		}
		return v
	}
	for _, tc := range []struct {
		node Node
		v    string
		want []Access
		err  string
	}{
		// A bitfield: one write, BitEnable = the mask.
		{n(tab, "ctrl.mode"), "0xA", []Access{{0, 0xA0, 0xF0}}, ""},
		{n(tab, "ctrl.enable"), "1", []Access{{0, 0x80000000, 0x80000000}}, ""},
		{n(tab, "ctrl.reset"), "1", []Access{{0, 1, 1}}, ""},
		{n(tab, "scratch"), "0xFFFFFFFF", []Access{{0xC, 0xFFFFFFFF, 0xFFFFFFFF}}, ""},
		{n(tab, "mod1.deep.x"), "7", []Access{{0x4048, 7, 0xFFFFFFFF}}, ""},
		// A 32-bit value in four 8-bit CSR words, most significant first.
		{n(lx, "ctrl_scratch"), "0x12345678", []Access{{0x82000004, 0x12, 0xFF}, {0x82000008, 0x34, 0xFF}, {0x8200000C, 0x56, 0xFF}, {0x82000010, 0x78, 0xFF}}, ""},
		{n(tab, "ctrl.mode"), "16", nil, `value 0x10 does not fit node "ctrl.mode": its field is 4 bits wide (mask 0x000000F0), largest 0xF`},
		{n(tab, "scratch"), "0x100000000", nil, `does not fit`},
		{n(tab, "status"), "1", nil, `node "status" is read-only (permission r)`},
		{n(lx, "ctrl_bus_errors"), "1", nil, `read-only`},
		{n(lx, "ctrl_scratch"), "0x100000000", nil, `it is 32 bits wide`},
		{n(tab, "buf"), "1", nil, `node "buf" is a block node: write its words`},
	} {
		got, err := tc.node.Writes(hex(tc.v))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s.Writes(%s): %v, want %q", tc.node.Name, tc.v, err, tc.err)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("%s.Writes(%s) = %x, %v; want %x", tc.node.Name, tc.v, got, err, tc.want)
		}
	}
	// Value inverts Writes through the words written.
	cs := n(lx, "ctrl_scratch")
	w, _ := cs.Writes(hex("0xCAFEF00D"))
	words := make([]uint32, len(w))
	for i := range w {
		words[i] = w[i].Data | 0xFF00 // bits above the data width are not the CSR's
	}
	if v, err := cs.Value(words); err != nil || v.Uint64() != 0xCAFEF00D {
		t.Errorf("Value = %x, %v", v, err)
	}
	if v, err := n(tab, "ctrl.mode").Value([]uint32{0x123456A8}); err != nil || v.Uint64() != 0xA {
		t.Errorf("ctrl.mode Value = %v, %v", v, err)
	}
	if _, err := n(tab, "buf").Value([]uint32{1}); err == nil {
		t.Errorf("Value of a block: no error")
	}
}

func TestBlockWrites(t *testing.T) {
	tab := mustLoad(t, "testdata/uhal/top.xml")
	buf, _ := tab.Node("buf")
	got, err := buf.BlockWrites([]uint32{1, 2, 3})
	if want := []Access{{0x800, 1, FullMask}, {0x804, 2, FullMask}, {0x808, 3, FullMask}}; err != nil || !cmp.Equal(got, want) {
		t.Errorf("buf.BlockWrites = %x, %v", got, err)
	}
	in, _ := tab.Node("fifo_in")
	got, err = in.BlockWrites([]uint32{9})
	if want := []Access{{0xC04, 9, FullMask}}; err != nil || !cmp.Equal(got, want) {
		t.Errorf("fifo_in.BlockWrites = %x, %v", got, err)
	}
	if _, err := in.BlockWrites([]uint32{1, 2}); err == nil || !strings.Contains(err.Error(), "2 words for node \"fifo_in\", which holds 1") {
		t.Errorf("two words into a one-word port: %v", err)
	}
	fifo, _ := tab.Node("fifo")
	if _, err := fifo.BlockWrites([]uint32{1}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("write to a read-only port: %v", err)
	}
	sc, _ := tab.Node("scratch")
	if _, err := sc.BlockWrites([]uint32{1}); err == nil || !strings.Contains(err.Error(), "not a block or port") {
		t.Errorf("BlockWrites to a register: %v", err)
	}
}
