//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

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
