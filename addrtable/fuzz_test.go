package addrtable

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// checkTable asserts what every loaded table guarantees.
func checkTable(t *testing.T, tab *Table) {
	t.Helper()
	nodes := tab.Nodes()
	seen := map[string]bool{}
	for i, n := range nodes {
		if n.Address%4 != 0 || n.Mask == 0 || !contiguous(n.Mask) || n.Perm == 0 || n.Size == 0 || n.Words == 0 {
			t.Fatalf("bad node %+v", n)
		}
		if uint64(n.Address)+uint64(n.Span()) > 1<<32 {
			t.Fatalf("node past the address space: %+v", n)
		}
		if i > 0 && nodes[i-1].Address > n.Address {
			t.Fatalf("nodes not in address order at %d", i)
		}
		if seen[n.Name] {
			t.Fatalf("duplicate name %q", n.Name)
		}
		seen[n.Name] = true
		if got, err := tab.Node(n.Name); err != nil || got.Name != n.Name {
			t.Fatalf("Node(%q) = %v, %v", n.Name, got, err)
		}
		if n.Field(0xFFFFFFFF) != n.Mask>>n.Shift() {
			t.Fatalf("Field of all ones for %+v", n)
		}
	}
}

func addFiles(f *testing.F, glob string) {
	paths, _ := filepath.Glob(glob)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzUHAL(f *testing.F) {
	addFiles(f, "testdata/uhal/*.xml")
	addFiles(f, "testdata/uhal/modules/*.xml")
	f.Add([]byte(`<node><node id="a" module="inc.xml"/><node id="b" address="0x10" mask="0xF0"/></node>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		// Every module path reads the fuzzed document itself: includes,
		// cycles and fan-out are exercised without touching the disk.
		read := func(path string) ([]byte, error) {
			if filepath.Ext(path) != ".xml" {
				return nil, fs.ErrNotExist
			}
			return data, nil
		}
		tab, err := parse(UHAL, "top.xml", data, read)
		if err == nil {
			checkTable(t, tab)
		}
	})
}

// fuzzParse fuzzes Parse of one format from the files glob matches; what
// parses must make a consistent table.
func fuzzParse(f *testing.F, glob string, format Format, name string) {
	addFiles(f, glob)
	f.Fuzz(func(t *testing.T, data []byte) {
		if tab, err := Parse(format, name, data); err == nil {
			checkTable(t, tab)
		}
	})
}

func FuzzLiteXCSV(f *testing.F) { fuzzParse(f, "testdata/litex/*.csv", LiteXCSV, "csr.csv") }

func FuzzLiteXJSON(f *testing.F) { fuzzParse(f, "testdata/litex/*.json", LiteXJSON, "csr.json") }

func FuzzNative(f *testing.F) { fuzzParse(f, "../examples/regs.toml", Native, "regs.toml") }

func FuzzIPXACT(f *testing.F) {
	addFiles(f, "testdata/ipxact/*.xml")
	// Expressions over parameters: references, a cycle, an overflow.
	head := `<ipxact:component xmlns:ipxact="` + IPXACT2014 + `"><ipxact:parameters>`
	tail := `<ipxact:memoryMaps><ipxact:memoryMap><ipxact:name>m</ipxact:name><ipxact:addressBlock><ipxact:name>b</ipxact:name><ipxact:baseAddress>A</ipxact:baseAddress>` +
		`<ipxact:register><ipxact:name>r</ipxact:name><ipxact:addressOffset>(B + 1) * 4</ipxact:addressOffset><ipxact:size>32</ipxact:size></ipxact:register></ipxact:addressBlock></ipxact:memoryMap></ipxact:memoryMaps></ipxact:component>`
	param := func(id, v string) string {
		return `<ipxact:parameter parameterId="` + id + `"><ipxact:name>` + id + `</ipxact:name><ipxact:value>` + v + `</ipxact:value></ipxact:parameter>`
	}
	f.Add([]byte(head + param("A", "32'h1000") + param("B", "A >> 10") + `</ipxact:parameters>` + tail))
	f.Add([]byte(head + param("A", "B") + param("B", "A") + `</ipxact:parameters>` + tail))
	f.Add([]byte(head + param("A", "1 &lt;&lt; 62") + param("B", "A * A") + `</ipxact:parameters>` + tail))
	f.Add([]byte(`<spirit:component xmlns:spirit="` + spirit2009 + `"><spirit:memoryMaps><spirit:memoryMap><spirit:name>m</spirit:name><spirit:addressBlock><spirit:name>b</spirit:name>` +
		`<spirit:baseAddress spirit:id="base">16</spirit:baseAddress><spirit:range spirit:dependency="id('base') * 2"></spirit:range></spirit:addressBlock></spirit:memoryMap></spirit:memoryMaps></spirit:component>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if tab, err := Parse(IPXACT, "map.xml", data); err == nil {
			checkTable(t, tab)
		}
	})
}
