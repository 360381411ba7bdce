package endpoint_test

import (
	"errors"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// TestOutstandingWindow: with Config.Outstanding 3 a DMA block keeps three
// fragments in flight: the peer sees three requests before it answers any,
// and one more after each answer, in address order, each with its own
// Request ID; the block completes with every fragment answered.
func TestOutstandingWindow(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeDMARead, endpoint.Config{MaxFragment: 4, Outstanding: 3, DMATimeout: time.Second})
	src := pattern(20, 9) // five fragments
	res := dmaWrite(a, 0, 0x1000, src)
	var rids []uint32
	expect := func(k int) {
		t.Helper()
		f := p.next(t)
		rid := wire.Frame(f).RequestID()
		eqBytes(t, "fragment", frame(macP, macA, 0x40, le(rid), le(0x1000+4*uint32(k)), le(4), src[4*k:4*k+4], eod), f)
		rids = append(rids, rid)
	}
	for k := range 3 {
		expect(k)
	}
	p.none(t, 30*time.Millisecond) // the window is full
	for k := range 5 {
		p.send(t, frame(macA, macP, 0x41, le(rids[k])))
		if k+3 < 5 {
			expect(k + 3)
		}
	}
	if r := await(t, res); r.err != nil || r.tr != (endpoint.Transfer{Bytes: 20, Fragments: 5}) {
		t.Fatalf("windowed block = %+v, %v", r.tr, r.err)
	}
	p.none(t, 20*time.Millisecond)
}

// TestOutstandingFailureStops: a failed fragment stops the issuing of
// further ones; those in flight complete; the block reports the failure at
// the failed fragment's address.
func TestOutstandingFailureStops(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeDMARead, endpoint.Config{MaxFragment: 4, Outstanding: 2, DMATimeout: time.Second})
	src := pattern(24, 1) // six fragments
	res := dmaWrite(a, 0, 0x2000, src)
	f0, f1 := p.next(t), p.next(t)
	p.send(t, frame(macA, macP, 0xff, le(wire.Frame(f0).RequestID()), le(wire.CauseAXIWrSlverr)))
	p.send(t, frame(macA, macP, 0x41, le(wire.Frame(f1).RequestID())))
	r := await(t, res)
	wantCode(t, "failed window", r.err, wire.CodeRemoteAXIWrSlverr)
	if r.tr.Fragments != 1 || r.tr.Bytes != 4 {
		t.Errorf("transfer %+v: want the one answered fragment", r.tr)
	}
	var oe *endpoint.OpError
	if !errors.As(r.err, &oe) || oe.Addr != 0x2000 {
		t.Errorf("error %v: want the failed fragment's address 0x2000", r.err)
	}
	p.none(t, 30*time.Millisecond) // nothing after the failure
}

// TestOutstandingRMEM: concurrent RMEM callers have up to Outstanding
// requests in flight; each completes with its own answer.
func TestOutstandingRMEM(t *testing.T) {
	a, p, _ := newScripted(t, endpoint.ModeRMEM, endpoint.Config{Outstanding: 4, RMEMTimeout: time.Second})
	var res []<-chan result
	for i := range 4 {
		res = append(res, rmemRead(a, 0, 0x100+4*uint32(i)))
	}
	got := map[uint32]uint32{} // address -> Request ID
	for range 4 {
		f := wire.Frame(p.next(t))
		got[f.Address()] = f.RequestID()
	}
	p.none(t, 20*time.Millisecond)
	if len(got) != 4 {
		t.Fatalf("requests %v", got)
	}
	for addr, rid := range got {
		p.send(t, frame(macA, macP, 0x11, le(rid), le(addr^0xffff0000)))
	}
	for i, c := range res {
		r := await(t, c)
		if want := uint32(0x100+4*i) ^ 0xffff0000; r.err != nil || r.data != want {
			t.Errorf("read %d: %#x %v, want %#x", i, r.data, r.err, want)
		}
	}
	if err := a.SetConfig(endpoint.Config{Outstanding: 5}); err == nil {
		t.Error("SetConfig raised Outstanding above the table made at New")
	}
}
