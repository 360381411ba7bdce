package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/addrtable"
	"github.com/openenoc/oetp/cmd/oetp/internal/regs"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// regsBench is a responder with 64 KiB of RAM at 0 and an initiator on an
// in-memory switch: regs' reads and writes run on the real engine.
type regsBench struct {
	sw   *mem.Switch
	sMAC wire.MAC
	ram  *memory.RAM
	srv  *endpoint.Endpoint
	init *endpoint.Endpoint
}

func newRegsBench(t *testing.T) *regsBench {
	t.Helper()
	return newRegsBenchTimeout(t, 5*time.Second)
}

func newRegsBenchTimeout(t *testing.T, timeout time.Duration) *regsBench {
	t.Helper()
	sw, err := mem.NewSwitch(mem.Config{QueueLen: 256})
	if err != nil {
		t.Fatal(err)
	}
	sMAC, _ := wire.ParseMAC(macA)
	cMAC, _ := wire.ParseMAC(macB)
	ram, err := memory.NewRAM(0, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := sw.Attach(sMAC)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := endpoint.New(sp, ram, endpoint.Config{MAC: sMAC})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.SetPeer(0, endpoint.Peer{MAC: cMAC, Mode: endpoint.ModeRMEM, WindowSize: 64 << 10}); err != nil {
		t.Fatal(err)
	}
	cp, err := sw.Attach(cMAC)
	if err != nil {
		t.Fatal(err)
	}
	ini, err := endpoint.New(cp, nil, endpoint.Config{MAC: cMAC, RMEMTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ini.Close() })
	if err := ini.SetPeer(0, endpoint.Peer{MAC: sMAC, Mode: endpoint.ModeRMEM, WindowSize: wholeSpace}); err != nil {
		t.Fatal(err)
	}
	return &regsBench{sw: sw, sMAC: sMAC, ram: ram, srv: srv, init: ini}
}

func (b *regsBench) word(addr uint32) uint32 {
	return binary.LittleEndian.Uint32(b.ram.Bytes()[addr:])
}

func (b *regsBench) setWord(addr, v uint32) {
	binary.LittleEndian.PutUint32(b.ram.Bytes()[addr:], v)
}

// write plans and performs a regs write as the command does.
func (b *regsBench) write(t *testing.T, n addrtable.Node, values ...string) error {
	t.Helper()
	writes, _, err := regs.Plan(n, values)
	if err != nil {
		return err
	}
	_, err = regs.Write(context.Background(), b.init, writes)
	return err
}

func loadExample(t *testing.T) *addrtable.Table {
	t.Helper()
	tab, err := addrtable.Load("../../examples/regs.toml")
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func tableNode(t *testing.T, tab *addrtable.Table, name string) addrtable.Node {
	t.Helper()
	n, err := tab.Node(name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRegsBitfieldIsOneMaskedWrite: a bitfield write is one RMEM write with
// BitEnable = the mask (no read), the rest of the word is untouched, and a
// read returns the field shifted down.
func TestRegsBitfieldIsOneMaskedWrite(t *testing.T) {
	b := newRegsBench(t)
	tab := loadExample(t)
	b.setWord(0x0, 0x12345678)
	before := b.srv.Stats()
	if err := b.write(t, tableNode(t, tab, "ctrl.mode"), "0xA"); err != nil {
		t.Fatal(err)
	}
	after := b.srv.Stats()
	if w := b.word(0); w != 0x123456A8 {
		t.Errorf("word after ctrl.mode = 0xA: 0x%08X, want 0x123456A8", w)
	}
	if got := after.ServedRMEMWrite - before.ServedRMEMWrite; got != 1 {
		t.Errorf("served %d RMEM writes, want 1", got)
	}
	if got := after.ServedRMEMRead - before.ServedRMEMRead; got != 0 {
		t.Errorf("served %d RMEM reads for a bitfield write, want 0 (no read-modify-write)", got)
	}
	if got := after.RxFrames - before.RxFrames; got != 1 {
		t.Errorf("server received %d frames, want 1", got)
	}
	// The top bit and bit 0.
	if err := b.write(t, tableNode(t, tab, "ctrl.enable"), "1"); err != nil {
		t.Fatal(err)
	}
	if err := b.write(t, tableNode(t, tab, "ctrl.reset"), "1"); err != nil {
		t.Fatal(err)
	}
	if w := b.word(0); w != 0x923456A9 {
		t.Errorf("word after enable, reset: 0x%08X, want 0x923456A9", w)
	}
	words, err := regs.Read(context.Background(), b.init, []uint32{0})
	if err != nil {
		t.Fatal(err)
	}
	var r regsResult
	r.fillRead(tableNode(t, tab, "ctrl.mode"), []uint32{0}, words, macA)
	if r.Value.Uint64() != 0xA || *r.Data != 0x923456A9 {
		t.Errorf("read ctrl.mode = %v (word 0x%08X), want 0xA", r.Value, *r.Data)
	}
	// status.errors, bits 15:8.
	b.setWord(0x4, 0x00002A01)
	words, err = regs.Read(context.Background(), b.init, []uint32{4})
	if err != nil {
		t.Fatal(err)
	}
	if got := tableNode(t, tab, "status.errors").Field(words[0]); got != 0x2A {
		t.Errorf("status.errors = 0x%X, want 0x2A", got)
	}
}

func TestRegsRefusedBeforeSending(t *testing.T) {
	tab := loadExample(t)
	for _, tc := range []struct {
		node   string
		values []string
		want   string
	}{
		{"ctrl.mode", []string{"16"}, "does not fit"},
		{"ctrl.mode", []string{"1", "2"}, "give one VALUE, not 2"},
		{"ctrl", []string{"0x100000000"}, "does not fit"},
		{"ctrl", []string{"-1"}, "not a number"},
		{"buffer", []string{"1", "0x100000000"}, "(word 1) does not fit 32 bits"},
		{"status", []string{"1"}, "read-only"},
	} {
		n := tableNode(t, tab, tc.node)
		_, _, err := regs.Plan(n, tc.values)
		var ue *usageError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !asUsage(err, &ue) {
			t.Errorf("regs write %s %v: %v, want a usage error containing %q", tc.node, tc.values, err, tc.want)
		}
	}
	big := make([]string, 257)
	for i := range big {
		big[i] = "1"
	}
	if _, _, err := regs.Plan(tableNode(t, tab, "buffer"), big); err == nil || !strings.Contains(err.Error(), "which holds 256") {
		t.Errorf("257 values into a 256-word block: %v", err)
	}
}

func asUsage(err error, ue **usageError) bool {
	e, ok := err.(*usageError)
	*ue = e
	return ok
}

func TestRegsBlockAndPort(t *testing.T) {
	b := newRegsBench(t)
	tab := loadExample(t)
	buf := tableNode(t, tab, "buffer")
	if err := b.write(t, buf, "1", "2", "0xDEADBEEF"); err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint32{1, 2, 0xDEADBEEF, 0} {
		if got := b.word(0x1000 + uint32(i)*4); got != want {
			t.Errorf("buffer word %d = 0x%08X, want 0x%08X", i, got, want)
		}
	}
	addrs, err := regs.Reads(buf, 3)
	if err != nil {
		t.Fatal(err)
	}
	words, err := regs.Read(context.Background(), b.init, addrs)
	if err != nil || !cmp.Equal(words, []uint32{1, 2, 0xDEADBEEF}) {
		t.Errorf("buffer read = %x, %v", words, err)
	}
	// A port reads all its words at one address.
	fifo := tableNode(t, tab, "fifo")
	b.setWord(0x2000, 0x55)
	b.setWord(0x2004, 0x66)
	before := b.srv.Stats()
	addrs, _ = regs.Reads(fifo, 0)
	words, err = regs.Read(context.Background(), b.init, addrs)
	if err != nil || len(words) != 16 {
		t.Fatalf("fifo read = %x, %v", words, err)
	}
	for i, w := range words {
		if w != 0x55 {
			t.Errorf("fifo word %d = 0x%X, want 0x55 (every read at 0x2000)", i, w)
		}
	}
	if got := b.srv.Stats().ServedRMEMRead - before.ServedRMEMRead; got != 16 {
		t.Errorf("served %d reads, want 16", got)
	}
	if _, err := regs.Reads(fifo, 17); err == nil || !strings.Contains(err.Error(), "holds 16 words") {
		t.Errorf("--count 17: %v", err)
	}
	if _, err := regs.Reads(tableNode(t, tab, "ctrl"), 2); err == nil || !strings.Contains(err.Error(), "block and port") {
		t.Errorf("--count on a register: %v", err)
	}
}

// TestRegsLiteXWideCSR writes and reads a 64-bit LiteX CSR (size 2) and an
// 8-bit-wide 32-bit CSR (size 4), most significant word first.
func TestRegsLiteXWideCSR(t *testing.T) {
	b := newRegsBench(t)
	dir := t.TempDir()
	csv := filepath.Join(dir, "csr.csv")
	writeFile(t, csv, []byte("csr_register,ctrl_wide,0x100,2,rw\nconstant,config_csr_data_width,32,,\n"))
	tab, err := addrtable.Load(csv)
	if err != nil {
		t.Fatal(err)
	}
	wide := tableNode(t, tab, "ctrl_wide")
	if err := b.write(t, wide, "0x1122334455667788"); err != nil {
		t.Fatal(err)
	}
	if hi, lo := b.word(0x100), b.word(0x104); hi != 0x11223344 || lo != 0x55667788 {
		t.Errorf("words 0x%08X 0x%08X, want 0x11223344 0x55667788", hi, lo)
	}
	addrs, _ := regs.Reads(wide, 0)
	words, err := regs.Read(context.Background(), b.init, addrs)
	if err != nil {
		t.Fatal(err)
	}
	var r regsResult
	r.fillRead(wide, addrs, words, macA)
	if r.Value.Text(16) != "1122334455667788" {
		t.Errorf("read %x", r.Value)
	}
	csv8 := filepath.Join(dir, "csr8.csv")
	writeFile(t, csv8, []byte("csr_register,scratch,0x200,4,rw\nconstant,config_csr_data_width,8,,\n"))
	tab8, err := addrtable.Load(csv8)
	if err != nil {
		t.Fatal(err)
	}
	s8 := tableNode(t, tab8, "scratch")
	for i := 0; i < 4; i++ {
		b.setWord(0x200+uint32(i)*4, 0xFFFFFF00)
	}
	if err := b.write(t, s8, "0x12345678"); err != nil {
		t.Fatal(err)
	}
	// Each word's low byte carries 8 bits; the bits above the CSR data
	// width are not written (BitEnable 0xFF).
	for i, want := range []uint32{0xFFFFFF12, 0xFFFFFF34, 0xFFFFFF56, 0xFFFFFF78} {
		if got := b.word(0x200 + uint32(i)*4); got != want {
			t.Errorf("word %d = 0x%08X, want 0x%08X", i, got, want)
		}
	}
	addrs, _ = regs.Reads(s8, 0)
	words, err = regs.Read(context.Background(), b.init, addrs)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := s8.Join(words); v.Cmp(big.NewInt(0x12345678)) != 0 {
		t.Errorf("read back 0x%x", v)
	}
	if _, _, err := regs.Plan(s8, []string{"0x100000000"}); err == nil || !strings.Contains(err.Error(), "32 bits wide") {
		t.Errorf("33-bit value into a 32-bit CSR: %v", err)
	}
}

// TestRegsFailureSaysWhatRan: a multi-word write that fails part-way says
// which words were written.
func TestRegsFailureSaysWhatRan(t *testing.T) {
	b := newRegsBench(t)
	// Two words, the second outside the server's 64 KiB window.
	n := addrtable.Node{Name: "edge", Address: 0xFFFC, Mask: addrtable.FullMask, Perm: addrtable.ReadWrite,
		Mode: addrtable.Single, Size: 8, Words: 2, Stride: 4}
	writes, _, err := regs.Plan(n, []string{"0x0000000100000002"})
	if err != nil {
		t.Fatal(err)
	}
	done, err := regs.Write(context.Background(), b.init, writes)
	if done != 1 || err == nil {
		t.Fatalf("done %d, err %v", done, err)
	}
	if endpoint.CodeOf(err) != wire.Code(9) || !strings.Contains(err.Error(), "word 1 of 2 (0x00010000)") || !strings.Contains(err.Error(), "word 0 before it completed") {
		t.Errorf("error %v (code %v)", err, endpoint.CodeOf(err))
	}
	if b.word(0xFFFC) != 1 {
		t.Errorf("word 0 = 0x%X, want 1", b.word(0xFFFC))
	}
}

func TestRegsListCLI(t *testing.T) {
	out, errOut, code := runCLI(t, "", "regs", "list", "--table", "../../examples/regs.toml", "status")
	want := `NAME           ADDRESS     MASK        MODE    PERM  SIZE  DESCRIPTION
status         0x00000004  0xffffffff  single  r     4     
status.ready   0x00000004  0x00000001  single  r     4     
status.errors  0x00000004  0x0000ff00  single  r     4     error counter, saturating
`
	if code != 0 || out != want {
		t.Errorf("regs list status: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
	out, errOut, code = runCLI(t, "", "regs", "list", "--table", "../../addrtable/testdata/uhal/top.xml", "--json")
	if code != 0 {
		t.Fatalf("regs list --json: exit %d, %s", code, errOut)
	}
	var got struct {
		Format string
		Nodes  []regs.NodeJSON
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Format != "uHAL XML" || len(got.Nodes) != 28 {
		t.Fatalf("format %q, %d nodes", got.Format, len(got.Nodes))
	}
	if n := got.Nodes[1]; n != (regs.NodeJSON{Name: "ctrl.reset", Address: 0, Mask: 1, Mode: "single", Permission: "w", Size: 4, Words: 1, Stride: 4, Description: "write 1 to reset"}) {
		t.Errorf("node 1 %+v", n)
	}
	if n := got.Nodes[11]; n.Name != "fifo" || n.Address != 0xC00 || !n.Volatile || n.Mode != "port" || n.Size != 32 {
		t.Errorf("node 11 %+v", n)
	}
}

func TestRegsUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.xml")
	writeFile(t, bad, []byte("<node>\n<node id=\"r\" permission=\"rx\"/>\n</node>\n"))
	warn := filepath.Join(dir, "warn.csv")
	writeFile(t, warn, []byte("csr_register,a,0x0,1,ro\n"))
	ex := "../../examples/regs.toml"
	peer := []string{"--iface", "oetp-no-such-if", "--peer", macA}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"regs"}, "needs a subcommand"},
		{[]string{"regs", "list"}, "--table is required (or --device NAME with an address_table)"},
		{[]string{"regs", "list", "--table", bad}, "--table: " + bad + `:2: node "r": permission: permission "rx" is not one of`},
		{[]string{"regs", "list", "--table", filepath.Join(dir, "x.yaml")}, "must end in .xml"},
		{[]string{"regs", "list", "--table", ex, "nope"}, `no node "nope"`},
		{append([]string{"regs", "read", "--table", ex, "nope"}, peer...), `no node "nope"`},
		{append([]string{"regs", "read", "--table", ex, "ctrl.reset"}, peer...), `node "ctrl.reset" is write-only (permission w): nothing sent`},
		{append([]string{"regs", "write", "--table", ex, "status", "1"}, peer...), `node "status" is read-only (permission r): nothing sent`},
		{append([]string{"regs", "write", "--table", ex, "status.ready", "1"}, peer...), `read-only`},
		{append([]string{"regs", "write", "--table", ex, "ctrl.mode", "16"}, peer...), `value 0x10 does not fit node "ctrl.mode": its field is 4 bits wide`},
		{append([]string{"regs", "write", "--table", ex, "ctrl.mode", "x"}, peer...), `VALUE: "x" is not a number`},
		{append([]string{"regs", "write", "--table", ex, "ctrl.mode"}, peer...), `requires at least 2 arg(s)`},
		{append([]string{"regs", "read", "--table", ex, "fifo", "--count", "17"}, peer...), `holds 16 words`},
		{append([]string{"regs", "read", "--table", warn, "a", "--addr", "4"}, peer...), `--iface oetp-no-such-if`},
		// The table's node is at hand before any interface is opened.
		{append([]string{"regs", "write", "--table", ex, "ctrl.mode", "3"}, peer...), `--iface oetp-no-such-if`},
	} {
		_, errOut, code := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("oetp %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
	_, errOut, _ := runCLI(t, "", append([]string{"regs", "read", "--table", warn, "a"}, peer...)...)
	if !strings.Contains(errOut, "warning: "+warn+": no config_csr_data_width constant") {
		t.Errorf("no warning: %q", errOut)
	}
}

func TestParseValue(t *testing.T) {
	for s, want := range map[string]string{"0": "0", "10": "a", "0x10": "10", "4K": "1000", "0xFFFFFFFFFFFFFFFF": "ffffffffffffffff",
		"0x1122334455667788990011": "1122334455667788990011", "123456789012345678901234567890": "18ee90ff6c373e0ee4e3f0ad2"} {
		v, err := regs.ParseValue(s)
		if err != nil || v.Text(16) != want {
			t.Errorf("regs.ParseValue(%q) = %v, %v; want 0x%s", s, v, err, want)
		}
	}
	for _, s := range []string{"", "-1", "+1", "0x", "1_000", "0xFFFFFFFFFFFFFFFFF_F", "abc", "1.5"} {
		if v, err := regs.ParseValue(s); err == nil {
			t.Errorf("regs.ParseValue(%q) = %v, want an error", s, v)
		}
	}
}

// TestRegsVolatileNeverRetried: with a retry policy on the peer, a lost
// response is recovered for a register but not for a port: the port read
// is sent once and fails (TIMEOUT), so its FIFO is popped at most once.
func TestRegsVolatileNeverRetried(t *testing.T) {
	b := newRegsBenchTimeout(t, 200*time.Millisecond)
	if err := b.init.SetRetryPolicy(0, endpoint.RetryPolicy{Retries: 3, MinRTO: 20 * time.Millisecond, Deadline: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	tab := loadExample(t)
	// dropResponse drops the first response of command cmd (with data
	// word data for a read): a late answer to an earlier step's extra try
	// cannot take the drop meant for this step.
	dropResponse := func(cmd wire.Cmd, data uint32) {
		t.Helper()
		match := func(f []byte) bool {
			fr := wire.Frame(f)
			if len(f) < wire.ParamOffset || fr.Cmd() != cmd {
				return false
			}
			return cmd != wire.RMEMReadRsp || (len(f) >= wire.ParamOffset+8 && fr.Param(2) == data)
		}
		b.sw.ClearRules()
		if err := b.sw.AddRule(mem.Rule{From: b.sMAC, Match: match, Action: mem.Drop, Count: 1}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) error {
		n := tableNode(t, tab, name)
		addrs, err := regs.Reads(n, 1)
		if n.Mode == addrtable.Single {
			addrs, err = regs.Reads(n, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = regs.Read(regs.Context(context.Background(), n), b.init, addrs)
		return err
	}
	b.setWord(0x8, 0x5A)
	b.setWord(0x2000, 0x55)
	dropResponse(wire.RMEMReadRsp, 0x5A)
	before := b.srv.Stats().ServedRMEMRead
	if err := read("scratch"); err != nil {
		t.Fatalf("register read with one lost response and retries: %v", err)
	}
	if got := b.srv.Stats().ServedRMEMRead - before; got < 2 {
		t.Errorf("register read served %d times, want at least 2 (recovered by a retry)", got)
	}
	dropResponse(wire.RMEMReadRsp, 0x55)
	before = b.srv.Stats().ServedRMEMRead
	err := read("fifo")
	if endpoint.CodeOf(err) != wire.CodeTimeout {
		t.Errorf("port read with its response lost: %v, want TIMEOUT", err)
	}
	if got := b.srv.Stats().ServedRMEMRead - before; got != 1 {
		t.Errorf("port read served %d times, want exactly 1 (never retried)", got)
	}
	// irq.clear: a TOML node marked volatile, written once.
	dropResponse(wire.RMEMWriteRsp, 0)
	w0 := b.srv.Stats().ServedRMEMWrite
	n := tableNode(t, tab, "irq.clear")
	writes, _, err := regs.Plan(n, []string{"1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := regs.Write(regs.Context(context.Background(), n), b.init, writes); endpoint.CodeOf(err) != wire.CodeTimeout {
		t.Errorf("volatile write with its response lost: %v, want TIMEOUT", err)
	}
	if got := b.srv.Stats().ServedRMEMWrite - w0; got != 1 {
		t.Errorf("volatile write served %d times, want exactly 1", got)
	}
}

// TestRegsListIPXACT lists an IP-XACT table: its format by content, its
// array elements and fields, and the reset values it gives.
func TestRegsListIPXACT(t *testing.T) {
	out, errOut, code := runCLI(t, "", "regs", "list", "--table", "../../addrtable/testdata/ipxact/board-2022.xml", "--json", "ctrl_blk.ctrl")
	if code != 0 {
		t.Fatalf("regs list: exit %d, %s", code, errOut)
	}
	var got struct {
		Format string `json:"format"`
		Nodes  []struct {
			Name  string  `json:"name"`
			Mask  uint32  `json:"mask"`
			Perm  string  `json:"permission"`
			Reset *uint32 `json:"reset"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, n := range got.Nodes {
		r := "-"
		if n.Reset != nil {
			r = fmt.Sprintf("0x%X", *n.Reset)
		}
		rows = append(rows, fmt.Sprintf("%s 0x%08X %s %s", n.Name, n.Mask, n.Perm, r))
	}
	want := []string{"ctrl_blk.ctrl 0xFFFFFFFF rw 0xA1000051", "ctrl_blk.ctrl.enable 0x00000001 rw 0x1",
		"ctrl_blk.ctrl.mode 0x000000F0 rw 0x5", "ctrl_blk.ctrl.version 0xFF000000 r 0xA1"}
	if got.Format != "IP-XACT XML" || !slices.Equal(rows, want) {
		t.Errorf("format %q, nodes\n%q\nwant\n%q", got.Format, rows, want)
	}
	out, _, code = runCLI(t, "", "regs", "list", "--table", "../../addrtable/testdata/ipxact/board-2014.xml", "ctrl_blk.scratch")
	if code != 0 || strings.Count(out, "ctrl_blk.scratch[") != 4 {
		t.Errorf("regs list ctrl_blk.scratch: exit %d\n%s", code, out)
	}
}
