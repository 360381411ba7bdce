package endpoint_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// TestMulticast: one master, group members, reply suppression. Group
// writes (DMA and RMEM) complete when the link has accepted each frame,
// with no response timer; members with the group configured serve them and
// never reply, also when they fail (the failure is recorded locally); an
// endpoint with a zero group, or another group, ignores them; broadcast is
// accepted only by an endpoint whose group is all ones. Group reads are
// refused locally, never transmitted, and consume no Request ID.
func TestMulticast(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{MaxFragment: 40, DMATimeout: time.Hour, RMEMTimeout: time.Hour})
	timer := endpoint.InstallFakeTimer(a)
	ramB, ramC, ramD, ramE := newRAM(t), newRAM(t), newRAM(t), newRAM(t)
	member := endpoint.Config{Group: group, Events: endpoint.EventEnable{PeerDMAComplete: true, RMEMError: true}}
	b := newEP(t, sw, macB, ramB, member)
	c := newEP(t, sw, macC, ramC, member)
	d := newEP(t, sw, macD, ramD, endpoint.Config{RawPolicy: endpoint.RawPromiscuous}) // sees everything, group disabled
	e := newEP(t, sw, macP, ramE, endpoint.Config{Group: wire.Broadcast})
	setPeer(t, a, 0, win(group, endpoint.ModeDMARead))
	setPeer(t, a, 1, win(group, endpoint.ModeRMEM))
	setPeer(t, a, 2, win(wire.Broadcast, endpoint.ModeDMARead))
	setPeer(t, a, 3, win(group, endpoint.ModeDMAWrite))
	for _, m := range []*endpoint.Endpoint{b, d, e} {
		setPeer(t, m, 0, win(macA, endpoint.ModeDMAWrite))
	}
	setPeer(t, c, 0, endpoint.Peer{MAC: macA, Mode: endpoint.ModeDMAWrite, WindowBase: 0x1000, WindowSize: 0x800, EventEnable: true})

	// A three-fragment group write.
	src := pattern(100, 1)
	tr, err := a.DMAWrite(bg(), 0, 0x1100, src)
	if err != nil || tr != (endpoint.Transfer{Bytes: 100, Fragments: 3}) {
		t.Fatalf("group DMAWrite = %+v, %v", tr, err)
	}
	for k, l := range []int{40, 40, 20} {
		eqBytes(t, "fragment", frame(group, macA, 0x40, le(uint32(k)), le(uint32(0x1100+40*k)), le(uint32(l)), data(src[40*k:40*k+l]), eod), sniff.next(t))
	}
	// Group writes have no response: wait for the members' counters
	// (which also order the memory accesses before the reads below).
	eventually(t, "members served", func() bool { return b.Stats().ServedDMAWrite == 3 && c.Stats().ServedDMAWrite == 3 })
	for _, ram := range []*memory.RAM{ramB, ramC} {
		got := make([]byte, 100)
		ram.ReadAt(got, 0x1100)
		eqBytes(t, "member memory", src, got)
	}

	// A group write that fails at C (outside C's window) and succeeds at B.
	if _, err := a.DMAWrite(bg(), 0, 0x1900, []byte{9, 9}); err != nil {
		t.Fatal(err)
	}
	sniff.next(t)
	eventually(t, "C's record", func() bool { return c.PeerStatus(0) == failed(wire.CodeLocalInvalid) })
	ev, _ := c.NextEvent(bg())
	diff(t, "C's event", endpoint.Event{Source: endpoint.PeerDMAComplete, Peer: 0, Code: wire.CodeLocalInvalid}, ev)
	eventually(t, "B's write", func() bool { return b.Stats().ServedDMAWrite == 4 })
	if w, _ := ramB.ReadWord(0x1900); w&0xFFFF != 0x0909 {
		t.Fatalf("B's word %#x", w)
	}

	// An RMEM group write.
	setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))
	setPeer(t, c, 0, win(macA, endpoint.ModeRMEM))
	if err := a.RMEMWrite(bg(), 1, 0x1000, 0x12345678, 0x0000FFFF); err != nil {
		t.Fatal(err)
	}
	eqBytes(t, "RMEM group write", frame(group, macA, 0x20, le(4), le(0x1000), le(0xFFFF), le(0x12345678)), sniff.next(t))
	eventually(t, "RMEM members", func() bool { return b.Stats().ServedRMEMWrite == 1 && c.Stats().ServedRMEMWrite == 1 })
	for _, ram := range []*memory.RAM{ramB, ramC} {
		if w, _ := ram.ReadWord(0x1000); w != 0x5678 {
			t.Fatalf("member word %#x", w)
		}
	}

	// Broadcast: only E (group all ones) accepts it.
	if _, err := a.DMAWrite(bg(), 2, 0x1200, []byte{7, 7, 7, 7}); err != nil {
		t.Fatal(err)
	}
	eqBytes(t, "broadcast write", frame(wire.Broadcast, macA, 0x40, le(5), le(0x1200), le(4), []byte{7, 7, 7, 7}, eod), sniff.next(t))
	eventually(t, "E's write", func() bool { return e.Stats().ServedDMAWrite == 1 })
	if w, _ := ramE.ReadWord(0x1200); w != 0x07070707 {
		t.Fatalf("E's word %#x", w)
	}

	// Group reads are refused locally.
	_, err = a.DMARead(bg(), 3, 0x1000, make([]byte, 4))
	wantCode(t, "group DMA read", err, wire.CodeLocalInvalid)
	_, err = a.RMEMRead(bg(), 1, 0x1000)
	wantCode(t, "group RMEM read", err, wire.CodeLocalInvalid)
	if err := a.RMEMWrite(bg(), 1, 0x1004, 1, 1); err != nil {
		t.Fatal(err)
	}
	eqBytes(t, "next Request ID", frame(group, macA, 0x20, le(6), le(0x1004), le(1), le(1)), sniff.next(t))

	// No reply of any kind, no timer, nothing for D.
	eventually(t, "broadcast at B and C", func() bool {
		return b.Stats().DropNotForUs == 1 && c.Stats().DropNotForUs == 1 && d.Stats().DropNotForUs == 7
	})
	sniff.none(t, 20*time.Millisecond)
	if s := timer.Starts(); len(s) != 0 {
		t.Fatalf("group writes started the response timer: %v", s)
	}
	for _, m := range []*endpoint.Endpoint{b, c, d, e} {
		if s := m.Stats(); s.TxFrames != 0 {
			t.Fatalf("a member sent %d frames", s.TxFrames)
		}
	}
	if w, _ := ramD.ReadWord(0x1100); w != 0 {
		t.Fatal("D (group disabled) was written")
	}
	if w, _ := ramE.ReadWord(0x1100); w != 0 {
		t.Fatal("E (broadcast group) accepted a write to another group")
	}
	wantStatus(t, "B", b, 0, endpoint.PeerStatus{})
	for i := range 4 {
		wantStatus(t, "A", a, i, map[bool]endpoint.PeerStatus{true: failed(wire.CodeLocalInvalid), false: {}}[i == 1 || i == 3])
	}
}

// TestGroupChange: SetConfig moves the group membership: the link leaves
// the old group and joins the new one.
func TestGroupChange(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	ramB := newRAM(t)
	b := newEP(t, sw, macB, ramB, endpoint.Config{Group: group})
	setPeer(t, b, 0, win(macP, endpoint.ModeRMEM))
	p.send(t, frame(group, macP, 0x20, le(0), le(0x1000), le(0xFF), le(1)))
	eventually(t, "first group", func() bool { return b.Stats().ServedRMEMWrite == 1 })
	cfg := b.Config()
	cfg.Group = grp2
	if err := b.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	p.send(t, frame(group, macP, 0x20, le(1), le(0x1000), le(0xFF), le(2)))
	p.send(t, frame(grp2, macP, 0x20, le(2), le(0x1004), le(0xFF), le(3)))
	eventually(t, "second group", func() bool { return b.Stats().ServedRMEMWrite == 2 })
	if w, _ := ramB.ReadWord(0x1004); w != 3 {
		t.Fatalf("new group: %#x", w)
	}
	if w, _ := ramB.ReadWord(0x1000); w != 1 {
		t.Fatalf("old group still served: %#x", w)
	}
	if s := b.Stats(); s.RxFrames != 2 {
		t.Fatalf("B received %d frames; the old group should no longer be delivered", s.RxFrames)
	}
}

// TestGroupInterval: with Config.GroupInterval the frames of a group block
// are handed to the link no closer together than the interval (the block
// takes at least (fragments-1) intervals), exactly the frames of an
// unpaced block; a negative interval is
// refused.
func TestGroupInterval(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	const interval = 5 * time.Millisecond
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{MaxFragment: 40, GroupInterval: interval})
	setPeer(t, a, 0, win(group, endpoint.ModeDMARead))
	src := pattern(160, 3)
	t0 := time.Now()
	tr, err := a.DMAWrite(bg(), 0, 0x1100, src)
	el := time.Since(t0)
	if err != nil || tr != (endpoint.Transfer{Bytes: 160, Fragments: 4}) {
		t.Fatalf("group DMAWrite = %+v, %v", tr, err)
	}
	if el < 3*interval {
		t.Fatalf("4 fragments at %v intervals took %v", interval, el)
	}
	for k := range 4 {
		eqBytes(t, "fragment", frame(group, macA, 0x40, le(uint32(k)), le(uint32(0x1100+40*k)), le(40), data(src[40*k:40*k+40]), eod), sniff.next(t))
	}
	if got := a.Config().GroupInterval; got != interval {
		t.Fatalf("Config().GroupInterval = %v", got)
	}
	c := a.Config()
	c.GroupInterval = -time.Millisecond
	if err := a.SetConfig(c); err == nil || !strings.Contains(err.Error(), "GroupInterval") {
		t.Fatalf("SetConfig with a negative GroupInterval: %v", err)
	}
}

// TestGroupIntervalCancel: a cancelled context ends a paced group block
// during the wait between frames, not after it: with an hour's interval the
// block returns once the first frame is out and the context is cancelled,
// with that frame counted and the context's error.
func TestGroupIntervalCancel(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{MaxFragment: 40, GroupInterval: time.Hour})
	setPeer(t, a, 0, win(group, endpoint.ModeDMARead))
	src := pattern(160, 3)
	ctx, cancel := context.WithCancel(bg())
	defer cancel()
	type result struct {
		tr  endpoint.Transfer
		err error
	}
	done := make(chan result, 1)
	go func() {
		tr, err := a.DMAWrite(ctx, 0, 0x1100, src)
		done <- result{tr, err}
	}()
	eqBytes(t, "first fragment", frame(group, macA, 0x40, le(0), le(0x1100), le(40), data(src[:40]), eod), sniff.next(t))
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || r.tr.Bytes != 40 || r.tr.Fragments != 1 {
			t.Fatalf("cancelled group DMAWrite = %+v, %v; want 40 bytes, 1 fragment, context.Canceled", r.tr, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the group block did not end when its context was cancelled")
	}
}
