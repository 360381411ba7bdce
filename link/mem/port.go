package mem

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/wire"
)

var (
	_ link.Link   = (*Port)(nil)
	_ link.Filter = (*Port)(nil)
	_ link.Looper = (*Port)(nil)

	_ link.FillWriter = (*Port)(nil)
)

var errNoBufs = errors.New("mem: ReadBatch needs at least one buffer in bufs")

// Port is one attachment to a Switch, with its own unicast MAC address. It
// implements link.Link, link.Filter, link.Looper (whose ReadLoop hands
// over queued frames without copying them) and link.FillWriter (whose
// WriteFill lets the writer fill a frame's data straight into the receiving
// port's queue slot). It is safe for concurrent use; concurrent ReadBatch
// calls take turns.
type Port struct {
	sw  *Switch
	mac wire.MAC
	max int

	// groups and promisc are guarded by sw.mu.
	groups  map[wire.MAC]struct{}
	promisc bool

	closed atomic.Bool
	done   chan struct{} // closed by Close
	notify chan struct{} // one wake-up token for a waiting reader

	txMu   sync.Mutex
	txFree int64 // switch time at which the egress is idle; guarded by txMu

	// The receive queue, guarded by mu. q is a ring of entries ordered by
	// readable time (FIFO among equal times); each entry names a slot of
	// max bytes. Slots are allocated on first use and then reused; a slot
	// reserved by a WriteFill of another port is being filled, outside
	// the lock, and counts against the queue. So count + reserved +
	// len(free) == len(slots) <= len(q) until Close.
	mu       sync.Mutex
	q        []entry
	head     int
	count    int
	reserved int
	slots    [][]byte
	free     []int32
	waiting  bool // a reader is about to block on notify

	readMu sync.Mutex  // serialises readers
	timer  *time.Timer // guarded by readMu

	st counters
}

// entry is one queued frame: slot[:n], readable from switch time at.
type entry struct {
	slot int32
	n    int32
	at   int64
}

type counters struct {
	txFrames, txBytes, rxFrames, rxBytes                atomic.Uint64
	dropQueueFull, dropTooLong, dropTooShort, dropFault atomic.Uint64
}

func newPort(sw *Switch, mac wire.MAC) *Port {
	n := sw.cfg.QueueLen
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Port{
		sw:     sw,
		mac:    mac,
		max:    sw.cfg.MaxFrame,
		groups: make(map[wire.MAC]struct{}),
		done:   make(chan struct{}),
		notify: make(chan struct{}, 1),
		q:      make([]entry, n),
		slots:  make([][]byte, 0, n),
		free:   make([]int32, 0, n),
		timer:  t,
	}
}

// Addr is the port's own unicast MAC address.
func (p *Port) Addr() wire.MAC { return p.mac }

// MaxFrame is the largest frame, in bytes without FCS, the switch carries.
func (p *Port) MaxFrame() int { return p.max }

// Write copies frame to every port that receives its destination address
// (bytes 0..5) and returns; frame may be reused at once. It refuses a frame
// longer than MaxFrame (ErrFrameTooLong) or shorter than an Ethernet header
// (ErrFrameTooShort), and returns link.ErrClosed after Close. A frame that is
// lost to a full queue or a fault is still accepted: Write returns nil, as a
// NIC would.
func (p *Port) Write(frame []byte) error {
	if p.closed.Load() {
		return link.ErrClosed
	}
	if len(frame) > p.max {
		p.st.dropTooLong.Add(1)
		return fmt.Errorf("%w: %d bytes, MaxFrame is %d; split the payload or raise Config.MaxFrame",
			ErrFrameTooLong, len(frame), p.max)
	}
	if len(frame) < headerLen {
		p.st.dropTooShort.Add(1)
		return fmt.Errorf("%w: %d bytes", ErrFrameTooShort, len(frame))
	}
	p.st.txFrames.Add(1)
	p.st.txBytes.Add(uint64(len(frame)))
	at := p.departure(len(frame))
	if p.sw.faulty.Load() {
		p.sw.faultWrite(p, frame, at)
		return nil
	}
	p.sw.deliver(p, wire.MAC(frame[:6]), frame, at)
	return nil
}

// WriteBatch writes frames in order, as Write does, and returns how many were
// accepted; it stops at the first error.
func (p *Port) WriteBatch(frames [][]byte) (int, error) {
	for i, f := range frames {
		if err := p.Write(f); err != nil {
			return i, err
		}
	}
	return len(frames), nil
}

// departure returns the switch time at which a frame of n bytes written now
// becomes readable, or 0 for at once.
func (p *Port) departure(n int) int64 {
	cfg := &p.sw.cfg
	if cfg.Bandwidth == 0 {
		if cfg.Latency == 0 {
			return 0
		}
		return p.sw.now() + int64(cfg.Latency)
	}
	ser := int64(n) * int64(time.Second) / cfg.Bandwidth
	p.txMu.Lock()
	start := max(p.sw.now(), p.txFree)
	p.txFree = start + ser
	end := p.txFree
	p.txMu.Unlock()
	return end + int64(cfg.Latency)
}

// enqueue copies b into a free slot, readable from switch time at, or counts
// a queue-full drop.
func (p *Port) enqueue(b []byte, at int64) {
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		return
	}
	if p.count+p.reserved == len(p.q) {
		p.mu.Unlock()
		p.st.dropQueueFull.Add(1)
		return
	}
	s := p.takeSlotLocked()
	n := copy(p.slots[s], b)
	wake := p.pushLocked(s, n, at)
	p.mu.Unlock()
	if wake {
		p.wake()
	}
}

// takeSlotLocked takes a free slot, allocating it on first use. The queue
// has room. p.mu is held.
func (p *Port) takeSlotLocked() int32 {
	if k := len(p.free); k > 0 {
		s := p.free[k-1]
		p.free = p.free[:k-1]
		return s
	}
	p.slots = append(p.slots, make([]byte, p.max))
	return int32(len(p.slots) - 1)
}

// pushLocked queues slot s holding an n-byte frame readable from switch
// time at, after every entry readable no later than at, and reports
// whether a waiting reader must be woken. p.mu is held; the queue has room.
func (p *Port) pushLocked(s int32, n int, at int64) (wake bool) {
	qn := len(p.q)
	i := p.count
	for i > 0 {
		prev := p.q[(p.head+i-1)%qn]
		if prev.at <= at {
			break
		}
		p.q[(p.head+i)%qn] = prev
		i--
	}
	p.q[(p.head+i)%qn] = entry{slot: s, n: int32(n), at: at}
	p.count++
	wake = p.waiting
	p.waiting = false
	return wake
}

// wake gives the waiting reader its token.
func (p *Port) wake() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// WriteFill writes frame as Write does, with its data frame[at:at+m]
// written by fill (link.FillWriter). A unicast frame for one other port,
// while no fault is set, is built straight in a slot of that port's queue:
// the bytes around the data are copied from frame, fill writes the data into
// the slot, and the slot is queued as Write would queue a copy; the data
// is copied once, by fill. The slot is reserved before fill runs and fill
// runs without the port's lock, so a slow fill delays no reader. Every
// other frame (a group or unknown destination, a fault, a full queue, a
// refused length, a closed port) is filled into frame and takes Write's
// path, with Write's counts and errors. fill is called exactly once; when
// it returns false nothing is written and WriteFill returns false, nil.
func (p *Port) WriteFill(frame []byte, at, m int, fill func(data []byte) bool) (bool, error) {
	data := frame[at : at+m]
	if q := p.fillTarget(frame); q != nil {
		if s, slot, ok := q.reserve(); ok {
			n := len(frame)
			copy(slot[:at], frame[:at])
			if !fill(slot[at : at+m]) {
				q.unreserve(s)
				return false, nil
			}
			copy(slot[at+m:n], frame[at+m:])
			p.st.txFrames.Add(1)
			p.st.txBytes.Add(uint64(n))
			q.publish(s, n, p.departure(n))
			return true, nil
		}
	}
	if !fill(data) {
		return false, nil
	}
	return true, p.Write(frame)
}

// fillTarget returns the one port that receives frame when Write would
// deliver it without a fault to exactly one other port, or nil.
func (p *Port) fillTarget(frame []byte) *Port {
	if p.closed.Load() || len(frame) > p.max || len(frame) < headerLen || p.sw.faulty.Load() {
		return nil
	}
	dst := wire.MAC(frame[:6])
	if dst.IsBroadcast() {
		return nil
	}
	var to *Port
	for _, q := range p.sw.receivers(dst) {
		if q == p {
			continue
		}
		if to != nil {
			return nil
		}
		to = q
	}
	return to
}

// reserve takes a free slot of the queue for a frame being filled, if the
// port is open and the queue has room.
func (p *Port) reserve() (int32, []byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() || p.count+p.reserved == len(p.q) {
		return 0, nil, false
	}
	s := p.takeSlotLocked()
	p.reserved++
	return s, p.slots[s], true
}

// unreserve gives back a reserved slot whose frame was cancelled.
func (p *Port) unreserve(s int32) {
	p.mu.Lock()
	p.reserved--
	if !p.closed.Load() {
		p.free = append(p.free, s)
	}
	p.mu.Unlock()
}

// publish queues the n-byte frame filled into reserved slot s, readable
// from switch time at; a port closed meanwhile discards it.
func (p *Port) publish(s int32, n int, at int64) {
	p.mu.Lock()
	p.reserved--
	if p.closed.Load() {
		p.mu.Unlock()
		return
	}
	wake := p.pushLocked(s, n, at)
	p.mu.Unlock()
	if wake {
		p.wake()
	}
}

// ReadBatch blocks until at least one frame is readable, then copies up to
// len(bufs) readable frames into bufs without waiting for more:
// bufs[i][:sizes[i]] is frame i. A frame longer than its buffer is truncated
// to it. sizes must be at least as long as bufs. It returns link.ErrClosed
// once the port is closed.
func (p *Port) ReadBatch(bufs [][]byte, sizes []int) (int, error) {
	if len(bufs) == 0 {
		return 0, errNoBufs
	}
	if len(sizes) < len(bufs) {
		return 0, fmt.Errorf("mem: ReadBatch got %d sizes for %d bufs; make sizes at least as long as bufs",
			len(sizes), len(bufs))
	}
	p.readMu.Lock()
	defer p.readMu.Unlock()
	return p.read(bufs, sizes, false)
}

// ReadLoop reads like ReadBatch and calls batch(n) for each batch, until
// batch returns false (then it returns nil) or the port is closed
// (link.ErrClosed). It does not copy a frame into a buffer at least
// MaxFrame bytes long: it hands over the queue slot that holds the frame
// and keeps the buffer as a slot in its place (link.Looper allows the
// buffers of bufs to be replaced), so bufs[i] may come back as another
// slice of MaxFrame bytes. A shorter buffer gets a copy, truncated to it.
func (p *Port) ReadLoop(bufs [][]byte, sizes []int, batch func(n int) bool) error {
	if len(bufs) == 0 {
		return errNoBufs
	}
	if len(sizes) < len(bufs) {
		return fmt.Errorf("mem: ReadLoop got %d sizes for %d bufs; make sizes at least as long as bufs",
			len(sizes), len(bufs))
	}
	for {
		p.readMu.Lock()
		n, err := p.read(bufs, sizes, true)
		p.readMu.Unlock()
		if err != nil {
			return err
		}
		if !batch(n) {
			return nil
		}
	}
}

// read waits for readable frames and moves up to len(bufs) of them into
// bufs: by swapping a buffer of at least MaxFrame bytes with the frame's
// slot when swap is set, by copying otherwise. The caller holds readMu.
func (p *Port) read(bufs [][]byte, sizes []int, swap bool) (int, error) {
	for {
		p.mu.Lock()
		if p.closed.Load() {
			p.mu.Unlock()
			return 0, link.ErrClosed
		}
		p.waiting = false
		var now int64
		var n, nb int
		qn := len(p.q)
		for n < len(bufs) && p.count > 0 {
			e := p.q[p.head]
			if e.at != 0 {
				if now == 0 {
					now = p.sw.now()
				}
				if e.at > now {
					break
				}
			}
			if slot := p.slots[e.slot]; swap && len(bufs[n]) >= p.max {
				// The buffer becomes the slot, MaxFrame bytes of it.
				p.slots[e.slot] = bufs[n][:p.max:p.max]
				bufs[n] = slot
				sizes[n] = int(e.n)
			} else {
				sizes[n] = copy(bufs[n], slot[:e.n])
			}
			nb += int(e.n)
			p.free = append(p.free, e.slot)
			p.head = (p.head + 1) % qn
			p.count--
			n++
		}
		var wait int64
		if n == 0 {
			p.waiting = true
			if p.count > 0 {
				wait = p.q[p.head].at - now
			}
		}
		p.mu.Unlock()
		if n > 0 {
			p.st.rxFrames.Add(uint64(n))
			p.st.rxBytes.Add(uint64(nb))
			return n, nil
		}
		if wait > 0 {
			p.timer.Reset(time.Duration(wait))
			select {
			case <-p.notify:
			case <-p.done:
			case <-p.timer.C:
			}
			p.timer.Stop()
		} else {
			select {
			case <-p.notify:
			case <-p.done:
			}
		}
	}
}

// Close detaches the port from the switch, discards its queued frames and
// unblocks ReadBatch, which then returns link.ErrClosed. Closing a closed
// port does nothing and returns nil.
func (p *Port) Close() error {
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		return nil
	}
	p.closed.Store(true)
	close(p.done)
	p.count = 0
	p.slots = nil
	p.free = nil
	p.mu.Unlock()
	p.sw.detach(p)
	return nil
}

// JoinGroup makes the port receive frames addressed to the group MAC mac.
// Joining twice is the same as joining once. It refuses an individual
// address and returns link.ErrClosed after Close.
func (p *Port) JoinGroup(mac wire.MAC) error {
	if !mac.IsGroup() {
		return fmt.Errorf("mem: JoinGroup %v: not a group address (I/G bit clear); a group MAC has bit 0 of the first octet set, such as 01:00:5e:00:00:01", mac)
	}
	p.sw.mu.Lock()
	defer p.sw.mu.Unlock()
	if p.closed.Load() {
		return link.ErrClosed
	}
	p.groups[mac] = struct{}{}
	p.sw.rebuild()
	return nil
}

// LeaveGroup stops the port receiving frames addressed to the group MAC mac
// (broadcast is always received). Leaving a group not joined does nothing.
func (p *Port) LeaveGroup(mac wire.MAC) error {
	if !mac.IsGroup() {
		return fmt.Errorf("mem: LeaveGroup %v: not a group address (I/G bit clear)", mac)
	}
	p.sw.mu.Lock()
	defer p.sw.mu.Unlock()
	if p.closed.Load() {
		return link.ErrClosed
	}
	if _, ok := p.groups[mac]; ok {
		delete(p.groups, mac)
		p.sw.rebuild()
	}
	return nil
}

// SetPromiscuous turns promiscuous mode on or off: a promiscuous port
// receives every frame on the switch except its own.
func (p *Port) SetPromiscuous(on bool) error {
	p.sw.mu.Lock()
	defer p.sw.mu.Unlock()
	if p.closed.Load() {
		return link.ErrClosed
	}
	if p.promisc != on {
		p.promisc = on
		p.sw.rebuild()
	}
	return nil
}

// Stats returns the port's counters.
func (p *Port) Stats() Stats {
	return Stats{
		TxFrames:      p.st.txFrames.Load(),
		TxBytes:       p.st.txBytes.Load(),
		RxFrames:      p.st.rxFrames.Load(),
		RxBytes:       p.st.rxBytes.Load(),
		DropQueueFull: p.st.dropQueueFull.Load(),
		DropTooLong:   p.st.dropTooLong.Load(),
		DropTooShort:  p.st.dropTooShort.Load(),
		DropFault:     p.st.dropFault.Load(),
	}
}
