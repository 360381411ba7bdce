package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

func rawFrame(dst wire.MAC, etherType uint16, payload ...byte) []byte {
	b := append(append(append([]byte{}, dst[:]...), macP[:]...), byte(etherType>>8), byte(etherType))
	return append(b, payload...)
}

// recvAll drains RecvRaw until it has been idle for a moment.
func recvAll(t *testing.T, e *endpoint.Endpoint) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		ctx, cancel := context.WithTimeout(bg(), 20*time.Millisecond)
		buf := make([]byte, 9000)
		n, err := e.RecvRaw(ctx, buf)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, buf[:n])
	}
}

// TestRawPolicies: non-oETP frames (another EtherType, 0x88B5 with another
// Magic) follow the raw policy: drop, filtered
// (own unicast MAC), multicast (own MAC or any group, broadcast included),
// promiscuous (everything). Admitted frames reach RecvRaw unchanged,
// padding included, in order. A 0x88B5 frame with the Magic but no Cmd is
// malformed oETP and never raw.
func TestRawPolicies(t *testing.T) {
	toB := rawFrame(macB, 0x0800, 1, 2, 3)
	toGroup := rawFrame(grp2, 0x0800, 4)
	toAll := rawFrame(wire.Broadcast, 0x0806, 5)
	toX := rawFrame(macX, 0x0800, 6)
	magic := rawFrame(macB, 0x88B5, 0x0F, 0x10, 0, 0, 0, 0)
	short := rawFrame(macB, 0x88B5, 0x0E)
	padded := append(rawFrame(macB, 0x86DD, 7), make([]byte, 45)...)
	all := [][]byte{toB, toGroup, toAll, toX, magic, short, padded}
	cases := []struct {
		policy  endpoint.RawPolicy
		want    [][]byte
		dropped uint64
	}{
		// B's link delivers toGroup and toX only in promiscuous mode.
		// short carries the Magic: it is malformed oETP, never raw.
		{endpoint.RawDrop, nil, 4},
		{endpoint.RawFiltered, [][]byte{toB, magic, padded}, 1},
		{endpoint.RawMulticast, [][]byte{toB, toGroup, toAll, magic, padded}, 1},
		{endpoint.RawPromiscuous, [][]byte{toB, toGroup, toAll, toX, magic, padded}, 0},
	}
	for _, c := range cases {
		t.Run(c.policy.String(), func(t *testing.T) {
			sw, p := newSwitchTap(t, macP, false)
			b := newEP(t, sw, macB, newRAM(t), endpoint.Config{RawPolicy: c.policy, Group: group})
			for _, f := range all {
				p.send(t, f)
			}
			got := recvAll(t, b)
			if len(got) != len(c.want) {
				t.Fatalf("received %d raw frames, want %d", len(got), len(c.want))
			}
			for i := range got {
				eqBytes(t, fmt.Sprint("frame ", i), c.want[i], got[i])
			}
			s := b.Stats()
			if s.DropRawPolicy != c.dropped || s.RawReceived != uint64(len(c.want)) || s.DropNoRequestID != 1 {
				t.Fatalf("DropRawPolicy %d (want %d), RawReceived %d, DropNoRequestID %d", s.DropRawPolicy, c.dropped, s.RawReceived, s.DropNoRequestID)
			}
		})
	}
}

// TestRawQueueAndSend: the raw queue is bounded (overflow is counted), a
// frame over MaxFrame is dropped, RecvRaw reports a short buffer, and
// SendRaw transmits a frame unchanged.
func TestRawQueueAndSend(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{RawPolicy: endpoint.RawFiltered, RawQueue: 2, MaxFrame: 1000})
	for i := range 3 {
		p.send(t, rawFrame(macB, 0x0800, byte(i)))
	}
	eventually(t, "overflow", func() bool { return b.Stats().DropRawQueueFull == 1 })
	p.send(t, append(rawFrame(macB, 0x0800), make([]byte, 8192-14)...)) // over B's MaxFrame 1000
	eventually(t, "too long", func() bool { return b.Stats().DropTooLong == 1 })
	buf := make([]byte, 10)
	n, err := b.RecvRaw(bg(), buf)
	if n != 10 || !errors.Is(err, io.ErrShortBuffer) {
		t.Fatalf("RecvRaw into 10 bytes = %d, %v; want 10, ErrShortBuffer", n, err)
	}
	eqBytes(t, "truncated frame", rawFrame(macB, 0x0800, 0)[:10], buf)
	got := recvAll(t, b)
	if len(got) != 1 {
		t.Fatalf("%d frames left, want 1", len(got))
	}
	eqBytes(t, "second frame", rawFrame(macB, 0x0800, 1), got[0])

	out := append(rawFrame(macP, 0x1234, 0xAA, 0xBB), make([]byte, 50)...)
	if err := b.SendRaw(out); err != nil {
		t.Fatal(err)
	}
	eqBytes(t, "sent frame", out, p.next(t))
	oetp := frame(macP, macB, 0x10, le(1), le(2)) // sent unchanged too
	if err := b.SendRaw(oetp); err != nil {
		t.Fatal(err)
	}
	eqBytes(t, "sent oETP frame", oetp, p.next(t))
	if err := b.SendRaw(make([]byte, 13)); err == nil {
		t.Fatal("SendRaw accepted a 13-byte frame")
	}
	if err := b.SendRaw(make([]byte, 1001)); err == nil {
		t.Fatal("SendRaw accepted a frame over MaxFrame")
	}
	if s := b.Stats(); s.RawSent != 2 || s.TxFrames != 2 {
		t.Fatalf("RawSent %d, TxFrames %d", s.RawSent, s.TxFrames)
	}
}
