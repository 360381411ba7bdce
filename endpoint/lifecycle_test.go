package endpoint_test

import (
	"bytes"
	"context"
	"errors"
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

// TestTimeoutStartsAfterWrite: the response timer starts only when the
// link has accepted the whole request frame, with the timeout sampled at
// acceptance: a live change while the write is blocked does not affect the
// active operation. On expiry the operation fails with TIMEOUT (recorded,
// RMEM_ERROR raised, all-ones data); a late reply is discarded; with the
// timeout now 0 the next operation waits, without a timer, for its reply.
func TestTimeoutStartsAfterWrite(t *testing.T) {
	sw, p := newSwitchTap(t, macP, false)
	a, gate := newGatedEP(t, sw, macA, endpoint.Config{RMEMTimeout: 5 * time.Millisecond, Events: endpoint.EventEnable{RMEMError: true}})
	setPeer(t, a, 0, win(macP, endpoint.ModeRMEM))
	timer := endpoint.InstallFakeTimer(a)

	gate.holdNext()
	res := rmemRead(a, 0, 0x1000)
	<-gate.entered
	cfg := a.Config()
	cfg.RMEMTimeout = 0
	if err := a.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // twice the timeout, spent inside Write
	if s := timer.Starts(); len(s) != 0 {
		t.Fatalf("timer started while the request frame was still being written: %v", s)
	}
	close(gate.release)
	if d := <-timer.Started(); d != 5*time.Millisecond {
		t.Fatalf("timer started with %v, want the sampled 5ms", d)
	}
	gate.mu.Lock()
	written := gate.writes
	gate.mu.Unlock()
	if written != 1 {
		t.Fatalf("timer started before Write returned (%d writes done)", written)
	}
	eqBytes(t, "request", frame(macP, macA, 0x10, le(0), le(0x1000)), p.next(t))
	pending(t, res)
	timer.Fire()
	r := await(t, res)
	wantCode(t, "expired read", r.err, wire.CodeTimeout)
	wantFailed(t, "expired read", r, endpoint.ErrTimeout, failedRead)
	wantStatus(t, "A", a, 0, failed(wire.CodeTimeout))
	ev, _ := a.NextEvent(bg())
	diff(t, "event", endpoint.Event{Source: endpoint.RMEMError, Code: wire.CodeTimeout}, ev)

	// The late reply is discarded.
	p.send(t, frame(macA, macP, 0x11, le(0), le(0xBAD)))
	eventually(t, "late reply", func() bool { return a.Stats().DropLateResponse == 1 })

	// Timeout 0: no timer, the operation waits for its (slow) reply.
	res = rmemRead(a, 0, 0x1000)
	eqBytes(t, "next request", frame(macP, macA, 0x10, le(1), le(0x1000)), p.next(t))
	p.send(t, frame(macA, macP, 0x11, le(0), le(0xBAD))) // the old ID again: late
	eventually(t, "second late reply", func() bool { return a.Stats().DropLateResponse == 2 })
	pending(t, res)
	p.send(t, frame(macA, macP, 0x11, le(1), le(0x600D)))
	if r := await(t, res); r.err != nil || r.data != 0x600D {
		t.Fatalf("read with timeout 0 = %#x, %v", r.data, r.err)
	}
	if s := timer.Starts(); len(s) != 1 {
		t.Fatalf("timer starts %v; timeout 0 must not start it", s)
	}
	if s := a.Stats(); s.Timeouts != 1 || s.DropLateResponse != 2 {
		t.Fatalf("Timeouts %d, DropLateResponse %d", s.Timeouts, s.DropLateResponse)
	}
}

// TestDMATimeoutLateReply: a DMA fragment times out with its own sampled
// DMATimeout; the late DMA_READ_RSP is discarded without touching local
// memory and cannot complete the next fragment, which has a new Request ID.
func TestDMATimeoutLateReply(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeDMAWrite, endpoint.Config{DMATimeout: time.Second, RMEMTimeout: time.Minute})
	timer := endpoint.InstallFakeTimer(a)
	dst := bytes.Repeat([]byte{0x55}, 8)
	res := dmaRead(a, 0, 0x2000, dst)
	p.next(t)
	if d := <-timer.Started(); d != time.Second {
		t.Fatalf("timer %v, want DMATimeout", d)
	}
	timer.Fire()
	r := await(t, res)
	wantCode(t, "expired fragment", r.err, wire.CodeTimeout)
	if r.tr != (endpoint.Transfer{}) {
		t.Fatalf("transfer %+v", r.tr)
	}
	p.send(t, frame(macA, macP, 0x31, le(0), pattern(8, 1), eod))
	eventually(t, "late reply", func() bool { return a.Stats().DropLateResponse == 1 })
	eqBytes(t, "local memory after a late reply", bytes.Repeat([]byte{0x55}, 8), dst)

	res = dmaRead(a, 0, 0x2000, dst)
	eqBytes(t, "next request", frame(macP, macA, 0x30, le(1), le(0x2000), le(8)), p.next(t))
	<-timer.Started()
	p.send(t, frame(macA, macP, 0x31, le(0), pattern(8, 1), eod))
	eventually(t, "second late reply", func() bool { return a.Stats().DropLateResponse == 2 })
	pending(t, res)
	p.send(t, frame(macA, macP, 0x31, le(1), pattern(8, 2), eod))
	if r := await(t, res); r.err != nil {
		t.Fatal(r.err)
	}
	eqBytes(t, "local memory", pattern(8, 2), dst)
}

// TestRealTimeout: with the real timer, a silent peer fails the operation
// with TIMEOUT no earlier than the configured timeout.
func TestRealTimeout(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{RMEMTimeout: 30 * time.Millisecond})
	start := time.Now()
	_, err := a.RMEMRead(bg(), 0, 0x1000)
	wantCode(t, "silent peer", err, wire.CodeTimeout)
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Fatalf("timed out after %v, before the 30ms timeout", el)
	}
	p.next(t)
}

// TestResponseAtExpiry: a fully validated response recorded when the
// timer fires wins over the timeout; a valid ERROR_RSP keeps its cause.
// The timer is fired from inside the receive loop, right after the
// response is recorded and before the operation is woken, so the waiting
// operation sees the expiry first.
func TestResponseAtExpiry(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{RMEMTimeout: time.Hour})
	timer := endpoint.InstallFakeTimer(a)
	endpoint.OnMatched(a, timer.Fire)
	for i := range 20 {
		res := rmemRead(a, 0, 0x1000)
		p.next(t)
		<-timer.Started()
		rsp := frame(macA, macP, 0x11, le(uint32(i)), le(uint32(i)+100))
		if i == 19 {
			rsp = frame(macA, macP, 0xFF, le(uint32(i)), le(6))
		}
		p.send(t, rsp)
		r := await(t, res)
		if i == 19 {
			wantCode(t, "ERROR_RSP at expiry", r.err, wire.CodeRemoteAXIWrSlverr)
			continue
		}
		if r.err != nil || r.data != uint32(i)+100 {
			t.Fatalf("read %d at expiry = %#x, %v", i, r.data, r.err)
		}
	}
	if n := endpoint.ExpiredAfterResponse(a); n == 0 {
		t.Fatal("the timer never fired ahead of the wake-up; the precedence path was not exercised")
	}
	if s := a.Stats(); s.Timeouts != 0 {
		t.Fatalf("%d timeouts", s.Timeouts)
	}
}

// TestContextCancel: a context that is already done stops the operation
// before acceptance (TIMEOUT, nothing sent, no Request ID, nothing
// recorded); cancellation while the response is awaited aborts exactly
// like a timeout (TIMEOUT recorded, wrapping ctx.Err(), late reply
// discarded); a DMA block cancelled between fragments stops there.
func TestContextCancel(t *testing.T) {
	a, p, sw := newScripted(t, endpoint.ModeRMEM, endpoint.Config{})
	ctx, cancel := context.WithCancel(bg())
	cancel()
	_, err := a.RMEMRead(ctx, 0, 0x1000)
	wantCode(t, "cancelled before", err, wire.CodeTimeout)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v does not wrap context.Canceled", err)
	}
	wantStatus(t, "A", a, 0, endpoint.PeerStatus{})
	p.none(t, 10*time.Millisecond)

	ctx, cancel = context.WithCancel(bg())
	res := async(func() result { d, err := a.RMEMRead(ctx, 0, 0x1000); return result{data: d, err: err} })
	eqBytes(t, "request", frame(macP, macA, 0x10, le(0), le(0x1000)), p.next(t))
	cancel()
	r := await(t, res)
	wantCode(t, "cancelled while waiting", r.err, wire.CodeTimeout)
	wantFailed(t, "cancelled read", r, context.Canceled, failedRead)
	wantStatus(t, "A", a, 0, failed(wire.CodeTimeout))
	p.send(t, frame(macA, macP, 0x11, le(0), le(1)))
	eventually(t, "late reply", func() bool { return a.Stats().DropLateResponse == 1 })

	setPeer(t, a, 1, win(macQ, endpoint.ModeDMARead))
	q := newTap(t, sw, macQ, false)
	ctx, cancel = context.WithCancel(bg())
	ctx = endpoint.WithProgress(ctx, func(uint64) { cancel() })
	cfg := a.Config()
	cfg.MaxFragment = 4
	a.SetConfig(cfg)
	res = async(func() result {
		tr, err := a.DMAWrite(ctx, 1, 0x1000, pattern(12, 0))
		return result{tr: tr, err: err}
	})
	f := q.next(t)
	q.send(t, frame(macA, macQ, 0x41, le(wire.Frame(f).RequestID())))
	r = await(t, res)
	wantCode(t, "cancelled block", r.err, wire.CodeTimeout)
	wantFailed(t, "cancelled block", r, context.Canceled, moved(4, 1))
	q.none(t, 10*time.Millisecond)
	wantStatus(t, "A", a, 1, failed(wire.CodeTimeout))
}

// TestClose: Close aborts a waiting operation (its error wraps ErrClosed,
// nothing recorded), and every call afterwards returns ErrClosed.
func TestClose(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{})
	res := rmemRead(a, 0, 0x1000)
	p.next(t)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	r := await(t, res)
	wantStatus(t, "A", a, 0, endpoint.PeerStatus{})
	_, readErr := a.RMEMRead(bg(), 0, 0x1000)
	_, writeErr := a.DMAWrite(bg(), 0, 0x1000, []byte{1})
	_, eventErr := a.NextEvent(bg())
	_, recvErr := a.RecvRaw(bg(), nil)
	for _, c := range []struct {
		what string
		err  error
	}{
		{"waiting read after Close", r.err},
		{"RMEMRead after Close", readErr},
		{"DMAWrite after Close", writeErr},
		{"NextEvent after Close", eventErr},
		{"RecvRaw after Close", recvErr},
		{"SendRaw after Close", a.SendRaw(make([]byte, 20))},
		{"SetConfig after Close", a.SetConfig(a.Config())},
	} {
		if !errors.Is(c.err, endpoint.ErrClosed) {
			t.Fatalf("%s: %v, want ErrClosed", c.what, c.err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
