package e2e_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/relay"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// The tests below run the engine through link/relay in a namespace of its
// own: h1 <-veth-> relay <-veth-> h2, real AF_PACKET sockets everywhere, so
// that recovery (endpoint.RetryPolicy) meets loss, duplication, reordering
// and delay as a bad link would deliver them.

// relayPair is a pair whose only path goes through a relay.
type relayPair struct {
	*pair
	r   *relay.Relay
	mem *memory.RAM // B's memory: room for 4 MiB blocks
}

func newRelayPair(t *testing.T, rc relay.Config, cfgA endpoint.Config, mode endpoint.Mode) *relayPair {
	t.Helper()
	ram, err := memory.NewRAM(ramBase, 8*mib)
	if err != nil {
		t.Fatal(err)
	}
	w := win(wire.MAC{}, mode)
	w.WindowSize = 8 * mib
	p := newPair(t, pairSetup{topo: netns.Topology{Relay: true}, cfgA: cfgA, modeAB: mode, modeBA: mode, spaceB: ram, winBA: &w})
	rh := p.net.Relay()
	la, lb := openLink(t, rh, afpacket.Config{AllEtherTypes: true}), openRelayLink(t, rh, netns.RelayIfB)
	r, err := relay.New(la, lb, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return &relayPair{pair: p, r: r, mem: ram}
}

// openRelayLink opens the relay namespace's interface ifname.
func openRelayLink(t *testing.T, h *netns.Host, ifname string) *afpacket.Link {
	t.Helper()
	var l *afpacket.Link
	if err := h.Do(func() (err error) { l, err = afpacket.Open(ifname, afpacket.Config{AllEtherTypes: true}); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func (p *relayPair) policy(t *testing.T, pol endpoint.RetryPolicy) {
	t.Helper()
	if err := p.a.SetRetryPolicy(peerAB, pol); err != nil {
		t.Fatal(err)
	}
}

// rmemPairs writes n distinct words and reads each back. A write that
// failed may or may not have executed (only TIMEOUT is allowed, with
// outcome_unknown); a read that succeeds must return the word written, or
// the old word when the write failed. It returns the failed operations.
func (p *relayPair) rmemPairs(t *testing.T, n int, base uint32) (failures int) {
	t.Helper()
	for i := range n {
		addr := base + 4*uint32(i%4096)
		old, _ := p.mem.ReadWord(addr)
		v := uint32(0xA5000000) + uint32(i)
		werr := p.a.RMEMWrite(bg(), peerAB, addr, v, 0xFFFFFFFF)
		got, rerr := p.a.RMEMRead(bg(), peerAB, addr)
		for _, err := range []error{werr, rerr} {
			if err == nil {
				continue
			}
			failures++
			var oe *endpoint.OpError
			if !errors.As(err, &oe) || oe.Code != wire.CodeTimeout || !oe.OutcomeUnknown || !errors.Is(err, endpoint.ErrTimeout) {
				t.Fatalf("pair %d: %v (%+v), want TIMEOUT with the outcome unknown", i, err, oe)
			}
		}
		if rerr == nil && got != v && !(werr != nil && got == old) {
			t.Fatalf("pair %d: read %#x after writing %#x (write error %v): a wrong value", i, got, v, werr)
		}
	}
	return failures
}

// blocks writes n blocks of size bytes and reads each back; it returns the
// failed transfers and the retries made.
func (p *relayPair) blocks(t *testing.T, n, size int, addr uint32, allowFail bool) (failures, retries int) {
	t.Helper()
	back := make([]byte, size)
	for k := range n {
		src := random(size, uint64(k)+1)
		p.modes(t, endpoint.ModeDMARead, endpoint.ModeDMAWrite)
		tr, err := p.a.DMAWrite(bg(), peerAB, addr, src)
		retries += tr.Retries
		if err != nil {
			if !allowFail || endpoint.CodeOf(err) != wire.CodeTimeout {
				t.Fatalf("block %d: DMAWrite = %+v, %v", k, tr, err)
			}
			failures++
			continue
		}
		p.modes(t, endpoint.ModeDMAWrite, endpoint.ModeDMARead)
		clear(back)
		tr, err = p.a.DMARead(bg(), peerAB, addr, back)
		retries += tr.Retries
		if err != nil {
			if !allowFail || endpoint.CodeOf(err) != wire.CodeTimeout {
				t.Fatalf("block %d: DMARead = %+v, %v", k, tr, err)
			}
			failures++
			// What was read before the failure is right.
			if !bytes.Equal(back[:tr.Bytes], src[:tr.Bytes]) {
				t.Fatalf("block %d: the %d bytes read before the failure are wrong", k, tr.Bytes)
			}
			continue
		}
		if !bytes.Equal(back, src) {
			t.Fatalf("block %d: read back wrong data", k)
		}
	}
	return failures, retries
}

const mib = 1 << 20

// TestRelayLoss5: at 5 % loss in each direction, with 8 retries, every RMEM
// write+read-back pair and every 4 MiB block written and read back is
// correct.
func TestRelayLoss5(t *testing.T) {
	p := newRelayPair(t, relay.Config{Loss: 0.05, Seed: 5}, endpoint.Config{RMEMTimeout: time.Second, DMATimeout: time.Second}, endpoint.ModeRMEM)
	p.policy(t, endpoint.RetryPolicy{Retries: 8, MinRTO: 2 * time.Millisecond})
	start := time.Now()
	if f := p.rmemPairs(t, 200, ramBase); f != 0 {
		t.Fatalf("%d of 400 RMEM operations failed", f)
	}
	rmemTime := time.Since(start)
	start = time.Now()
	f, retries := p.blocks(t, 10, 4*mib, ramBase, false)
	if f != 0 {
		t.Fatalf("%d failed transfers", f)
	}
	ab, ba := p.r.Stats()
	ps := p.a.PeerStats(peerAB)
	t.Logf("200 RMEM pairs in %v; 10 x 4 MiB written and read back in %v, %d retries; relay %v / %v; peer %v",
		rmemTime, time.Since(start), retries, ab, ba, ps)
	if ab.Dropped == 0 || ba.Dropped == 0 || retries == 0 {
		t.Fatal("no loss happened: the test proves nothing")
	}
}

// TestRelayLoss20: at 20 % loss every operation is correct or fails with
// TIMEOUT after its deadline: never a wrong value.
func TestRelayLoss20(t *testing.T) {
	p := newRelayPair(t, relay.Config{Loss: 0.2, Seed: 20}, endpoint.Config{RMEMTimeout: 200 * time.Millisecond, DMATimeout: 200 * time.Millisecond}, endpoint.ModeRMEM)
	p.policy(t, endpoint.RetryPolicy{Retries: 8, MinRTO: 2 * time.Millisecond, Deadline: time.Second})
	f := p.rmemPairs(t, 200, ramBase)
	bf, retries := p.blocks(t, 4, 256<<10, ramBase+0x40000, true)
	s := p.a.Stats()
	t.Logf("RMEM: %d of 400 failed; blocks: %d of 8 transfers failed, %d retries; %d retries in all, %d timeouts", f, bf, retries, s.Retries, s.Timeouts)
}

// TestRelayDupReorder: duplication and reordering cost nothing in
// correctness: no wrong value and no failure.
func TestRelayDupReorder(t *testing.T) {
	p := newRelayPair(t, relay.Config{Duplicate: 0.05, Reorder: 0.25, Seed: 25}, endpoint.Config{RMEMTimeout: time.Second, DMATimeout: time.Second}, endpoint.ModeRMEM)
	p.policy(t, endpoint.RetryPolicy{Retries: 8, MinRTO: 2 * time.Millisecond})
	if f := p.rmemPairs(t, 200, ramBase); f != 0 {
		t.Fatalf("%d RMEM operations failed", f)
	}
	if f, _ := p.blocks(t, 1, mib, ramBase, false); f != 0 {
		t.Fatalf("%d failed transfers", f)
	}
	ab, ba := p.r.Stats()
	if ab.Duplicated == 0 || ab.Reordered == 0 || ba.Duplicated == 0 || ba.Reordered == 0 {
		t.Fatalf("relay %v / %v: no duplication or reordering happened", ab, ba)
	}
	s := p.a.Stats()
	t.Logf("relay %v / %v; A: %d retries, %d late, %d unmatched responses", ab, ba, s.Retries, s.DropLateResponse, s.DropUnmatchedResponse)
}

// TestRelayDelayRecovery: with a 5ms ± 2ms delay each way, --timeout 1s and
// 3 retries, once a few operations have measured the link an operation or a
// DMA fragment whose first try is lost completes in well under 100 ms, not
// after the 1 s timeout.
func TestRelayDelayRecovery(t *testing.T) {
	p := newRelayPair(t, relay.Config{Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond, Seed: 1},
		endpoint.Config{RMEMTimeout: time.Second, DMATimeout: time.Second}, endpoint.ModeRMEM)
	p.policy(t, endpoint.RetryPolicy{Retries: 3})
	for i := range 8 { // warm-up
		if _, err := p.a.RMEMRead(bg(), peerAB, ramBase+4*uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []bool{true, false} { // the request lost, the response lost
		p.r.Drop(dir, 1)
		start := time.Now()
		if _, err := p.a.RMEMRead(bg(), peerAB, ramBase); err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if el >= 100*time.Millisecond {
			t.Fatalf("RMEM read with a lost first try (request lost %v) took %v; peer %v", dir, el, p.a.PeerStats(peerAB))
		}
		t.Logf("RMEM read with its first try lost (the request: %v) completed in %v", dir, el)
	}

	// A DMA block: its first fragments warm the estimator up, then a
	// fragment's try is lost.
	p.modes(t, endpoint.ModeDMARead, endpoint.ModeDMAWrite)
	var mu sync.Mutex
	var times []time.Time
	ctx := endpoint.WithProgress(bg(), func(done uint64) {
		mu.Lock()
		times = append(times, time.Now())
		if len(times) == 10 {
			p.r.Drop(true, 1) // the next fragment's request
		}
		mu.Unlock()
	})
	src := random(30*8160, 9)
	tr, err := p.a.DMAWrite(ctx, peerAB, ramBase, src)
	if err != nil || tr.Retries < 1 {
		// More than one when the jitter outlasted an RTO: harmless.
		t.Fatalf("DMAWrite = %+v, %v; want a retry", tr, err)
	}
	mu.Lock()
	defer mu.Unlock()
	var worst time.Duration
	for i := 1; i < len(times); i++ {
		worst = max(worst, times[i].Sub(times[i-1]))
	}
	// Fragment 11 (index 10) lost its first try: the time from fragment
	// 10's completion to its own.
	if lost := times[10].Sub(times[9]); lost >= 100*time.Millisecond {
		t.Fatalf("the fragment whose first try was lost took %v; slowest %v; peer %v", lost, worst, p.a.PeerStats(peerAB))
	}
	// Read back through B's responder (which may still be serving a late
	// try: the memory is B's until then).
	p.modes(t, endpoint.ModeDMAWrite, endpoint.ModeDMARead)
	back := make([]byte, len(src))
	if _, err := p.a.DMARead(bg(), peerAB, ramBase, back); err != nil || !bytes.Equal(back, src) {
		t.Fatalf("read back: %v (equal %v)", err, bytes.Equal(back, src))
	}
	t.Logf("the fragment whose first try was lost: %v; slowest fragment %v; peer %v", times[10].Sub(times[9]), worst, p.a.PeerStats(peerAB))
}

// TestRelayVolatileOnce: a volatile RMEM read whose response is lost is not
// retried: it executed exactly once at the responder, and the failure says
// its outcome is unknown. The same read of a plain address is retried.
func TestRelayVolatileOnce(t *testing.T) {
	p := newRelayPair(t, relay.Config{}, endpoint.Config{RMEMTimeout: 100 * time.Millisecond}, endpoint.ModeRMEM)
	fifo := uint32(ramBase + 0x100)
	p.policy(t, endpoint.RetryPolicy{Retries: 8, Volatile: []endpoint.AddrRange{{Base: fifo, Size: 4}}})
	before := p.b.Stats().ServedRMEMRead
	p.r.Drop(false, 1) // the response
	_, err := p.a.RMEMRead(bg(), peerAB, fifo)
	wantCode(t, "volatile read", err, wire.CodeTimeout)
	var oe *endpoint.OpError
	if !errors.As(err, &oe) || !oe.OutcomeUnknown || oe.Retries != 0 {
		t.Fatalf("volatile read: %+v", oe)
	}
	if n := p.b.Stats().ServedRMEMRead - before; n != 1 {
		t.Fatalf("the volatile read executed %d times at the responder, want exactly 1", n)
	}
	p.r.Drop(false, 1)
	if _, err := p.a.RMEMRead(bg(), peerAB, fifo+4); err != nil {
		t.Fatalf("plain read with a lost response: %v", err)
	}
	if n := p.b.Stats().ServedRMEMRead - before; n != 3 {
		t.Fatalf("%d reads served, want 3 (the volatile one once, the plain one twice)", n)
	}
}
