package endpoint

import (
	"sync"
	"time"
)

// txArb serialises link writes and gives replies to received requests
// priority over initiating and raw frames: when the link becomes free, a
// waiting reply goes first; other frames are served in arrival order.
// Ownership is handed directly to the next waiter, so neither class can
// barge ahead of the rule. At most one hand-off is in flight at a time, so
// the one-slot channels never block the releaser.
type txArb struct {
	mu     sync.Mutex
	busy   bool
	hiWait int
	loWait int
	hi     chan struct{}
	lo     chan struct{}
}

func newTxArb() txArb {
	return txArb{hi: make(chan struct{}, 1), lo: make(chan struct{}, 1)}
}

func (a *txArb) lock(reply bool) {
	a.mu.Lock()
	if !a.busy {
		a.busy = true
		a.mu.Unlock()
		return
	}
	if reply {
		a.hiWait++
	} else {
		a.loWait++
	}
	a.mu.Unlock()
	if reply {
		<-a.hi
	} else {
		<-a.lo
	}
}

func (a *txArb) unlock() {
	a.mu.Lock()
	switch {
	case a.hiWait > 0:
		a.hiWait--
		a.hi <- struct{}{}
	case a.loWait > 0:
		a.loWait--
		a.lo <- struct{}{}
	default:
		a.busy = false
	}
	a.mu.Unlock()
}

// waiting returns the number of replies and other frames waiting for the
// link.
func (a *txArb) waiting() (replies, others int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hiWait, a.loWait
}

// write hands frame to the link, as a reply (priority) or not, and returns
// when the link has accepted it. The frame is counted in TxFrames before it
// is handed over, so a peer that has received it already sees it counted
// (a link may deliver before Write returns); a frame the link refuses is
// moved from TxFrames to TxErrors.
func (e *Endpoint) write(frame []byte, reply bool) error {
	e.tx.lock(reply)
	e.st.txFrames.Add(1)
	e.st.txBytes.Add(uint64(len(frame)))
	err := e.link.Write(frame)
	e.tx.unlock()
	if err != nil {
		e.st.txFrames.Add(^uint64(0))
		e.st.txBytes.Add(^uint64(len(frame) - 1))
		e.st.txErrors.Add(1)
		return err
	}
	return nil
}

// writeFill is write for a frame whose data, frame[at:at+m], fill writes
// in place (link.FillWriter). It reports whether the frame was filled
// (false: fill cancelled it, nothing was written or counted) and the link's
// error.
func (e *Endpoint) writeFill(frame []byte, at, m int, fill func([]byte) bool, reply bool) (bool, error) {
	e.tx.lock(reply)
	e.st.txFrames.Add(1)
	e.st.txBytes.Add(uint64(len(frame)))
	filled, err := e.filler.WriteFill(frame, at, m, fill)
	e.tx.unlock()
	if !filled || err != nil {
		e.st.txFrames.Add(^uint64(0))
		e.st.txBytes.Add(^uint64(len(frame) - 1))
		if err != nil {
			e.st.txErrors.Add(1)
		}
	}
	return filled, err
}

// respTimer is a request's response timer. C is the channel that receives
// when it fires, the same for its whole life, so that a waiter can listen
// before another path (the one that sends the try) starts it. Start arms
// it for d (re-arming it if it runs); Stop disarms it. After Start or Stop
// returns, the channel delivers nothing stale. Tests replace the real timer
// to control expiry.
type respTimer interface {
	C() <-chan time.Time
	Start(d time.Duration) <-chan time.Time
	Stop()
}

type realTimer struct{ t *time.Timer }

func newRealTimer() *realTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &realTimer{t: t}
}

func (r *realTimer) Start(d time.Duration) <-chan time.Time {
	r.t.Reset(d)
	return r.t.C
}

func (r *realTimer) Stop() { r.t.Stop() }

func (r *realTimer) C() <-chan time.Time { return r.t.C }

// Expired reports whether deadline has passed by the clock.
func (r *realTimer) Expired(deadline time.Time) bool { return !time.Now().Before(deadline) }
