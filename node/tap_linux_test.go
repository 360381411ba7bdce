//go:build linux

package node

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"golang.org/x/net/bpf"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/afpacket/afpackettest"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// TestTapFilter runs the socket filter of a Tap on frames.
func TestTapFilter(t *testing.T) {
	vm, err := bpf.NewVM(func() []bpf.Instruction {
		var ins []bpf.Instruction
		for _, r := range tapFilter {
			ins = append(ins, r.Disassemble())
		}
		return ins
	}())
	if err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 12)
	tag := func(tpid ...byte) []byte { return append(append([]byte{}, tpid...), 0, 100) }
	for _, c := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"oetp", append(append([]byte{}, hdr...), 0x88, 0xb5, 0x0e, 0x10), true},
		{"ipv4", append(append([]byte{}, hdr...), 0x08, 0x00, 0x45, 0x00), false},
		{"802.1Q oetp", append(append(append([]byte{}, hdr...), tag(0x81, 0x00)...), 0x88, 0xb5, 0x0e), true},
		{"802.1Q ipv4", append(append(append([]byte{}, hdr...), tag(0x81, 0x00)...), 0x08, 0x00, 0x45), false},
		{"QinQ oetp", append(append(append(append([]byte{}, hdr...), tag(0x88, 0xa8)...), tag(0x81, 0x00)...), 0x88, 0xb5, 0x0e), true},
		{"QinQ ipv6", append(append(append(append([]byte{}, hdr...), tag(0x88, 0xa8)...), tag(0x81, 0x00)...), 0x86, 0xdd, 0x60), false},
		{"runt", hdr, false},
	} {
		n, err := vm.Run(c.b)
		if (n > 0) != c.ok || err != nil && c.ok {
			t.Errorf("%s: %d, %v; want accepted %v", c.name, n, err, c.ok)
		}
	}
}

// TestOpenTap watches h2's interface while h1 sends an IPv4 frame and an
// oETP request, h2 its reply, and h1 the request again under an 802.1Q
// tag: the tap shows the three oETP frames in order, both directions, each
// with its time and length, and the tag the kernel took out of the last;
// Close ends a Read. An interface that does not exist or is down is
// a *ConfigError that says what to do.
func TestOpenTap(t *testing.T) {
	n := netns.NewPair(t)
	h1, h2 := n.Host(0), n.Host(1)
	var tap *Tap
	if err := h2.Do(func() (err error) { tap, err = OpenTap(TapConfig{Iface: h2.IfName()}); return err }); err != nil {
		t.Fatal(err)
	}
	cfg := afpacket.Config{AllEtherTypes: true}
	l1, l2 := afpackettest.OpenLink(t, h1, cfg), afpackettest.OpenLink(t, h2, cfg)
	m1, m2 := h1.MAC(), h2.MAC()
	ip := append(append(append([]byte{}, m2[:]...), m1[:]...), 0x08, 0x00, 0x45, 0, 0, 20)
	req := wire.AppendRMEMReadReq(nil, m2, m1, 7, 0x10)
	rsp := wire.AppendRMEMReadRsp(nil, m1, m2, 7, 0xC0FFEE)
	tagged := append(append(append([]byte{}, req[:12]...), 0x81, 0x00, 0x00, 0x64), req[12:]...)
	for _, w := range []struct {
		l *afpacket.Link
		f []byte
	}{{l1, ip}, {l1, req}, {l2, rsp}, {l1, tagged}} {
		if err := w.l.Write(w.f); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []struct {
		f    []byte
		vlan int
	}{{req, -1}, {rsp, -1}, {req, 100}} {
		data, info, err := tap.Read()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, want.f) || info.VLAN != want.vlan || info.Length != len(want.f) || time.Since(info.Time) > time.Minute {
			t.Errorf("frame %d: % x, %+v; want % x, VLAN %d", i+1, data, info, want.f, want.vlan)
		}
	}
	read := make(chan error, 1)
	go func() { _, _, err := tap.Read(); read <- err }()
	tap.Close()
	select {
	case err := <-read:
		if err == nil {
			t.Error("Read after Close returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end a Read")
	}

	var ce *ConfigError
	if _, err := OpenTap(TapConfig{Iface: "nosuchif0"}); !errors.As(err, &ce) || err.Error() != "iface nosuchif0: no such network interface: list the interfaces with `ip link`" {
		t.Errorf("nosuchif0: %v", err)
	}
	if out, err := h1.Command("ip", "link", "set", h1.IfName(), "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set down: %v: %s", err, out)
	}
	err := h1.Do(func() error { _, err := OpenTap(TapConfig{Iface: h1.IfName()}); return err })
	if want := "iface eth0 is down: bring it up (ip link set eth0 up)"; !errors.As(err, &ce) || err.Error() != want {
		t.Errorf("a down interface: %v, want %q", err, want)
	}
}
