// Package endpointtest holds the helpers that the engine's external tests
// and the tests above it share: test MAC addresses, endpoints and RAM that
// the test's cleanup closes, peer entries, and checks of codes, peer status
// and events. Every helper that checks fails the test at once (t.Fatalf)
// with what it waited for or what it found.
//
// It is imported by test files only; it imports the engine, so the
// endpoint package's own in-package tests cannot use it (an import cycle),
// only its external endpoint_test package.
package endpointtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// MAC returns the test unicast address 02:0e:0c:00:00:n (locally
// administered): the stations of every test are named alike.
func MAC(n byte) wire.MAC { return wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, n} }

// GroupMAC returns the test group address 03:0e:0c:00:00:n.
func GroupMAC(n byte) wire.MAC { return wire.MAC{0x03, 0x0e, 0x0c, 0x00, 0x00, n} }

// WaitStats polls e's counters until cond holds; on timeout it shows them.
func WaitStats(t testing.TB, what string, e *endpoint.Endpoint, cond func(endpoint.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(testutil.WaitLong)
	for s := e.Stats(); !cond(s); s = e.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; counters %+v", what, s)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// NewRAM returns zeroed RAM over [base, base+size).
func NewRAM(t testing.TB, base uint32, size uint64) *memory.RAM {
	t.Helper()
	r, err := memory.NewRAM(base, size)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// NewEndpoint starts an endpoint on l; the test's cleanup closes it.
func NewEndpoint(t testing.TB, l link.Link, space memory.Space, cfg endpoint.Config) *endpoint.Endpoint {
	t.Helper()
	e, err := endpoint.New(l, space, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// SetPeer sets e's peer entry i.
func SetPeer(t testing.TB, e *endpoint.Endpoint, i int, p endpoint.Peer) {
	t.Helper()
	if err := e.SetPeer(i, p); err != nil {
		t.Fatal(err)
	}
}

// Window is a peer entry for mac in mode whose window is [base, base+size),
// with PEER_DMA_COMPLETE enabled.
func Window(mac wire.MAC, mode endpoint.Mode, base uint32, size uint64) endpoint.Peer {
	return endpoint.Peer{MAC: mac, Mode: mode, WindowBase: base, WindowSize: size, EventEnable: true}
}

// WantCode checks that err is an *endpoint.OpError with the given code, or
// nil for CodeNone.
func WantCode(t testing.TB, what string, err error, want wire.Code) {
	t.Helper()
	if got := endpoint.CodeOf(err); got != want {
		t.Fatalf("%s: code %v (%d), want %v (%d); err %v", what, got, got, want, want, err)
	}
	if want != wire.CodeNone {
		var oe *endpoint.OpError
		if !errors.As(err, &oe) {
			t.Fatalf("%s: %v is not an *endpoint.OpError", what, err)
		}
	}
}

// WantStatus checks e's status of peer.
func WantStatus(t testing.TB, what string, e *endpoint.Endpoint, peer int, want endpoint.PeerStatus) {
	t.Helper()
	if got := e.PeerStatus(peer); got != want {
		t.Fatalf("%s: peer %d status %+v, want %+v", what, peer, got, want)
	}
}

// Failed is the peer status after an operation that failed with c.
func Failed(c wire.Code) endpoint.PeerStatus { return endpoint.PeerStatus{Error: true, Code: c} }

// WantEvent checks that e's next event, within testutil.WaitLong, is want.
func WantEvent(t testing.TB, what string, e *endpoint.Endpoint, want endpoint.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitLong)
	defer cancel()
	got, err := e.NextEvent(ctx)
	if err != nil {
		t.Fatalf("%s: NextEvent: %v", what, err)
	}
	if got != want {
		t.Fatalf("%s: event %+v, want %+v", what, got, want)
	}
}

// NoEvent checks that e has no pending event.
func NoEvent(t testing.TB, what string, e *endpoint.Endpoint) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ev, err := e.NextEvent(ctx); err == nil {
		t.Fatalf("%s: unexpected event %+v", what, ev)
	}
}
