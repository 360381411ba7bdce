package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openenoc/oetp/devices"
	"github.com/openenoc/oetp/wire"
)

// TestDevicesCommands runs oetp devices, devices peer-entries and regs list
// --device on a devices file: nothing is sent.
func TestDevicesCommands(t *testing.T) {
	dir := t.TempDir()
	table, err := filepath.Abs("../../addrtable/testdata/ipxact/board-2014.xml")
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "devices.toml")
	writeFile(t, f, []byte("[device.board1]\niface = \"eth1\"\nmac = \"02:0e:0c:00:00:02\"\ntransport = \"reliable\"\naddress_table = \""+table+"\"\n"+
		"[device.bare]\niface = \"eth2\"\nmac = \"02:0e:0c:00:00:03\"\nrmem_mac = \"02:0e:0c:00:09:01\"\n"))
	if err := os.Chmod(f, 0o600); err != nil {
		t.Fatal(err)
	}
	board, _ := wire.ParseMAC("02:0e:0c:00:00:02")
	r := [3]wire.MAC{devices.DeriveMAC(board, "board1", 0), devices.DeriveMAC(board, "board1", 1), devices.DeriveMAC(board, "board1", 2)}

	out, errOut, code := runCLI(t, "", "devices", "--devices", f)
	if code != 0 || len(strings.Split(strings.TrimSpace(out), "\n")) != 3 || !strings.Contains(out, r[0].String()) || !strings.Contains(out, "02:0e:0c:00:09:01") {
		t.Errorf("devices: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = runCLI(t, "", "devices", "peer-entries", "board1", "--devices", f, "--window", "0x100000:64K")
	want := "--peer " + r[0].String() + ",mode=rmem,window=0x100000:0x10000,transport=reliable\n" +
		"--peer " + r[1].String() + ",mode=dma-write,window=0x100000:0x10000,transport=reliable\n" +
		"--peer " + r[2].String() + ",mode=dma-read,window=0x100000:0x10000,transport=reliable\n"
	if code != 0 || out != want {
		t.Errorf("peer-entries: exit %d\n%s\nwant\n%s", code, out, want)
	}
	out, _, code = runCLI(t, "", "regs", "list", "--device", "board1", "--devices", f, "ctrl_blk.cmd")
	if code != 0 || !strings.Contains(out, "ctrl_blk.cmd.go") {
		t.Errorf("regs list --device: exit %d\n%s", code, out)
	}
	t.Setenv(devices.Env, f)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"regs", "list", "--device", "nope"}, `--device: no device "nope" in ` + f + `: its devices are bare, board1`},
		{[]string{"regs", "list", "--device", "bare"}, "--device bare has no address_table in " + f + ": add one, or give --table"},
		{[]string{"regs", "read", "--device", "bare", "x"}, "--device bare has no address_table in " + f},
		{[]string{"devices", "peer-entries", "board1", "--window", "1:0"}, `--window "1:0" is not BASE:SIZE`},
		{[]string{"devices", "peer-entries", "board1", "--entry", "2"}, "--entry applies to --csr"},
		{[]string{"rmem", "read", "--device", "board1", "--peer", "02:0e:0c:00:00:09", "--addr", "0"}, "--device board1 gives the interface, the board's MAC and this host's MACs: drop --peer"},
		{[]string{"devices", "--devices", filepath.Join(dir, "none.toml")}, "--devices: " + filepath.Join(dir, "none.toml") + ": cannot read the devices file"},
	} {
		_, errOut, code := runCLI(t, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
