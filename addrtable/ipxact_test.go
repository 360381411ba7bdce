package addrtable

import (
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ipxactWant is what both fixtures (the same map in the 2014 and the 2022
// schema) load as: name, byte address, mask, permission, mode, size, reset.
const ipxactWant = `ctrl_blk.ctrl 0x20000000 0xFFFFFFFF rw single 4 reset=0xA1000051
ctrl_blk.ctrl.enable 0x20000000 0x00000001 rw single 4 reset=0x1
ctrl_blk.ctrl.mode 0x20000000 0x000000F0 rw single 4 reset=0x5
ctrl_blk.ctrl.version 0x20000000 0xFF000000 r single 4 reset=0xA1
ctrl_blk.status 0x20000004 0xFFFFFFFF r single 4 volatile
ctrl_blk.status.irq 0x20000004 0x00000001 r single 4 volatile
ctrl_blk.status.count 0x20000004 0x00FFFF00 r single 4
ctrl_blk.scratch[0] 0x20000010 0xFFFFFFFF rw single 4
ctrl_blk.scratch[1] 0x20000014 0xFFFFFFFF rw single 4
ctrl_blk.scratch[2] 0x20000018 0xFFFFFFFF rw single 4
ctrl_blk.scratch[3] 0x2000001C 0xFFFFFFFF rw single 4
ctrl_blk.cmd 0x20000020 0xFFFFFFFF w single 4
ctrl_blk.cmd.go 0x20000020 0x00000001 w single 4
buf 0x20001000 0xFFFFFFFF rw block 256
`

func ipxactSummary(t *Table) string {
	var b strings.Builder
	for _, n := range t.Nodes() {
		fmt.Fprintf(&b, "%s 0x%08X 0x%08X %s %s %d", n.Name, n.Address, n.Mask, n.Perm, n.Mode, n.Size)
		if n.HasReset {
			fmt.Fprintf(&b, " reset=0x%X", n.Reset)
		}
		if n.Volatile() {
			b.WriteString(" volatile")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestIPXACTFixtures(t *testing.T) {
	// The same map in the 2014, 2022 and 2009 schemas, and in 2014 with its
	// numbers written as expressions over parameters (2009's fixture has
	// parameters too, as spirit:id and spirit:dependency).
	for f, line := range map[string]int{"testdata/ipxact/board-2014.xml": 16, "testdata/ipxact/board-2022.xml": 15,
		"testdata/ipxact/board-2009.xml": 16, "testdata/ipxact/params-2014.xml": 26} {
		t.Run(f, func(t *testing.T) {
			tab := mustLoad(t, f)
			if tab.Format() != IPXACT {
				t.Fatalf("format %v, want IP-XACT (detected by content)", tab.Format())
			}
			if diff := cmp.Diff(ipxactWant, ipxactSummary(tab)); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if w := tab.Warnings(); len(w) != 0 {
				t.Errorf("warnings %q", w)
			}
			ctrl, _ := tab.Node("ctrl_blk.ctrl")
			if ctrl.Description != "Control register" || ctrl.File != f || ctrl.Line != line {
				t.Errorf("ctrl: %+v", ctrl)
			}
			checkTable(t, tab)
		})
	}
}

func TestIPXACTAccess(t *testing.T) {
	tab := mustLoad(t, "testdata/ipxact/board-2014.xml")
	v, _ := tab.Node("ctrl_blk.ctrl.version")
	if _, err := v.Writes(bigU(1)); err == nil || !strings.Contains(err.Error(), `node "ctrl_blk.ctrl.version" is read-only`) {
		t.Errorf("write to a read-only field: %v", err)
	}
	g, _ := tab.Node("ctrl_blk.cmd.go")
	if _, err := g.Reads(0); err == nil || !strings.Contains(err.Error(), "write-only") {
		t.Errorf("read of a write-only field: %v", err)
	}
	m, _ := tab.Node("ctrl_blk.ctrl.mode")
	w, err := m.Writes(bigU(0xA))
	if err != nil || len(w) != 1 || w[0] != (Access{Addr: 0x20000000, Data: 0xA0, Mask: 0xF0}) {
		t.Errorf("mode write: %+v %v", w, err)
	}
	s, _ := tab.Node("ctrl_blk.scratch[2]")
	if a, err := s.Reads(0); err != nil || len(a) != 1 || a[0] != 0x20000018 {
		t.Errorf("scratch[2] reads %v %v", a, err)
	}
}

func TestIPXACTDetectByContent(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("testdata/ipxact/board-2022.xml")
	if err != nil {
		t.Fatal(err)
	}
	// BOM and an upper-case extension: still IP-XACT.
	p := dir + "/MAP.XML"
	if err := os.WriteFile(p, append([]byte("\uFEFF"), data...), 0o600); err != nil {
		t.Fatal(err)
	}
	if tab := mustLoad(t, p); tab.Format() != IPXACT || tab.Len() != 14 {
		t.Errorf("format %v, %d nodes", tab.Format(), tab.Len())
	}
	if Sniff(UHAL, []byte(`<?xml version="1.0"?><node id="top"/>`)) != UHAL {
		t.Error("uHAL sniffed as something else")
	}
	if Sniff(LiteXCSV, data) != LiteXCSV {
		t.Error("Sniff changed a non-XML format")
	}
}

func TestIPXACTNestedAndUnits(t *testing.T) {
	// Two memory maps (their names lead), 32-bit address units, a register
	// file array, a 16-bit register, multi-dimensional registers.
	doc := `<ipxact:component xmlns:ipxact="` + IPXACT2014 + `">
<ipxact:memoryMaps>
 <ipxact:memoryMap><ipxact:name>a</ipxact:name>
  <ipxact:addressBlock><ipxact:name>blk</ipxact:name><ipxact:baseAddress>0x100</ipxact:baseAddress><ipxact:range>0x100</ipxact:range><ipxact:width>32</ipxact:width>
   <ipxact:registerFile><ipxact:name>ch</ipxact:name><ipxact:dim>2</ipxact:dim><ipxact:addressOffset>0x10</ipxact:addressOffset><ipxact:range>4</ipxact:range>
    <ipxact:register><ipxact:name>cfg</ipxact:name><ipxact:addressOffset>1</ipxact:addressOffset><ipxact:size>16</ipxact:size>
     <ipxact:field><ipxact:name>n</ipxact:name><ipxact:bitOffset>2</ipxact:bitOffset><ipxact:bitWidth>3</ipxact:bitWidth></ipxact:field>
    </ipxact:register>
   </ipxact:registerFile>
   <ipxact:register><ipxact:name>m</ipxact:name><ipxact:dim>2</ipxact:dim><ipxact:dim>2</ipxact:dim><ipxact:addressOffset>0x20</ipxact:addressOffset><ipxact:size>32</ipxact:size></ipxact:register>
  </ipxact:addressBlock>
  <ipxact:addressUnitBits>32</ipxact:addressUnitBits>
 </ipxact:memoryMap>
 <ipxact:memoryMap><ipxact:name>b</ipxact:name>
  <ipxact:addressBlock><ipxact:name>mem</ipxact:name><ipxact:baseAddress>4K</ipxact:baseAddress><ipxact:range>16</ipxact:range><ipxact:width>32</ipxact:width><ipxact:access>read-only</ipxact:access></ipxact:addressBlock>
 </ipxact:memoryMap>
</ipxact:memoryMaps></ipxact:component>`
	tab, err := Parse(IPXACT, "x.xml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := `a.blk.ch[0].cfg 0x00000444 0x0000FFFF rw single 4
a.blk.ch[0].cfg.n 0x00000444 0x0000001C rw single 4
a.blk.ch[1].cfg 0x00000454 0x0000FFFF rw single 4
a.blk.ch[1].cfg.n 0x00000454 0x0000001C rw single 4
a.blk.m[0][0] 0x00000480 0xFFFFFFFF rw single 4
a.blk.m[0][1] 0x00000484 0xFFFFFFFF rw single 4
a.blk.m[1][0] 0x00000488 0xFFFFFFFF rw single 4
a.blk.m[1][1] 0x0000048C 0xFFFFFFFF rw single 4
b.mem 0x00001000 0xFFFFFFFF r block 16
`
	if diff := cmp.Diff(want, ipxactSummary(tab)); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

func TestIPXACTErrors(t *testing.T) {
	head := `<ipxact:component xmlns:ipxact="` + IPXACT2022 + `">` + "\n<ipxact:memoryMaps><ipxact:memoryMap><ipxact:name>m</ipxact:name>\n" +
		`<ipxact:addressBlock><ipxact:name>b</ipxact:name><ipxact:baseAddress>0</ipxact:baseAddress><ipxact:range>64</ipxact:range><ipxact:width>32</ipxact:width>` + "\n"
	tail := "\n</ipxact:addressBlock></ipxact:memoryMap></ipxact:memoryMaps></ipxact:component>"
	reg := func(body string) string {
		return head + `<ipxact:register><ipxact:name>r</ipxact:name>` + body + `</ipxact:register>` + tail
	}
	// params: a component with parameters (from line 2) whose register r's
	// offset (line 4 after the parameters' lines) is off.
	params := func(ps, off string) string {
		h := strings.Replace(head, ">\n<ipxact:memoryMaps>", ">\n<ipxact:parameters>"+ps+"</ipxact:parameters><ipxact:memoryMaps>", 1)
		for strings.Count(h, "\n") < 3 {
			h = strings.Replace(h, "<ipxact:memoryMaps>", "\n<ipxact:memoryMaps>", 1)
		}
		return h + `<ipxact:register><ipxact:name>r</ipxact:name><ipxact:addressOffset>` + off + `</ipxact:addressOffset><ipxact:size>32</ipxact:size></ipxact:register>` + tail
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"2009 without a map", `<spirit:component xmlns:spirit="` + spirit2009 + `"/>`, `x.xml:1: memoryMaps: the component has no <ipxact:memoryMap>`},
		{"no namespace", `<component/>`, `x.xml:1: the top element <component> is not in an IP-XACT namespace`},
		{"not a component", `<ipxact:abstractionDefinition xmlns:ipxact="` + IPXACT2014 + `"/>`, `the top element is <abstractionDefinition>: oetp reads register maps from an IP-XACT <component>`},
		{"no memory map", `<ipxact:component xmlns:ipxact="` + IPXACT2014 + `"><ipxact:name>c</ipxact:name></ipxact:component>`, `x.xml:1: memoryMaps: the component has no <ipxact:memoryMap>`},
		{"syntax", head + "<ipxact:register>" + tail, `x.xml:5: XML syntax`},
		{"no offset", reg(`<ipxact:size>32</ipxact:size>`), `x.xml:4: node "b.r": addressOffset: missing`},
		{"no size", reg(`<ipxact:addressOffset>0</ipxact:addressOffset>`), `x.xml:4: node "b.r": size: missing`},
		{"wide", reg(`<ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>64</ipxact:size>`), `size: 64 bits: oetp reads registers of 1 to 32 bits`},
		{"unaligned", reg(`<ipxact:addressOffset>2</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `node "b.r": addressOffset: byte address 0x2 is not a multiple of 4`},
		{"unknown parameter", reg(`<ipxact:addressOffset>BASE+4</ipxact:addressOffset><ipxact:size>32</ipxact:size>`),
			`x.xml:4: node "b.r": addressOffset: "BASE+4": unknown parameter "BASE": declare it in the component's <parameters> (by name or parameterId), or write its value`},
		{"unknown in a parameter", params(`<ipxact:parameter parameterId="A"><ipxact:name>A</ipxact:name>`+"\n"+`<ipxact:value>B * 2</ipxact:value></ipxact:parameter>`, "A"),
			`x.xml:3: parameter A: "B * 2": unknown parameter "B"`},
		{"cycle", params(`<ipxact:parameter parameterId="A"><ipxact:name>A</ipxact:name><ipxact:value>B + 1</ipxact:value></ipxact:parameter>`+"\n"+
			`<ipxact:parameter parameterId="B"><ipxact:name>B</ipxact:name><ipxact:value>A - 1</ipxact:value></ipxact:parameter>`, "A"),
			`x.xml:2: parameters: parameter "A" refers to itself (through A -> B -> A): give one of them a value`},
		{"self", params(`<ipxact:parameter parameterId="A"><ipxact:name>A</ipxact:name><ipxact:value>A</ipxact:value></ipxact:parameter>`, "A"),
			`parameter "A" refers to itself (through A -> A)`},
		{"overflow", params(`<ipxact:parameter parameterId="A"><ipxact:name>A</ipxact:name><ipxact:value>1 &lt;&lt; 40</ipxact:value></ipxact:parameter>`, "A * A"),
			`x.xml:4: node "b.r": addressOffset: "A * A": overflows 64 bits: check the parameters' values`},
		{"shift overflow", reg(`<ipxact:addressOffset>1 &lt;&lt; 64</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `"1 << 64": overflows 64 bits`},
		{"too large", reg(`<ipxact:addressOffset>1 &lt;&lt; 50</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `addressOffset: "1 << 50" is 0x4000000000000: too large`},
		{"negative", reg(`<ipxact:addressOffset>4 - 8</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `addressOffset: "4 - 8" is -4: negative`},
		{"divide by zero", reg(`<ipxact:addressOffset>4 / (2 - 2)</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `"4 / (2 - 2)": divides by zero`},
		{"sized literal too wide", reg(`<ipxact:addressOffset>4'h1F + 0</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `"4'h1F" does not fit its 4 bits`},
		{"unbalanced", reg(`<ipxact:addressOffset>(4 + 4</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `"(4 + 4": a ( without its ) at column 7`},
		{"trailing", reg(`<ipxact:addressOffset>4 4</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `"4 4": unexpected "4" at column 3`},
		{"deep", reg(`<ipxact:addressOffset>` + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + `</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `nested more than 64 deep`},
		{"duplicate parameter", params(`<ipxact:parameter parameterId="A"><ipxact:name>A</ipxact:name><ipxact:value>1</ipxact:value></ipxact:parameter>`+"\n"+
			`<ipxact:parameter parameterId="A2"><ipxact:name>A</ipxact:name><ipxact:value>2</ipxact:value></ipxact:parameter>`, "A"),
			`x.xml:3: parameters: two parameters are called "A" (the first at line 2)`},
		{"2009 disagreement", `<spirit:component xmlns:spirit="` + spirit2009 + `"><spirit:parameters><spirit:parameter><spirit:name>N</spirit:name><spirit:value spirit:id="n">8</spirit:value></spirit:parameter></spirit:parameters>` + "\n" +
			`<spirit:memoryMaps><spirit:memoryMap><spirit:name>m</spirit:name><spirit:addressBlock><spirit:name>b</spirit:name><spirit:baseAddress spirit:dependency="id('n') * 2">8</spirit:baseAddress><spirit:range>4</spirit:range></spirit:addressBlock></spirit:memoryMap></spirit:memoryMaps></spirit:component>`,
			`x.xml:2: node "b": baseAddress: the value 8 and its dependency "id('n') * 2" (= 16) disagree: fix one`},
		{"bad access", reg(`<ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size><ipxact:accessPolicies><ipxact:accessPolicy><ipxact:access>rw</ipxact:access></ipxact:accessPolicy></ipxact:accessPolicies>`), `access: "rw" is not one of read-only, write-only, read-write`},
		{"field outside", reg("<ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>8</ipxact:size>\n<ipxact:field><ipxact:name>f</ipxact:name><ipxact:bitOffset>4</ipxact:bitOffset><ipxact:bitWidth>8</ipxact:bitWidth></ipxact:field>"), `x.xml:5: node "b.r.f": bitWidth: bits 4..11 do not fit the 8-bit register "b.r"`},
		{"overlapping fields", reg("<ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size><ipxact:field><ipxact:name>f</ipxact:name><ipxact:bitOffset>0</ipxact:bitOffset><ipxact:bitWidth>8</ipxact:bitWidth></ipxact:field>\n<ipxact:field><ipxact:name>g</ipxact:name><ipxact:bitOffset>4</ipxact:bitOffset><ipxact:bitWidth>8</ipxact:bitWidth></ipxact:field>"), `x.xml:5: node "b.r.g": bitOffset: bits 0x000000F0 overlap another field`},
		{"no bitWidth", reg(`<ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size><ipxact:field><ipxact:name>f</ipxact:name><ipxact:bitOffset>0</ipxact:bitOffset></ipxact:field>`), `a field needs <ipxact:bitOffset> and <ipxact:bitWidth>`},
		{"reset too big", reg(`<ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size><ipxact:field><ipxact:name>f</ipxact:name><ipxact:bitOffset>0</ipxact:bitOffset><ipxact:bitWidth>2</ipxact:bitWidth><ipxact:resets><ipxact:reset><ipxact:value>4</ipxact:value></ipxact:reset></ipxact:resets></ipxact:field>`), `reset: 0x4 does not fit the field's 2 bits`},
		{"dotted name", head + `<ipxact:register><ipxact:name>a.b</ipxact:name><ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size></ipxact:register>` + tail, `"a.b" contains a dot`},
		{"zero dim", reg(`<ipxact:array><ipxact:dim>0</ipxact:dim></ipxact:array><ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `dim: 0: an array has at least one element`},
		{"huge dim", reg(`<ipxact:array><ipxact:dim>100000</ipxact:dim><ipxact:dim>100000</ipxact:dim></ipxact:array><ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `the array has more than`},
		{"nested arrays", head + `<ipxact:registerFile><ipxact:name>a</ipxact:name><ipxact:dim>1000000</ipxact:dim><ipxact:addressOffset>0</ipxact:addressOffset><ipxact:range>4</ipxact:range>` +
			`<ipxact:registerFile><ipxact:name>b</ipxact:name><ipxact:dim>1000000</ipxact:dim><ipxact:addressOffset>0</ipxact:addressOffset><ipxact:range>4</ipxact:range></ipxact:registerFile></ipxact:registerFile>` + tail,
			`dim: the arrays expand to more than 1048576 elements`},
		{"past the space", reg(`<ipxact:dim>2</ipxact:dim><ipxact:addressOffset>0xFFFFFFFC</ipxact:addressOffset><ipxact:size>32</ipxact:size>`), `node "b.r[1]": addressOffset: byte address 0x100000000 is beyond oETP's 32-bit byte space`},
		{"duplicate", head + `<ipxact:register><ipxact:name>r</ipxact:name><ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size></ipxact:register>` + "\n" + `<ipxact:register><ipxact:name>r</ipxact:name><ipxact:addressOffset>4</ipxact:addressOffset><ipxact:size>32</ipxact:size></ipxact:register>` + tail, `x.xml:5: node "b.r": name: defined twice (first at x.xml:4)`},
		{"aub", `<ipxact:component xmlns:ipxact="` + IPXACT2014 + `"><ipxact:memoryMaps><ipxact:memoryMap><ipxact:name>m</ipxact:name><ipxact:addressUnitBits>12</ipxact:addressUnitBits></ipxact:memoryMap></ipxact:memoryMaps></ipxact:component>`, `addressUnitBits: 12: oetp reads memory maps of 8, 16, 32 or 64-bit address units`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(IPXACT, "x.xml", []byte(tc.doc))
			wantError(t, err, tc.want)
		})
	}
}

func TestIPNumber(t *testing.T) {
	for s, want := range map[string]uint64{"4096": 4096, "0x1000": 4096, "'h1000": 4096, "32'h1000": 4096, "#1000": 4096, "4K": 4096, "1M": 1 << 20, "'b101": 5, "8'd12": 12, "'o17": 15, "0x2000_0000": 0x20000000} {
		if v, err := parseIPNumber(s); err != nil || v != want {
			t.Errorf("parseIPNumber(%q) = %d, %v; want %d", s, v, err, want)
		}
	}
	for _, s := range []string{"", "x", "'h", "'q1", "12'", "0x", "1+1", "'b102", "0xFFFFFFFFFFFFFFFFFF", "4'h1F", "1'b10"} {
		if v, err := parseIPNumber(s); err == nil {
			t.Errorf("parseIPNumber(%q) = %d, want an error", s, v)
		}
	}
}

// TestIPExpr: the evaluator's precedence (SystemVerilog's), literals and
// parameter references by name, by id and as 2009's id('...').
func TestIPExpr(t *testing.T) {
	base := &ipParam{name: "BASE", id: "uuid_1", val: &xel{text: "'h100"}}
	n := &ipParam{name: "N", val: &xel{text: "BASE >> 7 | 1"}}
	p := &ipx{file: "x.xml", params: map[string]*ipParam{"BASE": base, "uuid_1": base, "N": n}}
	for s, want := range map[string]int64{
		"BASE + 4*N": 0x10C, "uuid_1 - 1": 0xFF, "id('uuid_1')": 0x100, `id("BASE") + N`: 0x103,
		"'h10": 16, "32'h0000_0010": 16, "8'd255": 255, "4'b1010": 10, "'o17": 15, "4K + 1": 4097,
		"1 + 2 * 3": 7, "(1 + 2) * 3": 9, "10 - 4 - 3": 3, "100 / 7 % 5": 4, "8 >> 1 << 2": 16,
		"1 << 2 + 1": 8, "6 & 3 | 8": 10, "5 ^ 1 & 3": 4, "~0 & 'hFF": 255, "-4 + 8": 4, "-(2 - 5)": 3, "+7": 7,
	} {
		v, err := p.eval(s, &xel{line: 1}, "n", "f")
		if err != nil || v != want {
			t.Errorf("eval(%q) = %d, %v; want %d", s, v, err, want)
		}
	}
	for s, want := range map[string]string{
		"": "it ends where a value is expected", "1 +": "it ends where a value is expected", "1 ** 2": `unexpected "** 2" at column 3`,
		"1 && 2": `unexpected "&& 2" at column 3`, "M": `unknown parameter "M"`, "id(BASE)": "id( takes a quoted name", "$clog2(8)": "functions are not evaluated",
		"3'b1111": `"3'b1111" does not fit its 3 bits`, "'hZZ": `"'hZZ" is not a number`, "(1 << 62) * 2": "overflows 64 bits", "1 << 63": "overflows 64 bits", "281474976710657 + 0": "is too large",
	} {
		if v, err := p.eval(s, &xel{line: 1}, "n", "f"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("eval(%q) = %d, %v; want an error with %q", s, v, err, want)
		}
	}
}

func bigU(v uint64) *big.Int { return new(big.Int).SetUint64(v) }
