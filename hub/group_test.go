package hub_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/hub"
	"github.com/openenoc/oetp/hub/proto"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

var groupMAC = wire.MAC{0x03, 0x0e, 0x0c, 0, 0, 0x01}

// lossySpace is RAM that misses the first write at each address of lose,
// as a member misses a group fragment it was busy for.
type lossySpace struct {
	*memory.RAM
	mu   sync.Mutex
	lose map[uint32]bool
}

func (s *lossySpace) WriteAt(p []byte, addr uint32) memory.Resp {
	s.mu.Lock()
	skip := s.lose[addr]
	delete(s.lose, addr)
	s.mu.Unlock()
	if skip {
		return memory.OKAY
	}
	return s.RAM.WriteAt(p, addr)
}

// TestGroupWrite: a hub with three devices on one interface and two
// groups. GROUP_WRITE to "pair" (b1, b2) with verify: b2 missed two
// fragments of the group write (its memory skips them), the hub names them
// repaired, b1 verified, both memories exact; the pacing names the probes.
// Without verify the members are "unverified" and delivery "unconfirmed".
// Group "bad" holds b3, which has no entry for its dma_read MAC: the write
// fails TIMEOUT naming b3, with the result. An unknown group is NO_DEVICE.
// The peer entries printed name the group's MAC.
func TestGroupWrite(t *testing.T) {
	sw, err := mem.NewSwitch(mem.Config{Seed: 1, QueueLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	cfg := hub.Config{Groups: []hub.GroupConfig{{Name: "pair", MAC: groupMAC, Devices: []string{"b1", "b2"}}, {Name: "bad", MAC: groupMAC, Devices: []string{"b1", "b3"}}}}
	for i := range 3 {
		cfg.Devices = append(cfg.Devices, hub.DeviceConfig{Name: "b" + string(rune('1'+i)), Iface: "mem0", MAC: wire.MAC{0x02, 0x0e, 0x0c, 0, 0, byte(0x11 + i)},
			DMATimeout: 100 * time.Millisecond, RMEMTimeout: 100 * time.Millisecond})
	}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	const base = 0x100000
	var rams []*memory.RAM
	var b2 *lossySpace
	for i, d := range cfg.Devices {
		port, err := sw.Attach(d.MAC)
		if err != nil {
			t.Fatal(err)
		}
		ram, _ := memory.NewRAM(base, 1<<20)
		rams = append(rams, ram)
		var space memory.Space = ram
		if i == 1 {
			b2 = &lossySpace{RAM: ram}
			space = b2
		}
		dev, err := endpoint.New(port, space, endpoint.Config{Group: groupMAC})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dev.Close() })
		if err := dev.SetPeer(0, endpoint.Peer{MAC: cfg.Groups[0].Local, Mode: endpoint.ModeDMAWrite, WindowSize: 1 << 32}); err != nil {
			t.Fatal(err)
		}
		if err := dev.SetPeer(1, endpoint.Peer{MAC: cfg.Groups[1].Local, Mode: endpoint.ModeDMAWrite, WindowSize: 1 << 32}); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			if err := dev.SetPeer(2, endpoint.Peer{MAC: d.Local[hub.KindDMARead], Mode: endpoint.ModeDMARead, WindowSize: 1 << 32}); err != nil {
				t.Fatal(err)
			}
		}
	}
	h, path := serveHub(t, cfg, sw)
	c := dial(t, path)
	defer c.Close()

	data := make([]byte, 5*8160+100)
	for i := range data {
		data[i] = byte(i*13 + i>>9)
	}
	b2.lose = map[uint32]bool{base + 2*8160: true, base + 5*8160: true}
	res, err := c.GroupWrite("pair", base, data, true)
	if err != nil {
		t.Fatalf("GroupWrite pair: %v (%+v)", err, res)
	}
	if res.Group != "pair" || res.MAC != groupMAC.String() || res.Bytes != uint64(len(data)) || res.Fragments != 6 || res.Delivery != "verified" {
		t.Fatalf("result %+v", res)
	}
	if p := res.Pacing; p.Source != "members" || p.IntervalUS <= 0 || p.Margin != 1.5 || len(p.Probes) != 2 || p.Probes[1].Device != "b2" || len(p.Probes[0].RoundTripsUS)+len(p.Probes[1].RoundTripsUS) != 2*replicate.Probes+1 {
		t.Fatalf("pacing %+v", p)
	}
	want := []proto.GroupMember{
		{Device: "b1", Member: cfg.Devices[0].MAC.String(), State: "verified", Fragments: 6, FragmentsChecked: 6, Repaired: []proto.GroupFragment{}},
		{Device: "b2", Member: cfg.Devices[1].MAC.String(), State: "repaired", Fragments: 6, FragmentsChecked: 6, FragmentsRepaired: 2,
			Repaired: []proto.GroupFragment{{Index: 2, Addr: base + 2*8160, Len: 8160}, {Index: 5, Addr: base + 5*8160, Len: 100}}},
	}
	if len(res.Members) != 2 {
		t.Fatalf("members %+v", res.Members)
	}
	for i := range want {
		g, w := res.Members[i], want[i]
		if g.Device != w.Device || g.Member != w.Member || g.State != w.State || g.Fragments != w.Fragments || g.FragmentsChecked != w.FragmentsChecked ||
			g.FragmentsRepaired != w.FragmentsRepaired || len(g.Repaired) != len(w.Repaired) || g.Error != "" {
			t.Fatalf("member %d: %+v, want %+v", i, g, w)
		}
		for j := range w.Repaired {
			if g.Repaired[j] != w.Repaired[j] {
				t.Fatalf("member %d repaired %+v, want %+v", i, g.Repaired, w.Repaired)
			}
		}
	}
	for i := range 2 {
		got := make([]byte, len(data))
		rams[i].ReadAt(got, base)
		if !bytes.Equal(got, data) {
			t.Fatalf("b%d's memory differs", i+1)
		}
	}

	if len(res.Pacing.ChecksUS) != 0 || res.Pacing.RaisedToUS != 0 {
		t.Fatalf("6 fragments, one run: pacing checks %+v", res.Pacing)
	}

	// Without verify.
	res, err = c.GroupWrite("pair", base+0x40000, data[:100], false)
	if err != nil || res.Delivery != "unconfirmed" || res.Fragments != 1 || len(res.Members) != 2 || res.Members[0].State != "unverified" {
		t.Fatalf("GroupWrite without verify: %+v, %v", res, err)
	}
	// 2 runs and a fragment: the slowest member is checked twice, as the
	// CLI's group write reports it (JSON checks_us, raised_to_us).
	long := make([]byte, (2*replicate.Run+1)*8160)
	res, err = c.GroupWrite("pair", base+0x40000, long, false)
	if p := res.Pacing; err != nil || res.Fragments != 2*replicate.Run+1 || len(p.ChecksUS) != 2 || p.ChecksUS[0] <= 0 || p.ChecksUS[1] <= 0 ||
		p.RaisedToUS != 0 && p.RaisedToUS <= p.IntervalUS {
		t.Fatalf("GroupWrite of %d fragments: pacing %+v, %v", 2*replicate.Run+1, res.Pacing, err)
	}
	if j, _ := json.Marshal(res.Pacing); !bytes.Contains(j, []byte(`"checks_us":[`)) {
		t.Fatalf("pacing JSON %s", j)
	}

	// b3 cannot be read back.
	res, err = c.GroupWrite("bad", base, data[:1000], true)
	var oe *client.OpError
	if !errors.As(err, &oe) || oe.Code != wire.CodeTimeout || !oe.MaybeExecuted() || !strings.Contains(err.Error(), "member b3 ("+cfg.Devices[2].MAC.String()+") failed verification") {
		t.Fatalf("GroupWrite bad: %v", err)
	}
	if len(res.Members) != 2 || res.Members[0].State != "verified" || res.Members[1].State != "failed" || res.Members[1].ErrorCode != uint8(wire.CodeTimeout) || res.Delivery != "unconfirmed" {
		t.Fatalf("GroupWrite bad: result %+v", res)
	}

	// An unknown group.
	_, err = c.GroupWrite("nope", base, data[:4], false)
	var he *client.HubError
	if !errors.As(err, &he) || he.Status != proto.StatusNoDevice || !strings.Contains(he.Message, "pair, bad") {
		t.Fatalf("unknown group: %v", err)
	}
	if s := h.Config().PeerEntries(); !strings.Contains(s, "# group pair") || !strings.Contains(s, cfg.Groups[0].Local.String()) {
		t.Fatalf("peer entries:\n%s", s)
	}
}

// TestGroupConfig: the [[group]] tables load, and their mistakes are
// refused with the key named.
func TestGroupConfig(t *testing.T) {
	dir := t.TempDir()
	devices := `
[[device]]
name = "b1"
iface = "eth1"
mac = "02:0e:0c:00:00:11"
[[device]]
name = "b2"
iface = "eth1"
mac = "02:0e:0c:00:00:12"
[[device]]
name = "b3"
iface = "eth2"
mac = "02:0e:0c:00:00:13"
`
	load := func(groups string) (hub.Config, error) {
		p := filepath.Join(dir, "hub.toml")
		if err := os.WriteFile(p, []byte(devices+groups), 0o600); err != nil {
			t.Fatal(err)
		}
		return hub.LoadConfig(p)
	}
	c, err := load("[[group]]\nname = \"all\"\nmac = \"03:0e:0c:00:00:01\"\ndevices = [\"b1\", \"b2\"]\n")
	if err != nil || len(c.Groups) != 1 || c.Groups[0].Local.IsZero() || c.Groups[0].Local.IsGroup() || len(c.Groups[0].Devices) != 2 {
		t.Fatalf("LoadConfig: %+v, %v", c.Groups, err)
	}
	for _, tc := range []struct{ groups, want string }{
		{"[[group]]\nname = \"all\"\ndevices = [\"b1\"]\n", "mac is missing"},
		{"[[group]]\nname = \"all\"\nmac = \"02:0e:0c:00:00:01\"\ndevices = [\"b1\"]\n", "not a group address"},
		{"[[group]]\nname = \"all\"\nmac = \"03:0e:0c:00:00:01\"\n", "devices is empty"},
		{"[[group]]\nname = \"all\"\nmac = \"03:0e:0c:00:00:01\"\ndevices = [\"b9\"]\n", `no [[device]] is named "b9"`},
		{"[[group]]\nname = \"all\"\nmac = \"03:0e:0c:00:00:01\"\ndevices = [\"b1\", \"b3\"]\n", "one group write reaches the members through one interface"},
		{"[[group]]\nname = \"b1\"\nmac = \"03:0e:0c:00:00:01\"\ndevices = [\"b1\"]\n", "already used"},
		{"[[group]]\nname = \"all\"\nmac = \"03:0e:0c:00:00:01\"\ndevices = [\"b1\"]\nlocal = \"03:00:00:00:00:01\"\n", "group address"},
		{"[[group]]\nname = \"all\"\nmac = \"03:0e:0c:00:00:01\"\ndevices = [\"b1\"]\nverify = true\n", "unknown key"},
	} {
		if _, err := load(tc.groups); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.groups, err, tc.want)
		}
	}
}
