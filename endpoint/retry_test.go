package endpoint_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/wire"
)

// The tests below exercise recovery (retry.go): retries with new Request
// IDs, adaptive try timeouts, volatile ranges and the outcome reports.

func setPolicy(t testing.TB, e *endpoint.Endpoint, i int, p endpoint.RetryPolicy) {
	t.Helper()
	if err := e.SetRetryPolicy(i, p); err != nil {
		t.Fatal(err)
	}
}

func opErr(t testing.TB, err error) *endpoint.OpError {
	t.Helper()
	var oe *endpoint.OpError
	if !errors.As(err, &oe) {
		t.Fatalf("error %v is not an *OpError", err)
	}
	return oe
}

func started(t testing.TB, timer *endpoint.FakeTimer, want time.Duration) {
	t.Helper()
	select {
	case d := <-timer.Started():
		if d != want {
			t.Fatalf("timer started with %v, want %v", d, want)
		}
	case <-time.After(waitLong):
		t.Fatal("timer not started")
	}
}

// TestRetryRMEMTimeout: a try that times out is retried with the next
// Request ID and exactly the same request otherwise; a late reply to the
// old ID is discarded and cannot complete the retry; the retried operation
// gives no RTT sample (Karn). Before any sample every try waits the
// configured timeout; after one, RTO at least MinRTO, doubled per retry.
// When the retries are used up the operation fails with TIMEOUT, outcome
// unknown, and the counters say what happened.
func TestRetryRMEMTimeout(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{RMEMTimeout: time.Second})
	setPolicy(t, a, 0, endpoint.RetryPolicy{Retries: 2, MinRTO: 10 * time.Millisecond, Deadline: time.Hour})
	timer := endpoint.InstallFakeTimer(a)

	res := rmemRead(a, 0, 0x1000)
	eqBytes(t, "first try", frame(macP, macA, 0x10, le(0), le(0x1000)), p.next(t))
	started(t, timer, time.Second)
	timer.Fire()
	eqBytes(t, "retry", frame(macP, macA, 0x10, le(1), le(0x1000)), p.next(t))
	started(t, timer, time.Second) // still no sample
	p.send(t, frame(macA, macP, 0x11, le(0), le(0xBAD)))
	eventually(t, "late reply", func() bool { return a.Stats().DropLateResponse == 1 })
	pending(t, res)
	p.send(t, frame(macA, macP, 0x11, le(1), le(0x600D)))
	if r := await(t, res); r.err != nil || r.data != 0x600D {
		t.Fatalf("retried read = %#x, %v", r.data, r.err)
	}
	if ps := a.PeerStats(0); ps.RTTSamples != 0 || ps.Retries != 1 || ps.ExpiredTries != 1 || ps.Timeouts != 0 {
		t.Fatalf("after a retried read: %+v (Karn: no sample)", ps)
	}

	// A first try answered gives the first sample.
	res = rmemRead(a, 0, 0x1000)
	eqBytes(t, "next read", frame(macP, macA, 0x10, le(2), le(0x1000)), p.next(t))
	started(t, timer, time.Second)
	p.send(t, frame(macA, macP, 0x11, le(2), le(1)))
	if r := await(t, res); r.err != nil {
		t.Fatal(r.err)
	}
	if ps := a.PeerStats(0); ps.RTTSamples != 1 || ps.RTTMin <= 0 || ps.RTTMin > time.Second || ps.RTTMin != ps.RTTMax {
		t.Fatalf("after a clean read: %+v", ps)
	}

	// Now the tries wait the RTO (well under the 10ms floor on link/mem),
	// doubling: 10ms, 20ms, 40ms; then TIMEOUT.
	res = rmemRead(a, 0, 0x1000)
	for k, d := range []time.Duration{10, 20, 40} {
		eqBytes(t, "try", frame(macP, macA, 0x10, le(3+uint32(k)), le(0x1000)), p.next(t))
		started(t, timer, d*time.Millisecond)
		timer.Fire()
	}
	r := await(t, res)
	wantCode(t, "read out of retries", r.err, wire.CodeTimeout)
	oe := opErr(t, r.err)
	if !errors.Is(r.err, endpoint.ErrTimeout) || !oe.OutcomeUnknown || oe.Retries != 2 || oe.Addr != 0x1000 || r.data != 0xFFFFFFFF {
		t.Fatalf("failed read = %#x, %+v", r.data, oe)
	}
	wantStatus(t, "A", a, 0, failed(wire.CodeTimeout))
	p.none(t, 20*time.Millisecond)
	s, ps := a.Stats(), a.PeerStats(0)
	if s.Retries != 3 || s.Timeouts != 1 || ps.Retries != 3 || ps.ExpiredTries != 4 || ps.Timeouts != 1 || ps.RTTSamples != 1 {
		t.Fatalf("stats: retries %d timeouts %d; peer %+v", s.Retries, s.Timeouts, ps)
	}
}

// TestRetryMalformedAndErrorRsp: a malformed response ends its try at once
// and is retried without waiting for the timer; a valid ERROR_RSP is the
// device's answer and is never retried.
func TestRetryMalformedAndErrorRsp(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{RMEMTimeout: time.Hour})
	setPolicy(t, a, 0, endpoint.RetryPolicy{Retries: 3, Deadline: time.Hour})
	res := async(func() result { return result{err: a.RMEMWrite(bg(), 0, 0x1004, 0xAB, 0xFF)} })
	eqBytes(t, "write", frame(macP, macA, 0x20, le(0), le(0x1004), le(0xFF), le(0xAB)), p.next(t))
	p.send(t, frame(macA, macP, 0x21, le(0), le(0))) // one word too long
	eqBytes(t, "retry", frame(macP, macA, 0x20, le(1), le(0x1004), le(0xFF), le(0xAB)), p.next(t))
	p.send(t, frame(macA, macP, 0x21, le(1)))
	if r := await(t, res); r.err != nil {
		t.Fatalf("write after a malformed response: %v", r.err)
	}
	if s := a.Stats(); s.MalformedResponses != 1 || s.Retries != 1 || s.Timeouts != 0 {
		t.Fatalf("stats %+v", s)
	}

	res = rmemRead(a, 0, 0x1004)
	p.next(t)
	p.send(t, frame(macA, macP, 0xFF, le(2), le(6)))
	r := await(t, res)
	wantCode(t, "ERROR_RSP", r.err, wire.CodeRemoteAXIWrSlverr)
	if oe := opErr(t, r.err); oe.OutcomeUnknown || oe.Retries != 0 {
		t.Fatalf("ERROR_RSP: %+v", oe)
	}
	p.none(t, 20*time.Millisecond)
}

// TestRetryVolatile: an operation on a volatile range is never retried,
// whatever the policy says; its failure says it may have executed. A
// refusal before sending says it did not.
func TestRetryVolatile(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{RMEMTimeout: 30 * time.Millisecond})
	setPolicy(t, a, 0, endpoint.RetryPolicy{Retries: 5, Volatile: []endpoint.AddrRange{{Base: 0x2000, Size: 0x10}}})
	_, err := a.RMEMRead(bg(), 0, 0x200C)
	wantCode(t, "volatile read", err, wire.CodeTimeout)
	if oe := opErr(t, err); !oe.OutcomeUnknown || oe.Retries != 0 {
		t.Fatalf("volatile read: %+v", oe)
	}
	p.next(t)
	p.none(t, 60*time.Millisecond)

	_, err = a.RMEMRead(bg(), 0, 0x2002)
	wantCode(t, "unaligned", err, wire.CodeLocalInvalid)
	if oe := opErr(t, err); oe.OutcomeUnknown {
		t.Fatalf("refused read: %+v", oe)
	}

	// Per operation: WithRetry overrides the peer's policy.
	start := time.Now()
	_, err = a.RMEMRead(endpoint.WithRetry(bg(), endpoint.RetryPolicy{}), 0, 0x3000)
	wantCode(t, "read without retries", err, wire.CodeTimeout)
	p.next(t)
	p.none(t, 60*time.Millisecond)
	if time.Since(start) > time.Second {
		t.Fatal("slow")
	}
	if s := a.Stats(); s.Retries != 0 {
		t.Fatalf("%d retries", s.Retries)
	}
	// The non-volatile address is retried (no sample yet: the timeout per
	// try).
	cfg := a.Config()
	cfg.RMEMTimeout = 300 * time.Millisecond
	if err := a.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	res := rmemRead(a, 0, 0x3000)
	for k := range 3 {
		eqBytes(t, "try", frame(macP, macA, 0x10, le(2+uint32(k)), le(0x3000)), p.next(t))
	}
	p.send(t, frame(macA, macP, 0x11, le(4), le(9)))
	if r := await(t, res); r.err != nil || r.data != 9 {
		t.Fatalf("read = %v, %v", r.data, r.err)
	}
}

// TestRetryDeadline: the deadline bounds an operation with all its tries.
func TestRetryDeadline(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{RMEMTimeout: 40 * time.Millisecond})
	setPolicy(t, a, 0, endpoint.RetryPolicy{Retries: 100, Deadline: 200 * time.Millisecond})
	start := time.Now()
	_, err := a.RMEMRead(bg(), 0, 0x1000)
	el := time.Since(start)
	wantCode(t, "read past its deadline", err, wire.CodeTimeout)
	if el < 200*time.Millisecond || el > 3*time.Second {
		t.Fatalf("failed after %v, want the 200ms deadline", el)
	}
	var tries []uint32
	for {
		select {
		case f := <-p.frames:
			tries = append(tries, wire.Frame(f).RequestID())
			continue
		case <-time.After(50 * time.Millisecond):
		}
		break
	}
	// Five tries of 40ms fill the 200ms; a host that stalls sends fewer
	// before the deadline, never more, and the Request IDs follow on.
	if len(tries) < 2 || len(tries) > 5 {
		t.Fatalf("tries %v, want 2 to 5 with IDs 0, 1, 2, ...", tries)
	}
	for i, id := range tries {
		if id != uint32(i) {
			t.Fatalf("tries %v, want IDs 0, 1, 2, ...", tries)
		}
	}
}

// TestRetryBadPolicy: the policy is checked.
func TestRetryBadPolicy(t *testing.T) {
	a, _, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{})
	for _, p := range []endpoint.RetryPolicy{{Retries: -1}, {Retries: endpoint.MaxRetries + 1}, {Deadline: -1}, {MinRTO: -1},
		{Volatile: []endpoint.AddrRange{{Base: 0xFFFFFFF0, Size: 0x20}}}, {Volatile: []endpoint.AddrRange{{Base: 4}}}} {
		if err := a.SetRetryPolicy(0, p); err == nil {
			t.Errorf("SetRetryPolicy(%+v) accepted", p)
		}
	}
	if err := a.SetRetryPolicy(endpoint.MaxPeers, endpoint.RetryPolicy{}); err == nil {
		t.Error("peer index out of range accepted")
	}
	_, err := a.RMEMRead(endpoint.WithRetry(bg(), endpoint.RetryPolicy{Retries: -2}), 0, 0x1000)
	wantCode(t, "bad WithRetry", err, wire.CodeLocalInvalid)
	setPolicy(t, a, 0, endpoint.RetryPolicy{Retries: 3})
	if got := a.RetryPolicyOf(0); got.Retries != 3 || got.Deadline != endpoint.DefaultDeadline || got.MinRTO != endpoint.DefaultMinRTO {
		t.Fatalf("policy %+v", got)
	}
}

// TestRetryDMAFragment: a DMA fragment that times out is retried (new
// Request ID, same address, same data read again), inside a chained block;
// the block goes on after it, and a failed block reports the remote
// address of the failed fragment beside the bytes and fragments completed.
// The RTO floor is far above the real round trip that the first sample
// measures, so the timeouts are the floor's whatever the machine's load.
func TestRetryDMAFragment(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeDMARead, endpoint.Config{MaxFragment: 4, DMATimeout: time.Second})
	setPolicy(t, a, 0, endpoint.RetryPolicy{Retries: 1, Deadline: time.Hour, MinRTO: 300 * time.Millisecond})
	timer := endpoint.InstallFakeTimer(a)
	src := pattern(12, 5)
	res := dmaWrite(a, 0, 0x1000, src)
	frag := func(rid, k uint32) []byte {
		return frame(macP, macA, 0x40, le(rid), le(0x1000+4*k), le(4), src[4*k:4*k+4], eod)
	}
	eqBytes(t, "fragment 0", frag(0, 0), p.next(t))
	started(t, timer, time.Second)
	p.send(t, frame(macA, macP, 0x41, le(0)))
	eqBytes(t, "fragment 1", frag(1, 1), p.next(t))
	started(t, timer, 300*time.Millisecond) // the sample of fragment 0, floored
	timer.Fire()
	eqBytes(t, "fragment 1 again", frag(2, 1), p.next(t))
	started(t, timer, 600*time.Millisecond)
	p.send(t, frame(macA, macP, 0x41, le(2)))
	eqBytes(t, "fragment 2", frag(3, 2), p.next(t))
	started(t, timer, 300*time.Millisecond)
	timer.Fire()
	eqBytes(t, "fragment 2 again", frag(4, 2), p.next(t))
	started(t, timer, 600*time.Millisecond)
	timer.Fire()
	r := await(t, res)
	wantCode(t, "block", r.err, wire.CodeTimeout)
	oe := opErr(t, r.err)
	if r.tr != (endpoint.Transfer{Bytes: 8, Fragments: 2, Retries: 2}) || oe.Addr != 0x1008 || !oe.OutcomeUnknown || oe.Retries != 2 {
		t.Fatalf("failed block = %+v, %+v", r.tr, oe)
	}
	p.none(t, 20*time.Millisecond)
}

// TestRetryLossyBlocks moves DMA blocks through a link that drops 10 % of
// the frames both ways, and duplicates and reorders some: with retries every
// block is written and read back (by a second endpoint: one mode per peer
// entry) with the right bytes.
func TestRetryLossyBlocks(t *testing.T) {
	sw := newSwitchWith(t, mem.Config{Seed: 12})
	cfg := endpoint.Config{MaxFragment: 256, DMATimeout: 50 * time.Millisecond}
	a := newEP(t, sw, macA, newRAM(t), cfg)
	c := newEP(t, sw, macC, newRAM(t), cfg)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	setPeer(t, a, 0, win(macB, endpoint.ModeDMARead))
	setPeer(t, c, 0, win(macB, endpoint.ModeDMAWrite))
	setPeer(t, b, 0, win(macA, endpoint.ModeDMAWrite))
	setPeer(t, b, 1, win(macC, endpoint.ModeDMARead))
	pol := endpoint.RetryPolicy{Retries: 20, MinRTO: time.Millisecond}
	setPolicy(t, a, 0, pol)
	setPolicy(t, c, 0, pol)
	for _, r := range []mem.Rule{
		{Action: mem.Drop, Prob: 0.1},
		{Action: mem.Duplicate, Prob: 0.05},
		{Action: mem.Reorder, Prob: 0.1},
	} {
		if err := sw.AddRule(r); err != nil {
			t.Fatal(err)
		}
	}
	var retries int
	back := make([]byte, 8192)
	for k := range 10 {
		src := pattern(8192, byte(k))
		tr, err := a.DMAWrite(bg(), 0, 0x2000, src)
		if err != nil || tr.Bytes != 8192 || tr.Fragments != 32 {
			t.Fatalf("block %d: %+v, %v", k, tr, err)
		}
		retries += tr.Retries
		tr, err = c.DMARead(bg(), 0, 0x2000, back)
		if err != nil || tr.Bytes != 8192 || tr.Fragments != 32 {
			t.Fatalf("read back %d: %+v, %v", k, tr, err)
		}
		retries += tr.Retries
		eqBytes(t, "read back", src, back)
	}
	if retries == 0 || a.Stats().Retries+c.Stats().Retries != uint64(retries) {
		t.Fatalf("%d retries in the transfers, %d+%d in Stats", retries, a.Stats().Retries, c.Stats().Retries)
	}
}

// TestProgressKeepsChain: a progress callback does not take a block off the
// chained path; it is called after every fragment, in order, before the
// next fragment is sent.
func TestProgressKeepsChain(t *testing.T) {
	sw := newSwitch(t)
	a := newEP(t, sw, macA, newRAM(t), endpoint.Config{MaxFragment: 64})
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	dmaPath(t, a, 0, b, 0)
	var got []uint64
	var served atomic.Uint64
	ctx := endpoint.WithProgress(bg(), func(done uint64) {
		got = append(got, done)
		// The fragment just completed is the last one served.
		served.Store(b.Stats().ServedDMAWrite)
		if served.Load() != uint64(len(got)) {
			t.Errorf("progress %d called with %d fragments served", len(got), served.Load())
		}
	})
	before := endpoint.ChainedFragments(a)
	tr, err := a.DMAWrite(ctx, 0, 0x1000, pattern(1000, 1))
	if err != nil || tr.Fragments != 16 {
		t.Fatalf("DMAWrite = %+v, %v", tr, err)
	}
	if n := endpoint.ChainedFragments(a) - before; n != 15 {
		t.Fatalf("%d fragments chained, want 15 (all but the first)", n)
	}
	want := make([]uint64, 16)
	for i := range want {
		want[i] = min(uint64(64*(i+1)), 1000)
	}
	diff(t, "progress", want, got)
}

// TestRetryZeroAllocs: with a retry policy on and no loss, the steady
// state still allocates nothing.
func TestRetryZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	sw := newSwitch(t)
	cfg := endpoint.Config{RMEMTimeout: time.Minute, DMATimeout: time.Minute, MaxFragment: 256}
	a := newEP(t, sw, macA, newRAM(t), cfg)
	b := newEP(t, sw, macB, newRAM(t), cfg)
	setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))
	setPeer(t, a, 1, win(macC, endpoint.ModeDMARead))
	c := newEP(t, sw, macC, newRAM(t), cfg)
	setPeer(t, c, 0, win(macA, endpoint.ModeDMAWrite))
	setPolicy(t, a, 0, endpoint.RetryPolicy{Retries: 3, MinRTO: time.Minute})
	setPolicy(t, a, 1, endpoint.RetryPolicy{Retries: 3, MinRTO: time.Minute})
	block := make([]byte, 4096)
	var done atomic.Uint64
	ctx := endpoint.WithProgress(context.Background(), func(d uint64) { done.Store(d) })
	for name, op := range map[string]func() error{
		"RMEMRead":           func() error { _, err := a.RMEMRead(bg(), 0, 0x1000); return err },
		"RMEMWrite":          func() error { return a.RMEMWrite(bg(), 0, 0x1000, 1, 0xFF) },
		"DMAWrite":           func() error { _, err := a.DMAWrite(bg(), 1, 0x1003, block); return err },
		"DMAWrite, progress": func() error { _, err := a.DMAWrite(ctx, 1, 0x1003, block); return err },
	} {
		var err error
		n := testing.AllocsPerRun(200, func() {
			if e := op(); e != nil {
				err = e
			}
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n != 0 {
			t.Errorf("%s with retries on: %v allocations per call, want 0", name, n)
		}
	}
	if !bytes.Equal(block, make([]byte, 4096)) || done.Load() != 4096 {
		t.Fatal("progress not reported")
	}
}
