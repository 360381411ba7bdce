//go:build linux

package endpoint_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// TestVLANTaggedFramesOverVeth: over a real AF_PACKET link, an 802.1Q- or
// 802.1ad-tagged RMEM request is not v1 oETP ("VLAN tags ... are outside
// this version"): it gets no reply and writes nothing, and it reaches the
// raw receive policy with its tag, exactly as sent (the kernel takes the
// tag out before the socket sees the frame; the link puts it back). With
// the drop policy it is counted. The untagged request is answered octet for
// octet.
func TestVLANTaggedFramesOverVeth(t *testing.T) {
	tn := netns.NewPair(t)
	h1, h2 := tn.Host(0), tn.Host(1)
	openOn := func(h *netns.Host, all bool) *afpacket.Link {
		var l *afpacket.Link
		if err := h.Do(func() (err error) {
			l, err = afpacket.Open(h.IfName(), afpacket.Config{AllEtherTypes: all})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return l
	}
	ram := newRAM(t)
	ram.WriteWord(0x1000, 0xA1B2C3D4, 0xFFFFFFFF)
	bl := openOn(h1, true)
	b := newEPOn(t, bl, ram, endpoint.Config{RawPolicy: endpoint.RawPromiscuous})
	p := openOn(h2, true)
	defer p.Close()
	bm, pm := h1.MAC(), h2.MAC()
	setPeer(t, b, 0, win(pm, endpoint.ModeRMEM))
	tag := func(f []byte, tpid, tci uint16) []byte {
		out := append([]byte{}, f[:12]...)
		out = binary.BigEndian.AppendUint16(out, tpid)
		out = binary.BigEndian.AppendUint16(out, tci)
		return append(out, f[12:]...)
	}
	recv := func() []byte {
		buf := make([]byte, 9000)
		sizes := []int{0}
		done := make(chan error, 1)
		go func() { _, err := p.ReadBatch([][]byte{buf}, sizes); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(waitLong):
			t.Fatal("no reply")
		}
		return buf[:sizes[0]]
	}
	send := func(f []byte) {
		if err := p.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	read := frame(bm, pm, 0x10, le(1), le(0x1000))
	send(read)
	eqBytes(t, "untagged RMEM_READ_REQ: reply", frame(pm, bm, 0x11, le(1), le(0xA1B2C3D4)), recv())

	for i, f := range [][]byte{
		tag(frame(bm, pm, 0x10, le(2), le(0x1000)), 0x8100, 5),
		tag(frame(bm, pm, 0x20, le(3), le(0x1000), le(0xFFFFFFFF), le(0x0BADBAD0)), 0x8100, 5),
		tag(frame(bm, pm, 0x10, le(4), le(0x1000)), 0x8100, 0), // priority tag
		tag(frame(bm, pm, 0x10, le(5), le(0x1000)), 0x88A8, 7),
	} {
		send(f)
		ctx, cancel := context.WithTimeout(bg(), waitLong)
		buf := make([]byte, 9000)
		n, err := b.RecvRaw(ctx, buf)
		cancel()
		if err != nil {
			t.Fatalf("tagged frame %d: RecvRaw: %v", i, err)
		}
		eqBytes(t, "tagged frame at the raw policy", f, buf[:n])
		// The next reply answers the barrier: nothing answered the tag.
		send(frame(bm, pm, 0x10, le(100+uint32(i)), le(0x1000)))
		eqBytes(t, "barrier reply", frame(pm, bm, 0x11, le(100+uint32(i)), le(0xA1B2C3D4)), recv())
	}
	if v, _ := ram.ReadWord(0x1000); v != 0xA1B2C3D4 {
		t.Errorf("the tagged write changed memory: %#08x", v)
	}
	if s := b.Stats(); s.RawReceived != 4 || s.ServedRMEMRead != 5 || s.ServedRMEMWrite != 0 {
		t.Errorf("RawReceived %d, ServedRMEMRead %d, ServedRMEMWrite %d; want 4, 5, 0", s.RawReceived, s.ServedRMEMRead, s.ServedRMEMWrite)
	}

	// An oETP-only link and the drop policy: the tagged request is
	// counted as a raw frame the policy dropped.
	c := newEPOn(t, openOn(h1, false), newRAM(t), endpoint.Config{MAC: wire.MAC{0x02, 0x0e, 0x0c, 0, 0, 0xc1}})
	cm := c.Config().MAC
	setPeer(t, c, 0, win(pm, endpoint.ModeRMEM))
	send(tag(frame(cm, pm, 0x10, le(6), le(0x1000)), 0x8100, 5))
	send(frame(cm, pm, 0x10, le(7), le(0x1000)))
	eqBytes(t, "C's barrier reply", frame(pm, cm, 0x11, le(7), le(0)), recv())
	if s := c.Stats(); s.DropRawPolicy != 1 || s.ServedRMEMRead != 1 {
		t.Errorf("C: DropRawPolicy %d, ServedRMEMRead %d; want 1, 1", s.DropRawPolicy, s.ServedRMEMRead)
	}
	_ = bytes.Equal
}
