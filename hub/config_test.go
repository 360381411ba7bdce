package hub_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/link/rlink"
	"github.com/openenoc/oetp/wire"
)

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hub.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "token"), []byte("s3cret\n"), 0o600)
	path := filepath.Join(dir, "hub.toml")
	os.WriteFile(path, []byte(`socket = "/tmp/x.sock"
listen = "7700"
token_file = "token"
metrics = "9110"

[[device]]
name = "board1"
iface = "eth1"
mac = "02:0e:0c:00:00:01"
address_table = "tables/board.xml"
timeout = "250ms"
dma_timeout = "2s"
max_frame = 1514
retries = 3
deadline = "3s"
volatile = ["0x2000:4", "0x3000:0x100"]
transport = "auto"

[device.local]
rmem = "02:0e:0c:00:01:01"
dma_write = "02:0e:0c:00:01:02"
dma_read = "02:0e:0c:00:01:03"

[[device]]
name = "board2"
iface = "eth1"
mac = "02:0e:0c:00:00:02"
`), 0o644)
	c, err := hub.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Socket != "/tmp/x.sock" || c.Listen != "7700" || c.Token != "s3cret" || c.Metrics != "9110" || !c.HoldRoles || len(c.Devices) != 2 {
		t.Fatalf("%+v", c)
	}
	d := c.Devices[0]
	want := hub.DeviceConfig{Name: "board1", Iface: "eth1", MAC: wire.MAC{2, 0xe, 0xc, 0, 0, 1},
		AddressTable: filepath.Join(dir, "tables/board.xml"),
		Local:        [3]wire.MAC{{2, 0xe, 0xc, 0, 1, 1}, {2, 0xe, 0xc, 0, 1, 2}, {2, 0xe, 0xc, 0, 1, 3}},
		RMEMTimeout:  250 * time.Millisecond, DMATimeout: 2 * time.Second, MaxFrame: 1514,
		Retry:     endpoint.RetryPolicy{Retries: 3, Deadline: 3 * time.Second, Volatile: []endpoint.AddrRange{{Base: 0x2000, Size: 4}, {Base: 0x3000, Size: 0x100}}},
		Transport: rlink.Auto}
	if d.Name != want.Name || d.AddressTable != want.AddressTable || d.Local != want.Local || d.RMEMTimeout != want.RMEMTimeout ||
		d.DMATimeout != want.DMATimeout || d.MaxFrame != want.MaxFrame || d.Transport != want.Transport ||
		d.Retry.Retries != 3 || d.Retry.Deadline != 3*time.Second || len(d.Retry.Volatile) != 2 || d.Retry.Volatile[1] != want.Retry.Volatile[1] {
		t.Errorf("device 1:\n%+v\nwant\n%+v", d, want)
	}
	// Omitted local MACs are derived: unicast, locally administered, distinct, stable.
	d2 := c.Devices[1]
	seen := map[wire.MAC]bool{}
	for k, m := range d2.Local {
		if m.IsGroup() || m[0]&2 == 0 || seen[m] || m != hub.DeriveMAC(d2.MAC, "board2", hub.Kind(k)) {
			t.Errorf("derived local MAC %d: %v", k, m)
		}
		seen[m] = true
	}
	if d2.RMEMTimeout != hub.DefaultTimeout || d2.Transport != rlink.V1 {
		t.Errorf("defaults: %+v", d2)
	}
	pe := c.PeerEntries()
	for _, w := range []string{"# device board1 (02:0e:0c:00:00:01 on eth1)", "mac = \"02:0e:0c:00:01:02\"\nmode = \"dma-write\"", `transport = "auto"`, "# device board2"} {
		if !strings.Contains(pe, w) {
			t.Errorf("peer entries lack %q:\n%s", w, pe)
		}
	}
}

func TestLoadConfigErrors(t *testing.T) {
	dev := "[[device]]\nname = \"b\"\niface = \"eth0\"\nmac = \"02:00:00:00:00:01\"\n"
	cases := []struct{ text, want string }{
		{"", "no [[device]]"},
		{dev + "colour = 1\n", "unknown key(s) device.colour"},
		{"[[device]]\nname = \"b\"\niface = \"eth0\"\n", "mac is missing"},
		{"[[device]]\niface = \"eth0\"\nmac = \"02:00:00:00:00:01\"\n", "name is missing"},
		{"[[device]]\nname = \"b\"\nmac = \"02:00:00:00:00:01\"\n", "iface is missing"},
		{dev + "timeout = \"fast\"\n", "timeout = \"fast\" is not a Go duration"},
		{dev + "retries = 100000\n", "retries = 100000 is out of range: use 0 (one try) through 1000"},
		{dev + "max_frame = 10\n", "max_frame = 10: max frame size 10 is out of range"},
		{dev + "busy_poll = \"1s\"\n", "busy_poll = \"1s\": use \"0\" (off) through 10ms"},
		{dev + "timeout = \"-1s\"\n", "negative"},
		{dev + "volatile = [\"0x10\"]\n", "volatile = \"0x10\" is not BASE:SIZE"},
		{dev + "transport = \"udp\"\n", "transport"},
		{dev + "[device.local]\nrmem = \"03:00:00:00:00:01\"\n", "group address"},
		{dev + "[device.local]\nrmem = \"02:00:00:00:00:09\"\ndma_read = \"02:00:00:00:00:09\"\n", "already used"},
		{dev + dev, "defined twice"},
	}
	for _, c := range cases {
		_, err := hub.LoadConfig(writeConfig(t, c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %q: error %v, want %q", c.text, err, c.want)
		}
	}
}

// The example configuration parses, and its address table loads.
func TestExampleConfig(t *testing.T) {
	c, err := hub.LoadConfig("../examples/hub.toml")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Devices[0]
	if d.Name != "board1" || d.Iface != "eth1" || d.RMEMTimeout != 100*time.Millisecond || d.Local[0] != (wire.MAC{2, 0xe, 0xc, 0, 1, 1}) {
		t.Errorf("%+v", d)
	}
	if _, err := os.Stat(d.AddressTable); err != nil {
		t.Errorf("address_table: %v", err)
	}
}

// TestConfigDevicesFile: devices = "FILE" adds the devices file's devices,
// their role MACs as the hub's local MACs (derived as the hub derives its
// own when the file gives none), beside the config's [[device]]s.
func TestConfigDevicesFile(t *testing.T) {
	dir := t.TempDir()
	devs := "[device.b1]\niface = \"eth1\"\nmac = \"02:0e:0c:00:00:02\"\ntimeout = \"250ms\"\ntransport = \"auto\"\naddress_table = \"t.toml\"\n" +
		"[device.b2]\niface = \"eth1\"\nmac = \"02:0e:0c:00:00:03\"\nrmem_mac = \"02:0e:0c:00:01:01\"\n"
	if err := os.WriteFile(filepath.Join(dir, "devices.toml"), []byte(devs), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "hub.toml")
	if err := os.WriteFile(cfg, []byte("devices = \"devices.toml\"\n[[device]]\nname = \"b0\"\niface = \"eth0\"\nmac = \"02:0e:0c:00:00:01\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := hub.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Devices) != 3 {
		t.Fatalf("%d devices, want 3", len(c.Devices))
	}
	b1, b2 := c.Devices[0], c.Devices[1]
	m1, _ := wire.ParseMAC("02:0e:0c:00:00:02")
	if b1.Name != "b1" || b1.Iface != "eth1" || b1.MAC != m1 || b1.RMEMTimeout != 250*time.Millisecond || b1.DMATimeout != 250*time.Millisecond ||
		b1.Transport != rlink.Auto || b1.AddressTable != filepath.Join(dir, "t.toml") {
		t.Errorf("b1 %+v", b1)
	}
	for k := range 3 {
		if want := hub.DeriveMAC(m1, "b1", hub.Kind(k)); b1.Local[k] != want {
			t.Errorf("b1 local %d = %v, want the hub's derivation %v", k, b1.Local[k], want)
		}
	}
	if r, _ := wire.ParseMAC("02:0e:0c:00:01:01"); b2.Local[0] != r || b2.Local[1].IsZero() {
		t.Errorf("b2 local %v", b2.Local)
	}
	if err := os.WriteFile(cfg, []byte("devices = \"nope.toml\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.LoadConfig(cfg); err == nil || !strings.Contains(err.Error(), "devices: "+filepath.Join(dir, "nope.toml")+": cannot read the devices file") {
		t.Errorf("missing devices file: %v", err)
	}
}
