package addrtable

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// summary lists a table's nodes one a line: name, address, mask,
// permission, mode, size, words/stride and branch.
func summary(t *Table) string {
	var b strings.Builder
	for _, n := range t.Nodes() {
		fmt.Fprintf(&b, "%s 0x%08X 0x%08X %s %s %d", n.Name, n.Address, n.Mask, n.Perm, n.Mode, n.Size)
		if n.Words > 1 {
			fmt.Fprintf(&b, " words=%d/%d", n.Words, n.Stride)
		}
		if n.Branch {
			b.WriteString(" branch")
		}
		if n.Volatile() {
			b.WriteString(" volatile")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func mustLoad(t *testing.T, path string) *Table {
	t.Helper()
	tab, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return tab
}

func TestUHALFixture(t *testing.T) {
	tab := mustLoad(t, "testdata/uhal/top.xml")
	// Byte address = 4 x IPbus word address; children add their parent's.
	want := `ctrl 0x00000000 0xFFFFFFFF rw single 4
ctrl.reset 0x00000000 0x00000001 w single 4
ctrl.mode 0x00000000 0x000000F0 rw single 4
ctrl.enable 0x00000000 0x80000000 rw single 4
status 0x00000004 0xFFFFFFFF r single 4
id 0x00000008 0xFFFFFFFF r single 4
scratch 0x0000000C 0xFFFFFFFF rw single 4
sub 0x00000400 0xFFFFFFFF rw single 4 branch
sub.a 0x00000400 0xFFFFFFFF rw single 4
sub.b 0x00000404 0xFFFFFFFF rw single 4
buf 0x00000800 0xFFFFFFFF rw block 64
fifo 0x00000C00 0xFFFFFFFF r port 32 volatile
fifo_in 0x00000C04 0xFFFFFFFF w non-incremental 4 volatile
ram 0x00001000 0xFFFFFFFF rw incremental 16
mod1 0x00004000 0xFFFFFFFF rw single 4 branch
mod1.ctrl 0x00004000 0xFFFFFFFF rw single 4
mod1.ctrl.start 0x00004000 0x00000001 rw single 4
mod1.ctrl.stop 0x00004000 0x00000002 rw single 4
mod1.count 0x00004004 0xFFFFFFFF r single 4
mod1.deep 0x00004040 0xFFFFFFFF rw single 4 branch
mod1.deep.x 0x00004048 0xFFFFFFFF rw single 4
mod2 0x00008000 0xFFFFFFFF rw single 4 branch
mod2.ctrl 0x00008000 0xFFFFFFFF rw single 4
mod2.ctrl.start 0x00008000 0x00000001 rw single 4
mod2.ctrl.stop 0x00008000 0x00000002 rw single 4
mod2.count 0x00008004 0xFFFFFFFF r single 4
mod2.deep 0x00008040 0xFFFFFFFF rw single 4 branch
mod2.deep.x 0x00008048 0xFFFFFFFF rw single 4
`
	if diff := cmp.Diff(want, summary(tab)); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	n, err := tab.Node("mod2")
	if err != nil {
		t.Fatal(err)
	}
	if n.Description != "counter module [second counter]" {
		t.Errorf("mod2 description %q", n.Description)
	}
	x, _ := tab.Node("mod1.deep.x")
	if want := filepath.Join("testdata", "uhal", "modules", "deeper", "leaf.xml"); x.File != want || x.Line != 2 {
		t.Errorf("mod1.deep.x defined at %s:%d, want %s:2", x.File, x.Line, want)
	}
	r, _ := tab.Node("ctrl.reset")
	if r.File != filepath.Join("testdata", "uhal", "top.xml") || r.Line != 7 || r.Description != "write 1 to reset" {
		t.Errorf("ctrl.reset: %+v", r)
	}
	if w := tab.Warnings(); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	if tab.Format() != UHAL {
		t.Errorf("format %v", tab.Format())
	}
}

// TestIPbusWordToByte pins the address mapping the package doc states:
// IPbus word address W is oETP byte address 4*W.
func TestIPbusWordToByte(t *testing.T) {
	for _, tc := range []struct {
		word string
		want uint32
	}{{"0", 0}, {"1", 4}, {"0x3", 0xC}, {"0x1000", 0x4000}, {"0x3FFFFFFF", 0xFFFFFFFC}} {
		xml := `<node id="T"><node id="r" address="` + tc.word + `"/></node>`
		tab, err := Parse(UHAL, "w.xml", []byte(xml))
		if err != nil {
			t.Fatalf("word %s: %v", tc.word, err)
		}
		n, _ := tab.Node("r")
		if n.Address != tc.want {
			t.Errorf("word address %s -> byte 0x%08X, want 0x%08X", tc.word, n.Address, tc.want)
		}
	}
	_, err := Parse(UHAL, "w.xml", []byte(`<node><node id="r" address="0x40000000"/></node>`))
	if err == nil || !strings.Contains(err.Error(), "beyond oETP's 32-bit byte space") {
		t.Errorf("word 0x40000000: %v", err)
	}
}

func TestUHALTopAddressOffsets(t *testing.T) {
	tab, err := Parse(UHAL, "t.xml", []byte(`<node id="T" address="0x10"><node id="a" address="0x1"><node id="b" address="0x2"/></node></node>`))
	if err != nil {
		t.Fatal(err)
	}
	want := "a 0x00000044 0xFFFFFFFF rw single 4 branch\na.b 0x0000004C 0xFFFFFFFF rw single 4\n"
	if got := summary(tab); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}

// memFiles is a reader over an in-memory file set.
type memFiles map[string]string

func (m memFiles) read(path string) ([]byte, error) {
	s, ok := m[filepath.ToSlash(filepath.Clean(path))]
	if !ok {
		return nil, fs.ErrNotExist
	}
	return []byte(s), nil
}

func TestUHALErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files memFiles // "top.xml" is loaded
		want  string   // a substring of the error
	}{
		{"missing id", memFiles{"top.xml": "<node>\n<node address=\"1\"/>\n</node>"}, `top.xml:2: id: missing`},
		{"misspelled attribute", memFiles{"top.xml": "<node>\n<node id=\"r\"\n permision=\"r\"/>\n</node>"}, `top.xml:2: node "r": permision: unknown attribute`},
		{"bad permission", memFiles{"top.xml": `<node><node id="r" permission="rx"/></node>`}, `node "r": permission: permission "rx" is not one of`},
		{"bad mode", memFiles{"top.xml": `<node><node id="r" mode="fifo"/></node>`}, `mode: mode "fifo" is not one of`},
		{"block without size", memFiles{"top.xml": `<node><node id="r" mode="block"/></node>`}, `node "r": size: missing: mode "block" needs a size`},
		{"zero size", memFiles{"top.xml": `<node><node id="r" mode="block" size="0"/></node>`}, `size: 0 words`},
		{"masked with children", memFiles{"top.xml": `<node><node id="r" mask="0x1"><node id="c"/></node></node>`}, `mask: a masked node (bitfield) cannot have child nodes`},
		{"masked with mode", memFiles{"top.xml": `<node><node id="r" mask="0x1" mode="single"/></node>`}, `node "r": mode: not allowed on a masked node`},
		{"zero mask", memFiles{"top.xml": `<node><node id="r" mask="0"/></node>`}, `mask: "0" selects no bits`},
		{"split mask", memFiles{"top.xml": `<node><node id="r" mask="0x0F0F"/></node>`}, `mask: 0x00000F0F is not one contiguous run of bits`},
		{"bad address", memFiles{"top.xml": `<node><node id="r" address="0x1g"/></node>`}, `address: "0x1g" is not a number`},
		{"address too big", memFiles{"top.xml": `<node><node id="r" address="0x100000000"/></node>`}, `does not fit 32 bits`},
		{"address sum overflow", memFiles{"top.xml": `<node><node id="a" address="0xFFFFFFFF"><node id="b" address="0x1"/></node></node>`}, `beyond oETP's 32-bit byte space`},
		{"dotted id", memFiles{"top.xml": `<node><node id="a.b"/></node>`}, `contains a dot`},
		{"duplicate id", memFiles{"top.xml": "<node>\n<node id=\"a\"/>\n<node id=\"a\" address=\"1\"/>\n</node>"}, `top.xml:3: node "a": id: two children of "" have this id (the first at line 2)`},
		{"port with children", memFiles{"top.xml": `<node><node id="p" mode="port"><node id="c"/></node></node>`}, `cannot have child nodes`},
		{"block past end", memFiles{"top.xml": `<node><node id="b" address="0x3FFFFFFF" mode="block" size="2"/></node>`}, `run past the 32-bit byte space`},
		{"huge port", memFiles{"top.xml": `<node><node id="p" mode="port" size="0x40000000"/></node>`}, `more than a 32-bit byte length`},
		{"port at the top", memFiles{"top.xml": `<node><node id="p" address="0x3FFFFFFF" mode="port" size="0x40000000"/></node>`}, `more than a 32-bit byte length`},
		{"syntax", memFiles{"top.xml": "<node>\n<node id=\"a\">\n</node>"}, `top.xml:3: XML syntax`},
		{"mismatched end", memFiles{"top.xml": "<node>\n<node id=\"a\">\n</nod>\n</node>"}, `top.xml:3: XML syntax: element <node> closed by </nod>`},
		{"stray end", memFiles{"top.xml": "<node/>\n</node>"}, `top.xml:2: XML syntax: unexpected end element </node>`},
		{"top not node", memFiles{"top.xml": `<table><node id="a"/></table>`}, `the top element is <table>`},
		{"empty", memFiles{"top.xml": ``}, `no <node> element`},
		{"two tops", memFiles{"top.xml": `<node/><node/>`}, `second top-level <node>`},
		{"module missing", memFiles{"top.xml": `<node><node id="m" module="file://nope.xml"/></node>`}, `top.xml:1: node "m": module: cannot read nope.xml`},
		{"module http", memFiles{"top.xml": `<node><node id="m" module="http://x/a.xml"/></node>`}, `only file:// modules are supported`},
		{"module with mask", memFiles{"top.xml": `<node><node id="m" module="a.xml" mask="1"/></node>`, "a.xml": `<node/>`}, `mask: not allowed on a module node`},
		{"module with children", memFiles{"top.xml": `<node><node id="m" module="a.xml"><node id="c"/></node></node>`, "a.xml": `<node/>`}, `cannot have child nodes: its children come from a.xml`},
		{"module not xml", memFiles{"top.xml": `<node><node id="m" module="a.csv"/></node>`}, `must be a uHAL .xml file`},
		{"error inside module", memFiles{"top.xml": `<node><node id="m" module="sub/a.xml"/></node>`, "sub/a.xml": "<node>\n<node id=\"x\" mode=\"bad\"/></node>"}, filepath.Join("sub", "a.xml") + `:2: node "x": mode:`},
		{"self include", memFiles{"top.xml": `<node><node id="m" module="top.xml"/></node>`}, `include cycle: top.xml -> top.xml`},
		{"cycle", memFiles{"top.xml": `<node><node id="m" module="d/b.xml"/></node>`, "d/b.xml": `<node><node id="n" module="../top.xml"/></node>`},
			`include cycle: top.xml -> ` + filepath.Join("d", "b.xml") + ` -> top.xml`},
		{"charset", memFiles{"top.xml": `<?xml version="1.0" encoding="EBCDIC"?><node/>`}, `encoding "EBCDIC" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(UHAL, "top.xml", tc.files.read)
			wantError(t, err, tc.want)
		})
	}
}

// wantError checks that err is an *Error whose text contains want.
func wantError(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Errorf("error %T is not an *Error", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error\n  %v\nwant it to contain\n  %s", err, want)
	}
}

func TestUHALCycleFixture(t *testing.T) {
	_, err := Load("testdata/uhal/cycle_a.xml")
	a, b := filepath.Join("testdata", "uhal", "cycle_a.xml"), filepath.Join("testdata", "uhal", "cycle_b.xml")
	want := "include cycle: " + a + " -> " + b + " -> " + a
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

func TestUHALSameModuleTwiceIsNoCycle(t *testing.T) {
	files := memFiles{
		"top.xml": `<node><node id="a" module="m.xml"/><node id="b" address="0x10" module="m.xml"/></node>`,
		"m.xml":   `<node><node id="r" address="1"/></node>`,
	}
	tab, err := load(UHAL, "top.xml", files.read)
	if err != nil {
		t.Fatal(err)
	}
	want := "a 0x00000000 0xFFFFFFFF rw single 4 branch\na.r 0x00000004 0xFFFFFFFF rw single 4\nb 0x00000040 0xFFFFFFFF rw single 4 branch\nb.r 0x00000044 0xFFFFFFFF rw single 4\n"
	if got := summary(tab); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}

func TestUHALPortAtTheTop(t *testing.T) {
	tab, err := Parse(UHAL, "p.xml", []byte(`<node><node id="p" address="0x3FFFFFFF" mode="port" size="16"/></node>`))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(tab); got != "p 0xFFFFFFFC 0xFFFFFFFF rw port 64 volatile\n" {
		t.Errorf("got %q", got)
	}
}

func TestUHALSizeWithoutModeWarns(t *testing.T) {
	tab, err := Parse(UHAL, "t.xml", []byte(`<node><node id="r" size="4"/></node>`))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := tab.Node("r")
	if n.Mode != Single || n.Size != 4 {
		t.Errorf("node %+v", n)
	}
	if w := tab.Warnings(); len(w) != 1 || !strings.Contains(w[0], `size="4" without mode is ignored`) {
		t.Errorf("warnings %q", w)
	}
}

func TestUHALPermissionSpellings(t *testing.T) {
	for s, want := range map[string]Permission{"r": Read, "read": Read, "w": Write, "write": Write,
		"rw": ReadWrite, "wr": ReadWrite, "readwrite": ReadWrite, "writeread": ReadWrite, "RW": ReadWrite} {
		tab, err := Parse(UHAL, "p.xml", []byte(`<node><node id="r" permission="`+s+`"/></node>`))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if n, _ := tab.Node("r"); n.Perm != want {
			t.Errorf("permission %q = %v, want %v", s, n.Perm, want)
		}
	}
	for s, want := range map[string]Mode{"single": Single, "block": Block, "incremental": Incremental, "inc": Incremental,
		"non-incremental": NonIncremental, "non-inc": NonIncremental, "port": Port} {
		tab, err := Parse(UHAL, "m.xml", []byte(`<node><node id="r" mode="`+s+`" size="2"/></node>`))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		n, _ := tab.Node("r")
		if n.Mode != want {
			t.Errorf("mode %q = %v, want %v", s, n.Mode, want)
		}
		if want != Single && n.Size != 8 {
			t.Errorf("mode %q: size %d bytes, want 8 (2 words)", s, n.Size)
		}
		if n.Volatile() != (want == NonIncremental || want == Port) {
			t.Errorf("mode %q: volatile %v", s, n.Volatile())
		}
	}
}

func TestLiteXCSVAndJSONAgree(t *testing.T) {
	csv := mustLoad(t, "testdata/litex/csr.csv")
	js := mustLoad(t, "testdata/litex/csr.json")
	want := `mems.sram 0x01000000 0xFFFFFFFF rw block 8192
ctrl_reset 0xF0000000 0xFFFFFFFF rw single 4
mems.csr 0xF0000000 0xFFFFFFFF rw block 65536
ctrl_scratch 0xF0000004 0xFFFFFFFF rw single 4
ctrl_bus_errors 0xF0000008 0xFFFFFFFF r single 4
leds_out 0xF0001000 0xFFFFFFFF rw single 4
timer0_load 0xF0001800 0xFFFFFFFF rw single 4
timer0_reload 0xF0001804 0xFFFFFFFF rw single 4
timer0_en 0xF0001808 0xFFFFFFFF rw single 4
timer0_update_value 0xF000180C 0xFFFFFFFF rw single 4
timer0_value 0xF0001810 0xFFFFFFFF r single 4
timer0_ev_status 0xF0001814 0xFFFFFFFF r single 4
timer0_ev_pending 0xF0001818 0xFFFFFFFF rw single 4
timer0_ev_enable 0xF000181C 0xFFFFFFFF rw single 4
timer0_uptime_latch 0xF0001820 0xFFFFFFFF rw single 4
timer0_uptime_cycles 0xF0001824 0xFFFFFFFF r single 8 words=2/4
`
	if diff := cmp.Diff(want, summary(csv)); diff != "" {
		t.Errorf("csr.csv (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(csv.Nodes(), js.Nodes(), cmpopts.IgnoreFields(Node{}, "File", "Line")); diff != "" {
		t.Errorf("csr.csv and csr.json differ (-csv +json):\n%s", diff)
	}
	if diff := cmp.Diff(csv.Bases(), js.Bases()); diff != "" || csv.Bases()["timer0"] != 0xF0001800 {
		t.Errorf("bases %v / %v", csv.Bases(), js.Bases())
	}
	for _, tab := range []*Table{csv, js} {
		c := tab.Constants()
		if c["config_clock_frequency"] != "100000000" || c["config_bus_standard"] != "wishbone" {
			t.Errorf("%s constants %v", tab.File(), c)
		}
		if w := tab.Warnings(); len(w) != 0 {
			t.Errorf("%s warnings %q", tab.File(), w)
		}
	}
	n, _ := csv.Node("ctrl_bus_errors")
	if n.Line != 10 {
		t.Errorf("ctrl_bus_errors line %d, want 10", n.Line)
	}
	// The 64-bit uptime counter: most significant word first.
	up, _ := js.Node("timer0_uptime_cycles")
	if up.WordAddress(0) != 0xF0001824 || up.WordAddress(1) != 0xF0001828 || up.Bits() != 64 {
		t.Errorf("uptime words at 0x%X, 0x%X, %d bits", up.WordAddress(0), up.WordAddress(1), up.Bits())
	}
	v, err := up.Join([]uint32{0x00000001, 0x80000000})
	if err != nil || v.Text(16) != "180000000" {
		t.Errorf("Join = %v, %v", v, err)
	}
	if _, err := up.Split(big.NewInt(1)); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Split of a read-only CSR: %v", err)
	}
}

func TestLiteX8BitCSRWords(t *testing.T) {
	tab := mustLoad(t, "testdata/litex/csr8.csv")
	want := `ctrl_reset 0x82000000 0x000000FF rw single 4
ctrl_scratch 0x82000004 0x000000FF rw single 16 words=4/4
ctrl_bus_errors 0x82000014 0x000000FF r single 16 words=4/4
`
	if diff := cmp.Diff(want, summary(tab)); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	n, _ := tab.Node("ctrl_scratch")
	v, err := n.Join([]uint32{0xAA12, 0xBB34, 0xCC56, 0xDD78}) // bits above the data width are ignored
	if err != nil || v.Uint64() != 0x12345678 {
		t.Fatalf("Join = %x, %v", v, err)
	}
	words, err := n.Split(big.NewInt(0x12345678))
	if err != nil || !cmp.Equal(words, []uint32{0x12, 0x34, 0x56, 0x78}) {
		t.Errorf("Split = %x, %v", words, err)
	}
	if _, err := n.Split(big.NewInt(1 << 32)); err == nil || !strings.Contains(err.Error(), "32 bits wide") {
		t.Errorf("Split of 33 bits: %v", err)
	}
}

func TestLiteXAlignment64(t *testing.T) {
	csv := "csr_register,a_wide,0x1000,2,rw\ncsr_register,b,0x1010,1,ro\nconstant,config_csr_data_width,32,,\nconstant,config_csr_alignment,64,,\n"
	tab, err := Parse(LiteXCSV, "a.csv", []byte(csv))
	if err != nil {
		t.Fatal(err)
	}
	n, _ := tab.Node("a_wide")
	if n.Words != 2 || n.Stride != 8 || n.WordAddress(1) != 0x1008 || n.Size != 12 {
		t.Errorf("a_wide %+v", n)
	}
}

func TestLiteXDefaultWidthWarns(t *testing.T) {
	tab, err := Parse(LiteXCSV, "a.csv", []byte("csr_register,a,0x0,1,rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := tab.Warnings(); len(w) != 1 || !strings.Contains(w[0], "no config_csr_data_width constant") {
		t.Errorf("warnings %q", w)
	}
}

func TestLiteXErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, data, want string
	}{
		{"csv row type", "c.csv", "# x\ncsr_reg,a,0x0,1,rw\n", `c.csv:2: node "a": unknown row type "csr_reg"`},
		{"csv short row", "c.csv", "csr_register,a,0x0\n", `c.csv:1: node "a": a csr_register row has 3 fields, needs 5`},
		{"csv mode", "c.csv", "csr_register,a,0x0,1,wo\n", `c.csv:1: node "a": mode: "wo" is not ro or rw (column 5)`},
		{"csv address", "c.csv", "csr_register,a,0xZZ,1,rw\n", `c.csv:1: node "a": address: "0xZZ" is not a number`},
		{"csv address 64-bit", "c.csv", "csr_register,a,0x100000000,1,rw\n", `does not fit 32 bits`},
		{"csv unaligned", "c.csv", "csr_register,a,0x2,1,rw\n", `c.csv:1: node "a": address: byte address 0x00000002 is not a multiple of 4`},
		{"csv width 64", "c.csv", "csr_register,a,0x0,1,rw\nconstant,config_csr_data_width,64,,\n", `c.csv:2: config_csr_data_width: a CSR data width of 64 bits does not fit`},
		{"csv width odd", "c.csv", "constant,config_csr_data_width,12,,\n", `a CSR data width of 12 bits`},
		{"csv alignment", "c.csv", "constant,config_csr_alignment,16,,\n", `a CSR alignment of 16 bits`},
		{"csv duplicate", "c.csv", "csr_register,a,0x0,1,rw\ncsr_register,a,0x4,1,rw\n", `c.csv:2: node "a": name: defined twice (first at c.csv:1)`},
		{"csv size 0", "c.csv", "csr_register,a,0x0,0,rw\n", `size 0`},
		{"csv quote", "c.csv", "csr_register,\"a,0x0,1,rw\n", `c.csv:1: CSV:`},
		{"json syntax", "c.json", "{\n  \"csr_registers\": {\n    \"a\": {\"addr\": 0,}\n  }\n}", `c.json:3: JSON syntax`},
		{"json not object", "c.json", `[1]`, `a JSON array where an object was expected`},
		{"json unknown key", "c.json", `{"csr_registers": {}, "csr_regs": {}}`, `c.json: csr_regs: unknown key`},
		{"json no registers", "c.json", `{"csr_bases": {}}`, `csr_registers: missing`},
		{"json reg key", "c.json", `{"csr_registers": {"a": {"addr": 0, "size": 1, "type": "rw", "mode": 1}}}`, `csr_registers.a.mode: unknown key`},
		{"json reg missing", "c.json", `{"csr_registers": {"a": {"addr": 0, "type": "rw"}}}`, `csr_registers.a.size: missing`},
		{"json type", "c.json", `{"csr_registers": {"a": {"addr": 0, "size": 1, "type": "wo"}}}`, `csr_registers.a.type: "wo" is not ro or rw`},
		{"json addr 64-bit", "c.json", `{"csr_registers": {"a": {"addr": 4294967296, "size": 1, "type": "rw"}}}`, `csr_registers.a.addr: 4294967296 (0x100000000) does not fit`},
		{"json addr negative", "c.json", `{"csr_registers": {"a": {"addr": -4, "size": 1, "type": "rw"}}}`, `csr_registers.a.addr: -4 is not a non-negative integer`},
		{"json unaligned", "c.json", `{"csr_registers": {"a": {"addr": 6, "size": 1, "type": "rw"}}}`, `node "a": csr_registers.a.address: byte address 0x00000006 is not a multiple of 4`},
		{"json width", "c.json", `{"csr_registers": {}, "constants": {"config_csr_data_width": "x"}}`, `constants.config_csr_data_width: "x" is not a number`},
		{"json memory", "c.json", `{"csr_registers": {}, "memories": {"rom": {"base": 0}}}`, `memories.rom.size: missing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := FormatOf(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(f, tc.file, []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestNativeExample(t *testing.T) {
	tab := mustLoad(t, "../examples/regs.toml")
	want := `ctrl 0x00000000 0xFFFFFFFF rw single 4
ctrl.reset 0x00000000 0x00000001 w single 4
ctrl.mode 0x00000000 0x000000F0 rw single 4
ctrl.enable 0x00000000 0x80000000 rw single 4
status 0x00000004 0xFFFFFFFF r single 4
status.ready 0x00000004 0x00000001 r single 4
status.errors 0x00000004 0x0000FF00 r single 4
scratch 0x00000008 0xFFFFFFFF rw single 4
irq.clear 0x0000000C 0xFFFFFFFF w single 4 volatile
buffer 0x00001000 0xFFFFFFFF rw block 1024
fifo 0x00002000 0xFFFFFFFF r port 64 volatile
`
	if diff := cmp.Diff(want, summary(tab)); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	n, _ := tab.Node("status.errors")
	if n.Line == 0 || n.Description == "" {
		t.Errorf("status.errors %+v", n)
	}
}

func TestNativeErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"unknown key", "[[node]]\nname = \"a\"\naddress = 0\npermision = \"r\"\n", `t.toml: node.permision: unknown key`},
		{"syntax", "[[node]]\nname = \"a\nx", `t.toml:2: TOML:`},
		{"no name", "[[node]]\naddress = 0\n", `t.toml:1: node "#1": name: missing`},
		{"no address", "[[node]]\nname = \"a\"\n", `t.toml:1: node "a": address: missing`},
		{"unaligned", "[[node]]\nname = \"a\"\naddress = 0\n[[node]]\nname = \"b\"\naddress = 6\n", `t.toml:4: node "b": address: byte address 0x00000006 is not a multiple of 4`},
		{"mask and bits", "[[node]]\nname = \"a\"\naddress = 0\nmask = 1\nbits = \"0\"\n", `bits: give mask or bits, not both`},
		{"bad bits", "[[node]]\nname = \"a\"\naddress = 0\nbits = \"4:7\"\n", `bits: "4:7": write a range high:low`},
		{"bit 32", "[[node]]\nname = \"a\"\naddress = 0\nbits = \"32\"\n", `bits 0..31`},
		{"split mask", "[[node]]\nname = \"a\"\naddress = 0\nmask = 0x101\n", `not one contiguous run`},
		{"negative", "[[node]]\nname = \"a\"\naddress = -4\n", `does not fit 32 bits unsigned`},
		{"string number", "[[node]]\nname = \"a\"\naddress = \"0x1z\"\n", `"0x1z" is not a number`},
		{"size on single", "[[node]]\nname = \"a\"\naddress = 0\nsize = 8\n", `size: 8 bytes on a single node`},
		{"block no size", "[[node]]\nname = \"a\"\naddress = 0\nmode = \"block\"\n", `size: missing: mode "block" needs a size in bytes`},
		{"block odd size", "[[node]]\nname = \"a\"\naddress = 0\nmode = \"block\"\nsize = 6\n", `a positive multiple of 4 bytes`},
		{"masked block", "[[node]]\nname = \"a\"\naddress = 0\nmode = \"block\"\nsize = 8\nmask = 1\n", `a block node cannot have a mask`},
		{"bad perm", "[[node]]\nname = \"a\"\naddress = 0\npermission = \"x\"\n", `permission: permission "x" is not one of`},
		{"bad name", "[[node]]\nname = \"a..b\"\naddress = 0\n", `empty segment`},
		{"space name", "[[node]]\nname = \"a b\"\naddress = 0\n", `contains ' '`},
		{"duplicate", "[[node]]\nname = \"a\"\naddress = 0\n[[node]]\nname = \"a\"\naddress = 4\n", `t.toml:4: node "a": name: defined twice (first at t.toml:1)`},
		{"block past end", "[[node]]\nname = \"a\"\naddress = 0xFFFFFFFC\nmode = \"block\"\nsize = 8\n", `runs past the 32-bit byte address space`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(Native, "t.toml", []byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", err, tc.want)
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	for path, want := range map[string]Format{"a.xml": UHAL, "A.XML": UHAL, "csr.csv": LiteXCSV, "csr.json": LiteXJSON, "r.toml": Native} {
		if f, err := FormatOf(path); err != nil || f != want {
			t.Errorf("FormatOf(%s) = %v, %v", path, f, err)
		}
	}
	if _, err := Load("regs.yaml"); err == nil || !strings.Contains(err.Error(), "must end in .xml") {
		t.Errorf("Load(.yaml): %v", err)
	}
	if _, err := Load("testdata/nope.xml"); err == nil || !strings.Contains(err.Error(), "testdata/nope.xml: cannot read the address table") {
		t.Errorf("Load(missing): %v", err)
	}
}

func TestFieldAndPlace(t *testing.T) {
	n := Node{Name: "f", Mask: 0x0000FF00, Perm: ReadWrite, Mode: Single, Size: 4, Words: 1}
	if got := n.Field(0x12345678); got != 0x56 {
		t.Errorf("Field = 0x%X, want 0x56", got)
	}
	data, mask, err := n.Place(0xAB)
	if err != nil || data != 0x0000AB00 || mask != 0x0000FF00 {
		t.Errorf("Place = 0x%08X, 0x%08X, %v", data, mask, err)
	}
	if _, _, err := n.Place(0x100); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("Place(0x100): %v", err)
	}
	top := Node{Name: "t", Mask: 0x80000000, Perm: Write, Mode: Single, Size: 4}
	if d, m, err := top.Place(1); err != nil || d != 0x80000000 || m != 0x80000000 {
		t.Errorf("top bit Place = %x %x %v", d, m, err)
	}
	if top.Field(0xFFFFFFFF) != 1 {
		t.Errorf("top bit Field")
	}
	whole := Node{Name: "w", Mask: FullMask, Perm: ReadWrite, Mode: Single, Size: 4}
	if d, m, err := whole.Place(0xFFFFFFFF); err != nil || d != 0xFFFFFFFF || m != FullMask {
		t.Errorf("whole Place = %x %x %v", d, m, err)
	}
	ro := Node{Name: "r", Mask: FullMask, Perm: Read, Mode: Single, Size: 4}
	if _, _, err := ro.Place(1); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only Place: %v", err)
	}
	blk := Node{Name: "b", Mask: FullMask, Perm: ReadWrite, Mode: Block, Size: 64}
	if _, _, err := blk.Place(1); err == nil || !strings.Contains(err.Error(), "not a single word") {
		t.Errorf("block Place: %v", err)
	}
}

func TestNodeNotFoundSuggests(t *testing.T) {
	tab := mustLoad(t, "testdata/uhal/top.xml")
	_, err := tab.Node("ctrl_reset")
	if err == nil || !strings.Contains(err.Error(), `did you mean "ctrl.reset"`) {
		t.Errorf("error %v", err)
	}
	_, err = tab.Node("zzz")
	if err == nil || !strings.Contains(err.Error(), `no node "zzz"`) {
		t.Errorf("error %v", err)
	}
}

func TestOverlapWarnings(t *testing.T) {
	xml := "<node>\n<node id=\"a\" address=\"1\"/>\n<node id=\"b\" address=\"1\"/>\n" +
		"<node id=\"blk\" address=\"0x10\" mode=\"block\" size=\"4\"/>\n<node id=\"in\" address=\"0x12\"/>\n" +
		"<node id=\"r\" address=\"0x20\"><node id=\"lo\" mask=\"0xFF\"/><node id=\"hi\" mask=\"0xFF00\"/><node id=\"mid\" mask=\"0xFF0\"/></node>\n</node>"
	tab, err := Parse(UHAL, "o.xml", []byte(xml))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`node "a" (o.xml:2) overlaps node "b" (o.xml:3) (0x00000004 mask 0xFFFFFFFF and 0x00000004 mask 0xFFFFFFFF)`,
		`node "blk" (o.xml:4) overlaps node "in" (o.xml:5) (0x00000040 mask 0xFFFFFFFF and 0x00000048 mask 0xFFFFFFFF)`,
		`node "r.lo" (o.xml:6) overlaps node "r.mid" (o.xml:6) (0x00000080 mask 0x000000FF and 0x00000080 mask 0x00000FF0)`,
		`node "r.hi" (o.xml:6) overlaps node "r.mid" (o.xml:6) (0x00000080 mask 0x0000FF00 and 0x00000080 mask 0x00000FF0)`,
	}
	if diff := cmp.Diff(want, tab.Warnings()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	// The fixtures have none: parents and their fields, disjoint fields.
	for _, f := range []string{"testdata/uhal/top.xml", "../examples/regs.toml", "testdata/litex/csr.csv"} {
		if w := mustLoad(t, f).Warnings(); len(w) != 0 {
			t.Errorf("%s: warnings %q", f, w)
		}
	}
}

func TestByteOrderMark(t *testing.T) {
	for f, d := range map[Format]string{
		UHAL:      "\uFEFF<node><node id=\"a\"/></node>",
		LiteXCSV:  "\uFEFFcsr_register,a,0x0,1,rw\r\nconstant,config_csr_data_width,32,,\r\n",
		LiteXJSON: "\uFEFF{\"csr_registers\": {\"a\": {\"addr\": 0, \"size\": 1, \"type\": \"rw\"}}, \"constants\": {\"config_csr_data_width\": 32}}",
		Native:    "\uFEFF[[node]]\r\nname = \"a\"\r\naddress = 0\r\n",
	} {
		tab, err := Parse(f, "bom", []byte(d))
		if err != nil {
			t.Errorf("%v with a byte-order mark: %v", f, err)
			continue
		}
		if got := summary(tab); got != "a 0x00000000 0xFFFFFFFF rw single 4\n" {
			t.Errorf("%v: %q", f, got)
		}
	}
}

func TestUHALNamespacedAttributesIgnored(t *testing.T) {
	xml := `<node id="TOP" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="uhal.xsd">
  <node id="r" address="0x2" xsi:type="reg"/>
</node>`
	tab, err := Parse(UHAL, "ns.xml", []byte(xml))
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(tab); got != "r 0x00000008 0xFFFFFFFF rw single 4\n" {
		t.Errorf("got %q", got)
	}
}

func TestNodeJSON(t *testing.T) {
	tab := mustLoad(t, "testdata/uhal/top.xml")
	n, _ := tab.Node("fifo")
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"name":"fifo","address":3072,"mask":4294967295,"permission":"r","mode":"port","size":32,"words":1,"stride":4,"file":"testdata/uhal/top.xml","line":19}`
	if string(b) != want {
		t.Errorf("JSON\n%s\nwant\n%s", b, want)
	}
}
