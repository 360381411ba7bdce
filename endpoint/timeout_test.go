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
