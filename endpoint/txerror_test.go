package endpoint_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/wire"
)

var errRefused = errors.New("link refuses the frame")

// refusingLink is a link whose writes fail while refuse is set.
type refusingLink struct {
	link.Link
	refuse atomic.Bool
}

func (r *refusingLink) Write(f []byte) error {
	if r.refuse.Load() {
		return errRefused
	}
	return r.Link.Write(f)
}

// A request frame the link refuses completes the operation with
// LOCAL_AXIS (2) wrapping ErrLink and the link's error, and is counted in
// TxErrors, not TxFrames or TxBytes; the next operation works again.
func TestLinkRefusesRequest(t *testing.T) {
	sw := newSwitch(t)
	b := newEP(t, sw, macB, newRAM(t), endpoint.Config{})
	rl := &refusingLink{Link: attach(t, sw, macA)}
	a := newEPOn(t, rl, newRAM(t), endpoint.Config{})
	setPeer(t, a, 0, win(macB, endpoint.ModeRMEM))
	setPeer(t, b, 0, win(macA, endpoint.ModeRMEM))

	rl.refuse.Store(true)
	_, err := a.RMEMRead(context.Background(), 0, ramBase)
	wantCode(t, "refused request", err, wire.CodeLocalAXIS)
	if !errors.Is(err, endpoint.ErrLink) || !errors.Is(err, errRefused) {
		t.Fatalf("err = %v; want it to wrap ErrLink and the link's error", err)
	}
	if s := a.Stats(); s.TxFrames != 0 || s.TxBytes != 0 || s.TxErrors != 1 {
		t.Fatalf("TxFrames %d TxBytes %d TxErrors %d; want 0 0 1", s.TxFrames, s.TxBytes, s.TxErrors)
	}
	wantStatus(t, "A's record for B", a, 0, endpoint.PeerStatus{Error: true, Code: wire.CodeLocalAXIS})

	rl.refuse.Store(false)
	if _, err := a.RMEMRead(context.Background(), 0, ramBase); err != nil {
		t.Fatal(err)
	}
	if s := a.Stats(); s.TxFrames != 1 || s.TxBytes != 24 || s.TxErrors != 1 {
		t.Fatalf("TxFrames %d TxBytes %d TxErrors %d; want 1 24 1", s.TxFrames, s.TxBytes, s.TxErrors)
	}
}
