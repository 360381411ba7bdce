//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/cmd/oetp/internal/serve"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/pcap/pcaptest"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// The address tables of the veth test. The uHAL table names the same words
// by IPbus WORD address (byte address / 4); the LiteX table has a 64-bit
// CSR of two words and an 8-bit-wide one of four.
const (
	regsTOML = `[[node]]
name = "ctrl"
address = 0x100
[[node]]
name = "ctrl.mode"
address = 0x100
bits = "7:4"
[[node]]
name = "status"
address = 0x104
permission = "r"
[[node]]
name = "buf"
address = 0x200
mode = "block"
size = 16
[[node]]
name = "fifo"
address = 0x300
mode = "port"
size = 12
permission = "r"
`
	regsXML = `<?xml version="1.0" encoding="ISO-8859-1"?>
<node id="TOP">
  <node id="ctrl" address="0x40">
    <node id="mode" mask="0xF0"/>
    <node id="go" mask="0x80000000" permission="w"/>
  </node>
  <node id="sub" module="file://sub.xml" address="0x80"/>
</node>
`
	regsSubXML = `<node><node id="reg" address="0x1"/></node>`
	regsCSV    = `csr_base,timer0,0x400,,
csr_register,timer0_load,0x400,1,rw
csr_register,timer0_uptime_cycles,0x404,2,rw
csr_register,timer0_value,0x40c,1,ro
constant,config_csr_data_width,32,,
constant,config_csr_alignment,32,,
`
)

// TestRegsOverVeth runs `oetp regs` in one namespace against `oetp serve` in
// another: the registers live in a file-backed region, so every write is
// checked in the file, byte for byte; the bitfield write is checked on the
// wire (one RMEM_WRITE_REQ, BitEnable = the mask) and in the server's
// counters (one write served, no read).
func TestRegsOverVeth(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	bin := testutil.BuildCommand(t, ".")
	dir := t.TempDir()
	regFile := filepath.Join(dir, "regs.bin")
	srv := startServe(t, bin, h1, "--iface", "eth0", "--json-events", "--group", netGroup,
		"--region", "0:4K:"+regFile, "--peer", netClient+",mode=rmem")
	tables := map[string]string{"regs.toml": regsTOML, "top.xml": regsXML, "sub.xml": regsSubXML, "csr.csv": regsCSV}
	for name, body := range tables {
		writeFile(t, filepath.Join(dir, name), []byte(body))
	}
	toml, xml, csv := filepath.Join(dir, "regs.toml"), filepath.Join(dir, "top.xml"), filepath.Join(dir, "csr.csv")
	regs := func(args ...string) (string, string, int) {
		t.Helper()
		return oetpIn(t, bin, h2, append(append([]string{"regs"}, args...), "--iface", "eth0", "--peer", netServer)...)
	}
	word := func(addr uint32) uint32 { t.Helper(); return fileWord(t, regFile, addr) }
	served := func() (reads, writes, rx float64) {
		s := srv.stats()
		return s["served_rmem_read"].(float64), s["served_rmem_write"].(float64), s["rx_frames"].(float64)
	}

	t.Run("register and bitfield", func(t *testing.T) {
		out, errOut, code := regs("write", "--table", toml, "ctrl", "0x12345678", "--json")
		checkResult(t, "regs write ctrl", out, errOut, code, 0, res(true, 0, "NONE", "regs write", netServer, 0x100,
			"node", "ctrl", "mask", float64(0xFFFFFFFF), "value", float64(0x12345678), "words_done", float64(1)))
		if w := word(0x100); w != 0x12345678 {
			t.Fatalf("word 0x100 = 0x%08X after writing ctrl", w)
		}
		r0, w0, _ := served()
		capture := filepath.Join(dir, "mode.pcap")
		out, errOut, code = regs("write", "--table", toml, "ctrl.mode", "0xA", "--pcap", capture)
		if want := "regs write 02:0e:0c:00:00:01 ctrl.mode 0x00000100 mask 0x000000f0 = 0xa: ok\n"; code != 0 || out != want {
			t.Errorf("regs write ctrl.mode: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
		}
		if w := word(0x100); w != 0x123456A8 {
			t.Errorf("word 0x100 = 0x%08X after ctrl.mode = 0xA, want 0x123456A8", w)
		}
		r1, w1, _ := served()
		if r1 != r0 || w1 != w0+1 {
			t.Errorf("the bitfield write cost %v reads and %v writes on the server, want 0 and 1", r1-r0, w1-w0)
		}
		// On the wire: the request and its response, nothing else; the
		// request is RMEM_WRITE_REQ with BitEnable 0xF0 and Data 0xA0.
		frames := pcaptest.ReadCapture(t, capture)
		if len(frames) != 2 {
			t.Fatalf("capture holds %d frames, want 2 (request, response)", len(frames))
		}
		req := wire.Frame(frames[0])
		srvMAC, _ := wire.ParseMAC(netServer)
		cliMAC, _ := wire.ParseMAC(netClient)
		want := wire.AppendRMEMWriteReq(nil, srvMAC, cliMAC, req.Param(1), 0x100, 0xF0, 0xA0)
		if !bytes.Equal(frames[0], want) {
			t.Errorf("request on the wire\n% x\nwant\n% x", frames[0], want)
		}
		out, errOut, code = regs("read", "--table", toml, "ctrl.mode", "--json")
		checkResult(t, "regs read ctrl.mode", out, errOut, code, 0, res(true, 0, "NONE", "regs read", netServer, 0x100,
			"node", "ctrl.mode", "mask", float64(0xF0), "value", float64(0xA), "data", float64(0x123456A8), "words_done", float64(1)))
		out, errOut, code = regs("read", "--table", toml, "ctrl.mode")
		if want := "regs read 02:0e:0c:00:00:01 ctrl.mode 0x00000100 mask 0x000000f0 = 0xa\n"; code != 0 || out != want {
			t.Errorf("regs read: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
		}
	})

	t.Run("group bitfield write", func(t *testing.T) {
		// A bitfield write to a group MAC: one multicast masked write that
		// every member (the server) applies; it completes when sent.
		out, errOut, code := oetpIn(t, bin, h2, "regs", "write", "--table", toml, "ctrl.mode", "0x5", "--iface", "eth0", "--peer", netGroup)
		if code != 0 {
			t.Fatalf("group regs write: exit %d, %s %s", code, out, errOut)
		}
		deadline := time.Now().Add(5 * time.Second)
		for word(0x100) != 0x12345658 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if w := word(0x100); w != 0x12345658 {
			t.Errorf("word 0x100 = 0x%08X after the group write of ctrl.mode = 5, want 0x12345658", w)
		}
		if _, errOut, code := regs("write", "--table", toml, "ctrl.mode", "0xA"); code != 0 {
			t.Fatalf("restoring ctrl.mode: exit %d, %s", code, errOut)
		}
	})

	t.Run("uHAL word addresses", func(t *testing.T) {
		// ctrl is at IPbus word 0x40 = byte 0x100, sub.reg at word 0x81 =
		// byte 0x204 (the module's offset plus the included address).
		out, errOut, code := regs("write", "--table", xml, "ctrl.go", "1")
		if code != 0 {
			t.Fatalf("regs write ctrl.go: exit %d, %s %s", code, out, errOut)
		}
		if w := word(0x100); w != 0x923456A8 {
			t.Errorf("word 0x100 = 0x%08X after ctrl.go = 1, want 0x923456A8", w)
		}
		out, errOut, code = regs("write", "--table", xml, "sub.reg", "0xC0FFEE01", "--json")
		checkResult(t, "regs write sub.reg", out, errOut, code, 0, res(true, 0, "NONE", "regs write", netServer, 0x204,
			"node", "sub.reg", "mask", float64(0xFFFFFFFF), "value", float64(0xC0FFEE01), "words_done", float64(1)))
		if w := word(0x204); w != 0xC0FFEE01 {
			t.Errorf("word 0x204 = 0x%08X, want 0xC0FFEE01", w)
		}
		out, _, code = regs("read", "--table", xml, "ctrl.mode", "--json")
		if got := lastLineJSON(t, out); code != 0 || got["value"] != float64(0xA) {
			t.Errorf("uHAL ctrl.mode read: exit %d, %v", code, got)
		}
	})

	t.Run("block and port", func(t *testing.T) {
		out, errOut, code := regs("write", "--table", toml, "buf", "1", "2", "3", "0xFFFFFFFF")
		if want := "regs write 02:0e:0c:00:00:01 buf 0x00000200: 4 words (block): ok\n"; code != 0 || out != want {
			t.Errorf("regs write buf: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
		}
		for i, want := range []uint32{1, 2, 3, 0xFFFFFFFF} {
			if w := word(0x200 + uint32(i)*4); w != want {
				t.Errorf("buf word %d = 0x%08X, want 0x%08X", i, w, want)
			}
		}
		out, errOut, code = regs("read", "--table", toml, "buf", "--count", "2", "--json")
		checkResult(t, "regs read buf", out, errOut, code, 0, res(true, 0, "NONE", "regs read", netServer, 0x200,
			"node", "buf", "mask", float64(0xFFFFFFFF), "words", []any{float64(1), float64(2)}, "words_done", float64(2)))
		r0, _, _ := served()
		out, errOut, code = regs("read", "--table", toml, "fifo")
		if want := "regs read 02:0e:0c:00:00:01 fifo 0x00000300: 3 words (port)\n0x00000300: 0x00000000 0x00000000 0x00000000\n"; code != 0 || out != want {
			t.Errorf("regs read fifo: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
		}
		if r1, _, _ := served(); r1 != r0+3 {
			t.Errorf("a 3-word port read was served as %v reads", r1-r0)
		}
	})

	t.Run("LiteX wide CSR", func(t *testing.T) {
		out, errOut, code := regs("write", "--table", csv, "timer0_uptime_cycles", "0x1122334455667788", "--json")
		checkResult(t, "regs write wide", out, errOut, code, 0, res(true, 0, "NONE", "regs write", netServer, 0x404,
			"node", "timer0_uptime_cycles", "mask", float64(0xFFFFFFFF), "value", float64(0x1122334455667788),
			"words", []any{float64(0x11223344), float64(0x55667788)}, "words_done", float64(2)))
		if hi, lo := word(0x404), word(0x408); hi != 0x11223344 || lo != 0x55667788 {
			t.Errorf("CSR words 0x%08X 0x%08X, want 0x11223344 0x55667788 (most significant first)", hi, lo)
		}
		out, errOut, code = regs("read", "--table", csv, "timer0_uptime_cycles")
		if want := "regs read 02:0e:0c:00:00:01 timer0_uptime_cycles 0x00000404 = 0x1122334455667788\n"; code != 0 || out != want {
			t.Errorf("regs read wide: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
		}
	})

	t.Run("reliable transport", func(t *testing.T) {
		// A second server on another MAC whose entry for the client uses
		// the reliable transport: regs takes --transport like rmem.
		relMAC := "02:0e:0c:00:00:c1"
		relFile := filepath.Join(dir, "rel.bin")
		rel := startServe(t, bin, h1, "--iface", "eth0", "--mac", relMAC, "--region", "0:4K:"+relFile,
			"--peer", netClient+",mode=rmem,transport=reliable")
		defer rel.stop()
		args := []string{"--iface", "eth0", "--peer", relMAC, "--transport", "reliable"}
		out, errOut, code := oetpIn(t, bin, h2, append([]string{"regs", "write", "--table", toml, "ctrl", "0x0F0F0F0F"}, args...)...)
		if code != 0 {
			t.Fatalf("regs write over the reliable transport: exit %d, %s %s", code, out, errOut)
		}
		out, errOut, code = oetpIn(t, bin, h2, append([]string{"regs", "write", "--table", toml, "ctrl.mode", "3"}, args...)...)
		if code != 0 {
			t.Fatalf("regs write ctrl.mode over the reliable transport: exit %d, %s %s", code, out, errOut)
		}
		if w := fileWord(t, relFile, 0x100); w != 0x0F0F0F3F {
			t.Errorf("word 0x100 = 0x%08X, want 0x0F0F0F3F", w)
		}
		out, errOut, code = oetpIn(t, bin, h2, append([]string{"regs", "read", "--table", toml, "ctrl.mode", "--json"}, args...)...)
		if got := lastLineJSON(t, out); code != 0 || got["value"] != float64(3) || got["data"] != float64(0x0F0F0F3F) {
			t.Errorf("regs read over the reliable transport: exit %d, %v; stderr %s", code, got, errOut)
		}
	})

	t.Run("refused before sending", func(t *testing.T) {
		_, _, rx0 := served()
		before, _ := os.ReadFile(regFile)
		for _, args := range [][]string{
			{"write", "--table", toml, "status", "1"},
			{"write", "--table", csv, "timer0_value", "1"},
			{"write", "--table", toml, "ctrl.mode", "16"},
			{"read", "--table", xml, "ctrl.go"},
			{"write", "--table", toml, "nope", "1"},
		} {
			_, errOut, code := regs(append(args, "--json")...)
			if code != 2 || !strings.Contains(errOut, "oetp: ") {
				t.Errorf("regs %v: exit %d, stderr %q; want 2", args, code, errOut)
			}
		}
		// A read from a group is refused locally (LOCAL_INVALID), exit 2.
		out, errOut, code := oetpIn(t, bin, h2, "regs", "read", "--table", toml, "ctrl", "--iface", "eth0", "--peer", netGroup, "--json")
		if got := lastLineJSON(t, out); code != 2 || got["error"] != "LOCAL_INVALID" || got["words_done"] != float64(0) {
			t.Errorf("regs read from a group: exit %d, %v; stderr %s", code, got, errOut)
		}
		if _, _, rx1 := served(); rx1 != rx0 {
			t.Errorf("the server received %v frames during refused accesses", rx1-rx0)
		}
		if after, _ := os.ReadFile(regFile); !bytes.Equal(before, after) {
			t.Errorf("refused accesses changed the registers")
		}
	})

	t.Run("remote failure", func(t *testing.T) {
		// A node in no region of the server: the server's RMEM read fails
		// (LOCAL_AXI_RD_SLVERR there, REMOTE_AXI_RD_SLVERR 12 here), exit 1.
		far := filepath.Join(dir, "far.toml")
		writeFile(t, far, []byte("[[node]]\nname = \"far\"\naddress = 0x2000\n"))
		out, errOut, code := regs("read", "--table", far, "far", "--json")
		checkResult(t, "regs read far", out, errOut, code, 1, res(false, 12, "REMOTE_AXI_RD_SLVERR", "regs read", netServer, 0x2000,
			"node", "far", "mask", float64(0xFFFFFFFF), "message", "REMOTE_AXI_RD_SLVERR (12)", "words_done", float64(0)))
		if !strings.Contains(errOut, "regs read "+netServer+" far at 0x00002000 failed: REMOTE_AXI_RD_SLVERR (12)") {
			t.Errorf("stderr %q", errOut)
		}
	})
	// The server's only error record is that read.
	want := []serve.Event{{Event: "RMEM_ERROR", Source: 5, Peer: 0, PeerMAC: netClient, ErrorCode: 4, Error: "LOCAL_AXI_RD_SLVERR"}}
	if diff := cmp.Diff(want, srv.events(t)); diff != "" {
		t.Errorf("server events (-want +got):\n%s", diff)
	}
}

// TestRegsThroughHub: with a hub serving the interface and peer, regs goes
// through it like rmem: a bitfield write is one masked write of the hub
// (exact word in the board's file), a read returns the field. A volatile
// node goes through the hub only when the hub's own table marks it
// volatile (the hub's device retries, and spares only those); otherwise
// regs runs its own endpoint and says so, or, with --hub, refuses.
func TestRegsThroughHub(t *testing.T) {
	dir := t.TempDir()
	regFile := filepath.Join(dir, "board.bin")
	table := filepath.Join(dir, "regs.toml")
	// irq: volatile = true, which the hub's node records say.
	writeFile(t, table, []byte(regsTOML+"[[node]]\nname = \"irq\"\naddress = 0x108\nvolatile = true\n"))
	other := filepath.Join(dir, "other.toml")
	writeFile(t, other, []byte("[[node]]\nname = \"rxfifo\"\naddress = 0x380\nmode = \"port\"\nsize = 8\npermission = \"r\"\n"))
	board := fmt.Sprintf("iface = \"eth0\"\n\n[[region]]\nbase = 0\nsize = \"4K\"\npath = %q\n\n", regFile)
	f := startHubFixtureWith(t, board, fmt.Sprintf("address_table = %q\nretries = 3\n", table))
	h2 := f.tn.Host(1)
	regs := func(args ...string) (string, string, int) {
		t.Helper()
		return runExit(t, h2.Command("env", append([]string{"OETP_HUB=" + f.sock, f.bin, "regs"}, append(args, "--iface", "eth0", "--peer", netServer)...)...))
	}
	word := func(addr uint32) uint32 { t.Helper(); return fileWord(t, regFile, addr) }
	c := hubDial(t, f.sock)

	if _, errOut, code := regs("write", "--table", table, "ctrl", "0x12345678"); code != 0 {
		t.Fatalf("regs write ctrl via hub: exit %d, %s", code, errOut)
	}
	w0 := hubOps(t, c, "write")
	out, errOut, code := regs("write", "--table", table, "ctrl.mode", "0xA", "--json")
	checkResult(t, "regs write ctrl.mode via hub", out, errOut, code, 0, res(true, 0, "NONE", "regs write", netServer, 0x100,
		"node", "ctrl.mode", "mask", float64(0xF0), "value", float64(0xA), "words_done", float64(1), "via", "hub", "hub", f.sock))
	if n := hubOps(t, c, "write") - w0; n != 1 {
		t.Errorf("the hub ran %d writes for one bitfield write, want 1", n)
	}
	if w := word(0x100); w != 0x123456A8 {
		t.Errorf("board word 0x100 = 0x%08X, want 0x123456A8", w)
	}
	r0 := hubOps(t, c, "read")
	out, errOut, code = regs("read", "--table", table, "ctrl.mode")
	if want := "regs read 02:0e:0c:00:00:01 ctrl.mode 0x00000100 mask 0x000000f0 = 0xa\n"; code != 0 || out != want {
		t.Errorf("regs read via hub: exit %d, stdout %q, want %q; stderr %s", code, out, want, errOut)
	}
	// fifo is a port of the hub's own table too: through the hub.
	out, errOut, code = regs("read", "--table", table, "fifo", "--json")
	if got := lastLineJSON(t, out); code != 0 || fmt.Sprint(got["words"]) != "[0 0 0]" || strings.Contains(errOut, "volatile") {
		t.Errorf("regs read fifo via hub: exit %d, %v; stderr %q", code, got, errOut)
	}
	if n := hubOps(t, c, "read") - r0; n != 4 {
		t.Errorf("the hub ran %d reads, want 4 (ctrl.mode, 3 fifo words)", n)
	}
	// irq is a TOML volatile node of the hub's table: through the hub.
	r0 = hubOps(t, c, "read")
	if _, errOut, code := regs("read", "--table", table, "irq", "--hub", f.sock); code != 0 || strings.Contains(errOut, "volatile") {
		t.Errorf("regs read irq (volatile = true) via hub: exit %d, stderr %q", code, errOut)
	}
	if n := hubOps(t, c, "read") - r0; n != 1 {
		t.Errorf("the hub ran %d reads of irq, want 1", n)
	}
	// rxfifo is volatile but unknown to the hub's table: our own endpoint
	// (whose MAC the board does not admit: TIMEOUT), never the hub.
	r0 = hubOps(t, c, "read")
	_, errOut, code = regs("read", "--table", other, "rxfifo", "--count", "1")
	if code != 1 || !strings.Contains(errOut, `note: node "rxfifo" is volatile and the hub's table does not mark it so`) || !strings.Contains(errOut, "TIMEOUT") {
		t.Errorf("volatile node unknown to the hub: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = regs("read", "--table", other, "rxfifo", "--hub", f.sock)
	if code != 2 || !strings.Contains(errOut, "--hub: node \"rxfifo\" is volatile") {
		t.Errorf("volatile node with --hub: exit %d, stderr %q", code, errOut)
	}
	if n := hubOps(t, c, "read") - r0; n != 0 {
		t.Errorf("the hub ran %d reads of a volatile node it does not know", n)
	}
	// Refusals come before any route is chosen.
	if _, errOut, code := regs("write", "--table", table, "status", "1"); code != 2 || !strings.Contains(errOut, "read-only") {
		t.Errorf("read-only via hub: exit %d, %s", code, errOut)
	}
}

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
