//go:build linux

package node

import (
	"errors"
	"testing"
	"time"

	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/afpacket/afpackettest"
	"github.com/openenoc/oetp/netns"
)

// TestOpenRelay opens a relay between the two interfaces of a relay
// namespace: a frame of any EtherType sent by h1 reaches h2 and is
// counted; an impairment out of range is refused with the links closed
// (they open again), and an interface that does not exist is a
// *ConfigError naming it.
func TestOpenRelay(t *testing.T) {
	n := netns.NewRelay(t)
	h1, h2, rh := n.Host(0), n.Host(1), n.Relay()
	var r *Relay
	if err := rh.Do(func() (err error) {
		r, err = OpenRelay(netns.RelayIfA, netns.RelayIfB, RelayConfig{Seed: 1})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	cfg := afpacket.Config{AllEtherTypes: true}
	l1, l2 := afpackettest.OpenLink(t, h1, cfg), afpackettest.OpenLink(t, h2, cfg)
	m1, m2 := h1.MAC(), h2.MAC()
	frame := append(append(append([]byte{}, m2[:]...), m1[:]...), 0x08, 0x00, 0x45, 0, 0, 20)
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, 9216)
		bufs, sizes := [][]byte{buf}, []int{0}
		for {
			if _, err := l2.ReadBatch(bufs, sizes); err != nil {
				return
			}
			if sizes[0] == len(frame) && buf[12] == 0x08 {
				got <- append([]byte{}, buf[:sizes[0]]...)
				return
			}
		}
	}()
	deadline := time.After(10 * time.Second)
send:
	for {
		if err := l1.Write(frame); err != nil {
			t.Fatal(err)
		}
		select {
		case <-got:
			break send
		case <-deadline:
			t.Fatal("the relay carried no IPv4 frame from h1 to h2")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The frame reaches h2 inside the relay's send call, before the relay
	// counts it sent: wait for the count.
	for wait := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		ab, _ := r.Stats()
		if ab.Received > 0 && ab.Sent > 0 {
			break
		}
		if time.Now().After(wait) {
			t.Errorf("%s->%s: %+v", netns.RelayIfA, netns.RelayIfB, ab)
			break
		}
	}
	r.Close()

	err := rh.Do(func() error { _, err := OpenRelay(netns.RelayIfA, netns.RelayIfB, RelayConfig{Loss: 2}); return err })
	var ce *ConfigError
	if err == nil || errors.As(err, &ce) {
		t.Fatalf("loss 2: %v, want the relay's own error", err)
	}
	if err := rh.Do(func() (err error) { r, err = OpenRelay(netns.RelayIfA, netns.RelayIfB, RelayConfig{}); return err }); err != nil {
		t.Fatalf("the links of a refused relay stayed open: %v", err)
	}
	r.Close()
	err = rh.Do(func() error { _, err := OpenRelay(netns.RelayIfA, "nosuchif0", RelayConfig{}); return err })
	if !errors.As(err, &ce) || err.Error() != "iface nosuchif0: no such network interface: list the interfaces with `ip link`" {
		t.Errorf("nosuchif0: %v", err)
	}
}
