package endpoint_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// An endpoint built with nil memory is an initiator only: its own requests
// complete, but a request addressed to it, even from a configured RMEM peer,
// gets no reply of any kind (one MAC, one responder).
func TestInitiatorOnly(t *testing.T) {
	sw := newSwitch(t)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	a := newEP(t, sw, macA, nil, endpoint.Config{RMEMTimeout: time.Second})
	p := newTap(t, sw, macP, false)
	setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, a, 1, win(macP, endpoint.ModeRMEM))
	setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))

	ctx := context.Background()
	if err := a.RMEMWrite(ctx, 0, ramBase+8, 0xCAFEF00D, 0xFFFFFFFF); err != nil {
		t.Fatal(err)
	}
	got, err := a.RMEMRead(ctx, 0, ramBase+8)
	if err != nil || got != 0xCAFEF00D {
		t.Fatalf("RMEMRead = %#x, %v; want 0xcafef00d", got, err)
	}

	// Requests to A from a known peer: valid, malformed and not permitted.
	p.send(t, wire.AppendRMEMReadReq(nil, macA, macP, 1, ramBase))
	p.send(t, wire.AppendRMEMWriteReq(nil, macA, macP, 2, ramBase, 0xF, 1))
	p.send(t, wire.AppendDMAReadReq(nil, macA, macP, 3, ramBase, 8))
	p.send(t, wire.AppendRMEMReadReq(nil, macA, macP, 4, ramBase+1))
	p.none(t, 100*time.Millisecond)
	if s := a.Stats(); s.DropNoResponder != 4 || s.ErrorsSent != [8]uint64{} || s.ServedRMEMRead != 0 {
		t.Fatalf("initiator-only stats: DropNoResponder=%d ErrorsSent=%v ServedRMEMRead=%d; want 4, none, 0",
			s.DropNoResponder, s.ErrorsSent, s.ServedRMEMRead)
	}
	wantStatus(t, "A's record for P", a, 1, endpoint.PeerStatus{})
}

func TestOutcome(t *testing.T) {
	err := error(&endpoint.OpError{Op: "DMA write", Peer: 2, Code: wire.CodeTimeout, Err: endpoint.ErrTimeout})
	if got, want := err.Error(), "oetp: DMA write to peer 2: TIMEOUT (8): no response before the timeout"; got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
	if got, want := endpoint.Outcome(fmt.Errorf("wrapped: %w", err)), "TIMEOUT (8): no response before the timeout"; got != want {
		t.Errorf("Outcome = %q; want %q", got, want)
	}
	if got, want := endpoint.Outcome(errors.New("plain")), "plain"; got != want {
		t.Errorf("Outcome(plain) = %q; want %q", got, want)
	}
}
