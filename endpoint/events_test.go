package endpoint_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// TestEventQueue: a full queue never blocks the engine: later events wait
// in one slot per (source, peer), keeping the latest code and counting the
// merged events, and enter the queue in order as it drains. Events need
// the global enable and, for PEER_DMA_COMPLETE, the peer's own enable.
func TestEventQueue(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{EventQueue: 2, Events: endpoint.EventEnable{RMEMError: true, PeerDMAComplete: true}})
	setPeer(t, a, 1, win(macQ, endpoint.ModeDMARead))
	quiet := win(macX, endpoint.ModeDMARead)
	quiet.EventEnable = false
	setPeer(t, a, 2, quiet)
	var rid uint32
	remoteFail := func(cause uint32) {
		res := rmemRead(a, 0, 0x1000)
		p.next(t)
		p.send(t, frame(macA, macP, 0xFF, le(rid), le(cause)))
		rid++
		await(t, res)
	}
	zeroDMA := func(peer int) { a.DMAWrite(bg(), peer, 0x1000, nil) }
	remoteFail(1) // queued
	zeroDMA(1)    // queued: full
	remoteFail(2) // pending (RMEM, 0)
	remoteFail(3) // merged into it
	zeroDMA(2)    // the peer's enable is off: no event
	zeroDMA(1)    // pending (DMA, 1)
	remoteFail(4) // merged into (RMEM, 0)
	want := []endpoint.Event{
		{Source: endpoint.RMEMError, Peer: 0, Code: 9},
		{Source: endpoint.PeerDMAComplete, Peer: 1, Code: 1},
		{Source: endpoint.RMEMError, Peer: 0, Code: 12, Coalesced: 2},
		{Source: endpoint.PeerDMAComplete, Peer: 1, Code: 1},
	}
	for i, w := range want {
		ev, err := a.NextEvent(bg())
		if err != nil {
			t.Fatal(err)
		}
		diff(t, "event", w, ev)
		if i == 1 {
			remoteFail(5) // queued behind the promoted slots
			want = append(want, endpoint.Event{Source: endpoint.RMEMError, Peer: 0, Code: 13})
		}
	}
	ev, err := a.NextEvent(bg())
	diff(t, "last event", want[4], ev)
	noEvent(t, a)
	_ = err

	// Global enables off: failures are recorded, no event.
	cfg := a.Config()
	cfg.Events = endpoint.EventEnable{}
	a.SetConfig(cfg)
	zeroDMA(1)
	remoteFail(6)
	wantStatus(t, "peer 0", a, 0, failed(14))
	wantStatus(t, "peer 1", a, 1, failed(1))
	noEvent(t, a)
}

func noEvent(t *testing.T, e *endpoint.Endpoint) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg(), 10*time.Millisecond)
	defer cancel()
	if ev, err := e.NextEvent(ctx); err == nil {
		t.Fatalf("unexpected event %+v", ev)
	}
}

// TestCompletionEvents: every locally initiated DMA block raises
// PEER_DMA_COMPLETE, successful ones with code NONE; successful RMEM
// operations and successful received requests raise nothing.
func TestCompletionEvents(t *testing.T) {
	sw := newSwitch(t)
	events := endpoint.EventEnable{PeerDMAComplete: true, RMEMError: true}
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{Events: events, MaxFragment: 8})
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{Events: events})
	dmaPath(t, a, 0, b, 0)
	if _, err := a.DMAWrite(bg(), 0, 0x1000, pattern(20, 0)); err != nil {
		t.Fatal(err)
	}
	ev, _ := a.NextEvent(bg())
	diff(t, "completion", endpoint.Event{Source: endpoint.PeerDMAComplete, Peer: 0, Code: wire.CodeNone}, ev)
	noEvent(t, a)
	noEvent(t, b)
	setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))
	if err := a.RMEMWrite(bg(), 0, 0x1000, 1, 1); err != nil {
		t.Fatal(err)
	}
	noEvent(t, a)
	noEvent(t, b)
}

// TestPeerStatus: the record latches the most recent failure, survives
// successes, is cleared by ClearError, and a failure racing a clear wins.
func TestPeerStatus(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{})
	var rid uint32
	op := func(rsp func(rid uint32) []byte) {
		res := rmemRead(a, 0, 0x1000)
		p.next(t)
		p.send(t, rsp(rid))
		rid++
		await(t, res)
	}
	errRsp := func(cause uint32) func(uint32) []byte {
		return func(r uint32) []byte { return frame(macA, macP, 0xFF, le(r), le(cause)) }
	}
	ok := func(r uint32) []byte { return frame(macA, macP, 0x11, le(r), le(1)) }
	op(errRsp(1))
	wantStatus(t, "first failure", a, 0, failed(9))
	op(ok)
	wantStatus(t, "after a success", a, 0, failed(9))
	op(errRsp(4))
	wantStatus(t, "most recent failure", a, 0, failed(12))
	a.ClearError(0)
	wantStatus(t, "cleared", a, 0, endpoint.PeerStatus{})
	a.ClearError(0)
	wantStatus(t, "cleared twice", a, 0, endpoint.PeerStatus{})
	op(errRsp(7))
	endpoint.OnClear(a, func() {
		endpoint.OnClear(a, nil)
		a.RMEMRead(bg(), 0, 0x1002) // LOCAL_INVALID, recorded during the clear
	})
	a.ClearError(0)
	wantStatus(t, "failure racing a clear", a, 0, failed(wire.CodeLocalInvalid))
	if s := a.PeerStatus(-1); s != (endpoint.PeerStatus{}) {
		t.Fatal("status of an index out of range")
	}
	a.ClearError(1000) // out of range: ignored
}

// TestConcurrentWaiters: several goroutines waiting in NextEvent and
// RecvRaw each get an item; none sleeps while one is queued.
func TestConcurrentWaiters(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{RawPolicy: endpoint.RawFiltered, Events: endpoint.EventEnable{RMEMError: true}})
	ctx, cancel := context.WithTimeout(bg(), waitLong)
	defer cancel()
	done := make(chan error, 6)
	for range 3 {
		go func() { _, err := a.NextEvent(ctx); done <- err }()
		go func() { _, err := a.RecvRaw(ctx, make([]byte, 64)); done <- err }()
	}
	waiting(t, 3, "endpoint.(*Endpoint).NextEvent(")
	waiting(t, 3, "endpoint.(*Endpoint).RecvRaw(")
	for i := range 3 {
		a.RMEMRead(bg(), 0, 0x1001)
		p.send(t, rawFrame(macA, 0x0800, byte(i)))
	}
	for range 6 {
		if err := <-done; err != nil {
			t.Fatalf("a waiter was not woken: %v", err)
		}
	}
}

// waiting waits until n goroutines are blocked in a select inside the
// function fn names (as stack traces name it).
func waiting(t *testing.T, n int, fn string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d goroutines waiting in %s", n, fn), func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		k := 0
		for _, g := range strings.Split(string(buf), "\n\n") {
			if head, _, _ := strings.Cut(g, "\n"); strings.Contains(head, "[select") && strings.Contains(g, fn) {
				k++
			}
		}
		return k == n
	})
}

// TestBusyWhileResponderEventPending: while an event of the responder waits
// for room in the full event queue, the responder defers new requests: they
// are dropped without a reply and counted (Stats.DropEventPending), and
// served again once the application has read the queue. The failing
// requests themselves are still answered and recorded at once. An event of
// the initiator waiting in the same way does not stop the responder.
func TestBusyWhileResponderEventPending(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{EventQueue: 1, Events: endpoint.EventEnable{RMEMError: true}})
	read := func(rid, addr uint32) []byte { return frame(macA, macP, 0x10, le(rid), le(addr)) }
	errRsp := func(rid, cause uint32) []byte { return frame(macP, macA, 0xFF, le(rid), le(cause)) }
	ok := func(rid uint32) []byte { return frame(macP, macA, 0x11, le(rid), le(0)) }

	// Two initiator failures: one queued, one pending. The responder
	// still serves.
	for i := range 2 {
		res := rmemRead(a, 0, 0x1000)
		req := p.next(t)
		p.send(t, frame(macA, macP, 0xFF, le(wire.Frame(req).RequestID()), le(1)))
		wantCode(t, "initiated read", await(t, res).err, wire.CodeRemoteInvalid)
		_ = i
	}
	p.send(t, read(100, 0x1000))
	eqBytes(t, "served behind a pending initiator event", ok(100), p.next(t))
	for range 2 {
		if _, err := a.NextEvent(bg()); err != nil {
			t.Fatal(err)
		}
	}

	// A received failure fills the queue; the next waits pending.
	p.send(t, read(1, 0x1002))
	eqBytes(t, "first failure", errRsp(1, 1), p.next(t))
	p.send(t, read(2, 0x1006))
	eqBytes(t, "second failure, its event pending", errRsp(2, 1), p.next(t))
	wantStatus(t, "after the failures", a, 0, failed(wire.CodeLocalInvalid))
	// Deferred: dropped and counted, no reply, no memory access.
	p.send(t, read(3, 0x1000))
	p.send(t, read(4, 0x1004))
	p.none(t, 50*time.Millisecond)
	if s := a.Stats(); s.DropEventPending != 2 || s.DropResponderBusy != 0 || s.ServedRMEMRead != 1 {
		t.Fatalf("DropEventPending %d, DropResponderBusy %d, ServedRMEMRead %d; want 2, 0, 1", s.DropEventPending, s.DropResponderBusy, s.ServedRMEMRead)
	}
	// Reading the queue admits the pending event: requests are served.
	ev, _ := a.NextEvent(bg())
	diff(t, "first event", endpoint.Event{Source: endpoint.RMEMError, Peer: 0, Code: wire.CodeLocalInvalid}, ev)
	p.send(t, read(5, 0x1000))
	eqBytes(t, "served after the queue drained", ok(5), p.next(t))
	ev, _ = a.NextEvent(bg())
	diff(t, "second event", endpoint.Event{Source: endpoint.RMEMError, Peer: 0, Code: wire.CodeLocalInvalid}, ev)

	// Reset empties the queue and ends the deferral.
	p.send(t, read(6, 0x1002))
	p.next(t)
	p.send(t, read(7, 0x1002))
	p.next(t)
	p.send(t, read(8, 0x1000))
	p.none(t, 20*time.Millisecond)
	a.Reset()
	p.send(t, read(9, 0x1000))
	eqBytes(t, "served after Reset", ok(9), p.next(t))
}
