package endpoint_test

import (
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/wire"
)

// TestConfigDefaults: zero fields select the documented defaults, resolved
// against the link.
func TestConfigDefaults(t *testing.T) {
	sw := newSwitchWith(t, mem.Config{MaxFrame: 1514})
	e := newEP(t, sw, macA, newRAM(t), endpoint.Config{})
	diff(t, "defaults", endpoint.Config{MAC: macA, MaxFrame: 1514, MaxFragment: 1480, Contexts: 1, Outstanding: 1, RawQueue: 64, EventQueue: 64}, e.Config())
	small := newEP(t, newSwitch(t), macB, newRAM(t), endpoint.Config{MaxFrame: 36})
	if got := small.Config().MaxFragment; got != 4 {
		t.Fatalf("MaxFragment for MaxFrame 36 = %d, want 4", got)
	}
}

// TestConfigErrors: New and SetConfig reject invalid values with an error
// that names the field.
func TestConfigErrors(t *testing.T) {
	sw := newSwitchWith(t, mem.Config{MaxFrame: 1514})
	cases := []struct {
		cfg  endpoint.Config
		want string
	}{
		{endpoint.Config{MAC: group}, "Config.MAC"},
		{endpoint.Config{Group: macB}, "Config.Group"},
		{endpoint.Config{RawPolicy: 4}, "Config.RawPolicy"},
		{endpoint.Config{RMEMTimeout: -1}, "Config.RMEMTimeout"},
		{endpoint.Config{DMATimeout: -time.Second}, "Config.DMATimeout"},
		{endpoint.Config{MaxFrame: 35}, "Config.MaxFrame"},
		{endpoint.Config{MaxFrame: 8193}, "Config.MaxFrame"},
		{endpoint.Config{MaxFrame: 1515}, "exceeds the link's MaxFrame 1514"},
		{endpoint.Config{Contexts: -1}, "Config.Contexts"},
		{endpoint.Config{Contexts: endpoint.MaxContexts + 1}, "Config.Contexts"},
		{endpoint.Config{RawQueue: -1}, "Config.RawQueue"},
		{endpoint.Config{EventQueue: endpoint.MaxQueue + 1}, "Config.EventQueue"},
	}
	port := attach(t, sw, macA)
	for _, c := range cases {
		e, err := endpoint.New(port, newRAM(t), c.cfg)
		if err == nil {
			e.Close()
			t.Fatalf("New(%+v) succeeded", c.cfg)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Fatalf("New(%+v) = %v; want it to mention %q", c.cfg, err, c.want)
		}
	}
	if _, err := endpoint.New(nil, newRAM(t), endpoint.Config{}); err == nil {
		t.Fatal("New accepted a nil link")
	}

	e := newEPOn(t, port, newRAM(t), endpoint.Config{})
	for _, c := range []struct {
		cfg  endpoint.Config
		want string
	}{
		{endpoint.Config{MaxFrame: 1000}, "Config.MaxFrame cannot change"},
		{endpoint.Config{RawQueue: 3}, "Config.RawQueue cannot change"},
		{endpoint.Config{EventQueue: 3}, "Config.EventQueue cannot change"},
		{endpoint.Config{Group: macC}, "Config.Group"},
	} {
		if err := e.SetConfig(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("SetConfig(%+v) = %v; want it to mention %q", c.cfg, err, c.want)
		}
	}
	// SetConfig fills defaults like New, but stores MaxFragment as given.
	if err := e.SetConfig(endpoint.Config{Contexts: 3, MaxFrame: 1514}); err != nil {
		t.Fatal(err)
	}
	diff(t, "after SetConfig", endpoint.Config{MAC: macA, MaxFrame: 1514, MaxFragment: 0, Contexts: 3, Outstanding: 1, RawQueue: 64, EventQueue: 64}, e.Config())
}

// TestPeerTable: SetPeer validates entries; a MAC may appear several times
// (TestDisabledAndDuplicatePeers: which entry serves it); Peer reports
// unused entries.
func TestPeerTable(t *testing.T) {
	e := newEP(t, newSwitch(t), macA, newRAM(t), endpoint.Config{})
	setPeer(t, e, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, e, 1, win(group, endpoint.ModeRMEM))
	setPeer(t, e, 2, win(group, endpoint.ModeDMARead))
	for _, c := range []struct {
		i    int
		p    endpoint.Peer
		want string
	}{
		{-1, win(macC, 1), "out of range"},
		{endpoint.MaxPeers, win(macC, 1), "out of range"},
		{3, win(macC, 4), "Mode 4"},
		{3, endpoint.Peer{Mode: 1}, "MAC is zero"},
		{3, endpoint.Peer{MAC: macC, WindowBase: 0xFFFFFF00, WindowSize: 0x101}, "past the 32-bit address space"},
	} {
		if err := e.SetPeer(c.i, c.p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("SetPeer(%d, %+v) = %v; want it to mention %q", c.i, c.p, err, c.want)
		}
	}
	setPeer(t, e, 3, endpoint.Peer{MAC: macC, WindowBase: 0xFFFFFF00, WindowSize: 0x100})
	if p, ok := e.Peer(0); !ok || p != win(macB, endpoint.ModeRMEM) {
		t.Fatalf("Peer(0) = %+v, %v", p, ok)
	}
	setPeer(t, e, 0, endpoint.Peer{})
	if _, ok := e.Peer(0); ok {
		t.Fatal("cleared entry reported as used")
	}
	if _, ok := e.Peer(-1); ok {
		t.Fatal("Peer(-1) reported as used")
	}
	setPeer(t, e, 4, win(macB, endpoint.ModeRMEM))
	setPeer(t, e, 5, win(macB, endpoint.ModeDMAWrite)) // a second entry for one MAC
}

// TestOwnMACOtherThanLink: with Config.MAC different from the link's
// address, the link is made promiscuous so requests for Config.MAC arrive,
// and replies carry Config.MAC as their source.
func TestOwnMACOtherThanLink(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{MAC: macX})
	setPeer(t, b, 0, win(macP, endpoint.ModeRMEM))
	p.send(t, frame(macX, macP, 0x20, le(1), le(0x1000), le(1), le(1)))
	eqBytes(t, "reply", frame(macP, macX, 0x21, le(1)), p.next(t))
	p.send(t, frame(macB, macP, 0x20, le(2), le(0x1000), le(1), le(1)))
	p.none(t, 20*time.Millisecond)
	if s := b.Stats(); s.DropNotForUs != 1 {
		t.Fatalf("DropNotForUs %d", s.DropNotForUs)
	}
	_ = wire.MAC{}
}

// TestNames: every mode, raw policy and event source has its name, and a
// value outside them says what it is.
func TestNames(t *testing.T) {
	for _, c := range []struct {
		v    interface{ String() string }
		want string
	}{
		{endpoint.ModeNone, "0 (None)"}, {endpoint.ModeRMEM, "1 (RMEM)"},
		{endpoint.ModeDMAWrite, "2 (DMAWrite)"}, {endpoint.ModeDMARead, "3 (DMARead)"},
		{endpoint.Mode(4), "4 (invalid)"},
		{endpoint.RawDrop, "drop"}, {endpoint.RawFiltered, "filtered"},
		{endpoint.RawMulticast, "multicast"}, {endpoint.RawPromiscuous, "promiscuous"},
		{endpoint.RawPolicy(4), "RawPolicy(4)"},
		{endpoint.PeerDMAComplete, "PEER_DMA_COMPLETE"}, {endpoint.RMEMError, "RMEM_ERROR"},
		{endpoint.EventSource(1), "EventSource(1)"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%#v.String() = %q, want %q", c.v, got, c.want)
		}
	}
}
