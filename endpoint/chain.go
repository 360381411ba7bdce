package endpoint

import (
	"context"
	"fmt"
	"time"

	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// Chained DMA fragments.
//
// A unicast DMA block without a progress callback is issued as a chain: the
// caller sends the first fragment, and the receive loop, as soon as it has
// validated a fragment's response, reads the next fragment's source bytes
// (or writes the previous one's data) and sends the next fragment itself.
// The caller sleeps once per block instead of once per fragment, so a
// fragment costs one frame out and one frame in, like the raw exchange on
// the medium, and no goroutine wake-up. Everything else is as for the
// fragment-by-fragment path: one fragment in flight, a Request ID and a
// sampled DMATimeout per fragment, the timer started when the link has
// accepted the fragment, a pending RMEM operation before the next fragment
// (the chain stops and the caller resumes it after the RMEM operation), and
// the first failure ends the block.

// chainState is the block being chained. It is guarded by initiator.mu;
// buffers it names are touched only under that lock.
type chainState struct {
	op     string
	peer   wire.MAC
	remote uint32
	n      uint64 // block length
	done   uint64 // bytes of completed fragments
	frags  int    // completed fragments
	mfs    uint32
	fl     uint32 // length of the outstanding fragment
	b      bulk
	epoch  uint64
	err    error // detail of a local failure, for the block's error
	yield  bool  // stopped to let a waiting RMEM operation go first

	// The outstanding fragment's timer: its sampled DMATimeout and when
	// the link accepted it (zero while it is being written).
	timeout time.Duration
	sent    time.Time
	// armed is true while the waiting caller has the timer running.
	armed bool
}

// chainBlock issues the fragments of the block from t.Bytes on while it
// holds the initiating slot, and waits for the chain to end: the block
// complete, a fragment failed, or a waiting RMEM operation due (then with
// CodeNone and t.Bytes short of n, so that dma calls it again once the RMEM
// operation has had the slot).
func (e *Endpoint) chainBlock(ctx context.Context, op string, p Peer, remote uint32, n uint64, b *bulk, t *Transfer, epoch uint64, mfs uint32) (wire.Code, error) {
	if err := e.slot.acquire(ctx, false, e.done); err != nil {
		return wire.CodeTimeout, err
	}
	defer e.slot.release()
	in := &e.in
	select {
	case <-in.sig:
	default:
	}
	in.mu.Lock()
	if e.epoch.Load() != epoch {
		in.mu.Unlock()
		return wire.CodeTimeout, ErrReset
	}
	in.ch = chainState{op: op, peer: p.MAC, remote: remote, n: n, done: t.Bytes, mfs: mfs, b: *b, epoch: epoch}
	in.chaining = true
	frame, code := e.nextFragmentLocked(in.tx[:0])
	rid := in.rid
	in.mu.Unlock()
	var err error
	if code == wire.CodeNone {
		if werr := e.write(frame, false); werr != nil {
			in.mu.Lock()
			if in.state == stWaiting && in.rid == rid {
				in.state = stIdle
				in.invalidateLocked()
			}
			in.mu.Unlock()
			code, err = wire.CodeLocalAXIS, fmt.Errorf("%w: %w", ErrLink, werr)
		} else {
			in.mu.Lock()
			if in.state == stWaiting && in.rid == rid {
				in.ch.sent = time.Now()
				if e.warm {
					// Under the lock, like the receive loop's
					// accesses to the block: a DMA read's
					// destination is written there.
					in.ch.b.touch(in.ch.ahead())
				}
			}
			in.mu.Unlock()
			code, err = e.awaitChain(ctx)
		}
	}
	in.mu.Lock()
	cs := &in.ch
	t.Bytes = cs.done
	t.Fragments += cs.frags
	if code != wire.CodeNone && err == nil {
		err = cs.err
	}
	in.chaining = false
	in.ch = chainState{} // drop the caller's buffer
	in.mu.Unlock()
	return code, err
}

// nextFragmentLocked accepts the chain's next fragment: it takes a Request
// ID, samples the configuration, builds the request into buf (reading the
// source bytes of a write) and makes it the outstanding request. It returns
// the frame to send, or the local code of a failed source read (the Request
// ID is consumed, nothing is outstanding). in.mu is held.
func (e *Endpoint) nextFragmentLocked(buf []byte) ([]byte, wire.Code) {
	in := &e.in
	cs := &in.ch
	cfg := e.cfg.Load()
	fl := uint32(min(uint64(cs.mfs), cs.n-cs.done))
	rid := e.rid.Add(1) - 1
	addr := cs.remote + uint32(cs.done)
	var f []byte
	if cs.op == opDMAWrite {
		var data []byte
		f, data = wire.GrowDMAWriteReq(buf, cs.peer, cfg.MAC, rid, addr, fl)
		if resp := cs.b.read(data, cs.done); resp != memory.OKAY {
			code := wire.CodeLocalAXIRdDecerr
			if resp == memory.SLVERR {
				code = wire.CodeLocalAXIRdSlverr
			}
			cs.err = fmt.Errorf("%w: reading %d source bytes at block offset %d: %v", ErrMemory, fl, cs.done, resp)
			return nil, code
		}
		in.expect, in.expLen = wire.DMAWriteRsp, 0
	} else {
		f = wire.AppendDMAReadReq(buf, cs.peer, cfg.MAC, rid, addr, fl)
		in.expect, in.expLen = wire.DMAReadRsp, fl
	}
	in.state, in.rid, in.peer = stWaiting, rid, cs.peer
	cs.fl = fl
	cs.timeout, cs.sent = cfg.DMATimeout, time.Time{}
	return f, wire.CodeNone
}

// continueChainLocked is called by match for a validated response (code is
// its outcome) to a chained fragment. It completes the fragment (a read's
// data is written to local memory here) and, if the block goes on, sends
// the next fragment and returns true: the caller stays asleep. Otherwise it
// returns false with the code the block ends with, for match to complete
// the operation. in.mu is held; it is released and retaken around the link
// write.
func (e *Endpoint) continueChainLocked(f wire.Frame, code wire.Code) (bool, wire.Code) {
	in := &e.in
	cs := &in.ch
	if code != wire.CodeNone {
		return false, code
	}
	if cs.op == opDMARead {
		if resp := cs.b.write(f.Payload(cs.fl), cs.done); resp != memory.OKAY {
			code = wire.CodeLocalAXIWrDecerr
			if resp == memory.SLVERR {
				code = wire.CodeLocalAXIWrSlverr
			}
			cs.err = fmt.Errorf("%w: writing %d bytes at block offset %d: %v", ErrMemory, cs.fl, cs.done, resp)
			return false, code
		}
	}
	cs.done += uint64(cs.fl)
	cs.frags++
	if cs.done >= cs.n || e.epoch.Load() != cs.epoch {
		return false, wire.CodeNone
	}
	if rmem, _ := e.slot.waiting(); rmem > 0 {
		cs.yield = true
		return false, wire.CodeNone
	}
	frame, code := e.nextFragmentLocked(in.chainTx[:0])
	if code != wire.CodeNone {
		return false, code
	}
	rid := in.rid
	wakeToArm := cs.timeout > 0 && !cs.armed
	in.mu.Unlock()
	err := e.write(frame, false)
	in.mu.Lock()
	if in.state != stWaiting || in.rid != rid {
		return true, wire.CodeNone // aborted meanwhile: the caller has been told
	}
	if err != nil {
		in.invalidateLocked()
		cs.err = fmt.Errorf("%w: %w", ErrLink, err)
		return false, wire.CodeLocalAXIS
	}
	cs.sent = time.Now()
	if wakeToArm {
		in.wake() // the caller must start the timer of this fragment
	}
	// Under the lock: the chain is still alive, so cs.b is the caller's
	// buffer, and it stays so until the lock is released.
	if e.warm {
		cs.b.touch(cs.ahead())
	}
	return true, wire.CodeNone
}

// ahead returns the block offset and length of the local memory that the
// chain accesses next, once the outstanding fragment (cs.fl bytes at
// cs.done) is answered: for a DMA write, the source of the following
// fragment (none after the last); for a DMA read, the destination of the
// outstanding fragment itself, written when its response has been
// validated.
//
// The initiator touches that range (bulk.touch) right after it has sent the
// outstanding fragment, so that the memory is in the cache when it is
// needed instead of the copy stalling on main memory on the critical path
// of every round trip: blocks larger than the caches otherwise pay a DRAM
// miss per cache line of each fragment. Touching only reads; it does not
// change what is sent, what is written or when, or any code: the
// destination is still written only after the response is validated.
//
// Only when the link busy-polls (Endpoint.warm): on 2 vCPUs over veth,
// with busy polling, DMA of 4 and 16 MiB blocks went from 0.85–0.88 to
// 1.02–1.09 of the raw ping-pong's MB/s (6 runs each side by side); with
// the receive loop sleeping instead, and the engine on one CPU, the touch
// only added to the round trip (2–4 % slower).
func (cs *chainState) ahead() (off, n uint64) {
	if cs.op == opDMARead {
		return cs.done, uint64(cs.fl)
	}
	off = cs.done + uint64(cs.fl)
	if off >= cs.n {
		return off, 0
	}
	return off, min(uint64(cs.mfs), cs.n-off)
}

// awaitChain waits for the end of a chain, like await does for one request:
// its outcome when the receive loop completes it, TIMEOUT when the
// outstanding fragment's timer expires (a validated response recorded by
// then wins), ctx's cancellation or Close. The timer is started by the
// caller only: when it fires for a fragment that has since been answered,
// it is restarted for the rest of the outstanding fragment's time.
func (e *Endpoint) awaitChain(ctx context.Context) (wire.Code, error) {
	in := &e.in
	var tc <-chan time.Time
	defer func() {
		if tc != nil {
			in.timer.Stop()
		}
		in.mu.Lock()
		in.ch.armed = false
		in.mu.Unlock()
	}()
	expired := false
	var cause error
	for {
		in.mu.Lock()
		cs := &in.ch
		if code, err, done := e.settleLocked(expired, cause); done {
			in.mu.Unlock()
			return code, err
		}
		if !cs.armed && cs.timeout > 0 {
			// The first start is for the fragment this goroutine has
			// just sent; a restart is for the rest of the outstanding
			// fragment's time.
			d := cs.timeout
			if tc != nil && !cs.sent.IsZero() {
				d = max(time.Until(cs.sent.Add(cs.timeout)), 0)
			}
			tc = in.timer.Start(d)
			cs.armed = true
		}
		in.mu.Unlock()
		select {
		case <-in.sig:
		case <-tc:
			in.mu.Lock()
			cs.armed = false
			if in.state == stWaiting && cs.timeout > 0 && in.pastDeadline(cs) {
				expired = true
			}
			in.mu.Unlock()
		case <-ctx.Done():
			cause = ctx.Err()
		case <-e.done:
			cause = ErrClosed
		}
	}
}

// deadliner is implemented by response timers that can tell whether a
// fragment's time is up by the clock.
type deadliner interface {
	Expired(deadline time.Time) bool
}

// pastDeadline reports whether the outstanding chained fragment's time is
// up. A fragment still being written has not started its time. A timer that
// cannot tell (one substituted by tests) is taken at its word.
func (in *initiator) pastDeadline(cs *chainState) bool {
	if cs.sent.IsZero() {
		return false
	}
	d, ok := in.timer.(deadliner)
	return !ok || d.Expired(cs.sent.Add(cs.timeout))
}
