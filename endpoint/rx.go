package endpoint

import (
	"errors"
	"runtime"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// rxRing is the receive loop's batch: preallocated buffers the link fills.
// It is owned by whichever worker holds the receive role.
type rxRing struct {
	bufs  [][]byte // bufLen bytes each; a buffer handed away is replaced by the taker's
	offs  []int    // where each frame starts in its buffer (link.OffsetReader; else 0)
	sizes []int
	n, i  int    // frames in the batch, next frame
	epoch uint64 // the Reset epoch the batch was read in
	woke  bool   // a frame of the batch may have readied a goroutine
	waked int    // initiator waiters the batch woke
	rid   uint32 // the Request ID counter when the batch was read
}

func (r *rxRing) init(bufLen int) {
	r.bufs = make([][]byte, rxBatch)
	r.sizes = make([]int, rxBatch)
	r.offs = make([]int, rxBatch)
	for i := range r.bufs {
		r.bufs[i] = make([]byte, bufLen)
	}
}

// worker is one responder context. Workers take turns holding the receive
// role; a worker that admits a request hands the role to an idle worker and
// serves the request itself.
type worker struct {
	buf   []byte // the admitted request frame, buf[off:off+n] (swapped out of the ring)
	off   int
	tx    []byte // the reply frame
	n     int
	cause uint32 // the wire cause of the ERROR_RSP in tx, 0 for a success response

	// The memory to touch once the reply is sent: aheadN bytes at ahead
	// (aheadN 0: none). See respond.
	ahead  uint32
	aheadN uint32

	cls       wire.Class
	peer      int
	peerEntry Peer // the source peer's entry, sampled at admission
	group     bool
	cfg       *Config
	epoch     uint64

	// With a link.Looper: onBatch bound to this worker once, and whether
	// it stopped the loop for a request admitted to this worker.
	batchFn  func(n int) bool
	admitted bool

	// A DMA_READ_RSP in tx whose data the link fills (link.FillWriter):
	// fillFn (fillRead, bound once) reads fillN bytes at fillAddr straight
	// into the link's copy of the frame when reply sends it; a failed read
	// leaves its answer in fillResp.
	fill     bool
	fillAddr uint32
	fillN    uint32
	fillResp memory.Resp
	fillFn   func([]byte) bool
}

func (e *Endpoint) work(w *worker) {
	defer e.wg.Done()
	for {
		select {
		case <-e.lead:
		case <-e.done:
			return
		}
		if !e.receive(w) {
			return
		}
		e.respond(w)
	}
}

// respond serves the request admitted to w and sends its reply, if any.
func (e *Endpoint) respond(w *worker) {
	reply := e.serve(w)
	// The context is free before its reply is visible: the initiator may
	// send its next request as soon as it has the reply.
	e.serving.Add(-1)
	if reply {
		e.reply(w)
	} else if !w.group {
		e.dropped(w.frame()) // a Reset came while it was served
	}
	if w.aheadN != 0 {
		// Off the critical path: the reply is out, and the initiator
		// of a DMA block sends its next fragment only once it has it.
		e.toucher.Touch(w.ahead, int(w.aheadN))
		w.aheadN = 0
	}
}

// receive runs the receive loop until a request is admitted to w (true: the
// receive role has been passed on) or the link is gone (false).
func (e *Endpoint) receive(w *worker) bool {
	r := &e.rx
	for {
		// Frames left in the ring by the previous holder of the role.
		for r.i < r.n {
			if e.step(w) {
				return true
			}
		}
		if r.woke {
			// A frame just handled readied a goroutine (the waiting
			// initiator, a RecvRaw caller): let it run before this one
			// waits in the link. A link that blocks in a system call
			// keeps this goroutine's processor meanwhile, and it would
			// wait for the scheduler to take that back (tens of µs to
			// ms) instead of running at once.
			e.yield()
		}
		var err error
		if e.looper != nil {
			if err = e.looper.ReadLoop(r.bufs, r.sizes, w.batchFn); err == nil && w.admitted {
				w.admitted = false
				return true
			}
		} else {
			var n int
			if e.offReader != nil {
				n, err = e.offReader.ReadBatchAt(r.bufs, r.offs, r.sizes)
			} else {
				n, err = e.link.ReadBatch(r.bufs, r.sizes)
			}
			if err == nil {
				e.received(n)
			}
		}
		if err != nil {
			if e.isClosed() || errors.Is(err, link.ErrClosed) {
				e.shutdown()
				return false
			}
			e.st.rxErrors.Add(1)
			time.Sleep(time.Millisecond) // do not spin on a persistent link error
		}
	}
}

// received makes the n frames just read into the ring the batch to handle.
func (e *Endpoint) received(n int) {
	r := &e.rx
	var nb int
	for _, s := range r.sizes[:n] {
		nb += s
	}
	e.st.rxFrames.Add(uint64(n))
	e.st.rxBytes.Add(uint64(nb))
	r.n, r.i, r.epoch = n, 0, e.epoch.Load()
	r.waked, r.rid = 0, e.rid.Load()
}

// maxYields bounds the yields of yield.
const maxYields = 8

// yield lets the goroutines the batch readied run before the receive loop
// waits in the link again. Waiters it woke that start their next
// operation at once (RMEM reads from many goroutines) then hand their
// requests to the link while it still handles the batch, and a link that
// batches (link/rlink) writes them with the batch's frames in one system
// call instead of one each: it yields again, up to maxYields times, while
// fewer requests than waiters woken have been issued since the batch was
// read.
func (e *Endpoint) yield() {
	r := &e.rx
	r.woke = false
	for range maxYields {
		runtime.Gosched()
		if int(e.rid.Load()-r.rid) >= r.waked {
			break
		}
	}
}

// onBatch is the link.Looper callback of w's receive loop: it handles the
// batch read and tells the link to go on reading, unless a request has been
// admitted to w (the role then passes on and w serves it).
func (e *Endpoint) onBatch(w *worker, n int) bool {
	r := &e.rx
	e.received(n)
	for r.i < r.n {
		if e.step(w) {
			w.admitted = true
			return false
		}
	}
	if r.woke {
		e.yield() // see receive
	}
	return true
}

// step handles the next frame of the ring. It returns true when a request
// has been admitted to w and the receive role passed on.
func (e *Endpoint) step(w *worker) bool {
	r := &e.rx
	i := r.i
	r.i++
	if e.epoch.Load() != r.epoch {
		e.st.dropReset.Add(uint64(r.n - i))
		if e.tracker != nil {
			for j := i; j < r.n; j++ {
				e.dropped(r.frame(j))
			}
		}
		r.i = r.n
		return false
	}
	if e.admit(w, i) {
		if e.inline {
			// RAM answers at once: serving the request here costs
			// less than waking a context to take over the receive
			// role, and nothing can arrive in the meantime that a
			// context would have had to drop as busy.
			e.respond(w)
			return false
		}
		e.lead <- struct{}{}
		return true
	}
	return false
}

// admit runs the receive checks on frame i of the ring, cheapest first. It
// handles drops, raw frames and responses itself and reports true when a
// request has been admitted to w (the frame's buffer now belongs to w).
func (e *Endpoint) admit(w *worker, i int) bool {
	r := &e.rx
	f := r.frame(i)
	cfg := e.cfg.Load()
	cls := wire.Classify(f, e.maxFrame)
	switch cls.Kind {
	case wire.KindRunt:
		e.st.dropRunt.Add(1)
		return false
	case wire.KindRaw:
		if len(f) > e.maxFrame {
			e.st.dropTooLong.Add(1) // truncated by the ring buffer: never deliver a partial frame
		} else if !admitRaw(cfg, wire.Frame(f).Dst()) {
			e.st.dropRawPolicy.Add(1)
		} else if e.raw.put(&r.bufs[i], r.toStart(i)) {
			r.woke = true // a RecvRaw caller may be waiting
			e.st.rawReceived.Add(1)
		} else {
			e.st.dropRawQueueFull.Add(1)
		}
		return false
	case wire.KindDrop:
		if cls.Problem == wire.ProblemReservedCmd {
			e.st.dropReservedCmd.Add(1)
		} else {
			e.st.dropNoRequestID.Add(1)
		}
		e.dropped(f)
		return false
	}
	fr := wire.Frame(f)
	dst := fr.Dst()
	group := dst.IsGroup()
	if group && (cfg.Group.IsZero() || dst != cfg.Group) || !group && dst != cfg.MAC {
		e.st.dropNotForUs.Add(1)
		if cls.Kind == wire.KindRequest {
			e.dropped(f)
		}
		return false
	}
	if cls.Kind == wire.KindResponse {
		e.match(f, cls, i)
		return false
	}
	// A request from here on: every drop is reported to a tracking link
	// (e.dropped); an admitted request is answered or reported by respond.
	if e.mem == nil {
		e.st.dropNoResponder.Add(1)
		e.dropped(f)
		return false
	}
	if group && !cls.Cmd.IsWrite() {
		e.st.dropGroupRead.Add(1)
		return false
	}
	pt := e.peers.Load()
	peer, ok := pt.bySrc[fr.Src()]
	if !ok {
		e.st.dropUnknownSource.Add(1)
		e.st.lastUnknown.Store(packUnknown(fr.Src(), cls.Cmd))
		e.dropped(f)
		return false
	}
	if cls.Cmd == wire.DMAReadReq && cfg.MaxReadRate > 0 && !e.reads.allow(peer, min(fr.Length(), uint32(e.maxFrame)), cfg.MaxReadRate) {
		e.st.dropReadRate.Add(1)
		e.st.lastReadRate.Store(packUnknown(fr.Src(), cls.Cmd))
		e.dropped(f)
		return false
	}
	if e.serving.Load() >= int32(cfg.Contexts) {
		e.st.dropResponderBusy.Add(1)
		e.dropped(f)
		return false
	}
	if e.ev.respPending.Load() != 0 {
		// "The DMA responder retains one pending notification and
		// defers accepting another incoming request until it is
		// admitted and committed": the busy rule, while an event of
		// the responder waits for room in the event queue.
		e.st.dropEventPending.Add(1)
		e.dropped(f)
		return false
	}
	e.serving.Add(1)
	w.buf, r.bufs[i] = r.bufs[i], w.buf
	w.off = r.offs[i]
	w.n, w.cls, w.peer, w.peerEntry, w.group, w.cfg, w.epoch = len(f), cls, peer, pt.entries[peer], group, cfg, r.epoch
	return true
}

// dropped reports the unicast request frame f, which will not be answered,
// to a link that tracks requests (link.Tracker); a group frame is never
// reported (no reliable link carries one).
func (e *Endpoint) dropped(f []byte) {
	if e.tracker != nil && len(f) >= 6 && f[0]&1 == 0 {
		e.tracker.Dropped(f)
	}
}

// match offers a received response to the initiator (initiator.deliver),
// and lets the woken initiator run before the receive loop waits in the
// link again.
func (e *Endpoint) match(f []byte, cls wire.Class, i int) {
	if e.in.deliver(f, cls) {
		e.rx.woke = true
		e.rx.waked++
	}
}

// frame returns frame i of the ring.
func (r *rxRing) frame(i int) []byte { return r.bufs[i][r.offs[i] : r.offs[i]+r.sizes[i]] }

// frame returns the request frame admitted to w.
func (w *worker) frame() []byte { return w.buf[w.off : w.off+w.n] }

// toStart moves frame i to the start of its buffer, where the raw queue
// takes it, and returns its length.
func (r *rxRing) toStart(i int) int {
	if r.offs[i] != 0 {
		copy(r.bufs[i], r.frame(i))
		r.offs[i] = 0
	}
	return r.sizes[i]
}
