// Package mem is an in-process Ethernet switch: ports attached to one Switch
// exchange whole frames through memory, with no sockets and no privileges.
//
// A Port behaves like a NIC on a store-and-forward switch. It implements
// link.Link and link.Filter: a unicast frame goes to the port that owns the
// destination MAC, a group frame to the ports that joined the group,
// broadcast to every port, every frame to promiscuous ports, and never back
// to its sender. Write copies the frame into a MaxFrame-sized slot of each
// receiver's bounded queue (slots are allocated on first use and reused from
// then on), so the caller may reuse its buffer at once; a frame that finds a
// full queue is dropped and counted, like a NIC ring overflow. WriteFill
// (link.FillWriter) builds a unicast frame straight in the receiver's slot,
// its data written there by the caller, so a payload is copied once.
//
// The switch can model a slow link (Config.Latency, Config.Bandwidth) and
// inject faults (AddRule, SetLoss) with a seeded random source, so tests of
// loss, truncation, corruption, duplication, delay and reordering are
// reproducible. Faults act once per written frame, at the switch ingress,
// before the frame is fanned out to its receivers.
//
// In steady state the frame path (Write, WriteBatch, WriteFill, ReadBatch,
// ReadLoop) allocates nothing; only the fault path does.
package mem

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openenoc/oetp/wire"
)

// DefaultMaxFrame is the MaxFrame used when Config.MaxFrame is zero: the
// oETP v1 frame ceiling of 8192 bytes without FCS.
const DefaultMaxFrame = 8192

// DefaultQueueLen is the per-port receive queue length, in frames, used when
// Config.QueueLen is zero.
const DefaultQueueLen = 256

const (
	headerLen   = 14 // destination MAC, source MAC, EtherType
	maxMaxFrame = 1 << 20
	maxQueueLen = 1 << 16
)

// ErrFrameTooLong is wrapped by the error Write returns for a frame longer
// than the switch's MaxFrame; the frame is not sent.
var ErrFrameTooLong = errors.New("mem: frame longer than MaxFrame")

// ErrFrameTooShort is wrapped by the error Write returns for a frame shorter
// than the 14-byte Ethernet header; the frame is not sent.
var ErrFrameTooShort = errors.New("mem: frame shorter than the 14-byte Ethernet header")

// ErrAddrInUse is wrapped by the error Attach returns for a MAC address that
// is already attached to the switch.
var ErrAddrInUse = errors.New("mem: MAC address already attached")

// ErrNotUnicast is wrapped by the error Attach returns for a group or zero
// MAC address; a port's own address must be an individual address.
var ErrNotUnicast = errors.New("mem: port address must be a nonzero unicast MAC")

// Config sets up a Switch. The zero Config is valid: 8192-byte frames,
// 256-frame queues, no latency, unlimited bandwidth, seed 0.
type Config struct {
	// MaxFrame is the largest frame, in bytes without FCS, that the switch
	// carries (an MTU + 14). Zero selects DefaultMaxFrame. Write refuses
	// longer frames with an error wrapping ErrFrameTooLong.
	MaxFrame int

	// QueueLen is each port's receive queue length in frames. Zero selects
	// DefaultQueueLen. A frame arriving at a full queue is dropped and
	// counted in the receiver's Stats.DropQueueFull.
	QueueLen int

	// Latency is the optional one-way delay between Write and the frame
	// becoming readable at the receivers. Write does not wait for it.
	Latency time.Duration

	// Bandwidth, if positive, is the sender's egress rate in bytes per
	// second: each frame occupies the sender's link for len(frame) /
	// Bandwidth seconds after the previous frame from that port, and
	// becomes readable when its last byte has left (plus Latency). Write
	// still returns as soon as the frame is accepted. Zero means unlimited.
	Bandwidth int64

	// Seed seeds the random source used by probabilistic faults (Rule.Prob
	// and SetLoss); the same seed and the same sequence of frames give the
	// same faults.
	Seed int64
}

// Stats counts frames and bytes at a port, or summed over a switch's ports.
type Stats struct {
	// TxFrames is the number of frames accepted by Write, including frames
	// that faults later dropped.
	TxFrames uint64
	// TxBytes is the number of bytes in the TxFrames frames.
	TxBytes uint64
	// RxFrames is the number of frames handed to the reader by ReadBatch.
	RxFrames uint64
	// RxBytes is the number of bytes in the RxFrames frames, as delivered
	// (after any truncation fault, before truncation to a short buffer).
	RxBytes uint64
	// DropQueueFull counts frames for this port that found its receive
	// queue full.
	DropQueueFull uint64
	// DropTooLong counts frames Write refused for exceeding MaxFrame.
	DropTooLong uint64
	// DropTooShort counts frames Write refused for lacking a full header.
	DropTooShort uint64
	// DropFault counts frames this port sent that a Drop rule or SetLoss
	// discarded.
	DropFault uint64
}

// Switch is an in-process Ethernet switch. Its methods are safe for
// concurrent use.
type Switch struct {
	cfg   Config
	epoch time.Time

	// table is the delivery table, rebuilt under mu whenever membership
	// changes and read without locks by Write.
	table atomic.Pointer[table]
	// faulty is true while rules, loss or held frames exist; Write then
	// takes the fault path.
	faulty atomic.Bool

	mu      sync.Mutex // guards ports, history and every Port's groups/promisc
	ports   map[wire.MAC]*Port
	history []*Port // every port ever attached, for Stats

	fmu   sync.Mutex // guards rules, loss, rng and held
	rules []*ruleState
	loss  float64
	rng   *rand.Rand
	held  []heldFrame
}

// table maps a destination MAC to the ports that receive it. Every slice
// already includes the promiscuous ports and is sorted by MAC.
type table struct {
	all     []*Port
	promisc []*Port
	dest    map[wire.MAC][]*Port
}

// NewSwitch returns an empty switch configured by cfg, or an error naming
// the Config field that is out of range.
func NewSwitch(cfg Config) (*Switch, error) {
	switch {
	case cfg.MaxFrame == 0:
		cfg.MaxFrame = DefaultMaxFrame
	case cfg.MaxFrame < headerLen || cfg.MaxFrame > maxMaxFrame:
		return nil, fmt.Errorf("mem: Config.MaxFrame is %d: want 0 (default %d) or %d..%d bytes",
			cfg.MaxFrame, DefaultMaxFrame, headerLen, maxMaxFrame)
	}
	switch {
	case cfg.QueueLen == 0:
		cfg.QueueLen = DefaultQueueLen
	case cfg.QueueLen < 1 || cfg.QueueLen > maxQueueLen:
		return nil, fmt.Errorf("mem: Config.QueueLen is %d: want 0 (default %d) or 1..%d frames",
			cfg.QueueLen, DefaultQueueLen, maxQueueLen)
	}
	if cfg.Latency < 0 {
		return nil, fmt.Errorf("mem: Config.Latency is %v: want 0 (none) or a positive duration", cfg.Latency)
	}
	if cfg.Bandwidth < 0 {
		return nil, fmt.Errorf("mem: Config.Bandwidth is %d: want 0 (unlimited) or positive bytes per second", cfg.Bandwidth)
	}
	sw := &Switch{
		cfg:   cfg,
		epoch: time.Now(),
		ports: make(map[wire.MAC]*Port),
		rng:   rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6f657470)),
	}
	sw.table.Store(&table{dest: map[wire.MAC][]*Port{}})
	return sw, nil
}

// MaxFrame is the largest frame, in bytes without FCS, the switch carries.
func (sw *Switch) MaxFrame() int { return sw.cfg.MaxFrame }

// Attach connects a new port with unicast address mac. It refuses a group or
// zero address and an address that is already attached. The port receives
// frames addressed to mac and to broadcast until it is closed.
func (sw *Switch) Attach(mac wire.MAC) (*Port, error) {
	if mac.IsGroup() {
		return nil, fmt.Errorf("%w: %v is a group address (I/G bit set); use an individual address such as 02:00:00:00:00:01",
			ErrNotUnicast, mac)
	}
	if mac.IsZero() {
		return nil, fmt.Errorf("%w: %v is the zero address; use an individual address such as 02:00:00:00:00:01",
			ErrNotUnicast, mac)
	}
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if _, ok := sw.ports[mac]; ok {
		return nil, fmt.Errorf("%w: %v; close the other port or choose another address", ErrAddrInUse, mac)
	}
	p := newPort(sw, mac)
	sw.ports[mac] = p
	sw.history = append(sw.history, p)
	sw.rebuild()
	return p, nil
}

// Stats returns the counters summed over every port ever attached,
// including closed ones.
func (sw *Switch) Stats() Stats {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	var s Stats
	for _, p := range sw.history {
		ps := p.Stats()
		s.TxFrames += ps.TxFrames
		s.TxBytes += ps.TxBytes
		s.RxFrames += ps.RxFrames
		s.RxBytes += ps.RxBytes
		s.DropQueueFull += ps.DropQueueFull
		s.DropTooLong += ps.DropTooLong
		s.DropTooShort += ps.DropTooShort
		s.DropFault += ps.DropFault
	}
	return s
}

// detach removes p from the delivery table.
func (sw *Switch) detach(p *Port) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.ports[p.mac] == p {
		delete(sw.ports, p.mac)
		sw.rebuild()
	}
}

// rebuild publishes a new delivery table. sw.mu must be held.
func (sw *Switch) rebuild() {
	t := &table{dest: make(map[wire.MAC][]*Port)}
	for _, p := range sw.ports {
		t.all = append(t.all, p)
	}
	slices.SortFunc(t.all, func(a, b *Port) int { return bytes.Compare(a.mac[:], b.mac[:]) })
	for _, p := range t.all {
		if p.promisc {
			t.promisc = append(t.promisc, p)
		}
	}
	members := make(map[wire.MAC][]*Port)
	for _, p := range t.all {
		members[p.mac] = append(members[p.mac], p)
		for g := range p.groups {
			members[g] = append(members[g], p)
		}
	}
	for mac, ps := range members {
		// Union of members and promiscuous ports, in MAC order, no repeats.
		u := append(slices.Clone(ps), t.promisc...)
		slices.SortFunc(u, func(a, b *Port) int { return bytes.Compare(a.mac[:], b.mac[:]) })
		t.dest[mac] = slices.Compact(u)
	}
	sw.table.Store(t)
}

// deliver copies b, addressed to dst, into the queue of every port that
// receives dst, except from. at is when the frame becomes readable (0 for
// at once).
func (sw *Switch) deliver(from *Port, dst wire.MAC, b []byte, at int64) {
	for _, q := range sw.receivers(dst) {
		if q != from {
			q.enqueue(b, at)
		}
	}
}

// receivers returns the ports that receive a frame to dst, its sender
// among them if it is one (the caller skips it).
func (sw *Switch) receivers(dst wire.MAC) []*Port {
	t := sw.table.Load()
	if dst.IsBroadcast() {
		return t.all
	}
	if d, ok := t.dest[dst]; ok {
		return d
	}
	return t.promisc
}

// now is the switch clock in nanoseconds; it is never 0, which marks a frame
// readable at once.
func (sw *Switch) now() int64 { return int64(time.Since(sw.epoch)) + 1 }
