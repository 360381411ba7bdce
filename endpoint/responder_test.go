package endpoint_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// countingSpace counts every access that reaches the wrapped Space.
type countingSpace struct {
	memory.Space
	n atomic.Int64
}

func (c *countingSpace) ReadAt(p []byte, a uint32) memory.Resp {
	c.n.Add(1)
	return c.Space.ReadAt(p, a)
}
func (c *countingSpace) WriteAt(p []byte, a uint32) memory.Resp {
	c.n.Add(1)
	return c.Space.WriteAt(p, a)
}
func (c *countingSpace) ReadWord(a uint32) (uint32, bool) {
	c.n.Add(1)
	return c.Space.ReadWord(a)
}
func (c *countingSpace) WriteWord(a, d, m uint32) bool {
	c.n.Add(1)
	return c.Space.WriteWord(a, d, m)
}

// responderMemory is B's memory in the admission test: RAM at [0x1000,
// 0x9000), a SLVERR region at [0x9000, 0xA000), a hole above. It counts
// accesses.
func responderMemory(t *testing.T) (*countingSpace, *memory.RAM) {
	t.Helper()
	m, r := newSLVERRMap(t, 0x1000, 0x8000, 0x9000, 0x1000)
	return &countingSpace{Space: m}, r
}

// TestResponderAdmission: every admission check in order, with the exact
// reply (success or ERROR_RSP with its cause), the code recorded in the
// source peer's status (10 for an incomplete DMA_WRITE_REQ, whose ERROR_RSP
// carries cause 2), and no memory access for a rejected request.
func TestResponderAdmission(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	q := newTap(t, sw, macQ, false)
	space, ram := responderMemory(t)
	// MaxFrame 1000: fragment ceiling 968.
	b := newEP(t, sw, macB, space, endpoint.Config{MaxFrame: 1000, Events: endpoint.EventEnable{PeerDMAComplete: true, RMEMError: true}})
	window := endpoint.Peer{MAC: macP, WindowBase: 0x1000, WindowSize: 0xA000, EventEnable: true}
	setPeer(t, b, 1, endpoint.Peer{MAC: macQ, Mode: endpoint.ModeDMARead, WindowBase: 0xFFFFFF00, WindowSize: 0x100})
	ram.WriteAt(pattern(0x8000, 0), 0x1000)
	pad := func(f []byte, n int) []byte { return append(f, make([]byte, n-len(f))...) }
	rmw := func(rid, addr, mask, d uint32) []byte {
		return frame(macB, macP, 0x20, le(rid), le(addr), le(mask), le(d))
	}
	rmr := func(rid, addr uint32) []byte { return frame(macB, macP, 0x10, le(rid), le(addr)) }
	dr := func(rid, addr, n uint32) []byte { return frame(macB, macP, 0x30, le(rid), le(addr), le(n)) }
	dw := func(rid, addr uint32, b []byte) []byte {
		return frame(macB, macP, 0x40, le(rid), le(addr), le(uint32(len(b))), data(b), eod)
	}
	errRsp := func(rid, cause uint32) []byte { return frame(macP, macB, 0xFF, le(rid), le(cause)) }
	five := []byte{1, 2, 3, 4, 5}
	cases := []struct {
		name     string
		mode     endpoint.Mode
		req      []byte
		reply    []byte // nil: ERROR_RSP with cause
		cause    uint32
		record   wire.Code
		accesses int64
		wrote    bool // memory at 0x2000 changed
	}{
		{"RMEM read", 1, rmr(1, 0x2000), frame(macP, macB, 0x11, le(1), pattern(0x8000, 0)[0x1000:0x1004]), 0, 0, 1, false},
		{"RMEM read padded to 60", 1, pad(rmr(2, 0x2000), 60), frame(macP, macB, 0x11, le(2), pattern(0x8000, 0)[0x1000:0x1004]), 0, 0, 1, false},
		{"RMEM read padded to 61", 1, pad(rmr(3, 0x2000), 61), nil, 2, 2, 0, false},
		{"RMEM read truncated", 1, rmr(4, 0x2000)[:23], nil, 2, 2, 0, false},
		{"RMEM write too long", 1, append(rmw(5, 0x2000, 1, 1), 0), nil, 2, 2, 0, false},
		{"RMEM read, mode 2", 2, rmr(6, 0x2000), nil, 1, 1, 0, false},
		// The RTL's precedence: peer mode and alignment (1), then the
		// DMA Length ceiling (3), then framing (2), then the window (1).
		{"RMEM read with a trailing byte, mode 2", 2, append(rmr(7, 0x2000), 0), nil, 1, 1, 0, false},
		{"RMEM write too long, unaligned", 1, append(rmw(18, 0x2002, 1, 1), 0), nil, 1, 1, 0, false},
		{"RMEM read with a trailing byte, past window", 1, append(rmr(19, 0xB000), 0), nil, 2, 2, 0, false},
		{"DMA read zero length, trailing byte", 3, append(dr(48, 0x2000, 0), 0), nil, 1, 1, 0, false},
		{"DMA read over fragment ceiling, trailing byte", 3, append(dr(49, 0x2000, 969), 0), nil, 3, 3, 0, false},
		{"DMA read truncated, mode 1", 1, dr(50, 0x2000, 4)[:27], nil, 1, 1, 0, false},
		{"RMEM read unaligned", 1, rmr(8, 0x2002), nil, 1, 1, 0, false},
		{"RMEM read below window", 1, rmr(9, 0xFFC), nil, 1, 1, 0, false},
		{"RMEM read last word of window", 1, rmr(10, 0xAFFC), nil, 4, 4, 1, false},
		{"RMEM read past window", 1, rmr(11, 0xB000), nil, 1, 1, 0, false},
		{"RMEM read SLVERR", 1, rmr(12, 0x9000), nil, 4, 4, 1, false},
		{"RMEM write SLVERR", 1, rmw(13, 0x9000, 1, 1), nil, 6, 6, 1, false},
		{"RMEM write zero mask on SLVERR memory", 1, rmw(14, 0x9000, 0, 1), frame(macP, macB, 0x21, le(14)), 0, 0, 0, false},
		{"RMEM write zero mask unaligned", 1, rmw(15, 0x2001, 0, 1), nil, 1, 1, 0, false},
		{"RMEM write zero mask past window", 1, rmw(16, 0xB000, 0, 1), nil, 1, 1, 0, false},
		{"RMEM write", 1, rmw(17, 0x2000, 0xFF00FF00, 0xAAAAAAAA), frame(macP, macB, 0x21, le(17)), 0, 0, 1, true},
		{"DMA write, mode 1", 1, dw(20, 0x2000, five), nil, 1, 1, 0, false},
		{"DMA write, mode 3", 3, dw(21, 0x2000, five), nil, 1, 1, 0, false},
		{"DMA write zero length", 2, dw(22, 0x2000, nil), nil, 1, 1, 0, false},
		{"DMA write EndOfData missing", 2, dw(23, 0x2000, five)[:40-4], nil, 2, 10, 0, false},
		{"DMA write bad EndOfData", 2, append(dw(24, 0x2000, five)[:36], 0xd0, 0xe0, 0xd0, 0xe1), nil, 2, 10, 0, false},
		{"DMA write excess word", 2, append(dw(25, 0x2000, five), 0, 0, 0, 0), nil, 2, 10, 0, false},
		{"DMA write Length beyond data", 2, frame(macB, macP, 0x40, le(26), le(0x2000), le(9), data(five), eod), nil, 2, 10, 0, false},
		{"DMA write zero-padded instead of EndOfData", 2, pad(dw(27, 0x2000, five)[:36], 60), nil, 2, 10, 0, false},
		{"DMA write over MaxFrame", 2, dw(28, 0x2000, make([]byte, 1000)), nil, 3, 3, 0, false},
		{"DMA write last byte of RAM", 2, dw(29, 0x8FFF, []byte{0x77}), frame(macP, macB, 0x41, le(29)), 0, 0, 1, false},
		{"DMA write SLVERR", 2, dw(30, 0x9000, five), nil, 6, 6, 1, false},
		{"DMA write DECERR, last byte of window", 2, dw(31, 0xAFFF, []byte{1}), nil, 7, 7, 1, false},
		{"DMA write one past window", 2, dw(32, 0xB000, []byte{1}), nil, 1, 1, 0, false},
		{"DMA write straddling window end", 2, dw(33, 0xAFFF, []byte{1, 2}), nil, 1, 1, 0, false},
		{"DMA write", 2, dw(34, 0x2001, five), frame(macP, macB, 0x41, le(34)), 0, 0, 1, true},
		{"DMA read, mode 2", 2, dr(40, 0x2000, 4), nil, 1, 1, 0, false},
		{"DMA read zero length", 3, dr(41, 0x2000, 0), nil, 1, 1, 0, false},
		{"DMA read over fragment ceiling", 3, dr(42, 0x2000, 969), nil, 3, 3, 0, false},
		{"DMA read truncated", 3, dr(43, 0x2000, 4)[:27], nil, 2, 2, 0, false},
		{"DMA read at fragment ceiling", 3, dr(44, 0x1000, 968), frame(macP, macB, 0x31, le(44), pattern(0x8000, 0)[:968], eod), 0, 0, 1, false},
		{"DMA read SLVERR", 3, dr(45, 0x8FFC, 8), nil, 4, 4, 1, false},
		{"DMA read DECERR", 3, dr(46, 0xA000, 8), nil, 5, 5, 1, false},
		{"DMA read", 3, dr(47, 0x3003, 5), frame(macP, macB, 0x31, le(47), data(pattern(0x8000, 0)[0x2003:0x2008]), eod), 0, 0, 1, false},
	}
	var failures uint64
	for _, c := range cases {
		window.Mode = c.mode
		setPeer(t, b, 0, window)
		b.ClearError(0)
		before := make([]byte, 16)
		ram.ReadAt(before, 0x2000)
		n0 := space.n.Load()
		p.send(t, c.req)
		want := c.reply
		if want == nil {
			want = errRsp(wire.Frame(c.req).RequestID(), c.cause)
		}
		eqBytes(t, c.name+": reply", want, p.next(t))
		if got := space.n.Load() - n0; got != c.accesses {
			t.Fatalf("%s: %d memory accesses, want %d", c.name, got, c.accesses)
		}
		after := make([]byte, 16)
		ram.ReadAt(after, 0x2000)
		if bytes.Equal(before, after) == c.wrote {
			t.Fatalf("%s: memory at 0x2000 % x -> % x", c.name, before, after)
		}
		if c.record == 0 {
			wantStatus(t, c.name, b, 0, endpoint.PeerStatus{})
			continue
		}
		failures++
		wantStatus(t, c.name, b, 0, failed(c.record))
		ev, _ := b.NextEvent(bg())
		src := endpoint.PeerDMAComplete
		if wire.Frame(c.req).Cmd().IsRMEM() {
			src = endpoint.RMEMError
		}
		diff(t, c.name+": event", endpoint.Event{Source: src, Peer: 0, Code: c.record}, ev)
	}
	want := bytes.Clone(pattern(0x8000, 0)[0x1000:0x100C])
	want[1], want[3] = 0xAA, 0xAA // RMEM write, BitEnable 0xFF00FF00
	copy(want[1:], five)          // DMA write at 0x2001
	got := make([]byte, len(want))
	ram.ReadAt(got, 0x2000)
	eqBytes(t, "memory after the writes", want, got)

	// Address + Length is checked with widened arithmetic at the top of
	// the address space.
	for _, c := range []struct {
		addr, n uint32
		cause   uint32
	}{{0xFFFFFFFC, 4, 5}, {0xFFFFFFFF, 1, 5}, {0xFFFFFFFC, 8, 1}, {0xFFFFFFFF, 2, 1}, {0xFFFFFF00, 0x100, 5}, {0xFFFFFEFF, 2, 1}} {
		q.send(t, frame(macB, macQ, 0x30, le(9), le(c.addr), le(c.n)))
		eqBytes(t, fmt.Sprintf("read %#x+%d", c.addr, c.n), frame(macQ, macB, 0xFF, le(9), le(c.cause)), q.next(t))
		wantStatus(t, "Q", b, 1, failed(wire.Code(c.cause)))
		failures++
	}
	s := b.Stats()
	if s.ResponderFailures != failures {
		t.Fatalf("ResponderFailures %d, want %d", s.ResponderFailures, failures)
	}
	var sent uint64
	for _, n := range s.ErrorsSent {
		sent += n
	}
	if sent != failures || s.ErrorsSent[2] != 10 || s.ErrorsSent[3] != 3 {
		t.Fatalf("ErrorsSent %v", s.ErrorsSent)
	}
}

// TestDisabledAndDuplicatePeers: as in the openENOC peer lookup, an entry
// in mode 0 never matches a received source (its requests are dropped
// silently and counted as from an unknown source, and DisabledPeer names
// the entry), and of several entries with one MAC the lowest enabled index
// serves its requests, its mode checked and its status recorded.
func TestDisabledAndDuplicatePeers(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	q := newTap(t, sw, macQ, false)
	space := &countingSpace{Space: newRAM(t)}
	b := newEP(t, sw, macB, space, endpoint.Config{})
	setPeer(t, b, 0, win(macP, endpoint.ModeNone))
	setPeer(t, b, 1, win(macQ, endpoint.ModeNone))
	setPeer(t, b, 2, win(macP, endpoint.ModeDMAWrite))
	setPeer(t, b, 3, win(macP, endpoint.ModeRMEM))
	rmr := func(src wire.MAC, rid uint32) []byte { return frame(macB, src, 0x10, le(rid), le(0x1000)) }

	q.send(t, rmr(macQ, 1))
	eventually(t, "drop", func() bool { return b.Stats().DropUnknownSource == 1 })
	q.none(t, 20*time.Millisecond)
	if i, ok := b.DisabledPeer(macQ); !ok || i != 1 {
		t.Fatalf("DisabledPeer(Q) = %d, %v; want 1, true", i, ok)
	}
	if _, ok := b.DisabledPeer(macP); ok {
		t.Fatal("DisabledPeer(P): P has an enabled entry")
	}
	// P: entry 0 is disabled, entry 2 (DMA write) is the lowest enabled
	// one, so an RMEM read fails its mode check although entry 3 permits it.
	p.send(t, rmr(macP, 2))
	eqBytes(t, "RMEM read from P", frame(macP, macB, 0xFF, le(2), le(1)), p.next(t))
	wantStatus(t, "entry 2", b, 2, failed(wire.CodeLocalInvalid))
	wantStatus(t, "entry 3", b, 3, endpoint.PeerStatus{})
	// Entry 2 disabled: entry 3 serves P.
	setPeer(t, b, 2, win(macP, endpoint.ModeNone))
	p.send(t, rmr(macP, 3))
	eqBytes(t, "RMEM read from P via entry 3", frame(macP, macB, 0x11, le(3), le(0)), p.next(t))
	// Q's entry enabled: served.
	setPeer(t, b, 1, win(macQ, endpoint.ModeRMEM))
	if _, ok := b.DisabledPeer(macQ); ok {
		t.Fatal("DisabledPeer(Q) after enabling its entry")
	}
	q.send(t, rmr(macQ, 4))
	eqBytes(t, "RMEM read from Q", frame(macQ, macB, 0x11, le(4), le(0)), q.next(t))
	if s := b.Stats(); s.DropUnknownSource != 1 || s.ServedRMEMRead != 2 || s.ResponderFailures != 1 {
		t.Fatalf("stats %+v", s)
	}
	if src, cmd, ok := b.LastUnknownSource(); !ok || src != macQ || cmd != wire.RMEMReadReq {
		t.Fatalf("LastUnknownSource = %v, %v, %v", src, cmd, ok)
	}
}

// TestResponderDrops: frames that must be discarded without a reply and
// without touching memory or any peer status: unknown sources (unicast or
// group), other destinations, group reads, unsolicited responds, reserved
// commands, runts and frames without a Request ID. A malformed oETP frame
// never reaches the raw queue, even with the promiscuous raw policy. Group
// writes are served (or fail and are recorded) without any reply.
func TestResponderDrops(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	u := newTap(t, sw, macD, false) // not in B's peer table
	space := &countingSpace{Space: newRAM(t)}
	b := newEP(t, sw, macB, space, endpoint.Config{Group: group, RawPolicy: endpoint.RawPromiscuous, Events: endpoint.EventEnable{RMEMError: true, PeerDMAComplete: true}})
	setPeer(t, b, 0, win(macP, endpoint.ModeRMEM))
	rmw := func(dst wire.MAC, addr uint32) []byte {
		return frame(dst, macP, 0x20, le(1), le(addr), le(0xFFFFFFFF), le(0x5A5A5A5A))
	}

	u.send(t, frame(macB, macD, 0x20, le(1), le(0x1000), le(0xFFFFFFFF), le(1)))
	u.send(t, frame(group, macD, 0x40, le(2), le(0x1000), le(1), []byte{1, 0, 0, 0}, eod))
	p.send(t, rmw(macX, 0x1000))
	p.send(t, rmw(grp2, 0x1000))
	p.send(t, rmw(wire.Broadcast, 0x1000))
	p.send(t, frame(group, macP, 0x10, le(3), le(0x1000)))
	p.send(t, frame(group, macP, 0x30, le(4), le(0x1000), le(4)))
	p.send(t, frame(macB, macP, 0x11, le(5), le(0)))
	p.send(t, frame(macB, macP, 0xFF, le(6), le(1)))
	p.send(t, frame(macB, macP, 0x12, le(7), le(0x1000)))
	p.send(t, append(frame(macB, macP, 0x20), 0, 0, 0))
	if err := sw.AddRule(mem.Rule{From: macP, Action: mem.Truncate, Len: 10, Count: 1}); err != nil {
		t.Fatal(err)
	}
	p.send(t, rmw(macB, 0x1000))
	want := endpoint.Stats{DropUnknownSource: 2, DropNotForUs: 3, DropGroupRead: 2, DropUnmatchedResponse: 2, DropReservedCmd: 1, DropNoRequestID: 1, DropRunt: 1}
	got := func() endpoint.Stats {
		s := b.Stats()
		return endpoint.Stats{DropUnknownSource: s.DropUnknownSource, DropNotForUs: s.DropNotForUs, DropGroupRead: s.DropGroupRead,
			DropUnmatchedResponse: s.DropUnmatchedResponse, DropReservedCmd: s.DropReservedCmd, DropNoRequestID: s.DropNoRequestID, DropRunt: s.DropRunt,
			RawReceived: s.RawReceived, ResponderFailures: s.ResponderFailures, TxFrames: s.TxFrames}
	}
	eventually(t, "drops", func() bool { return got() == want })
	if n := space.n.Load(); n != 0 {
		t.Fatalf("%d memory accesses, want 0", n)
	}
	for i := range endpoint.MaxPeers {
		wantStatus(t, "after drops", b, i, endpoint.PeerStatus{})
	}
	ctx, cancel := context.WithTimeout(bg(), 10*time.Millisecond)
	defer cancel()
	if _, err := b.RecvRaw(ctx, make([]byte, 100)); err != context.DeadlineExceeded {
		t.Fatalf("RecvRaw = %v; a malformed oETP frame reached the raw queue", err)
	}

	// Group writes: served without a reply; failures recorded, no ERROR_RSP.
	p.send(t, rmw(group, 0x1000))
	eventually(t, "group write", func() bool { return b.Stats().ServedRMEMWrite == 1 })
	if w, _ := space.Space.ReadWord(0x1000); w != 0x5A5A5A5A {
		t.Fatalf("group write stored %#x", w)
	}
	p.send(t, rmw(group, 0x1002))
	eventually(t, "group failure", func() bool { return b.PeerStatus(0) == failed(wire.CodeLocalInvalid) })
	ev, _ := b.NextEvent(bg())
	diff(t, "event", endpoint.Event{Source: endpoint.RMEMError, Code: wire.CodeLocalInvalid}, ev)
	b.ClearError(0)
	p.send(t, frame(group, macP, 0x40, le(9), le(0x1000), le(1), []byte{1, 0, 0, 0}, eod))
	eventually(t, "group DMA failure", func() bool { return b.PeerStatus(0) == failed(wire.CodeLocalInvalid) })
	p.none(t, 20*time.Millisecond)
	for len(u.frames) > 0 { // U sees P's broadcast, never anything from B
		if f := <-u.frames; wire.Frame(f).Src() == macB {
			t.Fatalf("B sent % x to an unknown source", f)
		}
	}
	if s := b.Stats(); s.TxFrames != 0 || s.ServedRMEMWrite != 1 || s.ResponderFailures != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// TestWorkedExample is the specification's example: A DMA-writes to B, B's
// memory answers SLVERR. B records LOCAL_AXI_WR_SLVERR (6) in its entry for
// A, raises PEER_DMA_COMPLETE and answers ERROR_RSP with the Request ID and
// cause 6; A records REMOTE_AXI_WR_SLVERR (14) in its entry for B and
// raises its own event. Each side names its own peer index.
func TestWorkedExample(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	target, _ := memory.NewFault(0x1000, 0x1000, memory.SLVERR)
	events := endpoint.EventEnable{PeerDMAComplete: true}
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{Events: events})
	b := newEP(t, sw, macB, target, endpoint.Config{Events: events})
	setPeer(t, a, 2, endpoint.Peer{MAC: macB, Mode: endpoint.ModeDMARead, EventEnable: true})
	setPeer(t, b, 5, endpoint.Peer{MAC: macA, Mode: endpoint.ModeDMAWrite, WindowBase: 0x1000, WindowSize: 0x1000, EventEnable: true})
	endpoint.SetRequestID(a, 0x1234)
	tr, err := a.DMAWrite(bg(), 2, 0x1800, pattern(100, 0))
	wantCode(t, "A's DMA write", err, wire.CodeRemoteAXIWrSlverr)
	if err.Error() != "oetp: DMA write to peer 2: REMOTE_AXI_WR_SLVERR (14)" {
		t.Fatalf("error text %q", err)
	}
	if tr != (endpoint.Transfer{}) {
		t.Fatalf("transfer %+v", tr)
	}
	eqBytes(t, "request", frame(macB, macA, 0x40, le(0x1234), le(0x1800), le(100), pattern(100, 0), eod), sniff.next(t))
	eqBytes(t, "ERROR_RSP", unhex(t, "020e0c00000a 020e0c00000b 88b5 0e ff 34120000 06000000"), sniff.next(t))
	wantStatus(t, "B's entry for A", b, 5, failed(wire.CodeLocalAXIWrSlverr))
	wantStatus(t, "A's entry for B", a, 2, failed(wire.CodeRemoteAXIWrSlverr))
	evA, _ := a.NextEvent(bg())
	evB, _ := b.NextEvent(bg())
	diff(t, "A's event", endpoint.Event{Source: endpoint.PeerDMAComplete, Peer: 2, Code: 14}, evA)
	diff(t, "B's event", endpoint.Event{Source: endpoint.PeerDMAComplete, Peer: 5, Code: 6}, evB)
	if s := b.Stats(); s.ErrorsSent[6] != 1 || s.ResponderFailures != 1 {
		t.Fatalf("B stats %+v", s)
	}
}

// blockingSpace blocks bulk writes to [lo, hi) until released.
type blockingSpace struct {
	memory.Space
	lo, hi  uint32
	entered chan struct{}
	release chan struct{}
}

// newBlockingSpace wraps space: a write into [lo, hi) signals entered
// (which holds up to n signals) and waits for release to be closed.
func newBlockingSpace(space memory.Space, lo, hi uint32, n int) *blockingSpace {
	return &blockingSpace{Space: space, lo: lo, hi: hi, entered: make(chan struct{}, n), release: make(chan struct{})}
}

// newSlowResponder starts B on test RAM whose writes to [0x1000, 0x2000)
// block (entered holds n signals), with the raw port P as its dma-write
// peer 0.
func newSlowResponder(t *testing.T, n int) (*endpoint.Endpoint, *tap, *blockingSpace) {
	t.Helper()
	sw, p := newSwitchTap(t, macP, false)
	slow := newBlockingSpace(newRAM(t), 0x1000, 0x2000, n)
	b := newEP(t, sw, macB, slow, endpoint.Config{})
	setPeer(t, b, 0, win(macP, endpoint.ModeDMAWrite))
	return b, p, slow
}

func (s *blockingSpace) WriteAt(p []byte, a uint32) memory.Resp {
	if a >= s.lo && a < s.hi {
		s.entered <- struct{}{}
		<-s.release
	}
	return s.Space.WriteAt(p, a)
}

// TestBusyResponder: with one responder context blocked in memory, a new
// request is dropped (no reply, no memory access, counted) and its
// initiator times out; the receive loop keeps going, so the endpoint's own
// RMEM read completes meanwhile; after the release everything completes.
func TestBusyResponder(t *testing.T) {
	sw := newSwitch(t)
	ramB := newRAM(t)
	slow := newBlockingSpace(ramB, 0x8000, 0x9000, 1)
	ramD := newRAM(t)
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{})
	b := newEP(t, sw, macB, slow, endpoint.Config{Contexts: 1})
	c := newEP(t, sw, macC, newRAM(t), endpoint.Config{RMEMTimeout: time.Hour})
	d := newEP(t, sw, macD, ramD, endpoint.Config{})
	dmaPath(t, a, 0, b, 0)
	setPeer(t, c, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, b, 1, win(macC, endpoint.ModeRMEM))
	setPeer(t, b, 2, win(macD, endpoint.ModeRMEM))
	setPeer(t, d, 0, win(macB, endpoint.ModeRMEM))
	timerC := endpoint.InstallFakeTimer(c)
	ramD.WriteWord(0x1100, 0xD00D, 0xFFFFFFFF)

	dw := dmaWrite(a, 0, 0x8000, pattern(16, 4))
	<-slow.entered
	cw := async(func() result { return result{err: c.RMEMWrite(bg(), 0, 0x1000, 0xC, 0xFFFFFFFF)} })
	eventually(t, "busy drop", func() bool { return b.Stats().DropResponderBusy == 1 })
	<-timerC.Started()
	timerC.Fire()
	wantCode(t, "C's write to the busy responder", await(t, cw).err, wire.CodeTimeout)
	wantStatus(t, "C", c, 0, failed(wire.CodeTimeout))
	if w, _ := ramB.ReadWord(0x1000); w != 0 {
		t.Fatalf("dropped request wrote memory: %#x", w)
	}

	// B's own request is matched while its only context is busy.
	ctx, cancel := context.WithTimeout(bg(), waitLong)
	defer cancel()
	if v, err := b.RMEMRead(ctx, 2, 0x1100); err != nil || v != 0xD00D {
		t.Fatalf("B's RMEMRead while busy = %#x, %v", v, err)
	}
	pending(t, dw)
	close(slow.release)
	if r := await(t, dw); r.err != nil {
		t.Fatalf("A's DMA write: %v", r.err)
	}
	got := make([]byte, 16)
	ramB.ReadAt(got, 0x8000)
	eqBytes(t, "B's memory", pattern(16, 4), got)
	if err := c.RMEMWrite(bg(), 0, 0x1000, 0xC, 0xFFFFFFFF); err != nil {
		t.Fatalf("C's retry: %v", err)
	}
	if w, _ := ramB.ReadWord(0x1000); w != 0xC {
		t.Fatalf("C's retry wrote %#x", w)
	}
	for i := range 3 {
		wantStatus(t, "B", b, i, endpoint.PeerStatus{})
	}
}

// TestSimultaneousRoles: A and B, one responder context each, initiate to
// each other at the same time (A writes to B while B reads from A) and
// both complete every block with the right bytes.
func TestSimultaneousRoles(t *testing.T) {
	sw := newSwitch(t)
	ramA, ramB := newRAM(t), newRAM(t)
	cfg := endpoint.Config{MaxFragment: 100, Contexts: 1}
	a := newEP(t, sw, macA, ramA, cfg)
	b := newEP(t, sw, macB, ramB, cfg)
	dmaPath(t, a, 0, b, 0)
	const rounds, n = 50, 1000
	ramA.WriteAt(pattern(n, 0x33), 0x5000)
	var wg sync.WaitGroup
	errs := make(chan error, 2*rounds)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range rounds {
			if _, err := a.DMAWrite(bg(), 0, 0x2000, pattern(n, byte(i))); err != nil {
				errs <- err
			}
		}
	}()
	go func() {
		defer wg.Done()
		dst := make([]byte, n)
		for range rounds {
			if _, err := b.DMARead(bg(), 0, 0x5000, dst); err != nil {
				errs <- err
			} else if !bytes.Equal(dst, pattern(n, 0x33)) {
				errs <- fmt.Errorf("B read wrong bytes")
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := make([]byte, n)
	ramB.ReadAt(got, 0x2000)
	eqBytes(t, "B's memory", pattern(n, rounds-1), got)
	sa, sb := a.Stats(), b.Stats()
	if sa.ServedDMARead != rounds*10 || sb.ServedDMAWrite != rounds*10 || sa.DropResponderBusy+sb.DropResponderBusy != 0 {
		t.Fatalf("A served %d reads, B served %d writes, busy drops %d/%d", sa.ServedDMARead, sb.ServedDMAWrite, sa.DropResponderBusy, sb.DropResponderBusy)
	}
}

// TestContexts: Contexts bounds the requests served at the same time;
// raising it with SetConfig takes effect at once.
func TestContexts(t *testing.T) {
	b, p, slow := newSlowResponder(t, 4)
	req := func(rid uint32) []byte {
		return frame(macB, macP, 0x40, le(rid), le(0x1000+4*rid), le(4), pattern(4, 0), eod)
	}
	p.send(t, req(0))
	<-slow.entered
	p.send(t, req(1))
	eventually(t, "busy", func() bool { return b.Stats().DropResponderBusy == 1 })
	cfg := b.Config()
	cfg.Contexts = 3
	if err := b.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	p.send(t, req(2))
	<-slow.entered
	p.send(t, req(3))
	<-slow.entered
	p.send(t, req(4))
	eventually(t, "busy again", func() bool { return b.Stats().DropResponderBusy == 2 })
	close(slow.release)
	got := map[uint32]bool{}
	for range 3 {
		got[wire.Frame(p.next(t)).RequestID()] = true
	}
	diff(t, "replies", map[uint32]bool{0: true, 2: true, 3: true}, got)
	p.none(t, 20*time.Millisecond)
}

// TestLastUnknownSource: the source MAC and command of the latest request
// dropped for an unknown source are kept for tools to report.
func TestLastUnknownSource(t *testing.T) {
	sw := newSwitch(t)
	u := newTap(t, sw, macD, false) // not in B's peer table
	q := newTap(t, sw, macQ, false)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	setPeer(t, b, 0, win(macP, endpoint.ModeRMEM))
	if _, _, ok := b.LastUnknownSource(); ok {
		t.Fatal("LastUnknownSource before any drop")
	}
	u.send(t, frame(macB, macD, 0x10, le(1), le(0x1000)))
	eventually(t, "first drop", func() bool { return b.Stats().DropUnknownSource == 1 })
	if src, cmd, ok := b.LastUnknownSource(); !ok || src != macD || cmd != wire.RMEMReadReq {
		t.Fatalf("LastUnknownSource = %v, %v, %v; want %v RMEM_READ_REQ", src, cmd, ok, macD)
	}
	q.send(t, frame(macB, macQ, 0x40, le(2), le(0x1000), le(4), []byte{1, 2, 3, 4}, eod))
	eventually(t, "second drop", func() bool { return b.Stats().DropUnknownSource == 2 })
	if src, cmd, ok := b.LastUnknownSource(); !ok || src != macQ || cmd != wire.DMAWriteReq {
		t.Fatalf("LastUnknownSource = %v, %v, %v; want %v DMA_WRITE_REQ", src, cmd, ok, macQ)
	}
}

// TestDMAWriteAdmissionOrder: a DMA_WRITE_REQ runs the checks that need only
// its header first (peer mode, positive Length, Length within the fragment
// ceiling), then the framing checks (frame length against Length,
// EndOfData), whose late result replaces the window's cause 1 as the RTL's
// does; inside the window, a framing failure whose data would fail in
// memory reports the memory's error (6 or 7) instead of 2. Each case is the exact request, the
// exact ERROR_RSP, the code recorded for the peer and the memory contents,
// which a malformed request never changes.
func TestDMAWriteAdmissionOrder(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	// B: RAM [0x1000, 0x9000), SLVERR [0x9000, 0xA000), a hole above; the
	// Map tells how an access would answer without performing it.
	space, ram := newSLVERRMap(t, 0x1000, 0x8000, 0x9000, 0x1000)
	// MaxFrame 1000: fragment ceiling 968.
	b := newEP(t, sw, macB, space, endpoint.Config{MaxFrame: 1000})
	five := []byte{1, 2, 3, 4, 5}
	dw := func(rid, addr, n uint32, payload []byte, trailer []byte) []byte {
		return frame(macB, macP, 0x40, le(rid), le(addr), le(n), data(payload), trailer)
	}
	badEOD := []byte{0xd0, 0xe0, 0xd0, 0xe1}
	pad60 := func(f []byte) []byte { return append(f, make([]byte, 60-len(f))...) }
	cases := []struct {
		name   string
		mode   endpoint.Mode
		req    []byte
		cause  uint32
		record wire.Code
	}{
		// Mode before framing: was cause 2, record 10.
		{"bad EndOfData, mode 1", endpoint.ModeRMEM, dw(1, 0x2000, 5, five, badEOD), 1, 1},
		{"bad EndOfData, mode 3", endpoint.ModeDMARead, dw(2, 0x2000, 5, five, badEOD), 1, 1},
		{"header cut short, mode 1", endpoint.ModeRMEM, frame(macB, macP, 0x40, le(3), le(0x2000), []byte{5, 0}), 1, 1},
		{"header cut short, mode 2", endpoint.ModeDMAWrite, frame(macB, macP, 0x40, le(4), le(0x2000), []byte{5, 0}), 2, 10},
		// Positive Length before framing.
		{"Length 0, bad EndOfData", endpoint.ModeDMAWrite, dw(5, 0x2000, 0, nil, badEOD), 1, 1},
		// The ceiling before framing: was cause 2 whenever the frame fit.
		{"Length over the ceiling, 5 bytes of data", endpoint.ModeDMAWrite, dw(6, 0x2000, 969, five, eod), 3, 3},
		{"Length over the ceiling, padded frame", endpoint.ModeDMAWrite, pad60(dw(7, 0x2000, 0x10000, nil, nil)), 3, 3},
		// The late framing result replaces the window's cause 1, as the
		// RTL's does (the data is never written: no memory error).
		{"past the window, bad EndOfData", endpoint.ModeDMAWrite, dw(8, 0xB000, 5, five, badEOD), 2, 10},
		{"past the window, EndOfData missing", endpoint.ModeDMAWrite, dw(17, 0xB000, 5, five, nil), 2, 10},
		// Framing after the header checks: cause 2, record 10.
		{"bad EndOfData in RAM", endpoint.ModeDMAWrite, dw(9, 0x2000, 5, five, badEOD), 2, 10},
		{"EndOfData missing in RAM", endpoint.ModeDMAWrite, dw(10, 0x2000, 5, five, nil), 2, 10},
		// The memory's error wins over the framing error.
		{"bad EndOfData into SLVERR", endpoint.ModeDMAWrite, dw(11, 0x9000, 5, five, badEOD), 6, 6},
		{"bad EndOfData into a hole", endpoint.ModeDMAWrite, dw(12, 0xA000, 5, five, badEOD), 7, 7},
		{"excess word into SLVERR", endpoint.ModeDMAWrite, append(dw(13, 0x8FFE, 5, five, eod), 0, 0, 0, 0), 6, 6},
		// Only the data the frame carries counts: the first 4 bytes lie
		// in RAM, the missing fifth in SLVERR.
		{"truncated before SLVERR", endpoint.ModeDMAWrite, dw(14, 0x8FFC, 5, five[:4], nil), 2, 10},
		{"truncated inside SLVERR", endpoint.ModeDMAWrite, dw(15, 0x8FFD, 5, five[:4], nil), 6, 6},
	}
	for _, c := range cases {
		setPeer(t, b, 0, endpoint.Peer{MAC: macP, Mode: c.mode, WindowBase: 0x1000, WindowSize: 0xA000})
		b.ClearError(0)
		before := make([]byte, 0x8000)
		ram.ReadAt(before, 0x1000)
		p.send(t, c.req)
		eqBytes(t, c.name+": reply", frame(macP, macB, 0xFF, le(wire.Frame(c.req).RequestID()), le(c.cause)), p.next(t))
		wantStatus(t, c.name, b, 0, failed(c.record))
		after := make([]byte, 0x8000)
		ram.ReadAt(after, 0x1000)
		if !bytes.Equal(before, after) {
			t.Fatalf("%s: a rejected request changed memory", c.name)
		}
	}

	// A memory that cannot tell (no memory.Prober) reports the framing
	// error.
	sw2 := newSwitch(t)
	p2 := newTap(t, sw2, macP, false)
	b2 := newEP(t, sw2, macB, &countingSpace{Space: space}, endpoint.Config{MaxFrame: 1000})
	setPeer(t, b2, 0, endpoint.Peer{MAC: macP, Mode: endpoint.ModeDMAWrite, WindowBase: 0x1000, WindowSize: 0xA000})
	p2.send(t, dw(16, 0x9000, 5, five, badEOD))
	eqBytes(t, "opaque memory: reply", frame(macP, macB, 0xFF, le(16), le(2)), p2.next(t))
	wantStatus(t, "opaque memory", b2, 0, failed(wire.CodeRemoteAXIS))
}

// TestMalformedResponseCodes: a recognized response with an invalid length
// from the expected peer ends the operation at once with the local framing
// code LOCAL_AXIS (2), recorded for the peer: RMEM_READ_RSP, RMEM_WRITE_RSP,
// DMA_WRITE_RSP and ERROR_RSP (whose Error Code is then not interpreted).
// Only an incomplete DMA_READ_RSP records REMOTE_AXIS (10), unless the
// local destination would fail for the data the frame carries: that write
// error (6 or 7) wins, and nothing is written. Each request is checked
// octet for octet.
func TestMalformedResponseCodes(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{})
	cases := []struct {
		name  string
		mode  endpoint.Mode
		start func() <-chan result
		req   func(rid uint32) []byte
		rsp   func(rid uint32) []byte
		want  wire.Code
	}{
		{"RMEM_READ_RSP with a trailing byte", endpoint.ModeRMEM, func() <-chan result { return rmemRead(a, 0, 0x1000) },
			func(r uint32) []byte { return frame(macP, macA, 0x10, le(r), le(0x1000)) },
			func(r uint32) []byte { return append(frame(macA, macP, 0x11, le(r), le(7)), 0) }, wire.CodeLocalAXIS},
		{"RMEM_WRITE_RSP with a trailing word", endpoint.ModeRMEM,
			func() <-chan result {
				return async(func() result { return result{err: a.RMEMWrite(bg(), 0, 0x1000, 5, 0xFFFFFFFF)} })
			},
			func(r uint32) []byte { return frame(macP, macA, 0x20, le(r), le(0x1000), le(0xFFFFFFFF), le(5)) },
			func(r uint32) []byte { return frame(macA, macP, 0x21, le(r), le(0)) }, wire.CodeLocalAXIS},
		{"RMEM_WRITE_RSP padded to 61", endpoint.ModeRMEM,
			func() <-chan result {
				return async(func() result { return result{err: a.RMEMWrite(bg(), 0, 0x1000, 5, 0xFFFFFFFF)} })
			},
			func(r uint32) []byte { return frame(macP, macA, 0x20, le(r), le(0x1000), le(0xFFFFFFFF), le(5)) },
			func(r uint32) []byte { return append(frame(macA, macP, 0x21, le(r)), make([]byte, 41)...) }, wire.CodeLocalAXIS},
		{"DMA_WRITE_RSP with a trailing byte", endpoint.ModeDMARead, func() <-chan result { return dmaWrite(a, 0, 0x1000, []byte{1, 2, 3, 4}) },
			func(r uint32) []byte {
				return frame(macP, macA, 0x40, le(r), le(0x1000), le(4), []byte{1, 2, 3, 4}, eod)
			},
			func(r uint32) []byte { return append(frame(macA, macP, 0x41, le(r)), 0) }, wire.CodeLocalAXIS},
		{"ERROR_RSP with a trailing word", endpoint.ModeRMEM, func() <-chan result { return rmemRead(a, 0, 0x1000) },
			func(r uint32) []byte { return frame(macP, macA, 0x10, le(r), le(0x1000)) },
			func(r uint32) []byte { return frame(macA, macP, 0xFF, le(r), le(6), le(0)) }, wire.CodeLocalAXIS},
		{"DMA_READ_RSP with a bad EndOfData", endpoint.ModeDMAWrite, func() <-chan result { return dmaRead(a, 0, 0x1000, make([]byte, 4)) },
			func(r uint32) []byte { return frame(macP, macA, 0x30, le(r), le(0x1000), le(4)) },
			func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), le(9), le(0)) }, wire.CodeRemoteAXIS},
	}
	for _, c := range cases {
		setPeer(t, a, 0, win(macP, c.mode))
		a.ClearError(0)
		res := c.start()
		req := p.next(t)
		rid := wire.Frame(req).RequestID()
		eqBytes(t, c.name+": request", c.req(rid), req)
		p.send(t, c.rsp(rid))
		wantCode(t, c.name, await(t, res).err, c.want)
		wantStatus(t, c.name, a, 0, failed(c.want))
	}

	// DMA reads into a local Space: RAM [0x1000, 0x1008), SLVERR
	// [0x2000, 0x3000), a hole above.
	local, ram := newSLVERRMap(t, 0x1000, 8, 0x2000, 0x1000)
	setPeer(t, a, 0, win(macP, endpoint.ModeDMAWrite))
	for _, c := range []struct {
		name  string
		local uint32
		rsp   func(rid uint32) []byte
		want  wire.Code
	}{
		{"bad EndOfData into SLVERR", 0x2000, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), le(9), le(0)) }, wire.CodeLocalAXIWrSlverr},
		{"bad EndOfData into a hole", 0x3000, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), le(9), le(0)) }, wire.CodeLocalAXIWrDecerr},
		{"bad EndOfData into RAM", 0x1000, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), le(9), le(0)) }, wire.CodeRemoteAXIS},
		// Only the data the frame carries counts: 2 bytes, in RAM.
		{"truncated before the hole", 0x1006, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), []byte{1, 2}) }, wire.CodeRemoteAXIS},
		{"truncated into the hole", 0x1006, func(r uint32) []byte { return frame(macA, macP, 0x31, le(r), []byte{1, 2, 3}) }, wire.CodeLocalAXIWrDecerr},
	} {
		a.ClearError(0)
		res := async(func() result {
			tr, err := a.DMAReadInto(bg(), 0, 0x5000, local, c.local, 4)
			return result{tr: tr, err: err}
		})
		req := p.next(t)
		rid := wire.Frame(req).RequestID()
		eqBytes(t, c.name+": request", frame(macP, macA, 0x30, le(rid), le(0x5000), le(4)), req)
		p.send(t, c.rsp(rid))
		wantCode(t, c.name, await(t, res).err, c.want)
		wantStatus(t, c.name, a, 0, failed(c.want))
		if got := make([]byte, 8); ram.ReadAt(got, 0x1000) == memory.OKAY && !bytes.Equal(got, make([]byte, 8)) {
			t.Fatalf("%s: a malformed response wrote local memory: % x", c.name, got)
		}
	}
}

// TestMaxReadRate floods a responder with 4 KiB DMA reads from one peer
// under MaxReadRate 16 KiB/s with a stopped clock: the burst (one maximum
// frame, 8192 bytes) serves two, the rest are dropped without a reply and
// counted; a second later the budget serves two more. Another peer's
// budget is its own, and RMEM requests are never charged.
func TestMaxReadRate(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	q := newTap(t, sw, macQ, false)
	ram := newRAM(t)
	b := newEP(t, sw, macB, ram, endpoint.Config{MaxReadRate: 16 << 10})
	var clock atomic.Int64
	clock.Store(1)
	endpoint.SetReadClock(b, func() int64 { return clock.Load() })
	setPeer(t, b, 0, win(macP, endpoint.ModeDMARead))
	setPeer(t, b, 1, win(macQ, endpoint.ModeDMARead))
	dr := func(src wire.MAC, rid uint32) []byte { return frame(macB, src, 0x30, le(rid), le(0x1000), le(4096)) }
	replies := func(tp *tap, n int) {
		t.Helper()
		for range n {
			if f := wire.Frame(tp.next(t)); f.Cmd() != wire.DMAReadRsp {
				t.Fatalf("reply % x is not a DMA_READ_RSP", f[:16])
			}
		}
	}
	for rid := range uint32(10) {
		p.send(t, dr(macP, rid))
	}
	eventually(t, "8 drops", func() bool { return b.Stats().DropReadRate == 8 })
	replies(p, 2)
	p.none(t, 20*time.Millisecond)
	if src, ok := b.LastReadRateSource(); !ok || src != macP {
		t.Errorf("LastReadRateSource = %v, %v; want %v", src, ok, macP)
	}
	if st := b.Stats(); st.ServedDMARead != 2 {
		t.Errorf("ServedDMARead = %d, want 2", st.ServedDMARead)
	}

	// Q has a budget of its own; RMEM requests from P are not charged.
	q.send(t, dr(macQ, 100))
	replies(q, 1)
	setPeer(t, b, 0, win(macP, endpoint.ModeRMEM))
	p.send(t, frame(macB, macP, 0x10, le(200), le(0x1000)))
	if f := wire.Frame(p.next(t)); f.Cmd() != wire.RMEMReadRsp {
		t.Fatalf("RMEM read reply % x", f[:16])
	}
	setPeer(t, b, 0, win(macP, endpoint.ModeDMARead))

	// One second refills 16 KiB, capped at the burst: two more.
	clock.Add(int64(time.Second))
	for rid := range uint32(3) {
		p.send(t, dr(macP, 300+rid))
	}
	eventually(t, "9 drops", func() bool { return b.Stats().DropReadRate == 9 })
	replies(p, 2)
	p.none(t, 20*time.Millisecond)
}

// TestMaxReadRateOff: with no bound (the default) every read is served.
func TestMaxReadRateOff(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	setPeer(t, b, 0, win(macP, endpoint.ModeDMARead))
	for rid := range uint32(10) {
		p.send(t, frame(macB, macP, 0x30, le(rid), le(0x1000), le(4096)))
		if f := wire.Frame(p.next(t)); f.Cmd() != wire.DMAReadRsp {
			t.Fatalf("reply % x", f[:16])
		}
	}
	if st := b.Stats(); st.DropReadRate != 0 || st.ServedDMARead != 10 {
		t.Errorf("DropReadRate %d, ServedDMARead %d; want 0 and 10", st.DropReadRate, st.ServedDMARead)
	}
	c := b.Config()
	c.MaxReadRate = -1
	if err := b.SetConfig(c); err == nil || !strings.Contains(err.Error(), "MaxReadRate -1 is negative") {
		t.Errorf("SetConfig with a negative MaxReadRate: %v", err)
	}
}
