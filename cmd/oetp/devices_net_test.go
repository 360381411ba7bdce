//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/devices"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// TestDevicesFileOverVeth: one devices file names the board for the CLI
// (rmem, regs, dma with --device, no hub), for `oetp devices peer-entries`
// (the serve standing in for the board takes its --peer lines), and for a
// hub (oetp hub --devices), through which the same --device commands then
// go with the same role MACs.
func TestDevicesFileOverVeth(t *testing.T) {
	tn := netns.NewPair(t)
	bin, h1, h2, dir := testutil.BuildCommand(t, "."), tn.Host(0), tn.Host(1), t.TempDir()
	regFile := filepath.Join(dir, "regs.bin")
	dumpRegion(t, regFile)
	writeFile(t, filepath.Join(dir, "board.xml"), []byte(dumpIPXACT))
	devFile := filepath.Join(dir, "devices.toml")
	writeFile(t, devFile, []byte(fmt.Sprintf("[device.board1]\niface = \"eth0\"\nmac = %q\nlocal_mac = \"02:0e:0c:00:01:00\"\ntimeout = \"2s\"\naddress_table = \"board.xml\"\n", netServer)))
	seed, _ := wire.ParseMAC("02:0e:0c:00:01:00")
	roles := [3]wire.MAC{devices.DeriveMAC(seed, "board1", 0), devices.DeriveMAC(seed, "board1", 1), devices.DeriveMAC(seed, "board1", 2)}

	run := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		return runExit(t, h2.Command("env", append(append(env, bin), args...)...))
	}
	// $OETP_DEVICES finds the file; no hub runs yet.
	env := []string{"OETP_DEVICES=" + devFile, "OETP_HUB=" + filepath.Join(dir, "hub.sock")}
	oetp := func(args ...string) (string, string, int) { t.Helper(); return run(env, args...) }

	out, errOut, code := oetp("devices", "peer-entries", "board1")
	want := fmt.Sprintf("--peer %v,mode=rmem\n--peer %v,mode=dma-write\n--peer %v,mode=dma-read\n", roles[0], roles[1], roles[2])
	if code != 0 || out != want {
		t.Fatalf("devices peer-entries: exit %d\n%s\nwant\n%s\nstderr %s", code, out, want, errOut)
	}
	// --csr: runnable RMEM writes at openENOC's CSR addresses, the
	// register names as comments; they are run against serve below.
	csrOut, errOut, code := oetp("devices", "peer-entries", "board1", "--csr", "--entry", "1", "--window", "0x100000:1M")
	var wantCSR strings.Builder
	wantCSR.WriteString("# openENOC peer entries 1..3 for board1; the endpoint interface's registers at 0x20000800, 4 peer entries\n")
	for r, m := range roles {
		e, n := 0x2000091C+uint32(r)*0x1C, r+1
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x%08x  # peers.entry[%d].mac_address.lo_word = 0x%x (%v)\n", e, devices.MACLo(m), n, devices.MACLo(m), m)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x%08x  # peers.entry[%d].mac_address.hi_word = 0x%x (%v)\n", e+4, devices.MACHi(m), n, devices.MACHi(m), m)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x00100000  # peers.entry[%d].local_address.base = 0x100000\n", e+0xC, n)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x00100000  # peers.entry[%d].remote_address.base = 0x100000\n", e+0x10, n)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x00100000  # peers.entry[%d].size.bytes = 0x100000\n", e+0x14, n)
		fmt.Fprintf(&wantCSR, "oetp rmem write --device board1 --addr 0x%08x --data 0x%08x --mask 0x00000003  # peers.entry[%d].dma.mode = 0x%x (%s)\n", e+0x18, r+1, n, r+1, devices.Role(r).BoardMode())
	}
	if code != 0 || csrOut != wantCSR.String() {
		t.Errorf("devices peer-entries --csr: exit %d\n%s\nwant\n%s\nstderr %s", code, csrOut, wantCSR.String(), errOut)
	}
	if m0, m2 := devices.MACLo(roles[0]), devices.MACHi(roles[2]); m0 != uint32(roles[0][2])<<24|uint32(roles[0][3])<<16|uint32(roles[0][4])<<8|uint32(roles[0][5]) || m2 != uint32(roles[2][0])<<8|uint32(roles[2][1]) {
		t.Errorf("MACLo/MACHi = 0x%08x/0x%04x for %v/%v", m0, m2, roles[0], roles[2])
	}
	out, _, code = oetp("devices", "--json")
	var list struct {
		Devices []map[string]any `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list.Devices) != 1 || list.Devices[0]["rmem_mac"] != roles[0].String() ||
		list.Devices[0]["address_table"] != filepath.Join(dir, "board.xml") || list.Devices[0]["timeout_s"] != 2.0 {
		t.Errorf("devices --json: exit %d, %s", code, out)
	}

	// The board's CSR block: every bit set, so that the masked mode writes
	// show they leave the other bits of dma alone.
	csrFile := filepath.Join(dir, "csr.bin")
	writeFile(t, csrFile, bytes.Repeat([]byte{0xFF}, 4096))
	serveArgs := append([]string{"--iface", "eth0", "--json-events", "--region", "0:4K:" + regFile, "--region", "0x20000000:4K:" + csrFile}, strings.Fields(want)...)
	srv := startServe(t, bin, h1, serveArgs...)
	word := func(addr uint32) uint32 { t.Helper(); return fileWord(t, regFile, addr) }

	// Direct: each command sends from the device's MAC for its role (the
	// board's entries admit only those).
	if out, errOut, code := oetp("regs", "write", "--device", "board1", "blk.ctrl.mode", "0xA"); code != 0 || out != "regs write 02:0e:0c:00:00:01 blk.ctrl.mode 0x00000100 mask 0x000000f0 = 0xa: ok\n" {
		t.Fatalf("regs write --device: exit %d, %q, %s", code, out, errOut)
	}
	if w := word(0x100); w != 0xA10000A1 {
		t.Errorf("word 0x100 = 0x%08X after blk.ctrl.mode = 0xA, want 0xA10000A1", w)
	}
	if _, errOut, code := oetp("regs", "write", "--device", "board1", "blk.ctrl.version", "1"); code != 2 || !strings.Contains(errOut, `node "blk.ctrl.version" is read-only`) {
		t.Errorf("write to a read-only IP-XACT field: exit %d, %s", code, errOut)
	}
	if out, errOut, code := oetp("regs", "read", "--device", "board1", "blk.ctrl.mode"); code != 0 || !strings.HasSuffix(out, " = 0xa\n") {
		t.Errorf("regs read --device: exit %d, %q, %s", code, out, errOut)
	}
	if out, errOut, code := oetp("rmem", "read", "--device", "board1", "--addr", "0x110"); code != 0 || !strings.Contains(out, "0x11111111") {
		t.Errorf("rmem read --device: exit %d, %q, %s", code, out, errOut)
	}
	in := filepath.Join(dir, "in.bin")
	writeFile(t, in, []byte("0123456789abcdef"))
	if _, errOut, code := oetp("dma", "write", "--device", "board1", "--addr", "0x800", "--in", in); code != 0 {
		t.Fatalf("dma write --device: exit %d, %s", code, errOut)
	}
	back := filepath.Join(dir, "back.bin")
	if _, errOut, code := oetp("dma", "read", "--device", "board1", "--addr", "0x800", "--length", "16", "--out", back); code != 0 {
		t.Fatalf("dma read --device: exit %d, %s", code, errOut)
	}
	if b, _ := os.ReadFile(back); string(b) != "0123456789abcdef" {
		t.Errorf("dma read back %q", b)
	}
	out, errOut, code = oetp("regs", "dump", "--device", "board1", "blk.scratch", "--json")
	wantDump := "{\"name\":\"blk.scratch[0]\",\"address\":272,\"value\":286331153,\"fields\":{}}\n{\"name\":\"blk.scratch[1]\",\"address\":276,\"value\":572662306,\"fields\":{}}\n"
	if code != 0 || out != wantDump {
		t.Errorf("regs dump --device: exit %d\n%s\nstderr %s", code, out, errOut)
	}
	if n := srv.stats()["served_rmem_write"].(float64); n != 1 {
		t.Errorf("the board served %v RMEM writes, want 1 (the refused read-only write sent nothing)", n)
	}

	// The --csr lines run as printed and write exactly the entries'
	// registers.
	for _, line := range strings.Split(strings.TrimSpace(csrOut), "\n")[1:] {
		cmdline, _, _ := strings.Cut(line, "#")
		args := strings.Fields(cmdline)
		if _, errOut, code := oetp(args[1:]...); code != 0 {
			t.Fatalf("%s: exit %d, %s", line, code, errOut)
		}
	}
	csr, err := os.ReadFile(csrFile)
	if err != nil {
		t.Fatal(err)
	}
	for r, m := range roles {
		e := 0x91C + r*0x1C
		for off, want := range map[int]uint32{0: devices.MACLo(m), 4: devices.MACHi(m), 8: 0xFFFFFFFF, 0xC: 0x100000, 0x10: 0x100000, 0x14: 0x100000, 0x18: 0xFFFFFFFC | uint32(r+1)} {
			if w := binary.LittleEndian.Uint32(csr[e+off:]); w != want {
				t.Errorf("CSR 0x%08x (peers.entry[%d] + 0x%x) = 0x%08x, want 0x%08x", 0x20000000+e+off, r+1, off, w, want)
			}
		}
	}
	for a := 0; a < 4096; a += 4 {
		if (a < 0x91C || a >= 0x91C+3*0x1C) && binary.LittleEndian.Uint32(csr[a:]) != 0xFFFFFFFF {
			t.Errorf("CSR 0x%08x outside the three entries was written", 0x20000000+a)
		}
	}

	// Python with no hub running: open_device starts a private hub for
	// the board (the same devices file, the same role MACs), and stops it.
	if py, err := exec.LookPath("python3"); err != nil {
		t.Log("python3 is not installed: the Python client's private hub is not run")
	} else {
		runDir := t.TempDir()
		cmd := h2.Command("env", "OETP_DEVICES="+devFile, "OETP_HUB="+filepath.Join(dir, "hub.sock"), "OETP_BIN="+bin,
			"XDG_RUNTIME_DIR="+runDir, "PYTHONDONTWRITEBYTECODE=1", py, filepath.Join(pythonDir(), "tests", "private_check.py"))
		if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("private_check: ok")) {
			t.Fatalf("python3 private_check.py: %v\n%s", err, out)
		}
		for addr, want := range map[uint32]uint32{0x100: 0xA10000A0, 0x110: 0x11111111, 0x114: 0x600DF00D, 0x120: 0xC0DE0001} {
			if w := word(addr); w != want {
				t.Errorf("after private_check.py: word 0x%x = 0x%08X, want 0x%08X", addr, w, want)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(runDir, "oetp-hub-*")); len(left) != 0 {
			t.Errorf("private hub directories left behind: %v", left)
		}
	}

	// Through a hub serving the same devices file: same names, same MACs.
	sock := filepath.Join(dir, "hub.sock")
	startReady(t, bin, h2, "hub", "--devices", devFile, "--socket", sock)
	c, d := hubDevice(t, sock, "board1")
	if d.Local != roles {
		t.Errorf("the hub's local MACs %v, want the devices file's %v", d.Local, roles)
	}
	r0, w0 := hubOps(t, c, "read"), hubOps(t, c, "write")
	if out, errOut, code := oetp("regs", "write", "--device", "board1", "blk.scratch[1]", "0x5A5A5A5A"); code != 0 || !strings.Contains(errOut, "through the hub at "+sock) {
		// The route is said: a plain command through a hub notes it on stderr.
		t.Errorf("regs write --device via hub: exit %d, %q, %s", code, out, errOut)
	}
	if w := word(0x114); w != 0x5A5A5A5A {
		t.Errorf("word 0x114 = 0x%08X, want 0x5A5A5A5A", w)
	}
	out, errOut, code = oetp("regs", "dump", "--device", "board1")
	if code != 0 || !strings.Contains(out, "blk.scratch[1]  0x00000114  0x5a5a5a5a") || !strings.Contains(out, "mode=0xa") {
		t.Errorf("regs dump --device via hub: exit %d\n%s\nstderr %s", code, out, errOut)
	}
	if n, m := hubOps(t, c, "read")-r0, hubOps(t, c, "write")-w0; n != 3 || m != 1 {
		t.Errorf("the hub ran %d reads and %d writes, want 3 (one dump batch) and 1", n, m)
	}

	// Python: the same devices file and hub; attribute access and a
	// PeakRDL-style model through oetp.peakrdl's callbacks.
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Log("python3 is not installed: the Python client's devices file is not run")
		return
	}
	// In the board's namespace, as a hub in another one is not used.
	cmd := h2.Command("env", "OETP_HUB="+sock, "OETP_DEVICES="+devFile, "PYTHONDONTWRITEBYTECODE=1", py, filepath.Join(pythonDir(), "tests", "names_check.py"))
	if out, err := cmd.CombinedOutput(); err != nil || !bytes.Contains(out, []byte("names_check: ok")) {
		t.Fatalf("python3 names_check.py: %v\n%s", err, out)
	}
	for addr, want := range map[uint32]uint32{0x100: 0xA10000A0, 0x110: 0x12345678, 0x114: 0x5A5A5A5A, 0x118: 0x00007700} {
		if w := word(addr); w != want {
			t.Errorf("after names_check.py: word 0x%x = 0x%08X, want 0x%08X", addr, w, want)
		}
	}
}
