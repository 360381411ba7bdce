//go:build linux

package node

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
)

// TestBusyPollWithPcap checks that --busy-poll and --pcap go together: the
// capture keeps the AF_PACKET link's receive loop and busy polling, so the
// endpoint spins as asked.
func TestBusyPollWithPcap(t *testing.T) {
	h := netns.NewPair(t).Host(0)
	var il *Link
	err := h.Do(func() (err error) {
		il, err = OpenLink(LinkConfig{Iface: h.IfName(), Capture: filepath.Join(t.TempDir(), "c.pcap"), BusyPoll: 50 * time.Microsecond})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := il.Close(); err != nil {
			t.Error(err)
		}
	}()
	if _, ok := link.Innermost(il.Link).(*afpacket.Link); !ok || il.Link == link.Innermost(il.Link) {
		t.Fatalf("link %T is not a capture of an AF_PACKET link", il.Link)
	}
	s, ok := il.Link.(link.Spinner)
	if !ok || s.BusyPoll() != 50*time.Microsecond {
		t.Errorf("the capture is not a link.Spinner with the 50µs window (%v)", ok)
	}
	if _, ok := il.Link.(link.Looper); !ok {
		t.Error("the capture lost the link's receive loop (link.Looper)")
	}
	if _, ok := il.Link.(link.Filter); !ok {
		t.Error("the capture lost link.Filter")
	}
}

// TestLinkIOMode checks the I/O mode nodes give their links: a
// blocking receive that keeps its P for one endpoint per process without
// busy polling (the proc rows of docs/benchmarks.md), the network poller with
// busy polling or when asked for (the hub's many endpoints); and the mode
// LinkConfig.IO names, a blocking receive then without keeping its P (the
// bench's links, several in one process). A mode out of range is refused.
func TestLinkIOMode(t *testing.T) {
	h := netns.NewPair(t).Host(0)
	for _, c := range []struct {
		o     LinkConfig
		want  afpacket.IOMode
		holdP bool
	}{
		{LinkConfig{}, afpacket.IOBlocking, true},
		{LinkConfig{BusyPoll: 20 * time.Microsecond}, afpacket.IOPoll, false},
		{LinkConfig{Shared: true}, afpacket.IOPoll, false},
		{LinkConfig{IO: IOBlocking}, afpacket.IOBlocking, false},
		{LinkConfig{IO: IOBlocking, Shared: true}, afpacket.IOBlocking, false},
		{LinkConfig{IO: IOPoll}, afpacket.IOPoll, false},
		{LinkConfig{IO: IOPoll, BusyPoll: 20 * time.Microsecond}, afpacket.IOPoll, false},
	} {
		c.o.Iface = h.IfName()
		var il *Link
		if err := h.Do(func() (err error) { il, err = OpenLink(c.o); return err }); err != nil {
			t.Fatal(err)
		}
		if got := il.Link.(*afpacket.Link).Mode(); got != c.want {
			t.Errorf("%+v: mode %v, want %v", c.o, got, c.want)
		}
		if got := il.Link.(*afpacket.Link).HoldP(); got != c.holdP {
			t.Errorf("%+v: HoldP %v, want %v", c.o, got, c.holdP)
		}
		il.Close()
	}
	var ce *ConfigError
	if _, err := OpenLink(LinkConfig{Iface: h.IfName(), IO: IOPoll + 1}); !errors.As(err, &ce) || err.Error() != "io mode 3: use IOAuto, IOBlocking or IOPoll" {
		t.Errorf("IO mode 3: %v", err)
	}
}
