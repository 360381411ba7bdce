package main

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/cmd/oetp/internal/serve"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/rlink"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/memspec"
	"github.com/openenoc/oetp/wire"
)

func mustMAC(t *testing.T, s string) wire.MAC {
	t.Helper()
	m, err := wire.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// serveSettingsOf parses serve's command line and merges it with the
// configuration file it names, without running anything.
func serveSettingsOf(t *testing.T, args ...string) (*serve.Settings, error) {
	t.Helper()
	cmd, sf := serveCommand()
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return sf.settings(cmd.Flags())
}

// TestServeConfigExample checks that examples/oetp.toml says what its
// comments say, and that flags override it.
func TestServeConfigExample(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "oetp.toml")
	got, err := serveSettingsOf(t, "--config", example)
	if err != nil {
		t.Fatal(err)
	}
	want := &serve.Settings{
		Iface: "eth1",
		Group: mustMAC(t, "03:0e:0c:00:00:01"),
		Regions: []memspec.RegionSpec{
			{Base: 0, Size: 64 << 10},
			{Base: 0x1000000, Size: 16 << 20, Path: "/dev/shm/oetp-ddr.bin"},
		},
		Faults: []memspec.FaultSpec{{Base: 0x2000000, Size: 4096, Resp: memory.SLVERR}},
		Peers: []endpoint.Peer{
			{MAC: mustMAC(t, "02:0e:0c:00:01:01"), Mode: endpoint.ModeRMEM, WindowBase: 0, WindowSize: 64 << 10, EventEnable: true},
			{MAC: mustMAC(t, "02:0e:0c:00:01:02"), Mode: endpoint.ModeDMAWrite, WindowBase: 0x1000000, WindowSize: 16 << 20, EventEnable: true},
			{MAC: mustMAC(t, "02:0e:0c:00:01:03"), Mode: endpoint.ModeDMARead, WindowBase: 0x1000000, WindowSize: 16 << 20, EventEnable: true},
		},
		Contexts:    4,
		RawPolicy:   endpoint.RawDrop,
		RMEMTimeout: time.Second,
		DMATimeout:  time.Second,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings of %s (-want +got):\n%s", example, diff)
	}

	// Flags override scalars; a list flag replaces the file's list.
	got, err = serveSettingsOf(t, "--config", example, "--iface", "eth9", "--contexts", "2", "--json-events",
		"--peer", "02:0e:0c:00:00:09,mode=3", "--rmem-timeout", "0", "--raw-policy", "promiscuous", "--mac", "02:0e:0c:00:00:05", "--busy-poll", "50us",
		"--placement", "off")
	if err != nil {
		t.Fatal(err)
	}
	want.Iface, want.Contexts, want.JSONEvents, want.RMEMTimeout, want.BusyPoll = "eth9", 2, true, 0, 50*time.Microsecond
	want.Placement = cli.PlaceOff
	want.RawPolicy, want.MAC = endpoint.RawPromiscuous, mustMAC(t, "02:0e:0c:00:00:05")
	want.Peers = []endpoint.Peer{{MAC: mustMAC(t, "02:0e:0c:00:00:09"), Mode: endpoint.ModeDMARead, WindowSize: 1 << 32, EventEnable: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("settings with flags over the file (-want +got):\n%s", diff)
	}
}

// TestServeUsageErrors checks that bad serve settings exit 2 before any
// network access, with a message naming the flag or key.
func TestServeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	conf := func(name, body string) string { return dirFile(t, dir, name, body) }
	unknown := conf("unknown.toml", "iface = \"lo\"\nspeed = 10\n")
	badRegion := conf("region.toml", "[[region]]\nbase = 0\nsize = \"0\"\n")
	noSize := conf("nosize.toml", "[[region]]\nbase = 0\n")
	noMode := conf("nomode.toml", "[[peer]]\nmac = \"02:0e:0c:00:00:02\"\n")
	badTimeout := conf("timeout.toml", "dma_timeout = \"soon\"\n")
	badTOML := conf("bad.toml", "iface = \n")
	badBusy := conf("busy.toml", "iface = \"lo\"\nbusy_poll = \"soon\"\n")
	badPlace := conf("place.toml", "iface = \"lo\"\nplacement = \"pinned\"\n")
	badNum := conf("num.toml", "[[fault]]\nbase = 1.5\nsize = 4\nresp = \"slverr\"\n")
	peer := "--peer=02:0e:0c:00:00:02,mode=rmem"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "--iface is required"},
		{[]string{"serve", "--iface", "lo", "--peer", "02:0e:0c:00:00:02"}, "--peer"},
		{[]string{"serve", "--iface", "lo", "--peer", "02:0e:0c:00:00:02,mode=9"}, "--peer"},
		{[]string{"serve", "--iface", "lo", peer, peer + ",transport=reliable"}, "different transports"},
		{[]string{"serve", "--iface", "lo", "--region", "0:64K", "--region", "0x8000:64K"}, "--region"},
		{[]string{"serve", "--iface", "lo", "--region", "0:0"}, "--region"},
		{[]string{"serve", "--iface", "lo", "--region", "2:4K:" + filepath.Join(dir, "f.bin")}, "--region"},
		{[]string{"serve", "--iface", "lo", "--region", "0:64K", "--fault", "0x1000:4K:slverr"}, "--fault"},
		{[]string{"serve", "--iface", "lo", "--fault", "0:4K:boom"}, "--fault"},
		{[]string{"serve", "--iface", "lo", "--group", "02:0e:0c:00:00:01"}, "--group"},
		{[]string{"serve", "--iface", "lo", "--mac", "03:0e:0c:00:00:01"}, "--mac"},
		{[]string{"serve", "--iface", "lo", "--contexts", "2000"}, "--contexts"},
		{[]string{"serve", "--iface", "lo", "--raw-policy", "some"}, "--raw-policy"},
		{[]string{"serve", "--iface", "lo", "--max-frame", "20"}, "--max-frame"},
		{[]string{"serve", "--iface", "lo", "--rmem-timeout", "-1s"}, "--rmem-timeout"},
		{[]string{"serve", "--iface", "lo", "--dma-timeout", "x"}, "--dma-timeout"},
		{[]string{"serve", "--iface", "nosuchif0", "--region", "0:4K"}, "--iface nosuchif0"},
		{[]string{"serve", "--iface", "lo", "--busy-poll", "20ms"}, "--busy-poll 20ms: use 0 (off) through 10ms"},
		{[]string{"serve", "--iface", "lo", "--busy-poll", "-1us"}, "--busy-poll -1µs: use 0 (off) through 10ms"},
		{[]string{"serve", "--config", badBusy}, `busy_poll: "soon" is not a duration`},
		{[]string{"serve", "--iface", "lo", "--placement", "pinned"}, `invalid argument "pinned" for "--placement" flag: "pinned": use auto or off`},
		{[]string{"serve", "--config", badPlace}, `placement: "pinned": use auto or off`},
		{[]string{"serve", "--config", filepath.Join(dir, "missing.toml")}, "--config"},
		{[]string{"serve", "--config", unknown}, `unknown key "speed"`},
		{[]string{"serve", "--config", badRegion}, "[[region]] #1: size"},
		{[]string{"serve", "--config", noSize}, "[[region]] #1 needs base and size"},
		{[]string{"serve", "--config", noMode}, "[[peer]] #1 needs mac and mode"},
		{[]string{"serve", "--config", badTimeout}, "dma_timeout"},
		{[]string{"serve", "--config", badTOML}, "--config " + badTOML},
		{[]string{"serve", "--config", badNum}, "is not a number"},
		{[]string{"serve", "--iface", "lo", "extra"}, "takes no arguments"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	// A region that was created for a file that failed to map is not left
	// behind by a failed start... but a created file stays (it is data):
	// only check that nothing was served.
	if _, err := os.Stat(filepath.Join(dir, "f.bin")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}

// TestInitiatorUsageErrors checks the one-shot commands' usage errors: exit
// 2, nothing on stdout, the flag named.
func TestInitiatorUsageErrors(t *testing.T) {
	dir := t.TempDir()
	p := "02:0e:0c:00:00:02"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rmem", "read"}, `required flag(s) "addr" not set`},
		{[]string{"rmem", "read", "--addr", "0"}, "--iface is required (or --device NAME from a devices file)"},
		{[]string{"rmem", "read", "--iface", "lo", "--addr", "0"}, "--peer is required (or --device NAME from a devices file)"},
		{[]string{"rmem", "read", "--device", "b", "--devices", filepath.Join(dir, "none.toml"), "--addr", "0"}, "--devices: " + filepath.Join(dir, "none.toml") + ": cannot read the devices file: no such file or directory"},
		{[]string{"rmem", "read", "--device", "b", "--iface", "lo", "--addr", "0"}, "--device b gives the interface, the board's MAC and this host's MACs: drop --iface"},
		{[]string{"rmem", "write", "--iface", "lo", "--peer", p, "--addr", "0"}, `required flag(s) "data" not set`},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0x1z"}, `"--addr"`},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0x100000000"}, `"--addr"`},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", "02:0e", "--addr", "0"}, `"--peer"`},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", "00:00:00:00:00:00", "--addr", "0"}, "--peer must not be the zero MAC"},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--timeout", "-1s"}, "--timeout"},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--timeout", "1"}, `"--timeout"`},
		{[]string{"rmem", "write", "--iface", "lo", "--peer", p, "--addr", "0", "--data", "1", "--mask", "-1"}, `"--mask"`},
		{[]string{"rmem", "read", "--iface", "nosuchif0", "--peer", p, "--addr", "0"}, "--iface nosuchif0"},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--mac", "03:00:00:00:00:01"}, "--mac"},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--max-frame", "35"}, "--max-frame"},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0", "extra"}, "takes no arguments"},
		{[]string{"dma", "write", "--iface", "lo", "--peer", p, "--addr", "0", "--in", filepath.Join(dir, "missing")}, "--in"},
		{[]string{"dma", "write", "--iface", "lo", "--peer", p, "--addr", "0"}, `required flag(s) "in" not set`},
		{[]string{"dma", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--length", "4"}, `required flag(s) "out" not set`},
		{[]string{"dma", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--length", "4", "--out", "-", "--json"}, "--out - and --json"},
		{[]string{"dma", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--length", "4", "--out", filepath.Join(dir, "no", "such", "dir")}, "--out"},
		{[]string{"dma", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--length", "4", "--out", filepath.Join(dir, "x"), "--fragment", "x"}, `"--fragment"`},
		{[]string{"rmem", "read", "--iface", "lo", "--peer", p, "--addr", "0", "--busy-poll", "11ms"}, "--busy-poll 11ms: use 0 (off) through 10ms"},
		{[]string{"dma", "write", "--iface", "lo", "--peer", p, "--addr", "0", "--in", "x", "--placement", "on"}, `invalid argument "on" for "--placement" flag: "on": use auto or off`},
		{[]string{"rmem", "frob"}, "unknown command"},
	} {
		out, errOut, code := runCLI(t, "", c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %v: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused dma read created its --out file: %v", err)
	}
}

// TestServeMaxReadRate: --max-read-rate and the max_read_rate key set the
// per-source read bound (off by default), and the flag overrides the file.
func TestServeMaxReadRate(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "serve.toml")
	writeTestFile(t, cfg, "iface = \"lo\"\nmax_read_rate = \"16M\"\n")
	for _, c := range []struct {
		args []string
		want int64
	}{
		{[]string{"--iface", "lo"}, 0},
		{[]string{"--iface", "lo", "--max-read-rate", "100K"}, 100 << 10},
		{[]string{"--config", cfg}, 16 << 20},
		{[]string{"--config", cfg, "--max-read-rate", "0"}, 0},
	} {
		s, err := serveSettingsOf(t, c.args...)
		if err != nil || s.MaxReadRate != c.want {
			t.Errorf("serve %v: MaxReadRate %v, %v; want %d", c.args, s, err, c.want)
		}
	}
}

func TestServePeerTransport(t *testing.T) {
	s, err := serveSettingsOf(t, "--iface", "eth0",
		"--peer", "02:0e:0c:00:00:02,mode=rmem,transport=reliable",
		"--peer", "02:0e:0c:00:00:03,transport=v1,mode=dma-write",
		"--peer", "02:0e:0c:00:00:04,mode=dma-read,TRANSPORT=auto")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]rlink.Mode{rlink.Reliable, rlink.V1, rlink.Auto}, s.PeerTransport); d != "" {
		t.Errorf("PeerTransport (-want +got):\n%s", d)
	}
	if s.Peers[1].Mode != endpoint.ModeDMAWrite || s.Peers[0].MAC != mustMAC(t, "02:0e:0c:00:00:02") {
		t.Errorf("peers %+v", s.Peers)
	}
	for _, bad := range []string{"02:0e:0c:00:00:02,mode=rmem,transport=tcp", "02:0e:0c:00:00:02,mode=rmem,transport=v1,transport=auto"} {
		_, err := serveSettingsOf(t, "--iface", "eth0", "--peer", bad)
		if err == nil || !strings.Contains(err.Error(), "transport") {
			t.Errorf("--peer %s: %v, want an error naming transport", bad, err)
		}
	}
	// Every peer v1: no transport at all.
	s, err = serveSettingsOf(t, "--iface", "eth0", "--peer", "02:0e:0c:00:00:02,mode=rmem,transport=v1")
	if err != nil || s.PeerTransport != nil {
		t.Errorf("all-v1 peers: %v %v", s.PeerTransport, err)
	}
	// The configuration file's [[peer]] transport key.
	dir := t.TempDir()
	f := filepath.Join(dir, "s.toml")
	if err := os.WriteFile(f, []byte("iface = \"eth0\"\n[[peer]]\nmac = \"02:0e:0c:00:00:02\"\nmode = \"rmem\"\ntransport = \"reliable\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = serveSettingsOf(t, "--config", f)
	if err != nil || len(s.PeerTransport) != 1 || s.PeerTransport[0] != rlink.Reliable {
		t.Errorf("file: %v %v", s, err)
	}
}

// decode and dump read reliable transport frames: the header, the CRC
// verdict and the v1 PDU inside, for every golden vector.
func TestDescribeReliableVectors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "wire", "reliable", "testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		Name     string `json:"name"`
		FrameHex string `json:"frame_hex"`
		MaxFrame int    `json:"max_frame"`
		Problem  string `json:"problem"`
		Inner    *struct {
			Cmd string `json:"cmd"`
		} `json:"inner"`
	}
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		frame, _ := hex.DecodeString(v.FrameHex)
		d := frames.Describe(frame, frames.Options{MaxFrame: v.MaxFrame})
		switch {
		case v.Problem == "not_ours":
			if d.Kind == "reliable" {
				t.Errorf("%s: described as reliable", v.Name)
			}
			continue
		case d.Kind != "reliable":
			t.Errorf("%s: kind %q", v.Name, d.Kind)
			continue
		}
		if (v.Problem == "ok") != d.Valid && v.Name != "group_ack" {
			t.Errorf("%s: valid %v, the codec says %s (%s)", v.Name, d.Valid, v.Problem, d.Problem)
		}
		if v.Inner != nil && d.Cmd != v.Inner.Cmd {
			t.Errorf("%s: cmd %q, want %q", v.Name, d.Cmd, v.Inner.Cmd)
		}
		if v.Problem == "crc" && (d.Transport == nil || d.Transport.CRCOK == nil || *d.Transport.CRCOK) {
			t.Errorf("%s: CRC not reported bad: %+v", v.Name, d.Transport)
		}
	}
}

// TestTOMLInputsBounded feeds every command that reads a TOML file a
// hostile one (100 KB of nested arrays, a long dotted key, 3 MB): each is
// refused before parsing with exit 2, naming the file and the limit.
func TestTOMLInputsBounded(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"arrays.toml": "a = " + strings.Repeat("[", 50<<10) + strings.Repeat("]", 50<<10) + "\n",
		"dotted.toml": "a" + strings.Repeat(".a", 50<<10) + " = 1\n",
		"big.toml":    "# " + strings.Repeat("x", 3<<20) + "\n",
	}
	for name, text := range files {
		writeTestFile(t, filepath.Join(dir, name), text)
	}
	for _, c := range []struct {
		args func(path string) []string
		file string
		want string
	}{
		{func(p string) []string { return []string{"serve", "--config", p} }, "arrays.toml", "nested deeper than 16 levels"},
		{func(p string) []string { return []string{"serve", "--config", p} }, "big.toml", "more than the 2097152 bytes (2 MiB)"},
		{func(p string) []string { return []string{"hub", "--config", p} }, "dotted.toml", "nested deeper than 16 levels"},
		{func(p string) []string { return []string{"devices", "--devices", p} }, "arrays.toml", "nested deeper than 16 levels"},
		{func(p string) []string { return []string{"regs", "list", "--table", p} }, "arrays.toml", "nested deeper than 16 levels"},
		{func(p string) []string { return []string{"regs", "list", "--table", p} }, "big.toml", "more than the 2097152 bytes (2 MiB)"},
		{func(p string) []string {
			return []string{"conformance", "run", "--iface", "lo", "--target", "02:0e:0c:00:00:01", "--dut", p}
		}, "dotted.toml", "nested deeper than 16 levels"},
	} {
		path := filepath.Join(dir, c.file)
		args := c.args(path)
		out, errOut, code := runCLI(t, "", args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, path) || !strings.Contains(errOut, c.want) {
			t.Errorf("oetp %s %s: exit %d, stdout %q, stderr %.300q; want exit 2 naming the file and %q", args[0], args[1], code, out, errOut, c.want)
		}
	}
}
