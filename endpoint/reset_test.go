package endpoint_test

import (
	"context"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// TestRequestIDWrap: the counter wraps naturally from 0xFFFFFFFF to 0,
// across RMEM operations and DMA fragments alike, and replies still match.
func TestRequestIDWrap(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{MaxFragment: 4})
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))
	endpoint.SetRequestID(a, 0xFFFFFFFE)
	for _, rid := range []uint32{0xFFFFFFFE, 0xFFFFFFFF, 0, 1} {
		if err := a.RMEMWrite(bg(), 0, 0x1000, rid, 0xFFFFFFFF); err != nil {
			t.Fatal(err)
		}
		eqBytes(t, "request", frame(macB, macA, 0x20, le(rid), le(0x1000), le(0xFFFFFFFF), le(rid)), sniff.next(t))
		eqBytes(t, "response", frame(macA, macB, 0x21, le(rid)), sniff.next(t))
	}
	dmaPath(t, a, 0, b, 0)
	endpoint.SetRequestID(a, 0xFFFFFFFF)
	if tr, err := a.DMAWrite(bg(), 0, 0x1000, pattern(8, 0)); err != nil || tr.Fragments != 2 {
		t.Fatalf("DMAWrite = %+v, %v", tr, err)
	}
	for _, rid := range []uint32{0xFFFFFFFF, 0} {
		if got := wire.Frame(sniff.next(t)).RequestID(); got != rid {
			t.Fatalf("fragment Request ID %#x, want %#x", got, rid)
		}
		sniff.next(t)
	}
}

// TestReset: the hard reset returns the Request ID counter to 0,
// invalidates the outstanding context (the waiting operation fails with
// TIMEOUT wrapping ErrReset; nothing recorded, no event), stops a DMA
// block between fragments, empties the raw and event queues, and keeps the
// configuration, the peer table and the status records. A reply to the
// invalidated request is discarded.
func TestReset(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{RawPolicy: endpoint.RawFiltered, Events: endpoint.EventEnable{RMEMError: true, PeerDMAComplete: true}})
	setPeer(t, a, 1, win(macQ, endpoint.ModeRMEM))
	a.RMEMRead(bg(), 1, 0x1001) // a recorded failure and an event
	p.send(t, rawFrame(macA, 0x0800, 1))
	eventually(t, "raw frame queued", func() bool { return a.Stats().RawReceived == 1 })
	cfg, peer := a.Config(), endpoint.Peer{}
	peer, _ = a.Peer(0)

	endpoint.SetRequestID(a, 5)
	res := rmemRead(a, 0, 0x1000)
	eqBytes(t, "request", frame(macP, macA, 0x10, le(5), le(0x1000)), p.next(t))
	a.Reset()
	r := await(t, res)
	wantCode(t, "reset read", r.err, wire.CodeTimeout)
	wantFailed(t, "reset read", r, endpoint.ErrReset, failedRead)
	wantStatus(t, "reset peer", a, 0, endpoint.PeerStatus{})
	wantStatus(t, "earlier failure", a, 1, failed(wire.CodeLocalInvalid))
	ctx, cancel := context.WithTimeout(bg(), 20*time.Millisecond)
	if ev, err := a.NextEvent(ctx); err == nil {
		t.Fatalf("event survived Reset: %+v", ev)
	}
	cancel()
	ctx, cancel = context.WithTimeout(bg(), 20*time.Millisecond)
	if _, err := a.RecvRaw(ctx, make([]byte, 100)); err == nil {
		t.Fatal("raw frame survived Reset")
	}
	cancel()
	diff(t, "config", cfg, a.Config())
	if got, _ := a.Peer(0); got != peer {
		t.Fatalf("peer table changed: %+v", got)
	}

	p.send(t, frame(macA, macP, 0x11, le(5), le(1)))
	eventually(t, "late reply", func() bool { return a.Stats().DropLateResponse == 1 })
	res = rmemRead(a, 0, 0x1000)
	eqBytes(t, "first request after Reset", frame(macP, macA, 0x10, le(0), le(0x1000)), p.next(t))
	p.send(t, frame(macA, macP, 0x11, le(0), le(42)))
	if r := await(t, res); r.err != nil || r.data != 42 {
		t.Fatalf("read after Reset = %+v", r)
	}

	// A block stops issuing fragments after a Reset between them.
	setPeer(t, a, 0, win(macP, endpoint.ModeDMARead))
	c := a.Config()
	c.MaxFragment = 4
	a.SetConfig(c)
	ctx = endpoint.WithProgress(bg(), func(uint64) { a.Reset() })
	res = async(func() result {
		tr, err := a.DMAWrite(ctx, 0, 0x1000, pattern(12, 0))
		return result{tr: tr, err: err}
	})
	eqBytes(t, "fragment", frame(macP, macA, 0x40, le(1), le(0x1000), le(4), pattern(12, 0)[:4], eod), p.next(t))
	p.send(t, frame(macA, macP, 0x41, le(1)))
	r = await(t, res)
	wantFailed(t, "block across Reset", r, endpoint.ErrReset, moved(4, 1))
	p.none(t, 10*time.Millisecond)
	wantStatus(t, "block peer", a, 0, endpoint.PeerStatus{})
}

// TestResetResponder: a responder context working when Reset comes drops
// its result: no reply, no record.
func TestResetResponder(t *testing.T) {
	b, p, slow := newSlowResponder(t, 1)
	p.send(t, frame(macB, macP, 0x40, le(7), le(0x1000), le(4), pattern(4, 0), eod))
	<-slow.entered
	b.Reset()
	close(slow.release)
	p.none(t, 30*time.Millisecond)
	// The context is free again and serves the next request normally.
	p.send(t, frame(macB, macP, 0x40, le(8), le(0x3000), le(4), pattern(4, 0), eod))
	eqBytes(t, "reply", frame(macP, macB, 0x41, le(8)), p.next(t))
	wantStatus(t, "B", b, 0, endpoint.PeerStatus{})
	if s := b.Stats(); s.ServedDMAWrite != 1 {
		t.Fatalf("ServedDMAWrite %d", s.ServedDMAWrite)
	}
}

// TestInitialRequestID: Config.InitialRequestID is the Request ID of the
// first request; the default is 0; SetConfig leaves the running counter
// (and the reported value) alone; Reset returns the counter to 0.
func TestInitialRequestID(t *testing.T) {
	sw, sniff := newSwitchTap(t, macS, true)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))
	setPeer(t, b, 1, win(macQ, endpoint.ModeRMEM))
	write := func(e *endpoint.Endpoint, src wire.MAC, want uint32) {
		t.Helper()
		if err := e.RMEMWrite(bg(), 0, 0x1000, 7, 0xFFFFFFFF); err != nil {
			t.Fatal(err)
		}
		eqBytes(t, "request", frame(macB, src, 0x20, le(want), le(0x1000), le(0xFFFFFFFF), le(7)), sniff.next(t))
		sniff.next(t)
	}
	d := newEP(t, sw, macQ, nil, endpoint.Config{})
	setPeer(t, d, 0, win(macB, endpoint.ModeRMEM))
	write(d, macQ, 0)

	const start = 0x9E3779B9
	a := newEP(t, sw, macA, nil, endpoint.Config{InitialRequestID: start})
	setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
	if got := a.Config().InitialRequestID; got != start {
		t.Fatalf("Config().InitialRequestID = %#x, want %#x", got, start)
	}
	write(a, macA, start)
	cfg := a.Config()
	cfg.InitialRequestID = 3
	if err := a.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if got := a.Config().InitialRequestID; got != start {
		t.Fatalf("after SetConfig, InitialRequestID = %#x, want %#x", got, start)
	}
	write(a, macA, start+1)
	a.Reset()
	write(a, macA, 0)
}

// TestProgressCallbackOutlivesBlock: a DMA block's progress callback runs
// on the receive loop with the engine unlocked. When a Reset or the
// cancellation of the block's context inside it ends the block, the waiter
// returns while the callback still runs; the callback's return must then
// neither send the next fragment nor settle the finished request a second
// time (which counted a second timeout and raced with the waiter).
func TestProgressCallbackOutlivesBlock(t *testing.T) {
	for _, how := range []string{"reset", "cancel"} {
		t.Run(how, func(t *testing.T) {
			a, p, _ := newScripted(t, endpoint.ModeDMARead, endpoint.Config{MaxFragment: 4, DMATimeout: time.Minute})
			waited, resume := make(chan struct{}), make(chan struct{})
			endpoint.OnBlockWaited(a, func() { close(waited); <-resume })
			ctx, cancel := context.WithCancel(bg())
			defer cancel()
			calls := 0
			ctx = endpoint.WithProgress(ctx, func(uint64) {
				calls++
				if how == "reset" {
					a.Reset()
				} else {
					cancel()
				}
				select { // the block's waiter has taken its outcome
				case <-waited:
				case <-time.After(waitLong):
					t.Error("the block did not end while its progress callback ran")
				}
			})
			endpoint.SetRequestID(a, 1)
			res := async(func() result {
				tr, err := a.DMAWrite(ctx, 0, 0x1000, pattern(12, 0))
				return result{tr: tr, err: err}
			})
			eqBytes(t, "fragment", frame(macP, macA, 0x40, le(1), le(0x1000), le(4), pattern(12, 0)[:4], eod), p.next(t))
			p.send(t, frame(macA, macP, 0x41, le(1)))
			select {
			case <-waited:
			case <-time.After(waitLong):
				t.Fatal("the block did not end")
			}
			// The callback returns now; the entries are not freed yet. It
			// sends nothing, and leaves no outcome in the entry that the
			// waiter, which has returned, would never take.
			p.none(t, 30*time.Millisecond)
			if n := endpoint.UntakenOutcomes(a); n != 0 {
				t.Errorf("%d entries hold an outcome after the block's waiter returned", n)
			}
			close(resume)
			r := await(t, res)
			want := endpoint.ErrReset
			if how == "cancel" {
				want = context.Canceled
			}
			wantFailed(t, "block", r, want, moved(4, 1))
			wantCode(t, "block", r.err, wire.CodeTimeout)
			if calls != 1 {
				t.Fatalf("progress called %d times", calls)
			}
			wantTimeouts := uint64(1)
			if how == "reset" {
				wantTimeouts = 0 // an aborted operation is not a timeout
			}
			if s := a.Stats(); s.Timeouts != wantTimeouts {
				t.Fatalf("Timeouts = %d, want %d", s.Timeouts, wantTimeouts)
			}
			// The entry serves the next operation normally.
			endpoint.OnBlockWaited(a, nil)
			setPeer(t, a, 0, win(macP, endpoint.ModeRMEM))
			rid := uint32(0)
			if how == "cancel" {
				rid = 2
			}
			rd := rmemRead(a, 0, 0x1000)
			eqBytes(t, "next request", frame(macP, macA, 0x10, le(rid), le(0x1000)), p.next(t))
			p.send(t, frame(macA, macP, 0x11, le(rid), le(42)))
			if r := await(t, rd); r.err != nil || r.data != 42 {
				t.Fatalf("read after the block = %+v", r)
			}
		})
	}
}
