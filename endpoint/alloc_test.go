package endpoint_test

import (
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/wire"
)

// TestZeroAllocs proves that the steady state allocates nothing: each
// measured call is a complete exchange between two endpoints in this
// process (A's initiator, B's receive loop, responder context and reply,
// A's receive loop and matcher, the link in between), and
// testing.AllocsPerRun counts every allocation of the process, so a
// result of 0 covers both the initiator's per-operation and per-fragment
// path and the responder's receive+reply path, with and without links that
// busy-poll (which make both ends touch the next fragment's memory).
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own; run without -race to measure allocations")
	}
	for _, spin := range []bool{false, true} {
		for _, timeout := range []time.Duration{0, time.Minute} {
			sw := newSwitch(t)
			cfg := endpoint.Config{RMEMTimeout: timeout, DMATimeout: timeout, MaxFragment: 256}
			ep := func(mac wire.MAC) *endpoint.Endpoint {
				var l link.Link = attach(t, sw, mac)
				if spin {
					l = spinLink{l}
				}
				return newEPOn(t, l, newRAM(t), cfg)
			}
			a, b, c := ep(macA), ep(macB), ep(macC)
			setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
			setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))
			dmaPath(t, a, 1, c, 0)
			setPeer(t, c, 1, win(macB, endpoint.ModeDMAWrite)) // C reads from B
			setPeer(t, b, 1, win(macC, endpoint.ModeDMARead))
			one := make([]byte, 200)
			block := make([]byte, 4096) // 16 fragments
			dst := make([]byte, 4096)
			ctx := bg()
			cases := []struct {
				name string
				op   func() error
			}{
				{"RMEMRead", func() error { _, err := a.RMEMRead(ctx, 0, 0x1000); return err }},
				{"RMEMWrite", func() error { return a.RMEMWrite(ctx, 0, 0x1000, 1, 0xFF) }},
				{"DMAWrite fragment", func() error { _, err := a.DMAWrite(ctx, 1, 0x1003, one); return err }},
				{"DMAWrite block", func() error { _, err := a.DMAWrite(ctx, 1, 0x1003, block); return err }},
				{"DMARead block", func() error { _, err := c.DMARead(ctx, 1, 0x1001, dst); return err }},
			}
			for _, k := range cases {
				var err error
				n := testing.AllocsPerRun(200, func() {
					if e := k.op(); e != nil {
						err = e
					}
				})
				if err != nil {
					t.Fatalf("%s: %v", k.name, err)
				}
				if n != 0 {
					t.Errorf("%s (timeout %v, busy-polling links %v): %v allocations per call, want 0", k.name, timeout, spin, n)
				}
			}
		}
	}
}
