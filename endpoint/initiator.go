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

// The initiator.
//
// One type owns the initiating side's state and its lock: the table of
// outstanding requests with their Request ID index, the DMA block being
// transferred, the per-peer retry policies and round-trip estimators. Its
// API is small:
//
//   - take and put hand a request entry to the holder of an initiating
//     slot and back;
//   - issueLocked is the one frame builder (RMEM requests and DMA fragments,
//     with the one mapping of local memory errors): it takes a Request ID,
//     builds the try and makes it outstanding;
//   - send hands a try to the link and starts its timer: the path that sends
//     owns the timer, the caller for the first try and retries, the receive
//     loop for the next fragment of a block;
//   - deliver is called by the receive loop for a response; it matches it
//     by Request ID in O(1), validates it and records the outcome, or, for a
//     DMA fragment, completes the fragment and sends the next one;
//   - wait sleeps until the operation's outcome, retrying a try that timed
//     out or was answered malformed as the retry policy allows (retryLocked);
//   - abortLocked invalidates every request in use (Reset).
//
// The number of outstanding requests is a parameter of init. oETP v1 keeps
// exactly one (the single initiating context: no Request ID collision can
// occur); a transport beneath the engine may run more through the same
// table.

type reqState uint8

const (
	reqFree    reqState = iota // not taken
	reqIdle                    // taken; no try outstanding
	reqWaiting                 // a try is outstanding (in the index)
	reqRetry                   // a try was answered malformed and may be retried: the waiter does it
	reqDone                    // the outcome is recorded
	reqAborted                 // Reset invalidated the request
)

// request is one outstanding-request context: what the engine restores from
// a Request ID (peer, operation, expected response and length), the try's
// timer, and the outcome. Guarded by initiator.mu, except the fields the
// taker sets before the first try.
type request struct {
	idx   int
	state reqState
	// gen is incremented by take and whenever the waiter takes an outcome:
	// a chain's sender that released in.mu (the progress callback, the link
	// write) tells by it that the operation it was serving has ended.
	gen uint64

	// The operation, set by the taker.
	op      string
	peerIdx int
	dst     wire.MAC
	addr    uint32 // RMEM address, or the outstanding fragment's remote address
	wdata   uint32 // RMEM write data and mask
	mask    uint32
	blk     *block // the DMA block, nil for RMEM
	cfg     *Config
	pol     *RetryPolicy // nil: one try
	retries int          // retries allowed for this operation or fragment
	epoch   uint64

	// The try outstanding.
	rid      uint32
	expect   wire.Cmd
	expLen   uint32
	fl       uint32        // DMA fragment length
	off      uint64        // DMA fragment's offset in the block
	timeout  time.Duration // this try's timer, 0 none
	sent     time.Time     // when the try was handed to the link (just before the write); zero without a timer
	armed    bool          // the timer runs for this try
	carried  bool          // the link carries this try (link.Carrier): the initiator's one timer (carry) times it
	listen   bool          // the waiter sleeps listening to the timer
	started  bool          // the timer was started for a try of this operation
	tries    int           // tries built for this operation or fragment
	unknown  bool          // a try was handed to the link and not answered validly
	deadline time.Time     // of the operation or fragment, when retrying

	// The outcome.
	code     wire.Code
	err      error // local detail
	rdata    uint32
	expired  bool // the timer fired with the outcome already recorded
	abortErr error

	sig   chan struct{} // wake-up token for the waiter
	timer respTimer
	tx    [2][]byte // frame buffers: [0] the waiter's, [1] the receive loop's

	// A DMA write try whose data the link fills (link.FillWriter): the
	// frame in tx[buf] lacks its data, which fillFn[buf] (fillData, bound
	// once per buffer) copies from the source straight into the link's
	// copy of the frame, if the try fillRID[buf] (set by issueLocked) is
	// still outstanding. Guarded by initiator.mu, except fillFn.
	in      *initiator
	fillRID [2]uint32
	fillFn  [2]func([]byte) bool
}

// The frame buffer of each sending path, so that a frame is never rebuilt
// while another path may still be writing it.
const (
	bufCaller = 0
	bufRx     = 1
)

// block is the DMA block being transferred. One block at a time (dmaTok);
// guarded by initiator.mu while a fragment of it is outstanding.
type block struct {
	op       string
	peerIdx  int
	dst      wire.MAC
	group    bool
	remote   uint32
	n        uint64 // block length
	done     uint64 // bytes of completed fragments
	issued   uint64 // block offset of the next fragment to issue
	stop     bool   // a fragment failed: issue no more
	failOff  uint64 // block offset of the fragment that failed first
	frags    int    // completed fragments
	retries  int    // retransmissions made
	mfs      uint32
	b        bulk
	epoch    uint64
	ctx      context.Context
	progress func(uint64)
	yield    bool // stopped to let a waiting RMEM operation go first
	// interval is Config.GroupInterval sampled at the block's start;
	// lastSent is when the block's previous group frame was handed over.
	interval time.Duration
	lastSent time.Time
	// pause times the wait between group frames, made at the first wait
	// and reused: a cancelled context ends the wait at once.
	pause *time.Timer
}

// lateRing remembers the most recently invalidated Request IDs, to tell
// late replies from unmatched ones in Stats.
const lateRing = 8

type lateID struct {
	peer  wire.MAC
	rid   uint32
	valid bool
}

// initiator is the initiating side of an Endpoint.
type initiator struct {
	e  *Endpoint
	mu sync.Mutex

	reqs  []request
	free  []int // indices of free entries (a stack)
	index ridIndex
	late  [lateRing]lateID
	lateN int

	blk    block
	chains []*request // runBlock's requests, one per fragment in flight
	pols   policyTable
	rtt    [MaxPeers]peerRTT

	// carry is the one response timer of every try the link carries
	// (link.Carrier), instead of one per request: it fires at the
	// earliest deadline it was armed for (carryAt, while carryArmed), and
	// carriedExpired ends the tries past their deadline and re-arms it.
	carry      *time.Timer
	carryAt    time.Time
	carryArmed bool
}

func (in *initiator) init(e *Endpoint, outstanding, maxFrame int) {
	in.e = e
	in.reqs = make([]request, outstanding)
	in.free = make([]int, 0, outstanding)
	for i := range in.reqs {
		r := &in.reqs[i]
		r.idx = i
		r.sig = make(chan struct{}, 1)
		r.timer = newRealTimer()
		r.in = in
		r.fillFn = [2]func([]byte) bool{
			func(d []byte) bool { return r.fillData(bufCaller, d) },
			func(d []byte) bool { return r.fillData(bufRx, d) },
		}
		r.tx = [2][]byte{make([]byte, 0, maxFrame), make([]byte, 0, maxFrame)}
		in.free = append(in.free, outstanding-1-i)
	}
	in.index.init(outstanding)
	in.chains = make([]*request, 0, outstanding)
}

// take returns a free entry; see takeLocked.
func (in *initiator) take() *request {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.takeLocked()
}

// startRMEM takes an entry for an RMEM operation to dst, fills it and
// builds its first try. The caller holds an initiating slot, sends the
// frame and puts the entry back.
func (in *initiator) startRMEM(op string, peer int, dst wire.MAC, addr, data, mask uint32, pol *RetryPolicy) (*request, []byte, func([]byte) bool, uint32) {
	in.mu.Lock()
	defer in.mu.Unlock()
	r := in.takeLocked()
	r.op, r.peerIdx, r.dst, r.addr, r.wdata, r.mask, r.blk = op, peer, dst, addr, data, mask, nil
	r.cfg, r.pol, r.retries, r.epoch = in.e.cfg.Load(), pol, 0, in.e.epoch.Load()
	if pol != nil && !dst.IsGroup() && !pol.volatile(addr, 4) {
		r.retries = pol.Retries
	}
	frame, fill, rid, _, _ := in.issueLocked(r, bufCaller)
	return r, frame, fill, rid
}

// startChains starts a turn of a unicast block: it takes the first
// chain's entry (the caller holds one initiating slot) and returns the
// chains slice and the fragments left to issue; ok is false, and nothing
// taken, when a Reset came since the block started.
func (in *initiator) startChains(blk *block) (chains []*request, frags uint64, ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.e.epoch.Load() != blk.epoch {
		return nil, 0, false
	}
	blk.yield, blk.stop = false, false
	frags = (blk.n - blk.issued + uint64(blk.mfs) - 1) / uint64(blk.mfs)
	return append(in.chains[:0], in.takeLocked()), frags, true
}

// startChain fills chain entry r for blk and builds its first fragment.
// issued is false when the block needs no more fragments or one failed to
// build (code, settled on r).
func (in *initiator) startChain(r *request, blk *block, pol *RetryPolicy) (frame []byte, fill func([]byte) bool, rid uint32, code wire.Code, issued bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	r.op, r.peerIdx, r.dst, r.blk, r.pol, r.epoch = blk.op, blk.peerIdx, blk.dst, blk, pol, blk.epoch
	if blk.stop || blk.issued >= blk.n {
		return nil, nil, 0, wire.CodeNone, false
	}
	r.tries = 0
	frame, fill, rid, code, err := in.issueLocked(r, bufCaller)
	if code != wire.CodeNone {
		in.settleLocked(r, code, err)
		return nil, nil, 0, code, false
	}
	return frame, fill, rid, wire.CodeNone, true
}

// nextGroupFragment builds the next fragment of group block blk in r; ok
// is false when a Reset came since the block started.
func (in *initiator) nextGroupFragment(r *request, blk *block, pol *RetryPolicy) (frame []byte, fill func([]byte) bool, rid uint32, code wire.Code, err error, ok bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	r.op, r.peerIdx, r.dst, r.blk, r.pol, r.epoch = blk.op, blk.peerIdx, blk.dst, blk, pol, blk.epoch
	if in.e.epoch.Load() != blk.epoch {
		return nil, nil, 0, wire.CodeNone, nil, false
	}
	blk.yield = false
	r.tries = 0
	frame, fill, rid, code, err = in.issueLocked(r, bufCaller)
	return frame, fill, rid, code, err, true
}

// endBlock drops the finished block: the caller's buffer and context.
func (in *initiator) endBlock() {
	in.mu.Lock()
	in.blk = block{}
	in.mu.Unlock()
}

// reset is the initiator's part of Endpoint.Reset: a new epoch, the
// Request ID counter back to 0 and every outstanding request invalidated,
// under the initiator's lock.
func (in *initiator) reset() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.e.epoch.Add(1)
	in.e.rid.Store(0)
	in.abortLocked(ErrReset)
}

// takeLocked returns a free entry. The caller holds an initiating slot, so
// one is free.
func (in *initiator) takeLocked() *request {
	i := in.free[len(in.free)-1]
	in.free = in.free[:len(in.free)-1]
	r := &in.reqs[i]
	r.state = reqIdle
	r.gen++
	r.tries, r.unknown, r.expired, r.code, r.err, r.abortErr = 0, false, false, wire.CodeNone, nil, nil
	r.listen = true // the waiter decides when it first sleeps
	select {
	case <-r.sig:
	default:
	}
	return r
}

// put returns r to the free entries.
func (in *initiator) put(r *request) {
	in.mu.Lock()
	if r.started {
		r.timer.Stop()
		r.armed, r.started = false, false
	}
	r.state = reqFree
	r.blk, r.cfg, r.pol, r.err, r.abortErr = nil, nil, nil, nil, nil
	in.free = append(in.free, r.idx)
	in.mu.Unlock()
}

func (r *request) wake() {
	select {
	case r.sig <- struct{}{}:
	default:
	}
}

// invalidateLocked takes r's outstanding try out of the index and remembers
// its ID as invalid, so that a late reply is discarded and counted as late.
func (in *initiator) invalidateLocked(r *request) {
	in.index.del(r.rid)
	in.late[in.lateN%lateRing] = lateID{peer: r.dst, rid: r.rid, valid: true}
	in.lateN++
	if r.armed {
		r.timer.Stop()
		r.armed = false
	}
}

// isLateLocked reports whether a reply from src with rid answers an
// invalidated try.
func (in *initiator) isLateLocked(src wire.MAC, rid uint32) bool {
	for _, l := range in.late {
		if l.valid && l.rid == rid && l.peer == src {
			return true
		}
	}
	return false
}

// settleLocked records r's outcome; the caller wakes the waiter (r.wake)
// unless it is the waiter. The outstanding try, if any, must be out of the
// index already.
func (in *initiator) settleLocked(r *request, code wire.Code, err error) {
	r.state, r.code, r.err = reqDone, code, err
	if blk := r.blk; blk != nil && code != wire.CodeNone && !blk.stop {
		// The block's other fragments in flight complete, and no
		// further one is issued.
		blk.stop, blk.failOff = true, r.off
	}
	if r.armed {
		r.timer.Stop()
		r.armed = false
	}
}

// abortLocked invalidates every request in use: the waiters fail with
// TIMEOUT and an error wrapping err, and a DMA block stops.
func (in *initiator) abortLocked(err error) {
	for i := range in.reqs {
		r := &in.reqs[i]
		switch r.state {
		case reqWaiting:
			in.invalidateLocked(r)
		case reqIdle, reqRetry:
		default:
			continue
		}
		r.state, r.abortErr = reqAborted, err
		r.wake()
	}
}

// malformedCode is the code a malformed response f (a cmd matching r's
// source, Request ID and expected command) ends r with.
//
// An incomplete DMA_READ_RSP, or one with a missing or wrong EndOfData,
// records REMOTE_AXIS (10) directly, unless the local destination would
// fail for the data bytes the frame carries: a streaming receiver writes
// them before it sees the end of the frame, and "the current DMA engine ...
// gives a fragment's local memory error precedence when both are present",
// so the destination's write error (LOCAL_AXI_WR_SLVERR or _DECERR) wins.
// The destination is asked (memory.Prober) without being written; a
// malformed frame never modifies local memory.
//
// Any other recognized response with a bad length (RMEM_READ_RSP,
// RMEM_WRITE_RSP, DMA_WRITE_RSP, and ERROR_RSP) is a local framing check:
// LOCAL_AXIS (2), since "Internal stream faults and other local framing
// checks use code 2; an incomplete received DMA data frame uses code 10
// directly". A malformed ERROR_RSP is one the specification ends "with an
// error when the mismatch is detected" ("The same error-completion rule
// applies to a malformed ERROR_RSP that can reliably be associated with
// that request"): its source and Request ID associate it, and it is not a
// DMA data frame, so it records LOCAL_AXIS too; its Error Code is not
// interpreted, since the parameters of a malformed frame are not
// trustworthy.
func malformedCode(f []byte, cmd wire.Cmd, r *request) wire.Code {
	if cmd != wire.DMAReadRsp {
		return wire.CodeLocalAXIS
	}
	if r.blk != nil {
		present := min(uint64(r.expLen), uint64(max(len(f)-(wire.ParamOffset+4), 0)))
		if present > 0 {
			if resp := r.blk.b.probeWrite(r.off, int(present)); resp != memory.OKAY {
				return memErrCode(resp, true)
			}
		}
	}
	return wire.CodeRemoteAXIS
}

// memCode maps a failed local memory access of a DMA block to its code and
// error: the source of a write (LOCAL_AXI_RD_*) or the destination of a
// read (LOCAL_AXI_WR_*).
func memCode(resp memory.Resp, write bool, n uint32, off uint64) (wire.Code, error) {
	if write {
		return memErrCode(resp, true), fmt.Errorf("%w: writing %d bytes at block offset %d: %v", ErrMemory, n, off, resp)
	}
	return memErrCode(resp, false), fmt.Errorf("%w: reading %d source bytes at block offset %d: %v", ErrMemory, n, off, resp)
}

// memErrCode is the one mapping of a failed memory access (SLVERR, else
// DECERR) to its local CSR code: LOCAL_AXI_WR_* for a write, LOCAL_AXI_RD_*
// for a read. The responder sends its wire cause (Code.Cause, the same
// number) in an ERROR_RSP.
func memErrCode(resp memory.Resp, write bool) wire.Code {
	switch {
	case write && resp == memory.SLVERR:
		return wire.CodeLocalAXIWrSlverr
	case write:
		return wire.CodeLocalAXIWrDecerr
	case resp == memory.SLVERR:
		return wire.CodeLocalAXIRdSlverr
	}
	return wire.CodeLocalAXIRdDecerr
}

// issueLocked is the frame builder: it builds the next try of r into
// r.tx[buf] (an RMEM request, or the block's next fragment: the outstanding
// one again for a retry), taking the next Request ID, and unless the
// destination is a group makes it the outstanding try, with its timer
// duration. It returns the frame and its ID, or the local code and error of
// a failed source read of a DMA write (the ID is consumed, nothing is
// outstanding). For a new DMA fragment it samples the configuration (its
// MAC and DMATimeout) and its retry allowance.
func (in *initiator) issueLocked(r *request, buf int) ([]byte, func([]byte) bool, uint32, wire.Code, error) {
	e := in.e
	rid := e.rid.Add(1) - 1
	b := r.tx[buf][:0]
	var f []byte
	var fill func([]byte) bool
	switch r.op {
	case opRMEMRead:
		f = wire.AppendRMEMReadReq(b, r.dst, r.cfg.MAC, rid, r.addr)
		r.expect, r.expLen = wire.RMEMReadRsp, 0
	case opRMEMWrite:
		f = wire.AppendRMEMWriteReq(b, r.dst, r.cfg.MAC, rid, r.addr, r.mask, r.wdata)
		r.expect, r.expLen = wire.RMEMWriteRsp, 0
	default:
		blk := r.blk
		if r.tries == 0 {
			r.cfg = e.cfg.Load()
			r.off = blk.issued
			r.fl = uint32(min(uint64(blk.mfs), blk.n-blk.issued))
			r.addr = blk.remote + uint32(r.off)
			blk.issued += uint64(r.fl)
			r.retries = 0
			if r.pol != nil && !blk.group && !r.pol.volatile(r.addr, uint64(r.fl)) {
				r.retries = r.pol.Retries
			}
		}
		if r.op == opDMAWrite {
			var data []byte
			f, data = wire.GrowDMAWriteReq(b, r.dst, r.cfg.MAC, rid, r.addr, r.fl)
			if e.filler != nil && !blk.group && blk.b.s == nil {
				// The link fills the data in place when the frame is
				// sent (fillData): a byte slice, which cannot fail.
				fill, r.fillRID[buf] = r.fillFn[buf], rid
			} else if resp := blk.b.read(data, r.off); resp != memory.OKAY {
				code, err := memCode(resp, false, r.fl, r.off)
				return nil, nil, rid, code, err
			}
			r.expect, r.expLen = wire.DMAWriteRsp, 0
		} else {
			f = wire.AppendDMAReadReq(b, r.dst, r.cfg.MAC, rid, r.addr, r.fl)
			r.expect, r.expLen = wire.DMAReadRsp, r.fl
		}
	}
	r.tx[buf] = f[:0]
	r.rid = rid
	r.sent, r.armed, r.carried = time.Time{}, false, false
	if r.tries == 0 && r.retries > 0 {
		r.deadline = time.Now().Add(r.pol.Deadline)
	}
	r.tries++
	if r.dst.IsGroup() {
		r.state = reqIdle
		return f, nil, rid, wire.CodeNone, nil
	}
	r.timeout = r.cfg.RMEMTimeout
	if r.blk != nil {
		r.timeout = r.cfg.DMATimeout
	}
	if r.retries > 0 {
		r.timeout = tryTimeout(r.timeout, in.rtt[r.peerIdx].rto(), r.pol.MinRTO, r.tries)
		left := time.Until(r.deadline)
		if r.timeout == 0 || r.timeout > left {
			r.timeout = max(left, time.Microsecond)
		}
	}
	r.state = reqWaiting
	in.index.put(rid, r.idx)
	if r.timeout > 0 || r.retries > 0 {
		// The clock is read only for a try with a timer (or of an
		// operation that may be retried, whose RTO needs samples). It
		// is read before the write, so that a round trip is never
		// measured short when the response is matched before the
		// write has returned; the timer itself starts after the write.
		r.sent = time.Now()
	}
	return f, fill, rid, wire.CodeNone, nil
}

// send hands try rid of r to the link and, if it is still outstanding,
// records when the link accepted it and starts its timer. A refused frame
// completes the operation with LOCAL_AXIS. The frame of a group destination
// is only written.
//
// A DMA write try built for the link to fill (fill, from issueLocked) is written with
// WriteFill, its data copied once, from the source into the link's copy of
// the frame (fillData). If the try has ended before its data is read
// (Reset, Close, the caller's context: its waiter has been told), the frame
// is cancelled and nothing is sent, as "pre-prepared fragments of a failed
// block must be cancelled".
func (in *initiator) send(r *request, frame []byte, fill func([]byte) bool, rid uint32) error {
	var err error
	if fill != nil {
		var filled bool
		// The Data words between the header and EndOfData: the
		// fragment's bytes and their padding.
		filled, err = in.e.writeFill(frame, wire.ParamOffset+12, len(frame)-(wire.ParamOffset+16), fill, false)
		if !filled && err == nil {
			return nil
		}
	} else {
		err = in.e.write(frame, false)
	}
	if r.dst.IsGroup() {
		if err != nil {
			return fmt.Errorf("%w: %w", ErrLink, err)
		}
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if r.state != reqWaiting || r.rid != rid {
		return nil // answered before Write returned, or aborted: the waiter has been told
	}
	if err != nil {
		in.invalidateLocked(r)
		in.settleLocked(r, wire.CodeLocalAXIS, fmt.Errorf("%w: %w", ErrLink, err))
		r.wake()
		return nil
	}
	r.unknown = true
	// A link that carries the request resends it until it is answered,
	// and reports it if it gives up (lost): its response timeout is kept
	// by the initiator's one timer for carried tries.
	r.carried = in.e.carrier != nil && in.e.carrier.Carries(r.dst)
	if r.carried && r.timeout > 0 && !r.sent.IsZero() {
		in.armCarryLocked(r.sent.Add(r.timeout))
	}
	if r.timeout > 0 && !r.carried {
		r.timer.Start(r.timeout)
		r.armed, r.started = true, true
		if !r.listen {
			// The waiter sleeps without the timer: its operation
			// started with timeout 0 and this fragment sampled a
			// new one. Rare; the usual case needs no wake-up.
			r.wake()
		}
	}
	if r.blk != nil && in.e.warm {
		// Under the lock: the block is alive, so its buffer is the
		// caller's until the lock is released.
		r.blk.b.touch(r.ahead())
	}
	return nil
}

// fillData writes the source bytes of r's DMA write try fillRID[buf] into data,
// the frame's Data and word padding in the link's copy (link.FillWriter), if the try is
// still outstanding: under in.mu, which keeps the block alive (once the try
// has ended, its waiter may have returned the source buffer to the caller).
// Otherwise it cancels the frame. The source is a byte slice, which cannot
// fail.
func (r *request) fillData(buf int, data []byte) bool {
	in := r.in
	in.mu.Lock()
	n := int(r.fl)
	ok := r.state == reqWaiting && r.rid == r.fillRID[buf] && r.blk != nil && len(data) >= n
	if ok {
		copy(data[:n], r.blk.b.b[r.off:r.off+uint64(n)])
		clear(data[n:]) // the word padding
	}
	in.mu.Unlock()
	return ok
}

// deliver offers a response received in f (the receive ring's buffer) to the
// initiator. It completes the outstanding try only if the Request ID, the
// source MAC and the command (the expected response or ERROR_RSP) all
// match; a DMA_READ_RSP is validated completely (length and EndOfData)
// before its data is written to local memory. A matched response with a bad
// length or EndOfData ends the try at once (malformed), retried when the
// policy allows, with the code malformedCode gives. It reports whether a
// waiter was woken.
func (in *initiator) deliver(f []byte, cls wire.Class) bool {
	e := in.e
	fr := wire.Frame(f)
	rid, src := fr.RequestID(), fr.Src()
	in.mu.Lock()
	i := in.index.get(rid)
	var r *request
	if i >= 0 {
		r = &in.reqs[i]
	}
	if r == nil || r.state != reqWaiting || src != r.dst || cls.Cmd != r.expect && cls.Cmd != wire.ErrorRsp {
		late := in.isLateLocked(src, rid)
		in.mu.Unlock()
		if late {
			e.st.dropLateResponse.Add(1)
		} else {
			e.st.dropUnmatchedResponse.Add(1)
		}
		return false
	}
	code := wire.CodeNone
	malformed := false
	switch {
	case cls.Problem != wire.OK:
		malformed = true
	case cls.Cmd == wire.ErrorRsp:
		code = wire.CodeFromCause(fr.ErrorCode())
	case cls.Cmd == wire.DMAReadRsp:
		malformed = wire.CheckDMAReadRsp(f, r.expLen) != wire.OK
	case cls.Cmd == wire.RMEMReadRsp:
		r.rdata = fr.Data()
	}
	in.index.del(rid)
	// The timer is left running: the next try's sender restarts it, the
	// waiter stops it when it returns; until then an expiry finds the
	// outcome recorded (or another try, not yet expired) and is ignored.
	r.armed = false
	if malformed {
		code = malformedCode(f, cls.Cmd, r)
		e.st.malformedResponses.Add(1)
		if (code == wire.CodeLocalAXIS || code == wire.CodeRemoteAXIS) && r.tries <= r.retries && time.Now().Before(r.deadline) {
			// The waiter retries it: it sends, so it owns the timer.
			in.late[in.lateN%lateRing] = lateID{peer: r.dst, rid: rid, valid: true}
			in.lateN++
			r.state = reqRetry
			in.mu.Unlock()
			r.wake()
			return true
		}
	} else {
		r.unknown = false
		if code == wire.CodeNone && r.tries == 1 && !r.sent.IsZero() {
			in.rtt[r.peerIdx].sample(time.Since(r.sent))
		}
	}
	if r.blk != nil && code == wire.CodeNone {
		if in.nextFragmentLocked(r, fr) {
			in.mu.Unlock()
			return false
		}
	} else {
		in.settleLocked(r, code, nil)
	}
	if e.hookMatched != nil {
		e.hookMatched()
	}
	in.mu.Unlock()
	r.wake() // after the unlock: the waiter takes the lock at once
	return true
}

// nextFragmentLocked completes r's outstanding fragment, answered by fr (a
// DMA read's data is written to local memory here), and if the block goes on
// sends the next fragment and returns true: the waiter stays asleep.
// Otherwise it settles r with the outcome the block stops with and returns
// false. in.mu is held; it is released and retaken around the progress
// callback and the link write.
func (in *initiator) nextFragmentLocked(r *request, fr wire.Frame) bool {
	blk := r.blk
	if r.op == opDMARead {
		if resp := blk.b.write(fr.Payload(r.fl), r.off); resp != memory.OKAY {
			code, err := memCode(resp, true, r.fl, r.off)
			r.unknown = false
			in.settleLocked(r, code, err)
			return false
		}
	}
	blk.done += uint64(r.fl)
	blk.frags++
	r.tries = 0
	r.state = reqIdle
	if fn := blk.progress; fn != nil {
		gen, done := r.gen, blk.done
		in.mu.Unlock()
		fn(done)
		in.mu.Lock()
		if r.gen != gen || r.state != reqIdle {
			return true // aborted or ended meanwhile: the waiter has been told
		}
	}
	if blk.done >= blk.n || blk.issued >= blk.n || blk.stop {
		// The block is complete, or every fragment is issued (other
		// requests carry the rest), or another fragment failed.
		in.settleLocked(r, wire.CodeNone, nil)
		return false
	}
	if err := blk.ctx.Err(); err != nil {
		in.e.st.timeouts.Add(1)
		in.rtt[r.peerIdx].timeouts++
		in.settleLocked(r, wire.CodeTimeout, err)
		return false
	}
	if in.e.epoch.Load() != blk.epoch {
		r.state, r.abortErr = reqAborted, ErrReset
		return false
	}
	if rmem, _ := in.e.slot.waiting(); rmem > 0 {
		blk.yield = true
		in.settleLocked(r, wire.CodeNone, nil)
		return false
	}
	frame, fill, rid, code, err := in.issueLocked(r, bufRx)
	if code != wire.CodeNone {
		in.settleLocked(r, code, err)
		return false
	}
	in.e.st.chained.Add(1)
	in.mu.Unlock()
	in.send(r, frame, fill, rid)
	in.mu.Lock()
	return true
}

// ahead returns the block offset and length of the local memory that the
// block accesses next, once r's outstanding fragment (r.fl bytes at
// blk.done) is answered: for a DMA write, the source of the following
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
// Only when the link busy-polls (Endpoint.warm): with a receive loop that
// sleeps, the touch only adds to the round trip.
func (r *request) ahead() (off, n uint64) {
	blk := r.blk
	if r.op == opDMARead {
		return r.off, uint64(r.fl)
	}
	off = r.off + uint64(r.fl)
	if off >= blk.n {
		return off, 0
	}
	return off, min(uint64(blk.mfs), blk.n-off)
}

// mayRetryLocked reports whether r's operation or fragment may have another
// try: retries left and time before its deadline.
func (r *request) mayRetryLocked() bool {
	return r.tries <= r.retries && time.Now().Before(r.deadline)
}

// retryLocked builds r's next try (a new Request ID) into the waiter's
// buffer and counts the retry. in.mu is held.
func (in *initiator) retryLocked(r *request) ([]byte, func([]byte) bool, uint32, wire.Code, error) {
	in.rtt[r.peerIdx].retries++
	in.e.st.retries.Add(1)
	if r.blk != nil {
		r.blk.retries++
	}
	return in.issueLocked(r, bufCaller)
}

// wait waits for the outcome of r's operation, whose first try has been
// issued: the code of the matched response (for a DMA block, of the block's
// chain) or TIMEOUT. A fully validated response that has been recorded when
// the timer fires wins over the timeout. A try whose timer expired, or that
// was answered malformed, is retried while the policy allows. Cancellation
// of ctx counts as a timeout; Close aborts with ErrClosed.
func (in *initiator) wait(ctx context.Context, r *request) (wire.Code, error) {
	e := in.e
	tc := r.timer.C()
	var cause error
	for {
		in.mu.Lock()
		if cause != nil && (r.state == reqWaiting || r.state == reqIdle || r.state == reqRetry) {
			if r.state == reqWaiting {
				in.invalidateLocked(r)
			}
			if cause != ErrClosed {
				e.st.timeouts.Add(1)
				in.rtt[r.peerIdx].timeouts++
			}
			in.settleLocked(r, wire.CodeTimeout, cause)
		}
		switch r.state {
		case reqDone:
			if r.expired {
				e.st.expiredAfterResponse.Add(1)
				r.expired = false
			}
			r.state = reqIdle
			r.gen++ // a sender still in a progress callback must not go on
			if r.started {
				r.timer.Stop() // no stale expiry for the next operation
				r.armed, r.started = false, false
			}
			code, err := r.code, r.err
			in.mu.Unlock()
			return code, err
		case reqAborted:
			r.state = reqIdle
			r.gen++
			if r.started {
				r.timer.Stop()
				r.armed, r.started = false, false
			}
			err := r.abortErr
			in.mu.Unlock()
			return wire.CodeTimeout, err
		case reqRetry:
			if in.retryNowLocked(r) {
				continue // unlocked
			}
			in.mu.Unlock()
			continue // settled
		}
		// Listen to the timer only if a try of the operation uses one:
		// selecting on a timer channel reads the clock.
		var c <-chan time.Time
		if r.armed || r.timeout > 0 && !r.carried {
			c = tc
		}
		r.listen = c != nil
		in.mu.Unlock()
		if cause == nil && e.isClosed() {
			// Close wakes every waiter (wakeAll) after it has marked the
			// endpoint closed: one that looked before sleeps until then.
			// The waiters do not select on e.done, which all of them
			// would lock on each wait.
			cause = ErrClosed
			continue
		}
		select {
		case <-r.sig:
		case <-c:
			in.mu.Lock()
			switch {
			case r.state == reqDone:
				r.expired = true
			case r.state == reqWaiting && r.armed && r.pastDeadline():
				r.armed = false
				in.rtt[r.peerIdx].expired++
				in.invalidateLocked(r)
				if r.mayRetryLocked() {
					if in.retryNowLocked(r) {
						continue // unlocked
					}
				} else {
					e.st.timeouts.Add(1)
					in.rtt[r.peerIdx].timeouts++
					in.settleLocked(r, wire.CodeTimeout, ErrTimeout)
				}
			}
			in.mu.Unlock()
		case <-ctx.Done():
			cause = ctx.Err()
		}
	}
}

// wakeAll wakes every waiter, to look at the endpoint's state again (see
// wait). Its entries are fixed at init, so it takes no lock.
func (in *initiator) wakeAll() {
	for i := range in.reqs {
		in.reqs[i].wake()
	}
}

// retryNowLocked sends r's next try. It returns true with in.mu released
// when the try has been handed to the link (or the link refused it, which
// settles r); false with in.mu held when building it failed, which settles
// r too.
func (in *initiator) retryNowLocked(r *request) bool {
	frame, fill, rid, code, err := in.retryLocked(r)
	if code != wire.CodeNone {
		in.settleLocked(r, code, err)
		return false
	}
	in.mu.Unlock()
	in.send(r, frame, fill, rid)
	return true
}

// lost is the link's report that it stopped carrying try rid to dst
// (link.Carrier). Sent as a plain frame (plain), the try gets its response
// timer from now, as if just handed to the link. Abandoned, it ends as an
// expired timer ends it: retried while the policy allows, else TIMEOUT.
func (in *initiator) lost(dst wire.MAC, rid uint32, plain bool) {
	in.mu.Lock()
	i := in.index.get(rid)
	if i < 0 {
		in.mu.Unlock()
		return
	}
	r := &in.reqs[i]
	if r.state != reqWaiting || r.rid != rid || r.dst != dst {
		in.mu.Unlock()
		return
	}
	if plain {
		// Before send has asked the link, it finds the try not
		// carried and starts the timer itself.
		if r.carried {
			r.carried = false
			if r.timeout > 0 {
				r.sent = time.Now()
				r.timer.Start(r.timeout)
				r.armed, r.started = true, true
				if !r.listen {
					r.wake()
				}
			}
		}
		in.mu.Unlock()
		return
	}
	in.expireLocked(r, errAbandoned)
	in.mu.Unlock()
}

// expireLocked ends r's outstanding try as an expired timer does, for a
// try the waiter does not time itself: it is retried by the waiter while
// the policy allows, else r ends in TIMEOUT with err. It wakes the waiter.
func (in *initiator) expireLocked(r *request, err error) {
	in.rtt[r.peerIdx].expired++
	in.invalidateLocked(r)
	if r.mayRetryLocked() {
		r.state = reqRetry // the waiter sends the next try
	} else {
		in.e.st.timeouts.Add(1)
		in.rtt[r.peerIdx].timeouts++
		in.settleLocked(r, wire.CodeTimeout, err)
	}
	r.wake()
}

// armCarryLocked makes the carried tries' timer fire at at, unless it is
// armed to fire sooner.
func (in *initiator) armCarryLocked(at time.Time) {
	if in.carryArmed && !at.Before(in.carryAt) {
		return
	}
	in.carryAt, in.carryArmed = at, true
	if in.carry == nil {
		in.carry = time.AfterFunc(time.Until(at), in.carriedExpired)
		return
	}
	in.carry.Reset(time.Until(at))
}

// carriedExpired is the carried tries' timer: every carried try whose
// response timeout has passed since it was handed to the link ends as its
// own timer's expiry would end it; the timer is armed again for the
// earliest deadline left.
func (in *initiator) carriedExpired() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.carryArmed = false
	now := time.Now()
	var next time.Time
	for i := range in.reqs {
		r := &in.reqs[i]
		if r.state != reqWaiting || !r.carried || r.timeout <= 0 || r.sent.IsZero() {
			continue
		}
		if d := r.sent.Add(r.timeout); now.Before(d) {
			if next.IsZero() || d.Before(next) {
				next = d
			}
			continue
		}
		in.expireLocked(r, ErrTimeout)
	}
	if !next.IsZero() {
		in.armCarryLocked(next)
	}
}

// errAbandoned is the error of a try the link stopped carrying without an
// answer (its reliable transport's session failed).
var errAbandoned = fmt.Errorf("%w: the reliable transport gave the request up (its session failed)", ErrTimeout)

// deadliner is implemented by response timers that can tell whether a
// try's time is up by the clock.
type deadliner interface {
	Expired(deadline time.Time) bool
}

// pastDeadline reports whether r's outstanding try's time is up: its
// timeout has passed since it was handed to the link. A timer that cannot
// tell (one substituted by tests) is taken at its word.
func (r *request) pastDeadline() bool {
	if r.sent.IsZero() {
		return false
	}
	d, ok := r.timer.(deadliner)
	return !ok || d.Expired(r.sent.Add(r.timeout))
}

// aborted reports whether err means the operation was cut short by Reset
// or Close, which record nothing and raise no event.
func aborted(err error) bool { return errors.Is(err, ErrReset) || errors.Is(err, ErrClosed) }
