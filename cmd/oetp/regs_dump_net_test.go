//go:build linux

package main

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
)

// dumpIPXACT is the IP-XACT table of the dump tests: a register with three
// fields (one read-only), a clear-on-read status register (volatile: never
// dumped), an array of two, and a write-only register (not readable).
const dumpIPXACT = `<?xml version="1.0"?>
<ipxact:component xmlns:ipxact="http://www.accellera.org/XMLSchema/IPXACT/1685-2014">
<ipxact:memoryMaps><ipxact:memoryMap><ipxact:name>csr</ipxact:name>
<ipxact:addressBlock><ipxact:name>blk</ipxact:name><ipxact:baseAddress>0x100</ipxact:baseAddress><ipxact:range>0x100</ipxact:range><ipxact:width>32</ipxact:width>
 <ipxact:register><ipxact:name>ctrl</ipxact:name><ipxact:addressOffset>0</ipxact:addressOffset><ipxact:size>32</ipxact:size>
  <ipxact:field><ipxact:name>enable</ipxact:name><ipxact:bitOffset>0</ipxact:bitOffset><ipxact:bitWidth>1</ipxact:bitWidth></ipxact:field>
  <ipxact:field><ipxact:name>mode</ipxact:name><ipxact:bitOffset>4</ipxact:bitOffset><ipxact:bitWidth>4</ipxact:bitWidth></ipxact:field>
  <ipxact:field><ipxact:name>version</ipxact:name><ipxact:bitOffset>24</ipxact:bitOffset><ipxact:bitWidth>8</ipxact:bitWidth><ipxact:access>read-only</ipxact:access></ipxact:field>
 </ipxact:register>
 <ipxact:register><ipxact:name>status</ipxact:name><ipxact:addressOffset>4</ipxact:addressOffset><ipxact:size>32</ipxact:size><ipxact:access>read-only</ipxact:access>
  <ipxact:field><ipxact:name>irq</ipxact:name><ipxact:bitOffset>0</ipxact:bitOffset><ipxact:bitWidth>1</ipxact:bitWidth><ipxact:readAction>clear</ipxact:readAction></ipxact:field>
 </ipxact:register>
 <ipxact:register><ipxact:name>scratch</ipxact:name><ipxact:dim>2</ipxact:dim><ipxact:addressOffset>0x10</ipxact:addressOffset><ipxact:size>32</ipxact:size></ipxact:register>
 <ipxact:register><ipxact:name>cmd</ipxact:name><ipxact:addressOffset>0x20</ipxact:addressOffset><ipxact:size>32</ipxact:size><ipxact:access>write-only</ipxact:access></ipxact:register>
</ipxact:addressBlock>
</ipxact:memoryMap></ipxact:memoryMaps>
</ipxact:component>
`

// dumpWords are the board's words at the table's registers.
var dumpWords = map[uint32]uint32{0x100: 0xA1000051, 0x104: 0x00000001, 0x110: 0x11111111, 0x114: 0x22222222, 0x120: 0x33333333}

// dumpRegion writes a 4 KiB register file holding dumpWords.
func dumpRegion(t *testing.T, path string) {
	t.Helper()
	b := make([]byte, 4096)
	for a, w := range dumpWords {
		binary.LittleEndian.PutUint32(b[a:], w)
	}
	writeFile(t, path, b)
}

// fieldsOf splits output lines into their white-space separated fields.
func fieldsOf(s string) [][]string {
	var out [][]string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, strings.Fields(l))
	}
	return out
}

// TestRegsDumpOverVeth dumps an IP-XACT table against `oetp serve` on a
// veth pair: exact values and fields, the volatile register left unread
// (the server serves exactly the three reads), JSON lines, PATH.
func TestRegsDumpOverVeth(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	regFile := filepath.Join(dir, "regs.bin")
	dumpRegion(t, regFile)
	table := filepath.Join(dir, "board.xml")
	writeFile(t, table, []byte(dumpIPXACT))
	srv := startServe(t, bin, h1, "--iface", "eth0", "--json-events", "--region", "0:4K:"+regFile, "--peer", netClient+",mode=rmem")
	dump := func(args ...string) (string, string, int) {
		t.Helper()
		return oetpIn(t, bin, h2, append([]string{"regs", "dump", "--table", table, "--iface", "eth0", "--peer", netServer}, args...)...)
	}
	reads := func() float64 { return srv.stats()["served_rmem_read"].(float64) }

	r0 := reads()
	out, errOut, code := dump()
	want := [][]string{
		{"NAME", "ADDRESS", "VALUE", "FIELDS"},
		{"blk.ctrl", "0x00000100", "0xa1000051", "enable=0x1", "mode=0x5", "version=0xa1"},
		{"blk.scratch[0]", "0x00000110", "0x11111111"},
		{"blk.scratch[1]", "0x00000114", "0x22222222"},
	}
	if code != 0 {
		t.Fatalf("regs dump: exit %d, stderr %s", code, errOut)
	}
	if diff := cmp.Diff(want, fieldsOf(out)); diff != "" {
		t.Errorf("regs dump (-want +got):\n%s", diff)
	}
	if wantErr := "oetp: note: blk.status is volatile (reading it has side effects): not read; read it with oetp regs read\n"; errOut != wantErr {
		t.Errorf("stderr %q, want %q", errOut, wantErr)
	}
	if n := reads() - r0; n != 3 {
		t.Errorf("the board served %v reads, want 3 (ctrl, scratch[0], scratch[1]; status is never read)", n)
	}

	out, errOut, code = dump("blk.scratch", "--json")
	wantJSON := `{"name":"blk.scratch[0]","address":272,"value":286331153,"fields":{}}
{"name":"blk.scratch[1]","address":276,"value":572662306,"fields":{}}
`
	if code != 0 || out != wantJSON {
		t.Errorf("regs dump blk.scratch --json: exit %d\n%s\nwant\n%s\nstderr %s", code, out, wantJSON, errOut)
	}
	out, _, code = dump("blk.ctrl", "--json")
	if want := `{"name":"blk.ctrl","address":256,"value":2701131857,"fields":{"enable":1,"mode":5,"version":161}}` + "\n"; code != 0 || out != want {
		t.Errorf("regs dump blk.ctrl --json: exit %d, %q, want %q", code, out, want)
	}
	if _, errOut, code := dump("nope"); code != 2 || !strings.Contains(errOut, `no node "nope"`) {
		t.Errorf("regs dump nope: exit %d, stderr %q", code, errOut)
	}
	if _, errOut, code := dump("blk.cmd"); code != 2 || !strings.Contains(errOut, `no readable register under "blk.cmd"`) {
		t.Errorf("regs dump blk.cmd: exit %d, stderr %q", code, errOut)
	}
}
