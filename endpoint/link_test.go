package endpoint_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/wire"
)

// TestReplyPriority: when the link frees up, a waiting reply to a received
// request goes before a waiting initiating frame, whatever their arrival
// order; raw and initiating frames take turns in arrival order.
func TestReplyPriority(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	b, gate := newGatedEP(t, sw, macB, endpoint.Config{})
	c := newEP(t, sw, macC, newRAM(t), endpoint.Config{})
	setPeer(t, b, 0, win(macP, endpoint.ModeRMEM))
	setPeer(t, b, 1, win(macC, endpoint.ModeRMEM))
	setPeer(t, c, 0, win(macB, endpoint.ModeRMEM))

	raw1 := rawFrame(macP, 0x0800, 1)
	raw2 := rawFrame(macP, 0x0800, 2)
	gate.holdNext()
	sent := make(chan error, 2)
	go func() { sent <- b.SendRaw(raw1) }()
	<-gate.entered // the link is busy
	res := rmemRead(b, 1, 0x1000)
	eventually(t, "initiating frame waiting", func() bool { _, o := endpoint.TxWaiting(b); return o == 1 })
	go func() { sent <- b.SendRaw(raw2) }()
	eventually(t, "raw frame waiting", func() bool { _, o := endpoint.TxWaiting(b); return o == 2 })
	p.send(t, frame(macB, macP, 0x10, le(9), le(0x1000)))
	eventually(t, "reply waiting", func() bool { r, _ := endpoint.TxWaiting(b); return r == 1 })
	close(gate.release)
	for range 2 {
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
	}
	if r := await(t, res); r.err != nil {
		t.Fatal(r.err)
	}
	got := gate.frames()
	want := [][]byte{raw1, frame(macP, macB, 0x11, le(9), le(0)), frame(macC, macB, 0x10, le(0), le(0x1000)), raw2}
	if len(got) != len(want) {
		t.Fatalf("%d frames written, want %d", len(got), len(want))
	}
	for i := range want {
		eqBytes(t, "frame order", want[i], got[i])
	}
}

// TestSlowLink: over a link with latency and limited bandwidth, blocks of
// several maximum-size fragments and RMEM operations complete, with
// response timers running, and the bytes arrive intact.
func TestSlowLink(t *testing.T) {
	sw := newSwitchWith(t, mem.Config{Latency: 2 * time.Millisecond, Bandwidth: 4 << 20})
	ramB := newRAM(t)
	cfg := endpoint.Config{DMATimeout: 5 * time.Second, RMEMTimeout: 5 * time.Second}
	a := newEP(t, sw, macA, newRAM(t), cfg)
	b := newEP(t, sw, macB, ramB, cfg)
	c := newEP(t, sw, macC, newRAM(t), cfg)
	dmaPath(t, a, 0, b, 0)
	setPeer(t, c, 0, win(macB, endpoint.ModeDMAWrite))
	setPeer(t, b, 1, win(macC, endpoint.ModeDMARead))
	src := pattern(20000, 9)
	start := time.Now()
	tr, err := a.DMAWrite(bg(), 0, 0x1001, src)
	if err != nil || tr != (endpoint.Transfer{Bytes: 20000, Fragments: 3}) {
		t.Fatalf("DMAWrite = %+v, %v", tr, err)
	}
	// 20000 bytes at 4 MiB/s plus three round trips of 4ms at least.
	if el := time.Since(start); el < 12*time.Millisecond {
		t.Fatalf("slow link finished in %v; the link model is not in effect", el)
	}
	dst := make([]byte, len(src))
	if _, err := c.DMARead(bg(), 0, 0x1001, dst); err != nil {
		t.Fatal(err)
	}
	eqBytes(t, "read back", src, dst)
	got := make([]byte, len(src))
	ramB.ReadAt(got, 0x1001)
	if !bytes.Equal(src, got) {
		t.Fatal("B's memory differs")
	}
	setPeer(t, a, 1, win(macC, endpoint.ModeRMEM))
	setPeer(t, c, 1, win(macA, endpoint.ModeRMEM))
	if err := a.RMEMWrite(bg(), 1, 0x1000, 0xCAFE, 0xFFFF); err != nil {
		t.Fatal(err)
	}
	if v, err := a.RMEMRead(bg(), 1, 0x1000); err != nil || v != 0xCAFE {
		t.Fatalf("RMEMRead = %#x, %v", v, err)
	}
	for _, e := range []*endpoint.Endpoint{a, b, c} {
		for i := range 2 {
			wantStatus(t, "status", e, i, endpoint.PeerStatus{})
		}
	}
	_ = wire.MAC{}
}
