package endpoint_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/link/rlink"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/transport"
	"github.com/openenoc/oetp/wire"
)

// carriedPair is an initiator A on an rlink with B in mode m and, when
// answer, a responder B on an rlink with A reliable; cfg is A's.
func carriedPair(t *testing.T, m rlink.Mode, answer bool, tc transport.Config, cfg endpoint.Config) (a *endpoint.Endpoint, la *rlink.Link, b *endpoint.Endpoint) {
	t.Helper()
	sw, _ := mem.NewSwitch(mem.Config{Seed: 5})
	pa, _ := sw.Attach(macA)
	pb, _ := sw.Attach(macB)
	la, err := rlink.New(pa, rlink.Config{Transport: tc})
	if err != nil {
		t.Fatal(err)
	}
	la.SetPeer(macB, m)
	if answer {
		lb, _ := rlink.New(pb, rlink.Config{Transport: tc})
		lb.SetPeer(macA, rlink.Reliable)
		ram, _ := memory.NewRAM(0, 1<<16)
		b, err = endpoint.New(lb.Link(), ram, endpoint.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		b.SetPeer(0, endpoint.Peer{MAC: macA, Mode: endpoint.ModeRMEM, WindowSize: 1 << 32})
	} else {
		t.Cleanup(func() { pb.Close() })
	}
	a, err = endpoint.New(la.Link(), nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	a.SetPeer(0, endpoint.Peer{MAC: macB, Mode: endpoint.ModeRMEM, WindowSize: 1 << 32})
	return a, la, b
}

// A request the reliable transport carries starts no response timer of its
// own (the transport's one timer per window resends it); the same
// request to a v1 peer through the same link starts the endpoint's timer
// with the configured timeout.
func TestNoEndpointTimerOnCarriedRequests(t *testing.T) {
	a, la, _ := carriedPair(t, rlink.Reliable, true, transport.Config{}, endpoint.Config{RMEMTimeout: 3 * time.Second})
	ft := endpoint.InstallFakeTimer(a)
	if _, err := a.RMEMRead(context.Background(), 0, 0x40); err != nil {
		t.Fatal(err)
	}
	if n := len(ft.Starts()); n != 0 {
		t.Fatalf("the endpoint started its timer %d times for a request the transport carries; want 0", n)
	}
	la.SetPeer(macB, rlink.V1) // B's endpoint answers v1 requests too
	// A v1 request's timer starts once the link has taken the frame,
	// unless the answer came first (then there is nothing to time): read
	// until one start is seen.
	for i := 0; i < 50 && len(ft.Starts()) == 0; i++ {
		if _, err := a.RMEMRead(context.Background(), 0, 0x40); err != nil {
			t.Fatal(err)
		}
	}
	if s := ft.Starts(); len(s) != 1 || s[0] != 3*time.Second {
		t.Fatalf("timer starts for v1 requests: %v; want [3s]", s)
	}
}

// A request whose session fails (nothing answers, the retries run out) is
// reported lost by the transport and ends in TIMEOUT, even with a response
// timeout of zero (wait forever): no operation waits for an answer that
// will not come.
func TestAbandonedRequestTimesOut(t *testing.T) {
	tc := transport.Config{InitialRTO: 5 * time.Millisecond, MinRTO: 5 * time.Millisecond, MaxRTO: 10 * time.Millisecond, MaxRetries: 2, SynAttempts: 2}
	a, _, _ := carriedPair(t, rlink.Reliable, false, tc, endpoint.Config{RMEMTimeout: 0})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := a.RMEMRead(ctx, 0, 0x40)
	var oe *endpoint.OpError
	if !errors.As(err, &oe) || oe.Code != wire.CodeTimeout || !errors.Is(err, endpoint.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RMEMRead through a failed session: %v; want TIMEOUT from the transport", err)
	}
}

// An Auto peer that does not answer the handshake is reached by v1: the
// requests the transport held go out as v1 frames, and the endpoint's
// response timer starts for them then.
func TestFallbackStartsTimer(t *testing.T) {
	tc := transport.Config{InitialRTO: 10 * time.Millisecond}
	a, _, _ := carriedPair(t, rlink.Auto, false, tc, endpoint.Config{RMEMTimeout: 200 * time.Millisecond})
	ft := endpoint.InstallFakeTimer(a)
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		_, err := a.RMEMRead(ctx, 0, 0x40)
		done <- err
	}()
	select {
	case d := <-ft.Started():
		if d != 200*time.Millisecond {
			t.Fatalf("timer started for %v, want 200ms", d)
		}
	case err := <-done:
		t.Fatalf("RMEMRead ended before its timer started: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no timer started after the fallback")
	}
	ft.Fire()
	if err := <-done; !errors.Is(err, endpoint.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RMEMRead after the fallback: %v; want its response timeout", err)
	}
}

// A carried request keeps its response timeout: a responder whose endpoint
// never answers (its transport acknowledges nothing, so it is resent) ends
// the read in TIMEOUT once RMEMTimeout has passed, from the initiator's one
// timer for carried tries, not from a timer of the request's own.
func TestCarriedRequestTimesOut(t *testing.T) {
	tc := transport.Config{MaxRetries: 50}
	a, _, b := carriedPair(t, rlink.Reliable, true, tc, endpoint.Config{RMEMTimeout: 100 * time.Millisecond})
	b.SetPeer(0, endpoint.Peer{MAC: macC, Mode: endpoint.ModeRMEM, WindowSize: 1 << 32}) // A is unknown: dropped
	ft := endpoint.InstallFakeTimer(a)
	start := time.Now()
	_, err := a.RMEMRead(context.Background(), 0, 0x40)
	var oe *endpoint.OpError
	if !errors.As(err, &oe) || oe.Code != wire.CodeTimeout || !errors.Is(err, endpoint.ErrTimeout) {
		t.Fatalf("RMEMRead: %v; want TIMEOUT", err)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("timed out after %v, before RMEMTimeout (100ms)", el)
	}
	if n := len(ft.Starts()); n != 0 {
		t.Errorf("the request's own timer started %d times; want 0", n)
	}
}
