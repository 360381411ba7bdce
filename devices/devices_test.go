package devices

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/wire"
)

const example = `# two boards
[device.board1]
iface = "eth1"
mac = "02:0e:0c:00:00:02"          # the board
local_mac = "02:0e:0c:00:01:00"
transport = "reliable"
timeout = "250ms"
address_table = "board1.xml"

[device."board-2"]
iface = "eth2"
mac = "02:0e:0c:00:00:03"
rmem_mac = "02:0e:0c:00:02:01"
dma_write_mac = "02:0e:0c:00:02:02"
dma_read_mac = "02:0e:0c:00:02:03"
address_table = "/abs/t.toml"
`

func mac(s string) wire.MAC {
	m, err := wire.ParseMAC(s)
	if err != nil {
		panic(err)
	}
	return m
}

func TestParseExample(t *testing.T) {
	f, err := Parse(filepath.Join("dir", "devices.toml"), []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Devices) != 2 || f.Devices[0].Name != "board-2" || f.Devices[1].Name != "board1" {
		t.Fatalf("devices %+v", f.Devices)
	}
	b1, err := f.Device("board1")
	if err != nil {
		t.Fatal(err)
	}
	seed := mac("02:0e:0c:00:01:00")
	want := Device{Name: "board1", Iface: "eth1", MAC: mac("02:0e:0c:00:00:02"),
		Local:     [NumRoles]wire.MAC{DeriveMAC(seed, "board1", RMEM), DeriveMAC(seed, "board1", DMAWrite), DeriveMAC(seed, "board1", DMARead)},
		Transport: "reliable", Timeout: 250 * time.Millisecond, AddressTable: filepath.Join("dir", "board1.xml"),
		File: filepath.Join("dir", "devices.toml"), Line: 2}
	if b1 != want {
		t.Errorf("board1\n got %+v\nwant %+v", b1, want)
	}
	b2, _ := f.Device("board-2")
	if b2.Local != [NumRoles]wire.MAC{mac("02:0e:0c:00:02:01"), mac("02:0e:0c:00:02:02"), mac("02:0e:0c:00:02:03")} ||
		b2.Transport != "v1" || b2.Timeout != DefaultTimeout || b2.AddressTable != "/abs/t.toml" || b2.Line != 10 {
		t.Errorf("board-2 %+v", b2)
	}
	if _, err := f.Device("nope"); err == nil || err.Error() != `no device "nope" in `+filepath.Join("dir", "devices.toml")+`: its devices are board-2, board1` {
		t.Errorf("unknown device: %v", err)
	}
}

// TestDeriveMACPinned pins the derivation the hub shares: a change would
// move every board's peer entries.
func TestDeriveMACPinned(t *testing.T) {
	m := mac("02:0e:0c:00:00:01")
	got := []string{DeriveMAC(m, "board1", RMEM).String(), DeriveMAC(m, "board1", DMAWrite).String(), DeriveMAC(m, "board1", DMARead).String()}
	for i, g := range got {
		d := mac(g)
		if d[0]&1 != 0 || d[0]&2 == 0 {
			t.Errorf("role %d MAC %s is not locally administered unicast", i, g)
		}
		for j := i + 1; j < len(got); j++ {
			if got[j] == g {
				t.Errorf("roles %d and %d share %s", i, j, g)
			}
		}
	}
	if DeriveMAC(m, "board1", RMEM) != DeriveMAC(m, "board1", RMEM) || DeriveMAC(m, "board2", RMEM) == DeriveMAC(m, "board1", RMEM) {
		t.Error("derivation not stable, or the same for two names")
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"syntax", "[device.a]\niface = \n", "d.toml:2: TOML:"},
		{"unknown key", "[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\nmak = \"x\"\n", `d.toml:4: unknown key "device.a.mak": a [device.NAME] table has iface, mac, local_mac`},
		{"unknown top", "devise = 1\n", `d.toml:1: unknown key "devise"`},
		{"no iface", "[device.a]\nmac = \"02:00:00:00:00:01\"\n", `d.toml:1: device "a": iface is missing`},
		{"no mac", "[device.a]\niface = \"e\"\n", `d.toml:1: device "a": mac is missing`},
		{"bad mac", "[device.a]\niface = \"e\"\nmac = \"02:00\"\n", `d.toml:3: device "a": mac:`},
		{"group mac", "[device.a]\niface = \"e\"\nmac = \"03:00:00:00:00:01\"\n", `d.toml:3: device "a": mac 03:00:00:00:00:01 is not a unicast address`},
		{"role is board", "[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\nrmem_mac = \"02:00:00:00:00:01\"\n", `d.toml:4: device "a": rmem_mac 02:00:00:00:00:01 is the board's own MAC`},
		{"roles share", "[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\nrmem_mac = \"02:00:00:00:00:09\"\ndma_read_mac = \"02:00:00:00:00:09\"\n", `d.toml:5: device "a": rmem_mac and dma_read_mac are both 02:00:00:00:00:09: a v1 peer entry has one mode`},
		{"transport", "[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\n\ntransport = \"tcp\"\n", `d.toml:5: device "a": transport = "tcp" is not v1, reliable or auto`},
		{"timeout", "[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\ntimeout = \"1\"\n", `d.toml:4: device "a": timeout = "1" is not a duration`},
		{"shared local", "[device.a]\niface = \"e\"\nmac = \"02:00:00:00:00:01\"\nrmem_mac = \"02:00:00:00:00:09\"\n[device.b]\niface = \"e\"\nmac = \"02:00:00:00:00:02\"\ndma_write_mac = \"02:00:00:00:00:09\"\n", `dma_write_mac 02:00:00:00:00:09 on e is already device "a"'s rmem_mac: one MAC is one endpoint`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("d.toml", []byte(tc.doc))
			var e *Error
			if err == nil || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadChecks(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "devices.toml")
	if err := os.WriteFile(p, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil || len(f.Devices) != 2 {
		t.Fatalf("Load: %v", err)
	}
	if d, _ := f.Device("board1"); d.AddressTable != filepath.Join(dir, "board1.xml") {
		t.Errorf("address_table %q, want it next to the devices file", d.AddressTable)
	}
	if err := os.Chmod(p, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "is writable by every user (mode -rw-rw-rw-)") {
		t.Errorf("world-writable file: %v", err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, make([]byte, MaxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "more than 1048576 bytes") {
		t.Errorf("big file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "none.toml")); err == nil || !strings.Contains(err.Error(), "cannot read the devices file: no such file or directory") {
		t.Errorf("missing file: %v", err)
	}
}

func TestFind(t *testing.T) {
	t.Setenv(Env, "")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if p, how := Find("x.toml"); p != "x.toml" || how != "--devices" {
		t.Errorf("flag: %s %s", p, how)
	}
	if p, _ := Find(""); p != "/cfg/oetp/devices.toml" {
		t.Errorf("default with XDG_CONFIG_HOME: %s", p)
	}
	t.Setenv(Env, "/e.toml")
	if p, how := Find(""); p != "/e.toml" || how != "$OETP_DEVICES" {
		t.Errorf("env: %s %s", p, how)
	}
	t.Setenv(Env, "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "/home/u")
	if p, _ := Find(""); p != "/home/u/.config/oetp/devices.toml" {
		t.Errorf("default without XDG_CONFIG_HOME: %s", p)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse("d.toml", data)
		if err != nil {
			return
		}
		for _, d := range fl.Devices {
			if d.Iface == "" || d.MAC.IsZero() || d.MAC.IsGroup() {
				t.Fatalf("accepted %+v", d)
			}
			for _, m := range d.Local {
				if m.IsGroup() || m == d.MAC {
					t.Fatalf("accepted local MAC %v for %+v", m, d)
				}
			}
		}
	})
}
