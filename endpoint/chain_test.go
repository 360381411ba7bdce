package endpoint_test

import (
	"context"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// The tests below exercise chained DMA fragments (chain.go), where the
// receive loop sends each next fragment of a block.

// TestChainPerFragmentTimeout: DMATimeout bounds each fragment, not the
// block: every fragment of a block, late ones included, starts the response
// timer with the whole timeout once it is sent, so a block of slow but
// timely fragments completes, and a fragment left unanswered times out on
// its own timer.
func TestChainPerFragmentTimeout(t *testing.T) {
	const timeout = 320 * time.Millisecond
	a, p, _ := newScripted(t, endpoint.ModeDMARead, endpoint.Config{MaxFragment: 4, DMATimeout: timeout})
	timer := endpoint.InstallFakeTimer(a)
	src := pattern(16, 3)
	res := dmaWrite(a, 0, 0x1000, src)
	for k := range 4 {
		f := p.next(t)
		eqBytes(t, "fragment", frame(macP, macA, 0x40, le(uint32(k)), le(0x1000+4*uint32(k)), le(4), src[4*k:4*k+4], eod), f)
		started(t, timer, timeout)
		p.send(t, frame(macA, macP, 0x41, le(uint32(k))))
	}
	if r := await(t, res); r.err != nil || r.tr != (endpoint.Transfer{Bytes: 16, Fragments: 4}) {
		t.Fatalf("slow but timely block = %+v, %v", r.tr, r.err)
	}

	res = dmaWrite(a, 0, 0x1000, src)
	for k := range 2 {
		p.next(t)
		started(t, timer, timeout)
		p.send(t, frame(macA, macP, 0x41, le(uint32(4+k))))
	}
	p.next(t)
	started(t, timer, timeout)
	pending(t, res)
	timer.Fire()
	r := await(t, res)
	wantCode(t, "unanswered fragment", r.err, wire.CodeTimeout)
	wantFailed(t, "timed-out block", r, endpoint.ErrTimeout, moved(8, 2))
	if n := len(timer.Starts()); n != 7 {
		t.Fatalf("timer started %d times, want once for each of the 7 fragments sent", n)
	}
	p.none(t, 20*time.Millisecond) // no fragment after the failed one
	p.send(t, frame(macA, macP, 0x41, le(6)))
	eventually(t, "late reply", func() bool { return a.Stats().DropLateResponse == 1 })
	wantStatus(t, "A", a, 0, failed(wire.CodeTimeout))
}

// TestChainTimeoutSampledPerFragment: a DMATimeout set in the middle of a
// block applies from the next fragment on, although the caller started the
// block without a timer.
func TestChainTimeoutSampledPerFragment(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeDMAWrite, endpoint.Config{MaxFragment: 4})
	dst := make([]byte, 12)
	res := dmaRead(a, 0, 0x2000, dst)
	eqBytes(t, "fragment 0", frame(macP, macA, 0x30, le(0), le(0x2000), le(4)), p.next(t))
	cfg := a.Config()
	cfg.DMATimeout = 30 * time.Millisecond
	if err := a.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	p.send(t, frame(macA, macP, 0x31, le(0), pattern(4, 1), eod))
	eqBytes(t, "fragment 1", frame(macP, macA, 0x30, le(1), le(0x2004), le(4)), p.next(t))
	r := await(t, res)
	wantCode(t, "fragment with the new timeout", r.err, wire.CodeTimeout)
	if r.tr != (endpoint.Transfer{Bytes: 4, Fragments: 1}) {
		t.Fatalf("transfer %+v", r.tr)
	}
	eqBytes(t, "data of the completed fragment", append(pattern(4, 1), make([]byte, 8)...), dst)
	p.none(t, 20*time.Millisecond)
}

// TestChainCancelAndReset: cancelling the context or resetting the endpoint
// in the middle of a chained block ends it at once; nothing more is sent,
// and the caller's buffer is not touched by a late reply.
func TestChainCancelAndReset(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeDMAWrite, endpoint.Config{MaxFragment: 4})
	dst := make([]byte, 12)
	ctx, cancel := context.WithCancel(bg())
	res := async(func() result { tr, err := a.DMARead(ctx, 0, 0x2000, dst); return result{tr: tr, err: err} })
	p.next(t)
	p.send(t, frame(macA, macP, 0x31, le(0), pattern(4, 1), eod))
	eqBytes(t, "fragment 1", frame(macP, macA, 0x30, le(1), le(0x2004), le(4)), p.next(t))
	cancel()
	r := await(t, res)
	wantCode(t, "cancelled block", r.err, wire.CodeTimeout)
	wantFailed(t, "cancelled block", r, context.Canceled, moved(4, 1))
	p.send(t, frame(macA, macP, 0x31, le(1), pattern(4, 2), eod))
	eventually(t, "late reply", func() bool { return a.Stats().DropLateResponse == 1 })
	eqBytes(t, "caller's buffer", append(pattern(4, 1), make([]byte, 8)...), dst)
	p.none(t, 20*time.Millisecond)

	res = dmaRead(a, 0, 0x2000, dst)
	p.next(t)
	p.send(t, frame(macA, macP, 0x31, le(2), pattern(4, 3), eod))
	p.next(t)
	a.Reset()
	r = await(t, res)
	wantCode(t, "reset block", r.err, wire.CodeTimeout)
	wantFailed(t, "reset block", r, endpoint.ErrReset, moved(4, 1))
	p.none(t, 20*time.Millisecond)
}

// TestChainLongBlock moves a block of many fragments between two endpoints
// in both directions and checks every byte, the fragment count and the
// Request IDs used.
func TestChainLongBlock(t *testing.T) {
	sw := newSwitch(t)
	ramB := newRAM(t)
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{MaxFragment: 64, DMATimeout: time.Minute})
	b := newEP(t, sw, macB, ramB, endpoint.Config{})
	dmaPath(t, a, 0, b, 0)
	src := pattern(4000, 11)
	tr, err := a.DMAWrite(bg(), 0, 0x2000, src)
	if err != nil || tr != (endpoint.Transfer{Bytes: 4000, Fragments: 63}) {
		t.Fatalf("DMAWrite = %+v, %v", tr, err)
	}
	got := make([]byte, len(src))
	ramB.ReadAt(got, 0x2000)
	eqBytes(t, "B's memory", src, got)
	setPeer(t, a, 0, win(macB, endpoint.ModeDMAWrite))
	setPeer(t, b, 0, win(macA, endpoint.ModeDMARead))
	back := make([]byte, len(src))
	if tr, err := a.DMARead(bg(), 0, 0x2000, back); err != nil || tr.Fragments != 63 {
		t.Fatalf("DMARead = %+v, %v", tr, err)
	}
	eqBytes(t, "read back", src, back)
	if s := b.Stats(); s.ServedDMAWrite != 63 || s.ServedDMARead != 63 {
		t.Fatalf("B served %d writes and %d reads, want 63 each", s.ServedDMAWrite, s.ServedDMARead)
	}
}
