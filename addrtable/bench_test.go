package addrtable

import (
	"fmt"
	"strings"
	"testing"
)

// genUHAL is a uHAL table of n registers, each with two bitfields.
func genUHAL(n int) []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<node id=\"TOP\">\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  <node id=\"r%d\" address=\"0x%x\" permission=\"rw\" description=\"register %d\">\n", i, i, i)
		b.WriteString("    <node id=\"lo\" mask=\"0x0000FFFF\"/>\n    <node id=\"hi\" mask=\"0xFFFF0000\" permission=\"r\"/>\n  </node>\n")
	}
	b.WriteString("</node>\n")
	return []byte(b.String())
}

func genCSV(n int) []byte {
	var b strings.Builder
	b.WriteString("constant,config_csr_data_width,32,,\nconstant,config_csr_alignment,32,,\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "csr_register,core_reg%d,0x%08x,1,rw\n", i, 0xF0000000+4*i)
	}
	return []byte(b.String())
}

func BenchmarkParseUHAL(b *testing.B) {
	data := genUHAL(4096)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		tab, err := Parse(UHAL, "bench.xml", data)
		if err != nil || tab.Len() != 3*4096 {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseLiteXCSV(b *testing.B) {
	data := genCSV(4096)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		tab, err := Parse(LiteXCSV, "bench.csv", data)
		if err != nil || tab.Len() != 4096 {
			b.Fatal(err)
		}
	}
}

func BenchmarkNodeLookup(b *testing.B) {
	tab, err := Parse(UHAL, "bench.xml", genUHAL(4096))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tab.Node("r1234.hi"); err != nil {
			b.Fatal(err)
		}
	}
}
