package endpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

type initState uint8

const (
	stIdle    initState = iota // no unicast request outstanding
	stWaiting                  // a unicast request is outstanding
	stDone                     // a fully validated response (or malformed match) has been recorded
	stAborted                  // Reset invalidated the request
)

// initiator is the single initiating context: the outstanding request, its
// outcome, and the buffers of the slot holder.
type initiator struct {
	mu     sync.Mutex
	state  initState
	rid    uint32
	peer   wire.MAC
	expect wire.Cmd
	expLen uint32

	code     wire.Code
	data     uint32 // RMEM_READ_RSP data
	rsp      []byte // the matched DMA_READ_RSP frame, swapped out of the receive ring
	spare    []byte // the buffer given to the ring in exchange for rsp
	abortErr error

	// The most recently invalidated request, to tell late replies from
	// unmatched ones in Stats.
	lastPeer  wire.MAC
	lastRID   uint32
	lastValid bool

	sig   chan struct{} // wake-up token for the waiting operation
	timer respTimer
	tx    []byte // the request frame; used only by the slot holder

	// The DMA block being chained (see chain.go), and the frame buffer of
	// the fragments the receive loop sends for it.
	ch       chainState
	chaining bool
	chainTx  []byte
}

func (in *initiator) init(bufLen, maxFrame int) {
	in.sig = make(chan struct{}, 1)
	in.timer = newRealTimer()
	in.tx = make([]byte, 0, maxFrame)
	in.chainTx = make([]byte, 0, maxFrame)
	in.spare = make([]byte, bufLen)
}

func (in *initiator) wake() {
	select {
	case in.sig <- struct{}{}:
	default:
	}
}

func (in *initiator) invalidateLocked() {
	in.lastPeer, in.lastRID, in.lastValid = in.peer, in.rid, true
}

func (in *initiator) abortLocked(err error) {
	in.state = stAborted
	in.abortErr = err
	in.invalidateLocked()
}

// transact sends frame, a request for dst with Request ID rid, and waits
// for its outcome: the code of the matched response, or TIMEOUT. A request
// to a group address completes as soon as the link has accepted it. The
// response timer, timeout long (0: none), starts when the link has accepted
// the whole frame. The caller holds the slot; epoch is the Reset epoch at
// acceptance.
func (e *Endpoint) transact(ctx context.Context, frame []byte, epoch uint64, dst wire.MAC, rid uint32, expect wire.Cmd, expLen uint32, timeout time.Duration) (wire.Code, error) {
	in := &e.in
	group := dst.IsGroup()
	select {
	case <-in.sig:
	default:
	}
	in.mu.Lock()
	if e.epoch.Load() != epoch {
		in.mu.Unlock()
		return wire.CodeTimeout, ErrReset
	}
	if !group {
		in.state, in.rid, in.peer, in.expect, in.expLen = stWaiting, rid, dst, expect, expLen
	}
	in.mu.Unlock()
	if err := e.write(frame, false); err != nil {
		if !group {
			in.mu.Lock()
			in.state = stIdle
			in.invalidateLocked()
			in.mu.Unlock()
		}
		return wire.CodeLocalAXIS, fmt.Errorf("%w: %w", ErrLink, err)
	}
	if group {
		return wire.CodeNone, nil
	}
	return e.await(ctx, timeout)
}

// await waits for the outstanding request's outcome. A fully validated
// response that has been recorded when the timer fires wins over the
// timeout. Cancellation of ctx counts as a timeout; Close aborts with
// ErrClosed.
func (e *Endpoint) await(ctx context.Context, timeout time.Duration) (wire.Code, error) {
	in := &e.in
	var tc <-chan time.Time
	if timeout > 0 {
		tc = in.timer.Start(timeout)
		defer in.timer.Stop()
	}
	expired := false
	var cause error
	for {
		in.mu.Lock()
		if code, err, done := e.settleLocked(expired, cause); done {
			in.mu.Unlock()
			return code, err
		}
		in.mu.Unlock()
		select {
		case <-in.sig:
		case <-tc:
			expired = true
		case <-ctx.Done():
			cause = ctx.Err()
		case <-e.done:
			cause = ErrClosed
		}
	}
}

// settleLocked decides the outcome of the outstanding request, with in.mu
// held: the recorded response or abort if there is one (a validated
// response recorded by the time the timer fired wins), else TIMEOUT when the
// timer expired or the wait was cut short by cause (ctx's error or
// ErrClosed), which invalidates the Request ID so a late reply is
// discarded. done is false while the request is still outstanding.
func (e *Endpoint) settleLocked(expired bool, cause error) (code wire.Code, err error, done bool) {
	in := &e.in
	switch in.state {
	case stDone:
		in.state = stIdle
		if expired {
			e.st.expiredAfterResponse.Add(1)
		}
		return in.code, nil, true
	case stAborted:
		in.state = stIdle
		return wire.CodeTimeout, in.abortErr, true
	}
	if !expired && cause == nil {
		return 0, nil, false
	}
	in.state = stIdle
	in.invalidateLocked()
	switch {
	case cause == ErrClosed:
		return wire.CodeTimeout, cause, true
	case expired:
		e.st.timeouts.Add(1)
		return wire.CodeTimeout, ErrTimeout, true
	}
	e.st.timeouts.Add(1)
	return wire.CodeTimeout, cause, true
}

// aborted reports whether err means the operation was cut short by Reset
// or Close, which record nothing and raise no event.
func aborted(err error) bool { return errors.Is(err, ErrReset) || errors.Is(err, ErrClosed) }

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
func (e *Endpoint) RMEMRead(ctx context.Context, peer int, addr uint32) (uint32, error) {
	return e.rmem(ctx, opRMEMRead, peer, addr, 0, 0)
}

// RMEMWrite writes the bits of data selected by mask (bit i enables data
// bit i) into the aligned word at addr in peer's memory (peer mode
// ModeRMEM). A zero mask is sent as is; the responder validates it and
// writes nothing. To a unicast peer it completes when RMEM_WRITE_RSP
// arrives; to a peer configured with a group address it completes when the
// link has accepted the frame, with no response and no timer. Checks,
// acceptance, timeout and errors are as for RMEMRead.
func (e *Endpoint) RMEMWrite(ctx context.Context, peer int, addr, data, mask uint32) error {
	_, err := e.rmem(ctx, opRMEMWrite, peer, addr, data, mask)
	return err
}

func (e *Endpoint) rmem(ctx context.Context, op string, peer int, addr, data, mask uint32) (uint32, error) {
	if e.isClosed() {
		return readFailed, &OpError{Op: op, Peer: peer, Code: wire.CodeLocalInvalid, Err: ErrClosed}
	}
	_, err := e.peerFor(op, peer)
	if err == nil && addr%4 != 0 {
		err = invalidf("address %#x is not word aligned; RMEM accesses one aligned 32-bit word", addr)
	}
	if err != nil {
		return readFailed, e.rmemFailed(op, peer, wire.CodeLocalInvalid, err)
	}
	if err := e.slot.acquire(ctx, true, e.done); err != nil {
		return readFailed, notAccepted(op, peer, err)
	}
	defer e.slot.release()
	// Sample the peer entry and the configuration at acceptance; the entry
	// may have changed while the operation waited for the slot.
	p, err := e.peerFor(op, peer)
	if err != nil {
		return readFailed, e.rmemFailed(op, peer, wire.CodeLocalInvalid, err)
	}
	cfg := e.cfg.Load()
	epoch := e.epoch.Load()
	rid := e.rid.Add(1) - 1
	var f []byte
	expect := wire.RMEMWriteRsp
	if op == opRMEMRead {
		f = wire.AppendRMEMReadReq(e.in.tx[:0], p.MAC, cfg.MAC, rid, addr)
		expect = wire.RMEMReadRsp
	} else {
		f = wire.AppendRMEMWriteReq(e.in.tx[:0], p.MAC, cfg.MAC, rid, addr, mask, data)
	}
	code, err := e.transact(ctx, f, epoch, p.MAC, rid, expect, 0, cfg.RMEMTimeout)
	if code != wire.CodeNone {
		return readFailed, e.rmemFailed(op, peer, code, err)
	}
	return e.in.data, nil
}

// notAccepted is the error of an operation that gave up before acceptance.
func notAccepted(op string, peer int, err error) error {
	code := wire.CodeTimeout
	if errors.Is(err, ErrClosed) {
		code = wire.CodeLocalInvalid
	}
	return &OpError{Op: op, Peer: peer, Code: code, Err: err}
}

// rmemFailed records an RMEM failure, raises its event and returns its
// error.
func (e *Endpoint) rmemFailed(op string, peer int, code wire.Code, err error) error {
	if peer >= 0 && peer < MaxPeers && !aborted(err) {
		e.record(peer, code)
		e.raise(RMEMError, peer, code)
	}
	return &OpError{Op: op, Peer: peer, Code: code, Err: err}
}

// Transfer reports the progress of a DMA block, also on failure: the bytes
// delivered by completed fragments and the number of those fragments.
type Transfer struct {
	Bytes     uint64
	Fragments int
}

type progressKey struct{}

// WithProgress returns a context that makes a DMA call report its progress:
// fn is called after each completed fragment with the bytes delivered so
// far, on the calling goroutine.
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
// reports the bytes and fragments completed, also on failure.
//
// A unicast block without a WithProgress callback is chained: after the
// first fragment, the receive loop sends each fragment as soon as the
// previous one's response has been validated, reading its source bytes then
// (DMARead: writing the received data then), and the calling goroutine
// sleeps until the block ends. The wire sees exactly the same frames.
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
// fragment at a time just before the fragment is sent. A source read error
// fails the block with LOCAL_AXI_RD_SLVERR (4) or LOCAL_AXI_RD_DECERR (5)
// before that fragment is sent; its Request ID has been consumed.
func (e *Endpoint) DMAWriteFrom(ctx context.Context, peer int, remote uint32, src memory.Space, local uint32, n uint32) (Transfer, error) {
	if src == nil {
		return Transfer{}, &OpError{Op: opDMAWrite, Peer: peer, Code: wire.CodeLocalInvalid, Err: invalidf("nil source Space")}
	}
	return e.dma(ctx, opDMAWrite, peer, remote, uint64(n), bulk{s: src, base: local})
}

// DMAReadInto is DMARead with the data written to dst at local. A local
// write error fails the block with LOCAL_AXI_WR_SLVERR (6) or
// LOCAL_AXI_WR_DECERR (7); the fragment's data may be partly written.
func (e *Endpoint) DMAReadInto(ctx context.Context, peer int, remote uint32, dst memory.Space, local uint32, n uint32) (Transfer, error) {
	if dst == nil {
		return Transfer{}, &OpError{Op: opDMARead, Peer: peer, Code: wire.CodeLocalInvalid, Err: invalidf("nil destination Space")}
	}
	return e.dma(ctx, opDMARead, peer, remote, uint64(n), bulk{s: dst, base: local})
}

func (e *Endpoint) dma(ctx context.Context, op string, peer int, remote uint32, n uint64, b bulk) (Transfer, error) {
	var t Transfer
	if e.isClosed() {
		return t, &OpError{Op: op, Peer: peer, Code: wire.CodeLocalInvalid, Err: ErrClosed}
	}
	if err := ctx.Err(); err != nil {
		return t, notAccepted(op, peer, err)
	}
	select {
	case <-e.dmaTok:
	case <-ctx.Done():
		return t, notAccepted(op, peer, ctx.Err())
	case <-e.done:
		return t, notAccepted(op, peer, ErrClosed)
	}
	defer func() { e.dmaTok <- struct{}{} }()
	epoch := e.epoch.Load()
	cfg := e.cfg.Load()
	p, err := e.peerFor(op, peer)
	var mfs uint32
	if err == nil {
		mfs, err = e.checkBlock(cfg, remote, n, &b)
	}
	if err != nil {
		return t, e.dmaDone(op, peer, wire.CodeLocalInvalid, err)
	}
	progress, _ := ctx.Value(progressKey{}).(func(uint64))
	for t.Bytes < n {
		if progress == nil && !p.MAC.IsGroup() {
			code, err := e.chainBlock(ctx, op, p, remote, n, &b, &t, epoch, mfs)
			if code != wire.CodeNone {
				return t, e.dmaDone(op, peer, code, err)
			}
			continue
		}
		fl := uint32(min(uint64(mfs), n-t.Bytes))
		code, err := e.fragment(ctx, op, p, remote+uint32(t.Bytes), fl, &b, t.Bytes, epoch)
		if code != wire.CodeNone {
			return t, e.dmaDone(op, peer, code, err)
		}
		t.Bytes += uint64(fl)
		t.Fragments++
		if progress != nil {
			progress(t.Bytes)
		}
	}
	return t, e.dmaDone(op, peer, wire.CodeNone, nil)
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
// PEER_DMA_COMPLETE and returns the block's error (nil on success).
func (e *Endpoint) dmaDone(op string, peer int, code wire.Code, err error) error {
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
	return &OpError{Op: op, Peer: peer, Code: code, Err: err}
}

// fragment issues one DMA fragment of n bytes at remote address addr, the
// block's bytes from off, and waits for its completion.
func (e *Endpoint) fragment(ctx context.Context, op string, p Peer, addr, n uint32, b *bulk, off uint64, epoch uint64) (wire.Code, error) {
	if err := e.slot.acquire(ctx, false, e.done); err != nil {
		return wire.CodeTimeout, err
	}
	defer e.slot.release()
	if e.epoch.Load() != epoch {
		return wire.CodeTimeout, ErrReset
	}
	cfg := e.cfg.Load()
	rid := e.rid.Add(1) - 1
	in := &e.in
	if op == opDMAWrite {
		f, data := wire.GrowDMAWriteReq(in.tx[:0], p.MAC, cfg.MAC, rid, addr, n)
		if resp := b.read(data, off); resp != memory.OKAY {
			code := wire.CodeLocalAXIRdDecerr
			if resp == memory.SLVERR {
				code = wire.CodeLocalAXIRdSlverr
			}
			return code, fmt.Errorf("%w: reading %d source bytes at block offset %d: %v", ErrMemory, n, off, resp)
		}
		return e.transact(ctx, f, epoch, p.MAC, rid, wire.DMAWriteRsp, 0, cfg.DMATimeout)
	}
	f := wire.AppendDMAReadReq(in.tx[:0], p.MAC, cfg.MAC, rid, addr, n)
	code, err := e.transact(ctx, f, epoch, p.MAC, rid, wire.DMAReadRsp, n, cfg.DMATimeout)
	if code != wire.CodeNone {
		return code, err
	}
	rsp := in.rsp
	resp := b.write(wire.Frame(rsp).Payload(n), off)
	in.mu.Lock()
	in.spare, in.rsp = rsp[:cap(rsp)], nil
	in.mu.Unlock()
	if resp != memory.OKAY {
		code := wire.CodeLocalAXIWrDecerr
		if resp == memory.SLVERR {
			code = wire.CodeLocalAXIWrSlverr
		}
		return code, fmt.Errorf("%w: writing %d bytes at block offset %d: %v", ErrMemory, n, off, resp)
	}
	return wire.CodeNone, nil
}
