package endpoint

import (
	"context"
	"errors"
	"time"

	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// The RMEM and DMA operations, on top of the initiator (initiator.go).

// peerFor returns peer table entry i if it permits op.
func (e *Endpoint) peerFor(op string, i int) (Peer, error) {
	if i < 0 || i >= MaxPeers {
		return Peer{}, invalidf("peer index %d is out of range 0..%d", i, MaxPeers-1)
	}
	p := e.peers.Load().entries[i]
	if p.MAC.IsZero() {
		return p, invalidf("peer %d is not configured; call SetPeer first", i)
	}
	var need Mode
	switch op {
	case opRMEMRead, opRMEMWrite:
		need = ModeRMEM
	case opDMAWrite:
		need = ModeDMARead
	case opDMARead:
		need = ModeDMAWrite
	}
	if p.Mode != need {
		return p, invalidf("peer %d is in mode %v; a %s needs mode %v", i, p.Mode, op, need)
	}
	if (op == opRMEMRead || op == opDMARead) && p.MAC.IsGroup() {
		return p, invalidf("peer %d has the group address %v; reads must be unicast, so a group read is never transmitted", i, p.MAC)
	}
	return p, nil
}

const readFailed = 0xFFFFFFFF

// RMEMRead reads the aligned 32-bit word at addr in peer's memory (peer
// mode ModeRMEM, unicast). On failure it returns 0xFFFFFFFF and an
// *OpError whose Code is recorded in the peer status (with an RMEM_ERROR
// event when enabled), except as described at Reset and Close.
//
// Local checks come first and fail with LOCAL_INVALID without sending
// anything or consuming a Request ID: the peer index, the peer's mode, a
// group address, the alignment. The operation is accepted when it holds the
// initiating slot (waiting for the current RMEM operation or DMA fragment;
// RMEM goes before the next DMA fragment): it then takes the next Request
// ID and samples Config.RMEMTimeout, whose timer starts when the link has
// accepted the request. If ctx ends before acceptance the operation fails
// with TIMEOUT, nothing recorded; if it ends while the response is awaited
// the operation is aborted exactly like a timeout (TIMEOUT recorded, the
// Request ID invalidated so a late reply is discarded) and the error wraps
// ctx.Err().
//
// With a retry policy (SetRetryPolicy, WithRetry) a try that timed out or
// was answered malformed is sent again with a new Request ID, unless the
// address is volatile; see RetryPolicy.
func (e *Endpoint) RMEMRead(ctx context.Context, peer int, addr uint32) (uint32, error) {
	return e.rmem(ctx, opRMEMRead, peer, addr, 0, 0)
}

// RMEMWrite writes the bits of data selected by mask (bit i enables data
// bit i) into the aligned word at addr in peer's memory (peer mode
// ModeRMEM). A zero mask is sent as is; the responder validates it and
// writes nothing. To a unicast peer it completes when RMEM_WRITE_RSP
// arrives; to a peer configured with a group address it completes when the
// link has accepted the frame, with no response and no timer (and no
// retry). Checks, acceptance, timeout, retries and errors are as for
// RMEMRead.
func (e *Endpoint) RMEMWrite(ctx context.Context, peer int, addr, data, mask uint32) error {
	_, err := e.rmem(ctx, opRMEMWrite, peer, addr, data, mask)
	return err
}

func (e *Endpoint) rmem(ctx context.Context, op string, peer int, addr, data, mask uint32) (uint32, error) {
	if e.isClosed() {
		return readFailed, &OpError{Op: op, Peer: peer, Addr: addr, Code: wire.CodeLocalInvalid, Err: ErrClosed}
	}
	_, err := e.peerFor(op, peer)
	if err == nil && addr%4 != 0 {
		err = invalidf("address %#x is not word aligned; RMEM accesses one aligned 32-bit word", addr)
	}
	var pol *RetryPolicy
	if err == nil {
		pol, err = e.in.policyFor(ctx, peer)
	}
	if err != nil {
		return readFailed, e.rmemFailed(op, peer, addr, nil, wire.CodeLocalInvalid, err)
	}
	if err := e.slot.acquire(ctx, true, e.done); err != nil {
		return readFailed, notAccepted(op, peer, addr, err)
	}
	defer e.slot.release()
	// Sample the peer entry and the configuration at acceptance; the entry
	// may have changed while the operation waited for the slot.
	p, err := e.peerFor(op, peer)
	if err != nil {
		return readFailed, e.rmemFailed(op, peer, addr, nil, wire.CodeLocalInvalid, err)
	}
	in := &e.in
	r, frame, fill, rid := in.startRMEM(op, peer, p.MAC, addr, data, mask, pol)
	defer in.put(r)
	if err := in.send(r, frame, fill, rid); err != nil { // a group destination
		return readFailed, e.rmemFailed(op, peer, addr, r, wire.CodeLocalAXIS, err)
	}
	if p.MAC.IsGroup() {
		return 0, nil
	}
	code, err := in.wait(ctx, r)
	if code != wire.CodeNone {
		return readFailed, e.rmemFailed(op, peer, addr, r, code, err)
	}
	return r.rdata, nil
}

// notAccepted is the error of an operation that gave up before acceptance.
func notAccepted(op string, peer int, addr uint32, err error) error {
	code := wire.CodeTimeout
	if errors.Is(err, ErrClosed) {
		code = wire.CodeLocalInvalid
	}
	return &OpError{Op: op, Peer: peer, Addr: addr, Code: code, Err: err}
}

// rmemFailed records an RMEM failure, raises its event and returns its
// error. r is the request of the operation, nil when it failed before
// acceptance.
func (e *Endpoint) rmemFailed(op string, peer int, addr uint32, r *request, code wire.Code, err error) error {
	if peer >= 0 && peer < MaxPeers && !aborted(err) {
		e.record(peer, code)
		e.raise(RMEMError, peer, code)
	}
	oe := &OpError{Op: op, Peer: peer, Addr: addr, Code: code, Err: err}
	if r != nil {
		oe.Retries, oe.OutcomeUnknown = r.tries-1, r.unknown
	}
	return oe
}

// Transfer reports the progress of a DMA block, also on failure: the bytes
// delivered by completed fragments, the number of those fragments, and the
// retransmissions made (see RetryPolicy). A failed block's *OpError gives
// the remote address of the fragment that failed (OpError.Addr), from where
// a caller can resume.
type Transfer struct {
	Bytes     uint64
	Fragments int
	Retries   int
}

type progressKey struct{}

// WithProgress returns a context that makes a DMA call report its progress:
// fn is called after each completed fragment with the bytes delivered so
// far, before the next fragment is sent. Progress does not change how the
// block is sent: a unicast block stays chained, and fn is then called by
// the endpoint's receive loop, so it must return quickly and must not call
// the Endpoint's methods (hand the figure to another goroutine instead, as
// a progress bar that redraws on its own does). If fn cancels ctx, no
// further fragment is sent.
func WithProgress(ctx context.Context, fn func(done uint64)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// bulk is the local side of a DMA block: a byte slice, or a Space at base.
type bulk struct {
	b    []byte
	s    memory.Space
	base uint32
}

func (b *bulk) read(p []byte, off uint64) memory.Resp {
	if b.s != nil {
		return b.s.ReadAt(p, b.base+uint32(off))
	}
	copy(p, b.b[off:])
	return memory.OKAY
}

func (b *bulk) write(p []byte, off uint64) memory.Resp {
	if b.s != nil {
		return b.s.WriteAt(p, b.base+uint32(off))
	}
	copy(b.b[off:], p)
	return memory.OKAY
}

// probeWrite returns how writing n bytes at block offset off would answer,
// without writing: OKAY for a byte slice, and for a Space that cannot tell
// (no memory.Prober).
func (b *bulk) probeWrite(off uint64, n int) memory.Resp {
	if b.s == nil {
		return memory.OKAY
	}
	r, _ := memory.ProbeSpace(b.s, b.base+uint32(off), n, true)
	return r
}

// touch warms the caches for an access to the n bytes at block offset off
// that is likely to come (see chainState.prefetch). A byte slice is the
// caller's own buffer for the block and is touched directly; a Space only
// when it is memory.Immediate and a memory.Toucher (RAM, File), whose Touch
// only reads. Any other Space is left alone: a read may have side effects
// there. Touching never changes a byte, a frame or a code.
func (b *bulk) touch(off, n uint64) {
	if n == 0 {
		return
	}
	if b.s == nil {
		memory.TouchBytes(b.b[off : off+n])
		return
	}
	if t, ok := b.s.(memory.Toucher); ok && memory.IsImmediate(b.s) {
		t.Touch(b.base+uint32(off), int(n))
	}
}

// DMAWrite writes src to peer's memory at remote (peer mode ModeDMARead:
// mirror local to remote). The block is split into fragments of the
// effective Config.MaxFragment sampled at the start of the block (the last
// one holds the rest) and sent one at a time: each unicast fragment waits
// for its DMA_WRITE_RSP (timer Config.DMATimeout sampled per fragment)
// before the next is sent; to a group address each fragment completes when
// the link has accepted it. The first failure aborts the rest of the block.
//
// Local checks fail with LOCAL_INVALID before anything is sent or a Request
// ID consumed: the peer index, the peer's mode, a zero length, a range
// beyond 2^32, an effective MaxFragment outside 4..the fragment ceiling.
// Each fragment takes a Request ID when it is accepted. Every block
// completion, successful or not, raises PEER_DMA_COMPLETE when enabled
// globally and for the peer; failures are recorded in the peer status.
// Context cancellation, Reset and Close behave as for RMEMRead. Transfer
// reports the bytes and fragments completed, also on failure; the error
// gives the failed fragment's remote address.
//
// A unicast block is chained: after the first fragment, the receive loop
// sends each fragment as soon as the previous one's response has been
// validated, reading its source bytes then (DMARead: writing the received
// data then), and the calling goroutine sleeps until the block ends, or a
// try must be retried (see RetryPolicy; the policy's Retries and Deadline
// apply to each fragment). The wire sees exactly the same frames as with a
// goroutine waking per fragment.
func (e *Endpoint) DMAWrite(ctx context.Context, peer int, remote uint32, src []byte) (Transfer, error) {
	return e.dma(ctx, opDMAWrite, peer, remote, uint64(len(src)), bulk{b: src})
}

// DMARead reads len(dst) bytes of peer's memory at remote into dst (peer
// mode ModeDMAWrite: mirror remote to local). Each DMA_READ_RSP is validated
// completely (length and EndOfData) before its data is copied, so a
// malformed response (REMOTE_AXIS) never modifies dst; bytes of earlier
// fragments stay written. Everything else is as for DMAWrite.
func (e *Endpoint) DMARead(ctx context.Context, peer int, remote uint32, dst []byte) (Transfer, error) {
	return e.dma(ctx, opDMARead, peer, remote, uint64(len(dst)), bulk{b: dst})
}

// DMAWriteFrom is DMAWrite with n source bytes read from src at local, one
// fragment at a time just before the fragment is sent (again for each
// retry). A source read error fails the block with LOCAL_AXI_RD_SLVERR (4)
// or LOCAL_AXI_RD_DECERR (5) before that fragment is sent; its Request ID
// has been consumed.
func (e *Endpoint) DMAWriteFrom(ctx context.Context, peer int, remote uint32, src memory.Space, local uint32, n uint32) (Transfer, error) {
	if src == nil {
		return Transfer{}, &OpError{Op: opDMAWrite, Peer: peer, Addr: remote, Code: wire.CodeLocalInvalid, Err: invalidf("nil source Space")}
	}
	return e.dma(ctx, opDMAWrite, peer, remote, uint64(n), bulk{s: src, base: local})
}

// DMAReadInto is DMARead with the data written to dst at local. A local
// write error fails the block with LOCAL_AXI_WR_SLVERR (6) or
// LOCAL_AXI_WR_DECERR (7); the fragment's data may be partly written.
func (e *Endpoint) DMAReadInto(ctx context.Context, peer int, remote uint32, dst memory.Space, local uint32, n uint32) (Transfer, error) {
	if dst == nil {
		return Transfer{}, &OpError{Op: opDMARead, Peer: peer, Addr: remote, Code: wire.CodeLocalInvalid, Err: invalidf("nil destination Space")}
	}
	return e.dma(ctx, opDMARead, peer, remote, uint64(n), bulk{s: dst, base: local})
}

func (e *Endpoint) dma(ctx context.Context, op string, peer int, remote uint32, n uint64, b bulk) (Transfer, error) {
	var t Transfer
	if e.isClosed() {
		return t, &OpError{Op: op, Peer: peer, Addr: remote, Code: wire.CodeLocalInvalid, Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return t, notAccepted(op, peer, remote, err)
	}
	select {
	case <-e.dmaTok:
	case <-ctx.Done():
		return t, notAccepted(op, peer, remote, ctx.Err())
	case <-e.done:
		return t, notAccepted(op, peer, remote, ErrClosed)
	}
	defer func() { e.dmaTok <- struct{}{} }()
	epoch := e.epoch.Load()
	cfg := e.cfg.Load()
	p, err := e.peerFor(op, peer)
	var mfs uint32
	if err == nil {
		mfs, err = e.checkBlock(cfg, remote, n, &b)
	}
	var pol *RetryPolicy
	if err == nil {
		pol, err = e.in.policyFor(ctx, peer)
	}
	if err != nil {
		return t, e.dmaDone(op, peer, remote, 0, false, wire.CodeLocalInvalid, err)
	}
	progress, _ := ctx.Value(progressKey{}).(func(uint64))
	in := &e.in
	blk := &in.blk // ours while we hold dmaTok
	*blk = block{op: op, peerIdx: peer, dst: p.MAC, group: p.MAC.IsGroup(), remote: remote, n: n, mfs: mfs, b: b,
		epoch: epoch, ctx: ctx, progress: progress, interval: cfg.GroupInterval}
	defer in.endBlock() // drop the caller's buffer and ctx
	for blk.done < n {
		code, err, unknown := e.runBlock(ctx, blk, pol)
		t = Transfer{Bytes: blk.done, Fragments: blk.frags, Retries: blk.retries}
		if code != wire.CodeNone {
			err := e.dmaDone(op, peer, remote+uint32(blk.failOff), blk.retries, unknown, code, err)
			if oe, ok := err.(*OpError); ok {
				oe.Bytes = blk.done
			}
			return t, err
		}
	}
	t = Transfer{Bytes: blk.done, Fragments: blk.frags, Retries: blk.retries}
	return t, e.dmaDone(op, peer, remote, blk.retries, false, wire.CodeNone, nil)
}

// runBlock sends the fragments of blk from blk.issued on while it holds
// initiating slots, until the block is complete, a fragment failed (its
// code and error, and whether it may have executed), or a waiting RMEM
// operation is due (CodeNone with blk.done short of blk.n: dma calls it
// again once the RMEM operation has had a slot). A unicast block is
// chained: each request's first fragment is sent here, the rest by the
// receive loop (deliver). With Config.Outstanding above 1 it runs that many
// chains at once, as far as slots are free: the window of fragments in
// flight stays full. A failure stops the issuing of further fragments; the
// ones in flight complete first.
func (e *Endpoint) runBlock(ctx context.Context, blk *block, pol *RetryPolicy) (code wire.Code, err error, unknown bool) {
	if blk.group {
		return e.runGroupBlock(ctx, blk, pol)
	}
	if err := e.slot.acquire(ctx, false, e.done); err != nil {
		return wire.CodeTimeout, err, false
	}
	in := &e.in
	chains, frags, ok := in.startChains(blk)
	if !ok {
		e.slot.release()
		return wire.CodeTimeout, ErrReset, false
	}
	for uint64(len(chains)) < frags && len(chains) < cap(in.chains) && e.slot.tryAcquire() {
		chains = append(chains, in.take())
	}
	defer func() {
		for _, r := range chains {
			in.put(r)
			e.slot.release()
		}
	}()
	started := 0
	if e.batcher != nil && len(chains) > 1 {
		// The window's first fragments go to the medium together (one
		// system call), when the link can gather them.
		e.batcher.Hold()
	}
	for _, r := range chains {
		frame, fill, rid, c, issued := in.startChain(r, blk, pol)
		if !issued {
			if c != wire.CodeNone && code == wire.CodeNone {
				code, unknown = c, r.unknown
				blk.failOff = r.off
			}
			break
		}
		in.send(r, frame, fill, rid)
		started++
	}
	if e.batcher != nil && len(chains) > 1 {
		e.batcher.Release()
	}
	for _, r := range chains[:started] {
		c, err2 := in.wait(ctx, r)
		if c != wire.CodeNone && code == wire.CodeNone {
			code, err, unknown = c, err2, r.unknown
		}
	}
	if e.hookWaited != nil {
		e.hookWaited()
	}
	// complete, failed, or yielding to an RMEM operation
	return code, err, unknown
}

// runGroupBlock sends the fragments of a group block one after the other:
// each completes when the link has accepted it. With a GroupInterval the
// next frame is handed over no sooner than that after the previous one.
func (e *Endpoint) runGroupBlock(ctx context.Context, blk *block, pol *RetryPolicy) (code wire.Code, err error, unknown bool) {
	if err := e.slot.acquire(ctx, false, e.done); err != nil {
		return wire.CodeTimeout, err, false
	}
	defer e.slot.release()
	in := &e.in
	r := in.take()
	defer in.put(r)
	for {
		frame, fill, rid, code, err, ok := in.nextGroupFragment(r, blk, pol)
		if !ok {
			return wire.CodeTimeout, ErrReset, false
		}
		if code != wire.CodeNone {
			blk.failOff = r.off
			return code, err, r.unknown
		}
		if blk.interval > 0 && !blk.lastSent.IsZero() {
			// Config.GroupInterval: the frame is built, its Request ID
			// taken; it waits here, before the link has it.
			if wait := blk.interval - time.Since(blk.lastSent); wait > 0 {
				if blk.pause == nil {
					blk.pause = time.NewTimer(wait)
				} else {
					blk.pause.Reset(wait)
				}
				select {
				case <-blk.pause.C:
				case <-ctx.Done():
					// The frame was not handed over: the block stops
					// where it stands, as between frames below.
					blk.pause.Stop()
					blk.failOff = blk.done
					return wire.CodeTimeout, ctx.Err(), false
				}
			}
		}
		if err := in.send(r, frame, fill, rid); err != nil {
			blk.failOff = r.off
			return wire.CodeLocalAXIS, err, false
		}
		if blk.interval > 0 {
			blk.lastSent = time.Now()
		}
		blk.done += uint64(r.fl)
		blk.frags++
		if blk.progress != nil {
			blk.progress(blk.done)
		}
		if blk.done >= blk.n {
			return wire.CodeNone, nil, false
		}
		if err := ctx.Err(); err != nil {
			blk.failOff = blk.done
			return wire.CodeTimeout, err, false
		}
		if rmem, _ := e.slot.waiting(); rmem > 0 {
			return wire.CodeNone, nil, false
		}
	}
}

// checkBlock validates a block and returns its effective fragment size.
func (e *Endpoint) checkBlock(cfg *Config, remote uint32, n uint64, b *bulk) (uint32, error) {
	if n == 0 {
		return 0, invalidf("zero length; a DMA block carries at least one byte")
	}
	if end := uint64(remote) + n; end > 1<<32 {
		return 0, invalidf("remote range %#x + %d ends past the 32-bit address space", remote, n)
	}
	if b.s != nil {
		if end := uint64(b.base) + n; end > 1<<32 {
			return 0, invalidf("local range %#x + %d ends past the 32-bit address space", b.base, n)
		}
	}
	mfs, ok := wire.EffectiveFragment(cfg.MaxFragment, e.ceiling)
	if !ok {
		return 0, invalidf("Config.MaxFragment %d rounds to %d, outside 4..%d (the fragment ceiling); set it to 4..%d", cfg.MaxFragment, cfg.MaxFragment&^3, e.ceiling, e.ceiling)
	}
	return mfs, nil
}

// dmaDone completes a DMA block: it records a failure, raises
// PEER_DMA_COMPLETE and returns the block's error (nil on success). addr is
// the remote address of the failed fragment, retries the block's
// retransmissions, unknown whether the failed fragment may have executed.
func (e *Endpoint) dmaDone(op string, peer int, addr uint32, retries int, unknown bool, code wire.Code, err error) error {
	valid := peer >= 0 && peer < MaxPeers
	if aborted(err) {
		valid = false
	}
	if valid {
		if code != wire.CodeNone {
			e.record(peer, code)
		}
		e.raise(PeerDMAComplete, peer, code)
	}
	if code == wire.CodeNone {
		return nil
	}
	return &OpError{Op: op, Peer: peer, Addr: addr, Code: code, Err: err, Retries: retries, OutcomeUnknown: unknown}
}
