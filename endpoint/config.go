package endpoint

import (
	"fmt"
	"time"

	"github.com/openenoc/oetp/wire"
)

// Mode is a peer's access mode, the mode field of a peer table entry (0..3).
// It says which requests the peer may send to this endpoint and which
// operations this endpoint may initiate towards it. DMA mirrors need
// complementary modes at the two ends: 3 at the writing side, 2 at the
// receiving side.
type Mode uint8

// The four peer modes.
const (
	// ModeNone permits nothing in either direction.
	ModeNone Mode = 0
	// ModeRMEM permits incoming RMEM reads and writes and locally initiated
	// RMEM operations.
	ModeRMEM Mode = 1
	// ModeDMAWrite permits incoming DMA writes and locally initiated DMA
	// reads (mirror remote to local).
	ModeDMAWrite Mode = 2
	// ModeDMARead permits incoming DMA reads and locally initiated DMA
	// writes (mirror local to remote).
	ModeDMARead Mode = 3
)

// String returns the mode's number and name, e.g. "3 (DMARead)".
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("%d (invalid)", uint8(m))
}

var modeNames = [...]string{ModeNone: "0 (None)", ModeRMEM: "1 (RMEM)", ModeDMAWrite: "2 (DMAWrite)", ModeDMARead: "3 (DMARead)"}

// RawPolicy selects which received non-oETP frames (another EtherType, or
// 0x88B5 without Magic 0x0E) reach RecvRaw. A frame with the oETP Magic is
// never raw, even when it is malformed.
type RawPolicy uint8

// The four raw receive policies.
const (
	// RawDrop discards every non-oETP frame.
	RawDrop RawPolicy = 0
	// RawFiltered admits frames addressed to the endpoint's unicast MAC.
	RawFiltered RawPolicy = 1
	// RawMulticast admits frames addressed to the endpoint's unicast MAC or
	// to any group address, broadcast included. The link is put in
	// promiscuous mode (when it implements link.Filter) so that groups it
	// has not joined arrive; other unicast frames are still dropped.
	RawMulticast RawPolicy = 2
	// RawPromiscuous admits every non-oETP frame the link delivers, and
	// puts the link in promiscuous mode when it implements link.Filter.
	RawPromiscuous RawPolicy = 3
)

// String returns the policy's name, e.g. "filtered".
func (p RawPolicy) String() string {
	if int(p) < len(rawPolicyNames) {
		return rawPolicyNames[p]
	}
	return fmt.Sprintf("RawPolicy(%d)", uint8(p))
}

var rawPolicyNames = [...]string{RawDrop: "drop", RawFiltered: "filtered", RawMulticast: "multicast", RawPromiscuous: "promiscuous"}

// EventEnable is the global event enable register (irq.event_enable).
type EventEnable struct {
	// PeerDMAComplete enables PEER_DMA_COMPLETE events (source 0): the
	// completion of every locally initiated DMA block, successful or not,
	// and every failed received DMA request. A peer's own Peer.EventEnable
	// must be set too.
	PeerDMAComplete bool
	// RMEMError enables RMEM_ERROR events (source 5): every failed RMEM
	// operation, initiated or received.
	RMEMError bool
}

// Defaults and limits of Config.
const (
	// DefaultRawQueue is the raw receive queue length used when
	// Config.RawQueue is zero.
	DefaultRawQueue = 64
	// DefaultEventQueue is the event queue capacity used when
	// Config.EventQueue is zero.
	DefaultEventQueue = 64
	// MaxContexts is the largest Config.Contexts.
	MaxContexts = 1024
	// MaxOutstanding is the largest Config.Outstanding.
	MaxOutstanding = 1024
	// MaxQueue is the largest Config.RawQueue and Config.EventQueue.
	MaxQueue = 1 << 16
	// MaxPeers is the number of peer table entries, indices 0..MaxPeers-1.
	MaxPeers = 256
)

// Config is the endpoint's configuration, the analogue of its CSRs. The
// zero value of every field selects the documented default, with the one
// exception described at MaxFragment.
type Config struct {
	// MAC is the endpoint's unicast address (conf.mac_address), the source
	// of every frame it sends and the unicast destination it accepts. Zero
	// selects link.Addr(). If it differs from link.Addr() the link is put in
	// promiscuous mode (when it implements link.Filter) so that frames for
	// MAC still arrive.
	MAC wire.MAC

	// Group is the group address the endpoint accepts oETP requests on
	// (conf.multicast_address). Zero disables group reception; the
	// broadcast address ff:ff:ff:ff:ff:ff makes broadcast frames
	// acceptable; no other group is ever accepted. It must be zero or a
	// group address (bit 0 of the first octet set); the link joins it when
	// it implements link.Filter.
	Group wire.MAC

	// RawPolicy selects which non-oETP frames reach RecvRaw.
	RawPolicy RawPolicy

	// RMEMTimeout bounds the wait for the response to a unicast RMEM
	// operation (conf.rmem_timeout). Zero waits forever. The value is
	// sampled when the operation is accepted.
	RMEMTimeout time.Duration

	// DMATimeout bounds the wait for the response to each unicast DMA
	// fragment (conf.dma_timeout); there is no whole-block timer. Zero
	// waits forever. The value is sampled when the fragment is accepted.
	DMATimeout time.Duration

	// MaxFrame is the frame ceiling MAX_RAW_FRAME_SIZE in bytes without
	// FCS, 36..8192. Zero selects min(8192, link.MaxFrame()). It is fixed
	// at New: SetConfig accepts only zero or the current value. Received
	// frames longer than MaxFrame (Ethernet padding included) are rejected;
	// use 60 or more on links through an Ethernet MAC, which pads short
	// frames to 60 bytes.
	MaxFrame int

	// MaxFragment is conf.dma_max_fragment_size as written: the largest
	// number of memory bytes in one locally initiated DMA fragment. It is
	// rounded down to a multiple of four; the rounded value must lie in
	// 4..the fragment ceiling 4*floor((MaxFrame-32)/4), else every new DMA
	// block is rejected with LOCAL_INVALID before anything is sent (31
	// selects 28, 7 selects 4, 0..3 are rejected). New treats 0 as the
	// reset value, the fragment ceiling; SetConfig stores the value exactly
	// as given, 0 included, like the CSR. Change other fields by starting
	// from Config(), which reports the stored value. The value is sampled
	// when a block starts.
	MaxFragment uint32

	// Contexts is the number of responder contexts: received requests
	// served at the same time. A context is busy from admission until its
	// memory access is done and its outcome recorded; it is free again
	// before its reply is handed to the link, since the initiator may send
	// its next request as soon as it has the reply. A request that arrives
	// when all are busy is dropped without a reply, without memory access,
	// and counted. Zero selects 1, like the hardware. At most MaxContexts.
	Contexts int

	// Outstanding is how many requests the initiator may have outstanding
	// at once: RMEM operations of concurrent callers, and the fragments of
	// a DMA block, which then keeps that many in flight. Zero selects 1,
	// the specification's single initiating context: the next request is
	// sent only when the current one has completed, which is what a v1
	// device expects. More is for peers reached through a transport that
	// carries several requests in flight beneath the endpoint, such as the
	// reliable transport (link/rlink, docs/reliable.md), whose window it
	// should not exceed. At most MaxOutstanding. The initiator's table is
	// sized by the value given to New; SetConfig may change it within
	// 1..that value (a change applies to requests accepted afterwards).
	Outstanding int

	// GroupInterval is the least time from handing one frame of a group
	// DMA block to the link to handing it the next. A group write has no
	// reply to pace it: a member that takes one request at a time (an
	// openENOC device has one responder context and drops a request that
	// arrives while it is busy) loses fragments sent closer together than
	// it can take them. Zero, the default, sends them back to back. The
	// value is sampled when a block starts; the calling goroutine sleeps
	// between the fragments. Negative values are refused.
	GroupInterval time.Duration

	// RawQueue is the length, in frames, of the queue read by RecvRaw; a
	// frame arriving at a full queue is dropped and counted. Zero selects
	// DefaultRawQueue. Fixed at New.
	RawQueue int

	// EventQueue is the capacity of the event queue read by NextEvent.
	// When it is full, further events coalesce per source and peer instead
	// of blocking the engine. While an event of the responder (a failed
	// received request) waits so, the responder is busy and drops new
	// requests (Stats.DropEventPending) until NextEvent makes room: read
	// the events, or disable them (Events). Zero selects
	// DefaultEventQueue. Fixed at New.
	EventQueue int

	// Events is the global event enable register.
	Events EventEnable

	// MaxReadRate bounds the DMA read data the responder sends to each
	// source MAC (each peer entry), in bytes per second: a DMA_READ_REQ
	// whose source has drawn more within the last moments (a burst of a
	// tenth of a second of the rate, at least one maximum frame, is allowed
	// after idling) is dropped without a reply and counted in
	// Stats.DropReadRate; its initiator times out and may retry. Zero, the
	// default, sets no bound. A DMA read reply is up to 292 times larger
	// than its request, so a forged request reflects that much traffic
	// towards the forged source; the bound caps it. Negative values are
	// refused.
	MaxReadRate int64

	// InitialRequestID is the value of the Request ID counter when New
	// returns: the Request ID of the first request the endpoint sends.
	// Zero, the default, starts at 0 like the specification's hard reset;
	// Reset always returns the counter to 0. SetConfig ignores the field
	// (the counter runs on) and Config reports it as given to New.
	//
	// A process that starts a new endpoint instance on a MAC that earlier
	// processes used (a one-shot command such as `oetp rmem`) should start
	// at a random value (crypto/rand): replies addressed to its MAC by a
	// peer still answering an earlier instance then carry Request IDs the
	// new instance is not waiting for, and are dropped as unmatched instead
	// of completing its operations. The oetp one-shot commands do this.
	InitialRequestID uint32
}

// resolve validates c against the link and fills in defaults. cur is the
// configuration in force (nil in New); fields fixed at New must then be
// zero or equal to it.
func resolve(c Config, linkMAC wire.MAC, linkMax int, cur *Config) (Config, error) {
	if c.MAC.IsZero() {
		c.MAC = linkMAC
	}
	if c.MAC.IsGroup() || c.MAC.IsZero() {
		return c, fmt.Errorf("endpoint: Config.MAC %v is not a unicast address; use an individual address (bit 0 of the first octet clear) such as 02:0e:0c:00:00:01, or zero for the link's address", c.MAC)
	}
	if !c.Group.IsZero() && !c.Group.IsGroup() {
		return c, fmt.Errorf("endpoint: Config.Group %v is not a group address; set bit 0 of the first octet (such as 03:0e:0c:00:00:01), use ff:ff:ff:ff:ff:ff for broadcast, or zero to disable group reception", c.Group)
	}
	if c.RawPolicy > RawPromiscuous {
		return c, fmt.Errorf("endpoint: Config.RawPolicy %d is out of range; use RawDrop, RawFiltered, RawMulticast or RawPromiscuous", uint8(c.RawPolicy))
	}
	if c.RMEMTimeout < 0 {
		return c, fmt.Errorf("endpoint: Config.RMEMTimeout %v is negative; use 0 to wait forever or a positive duration", c.RMEMTimeout)
	}
	if c.DMATimeout < 0 {
		return c, fmt.Errorf("endpoint: Config.DMATimeout %v is negative; use 0 to wait forever or a positive duration", c.DMATimeout)
	}
	if cur != nil {
		c.InitialRequestID = cur.InitialRequestID // read by New only
		if c.MaxFrame != 0 && c.MaxFrame != cur.MaxFrame {
			return c, fmt.Errorf("endpoint: Config.MaxFrame cannot change after New (it is %d); pass 0 or %d, or create a new Endpoint", cur.MaxFrame, cur.MaxFrame)
		}
		c.MaxFrame = cur.MaxFrame
	} else {
		if c.MaxFrame == 0 {
			c.MaxFrame = min(wire.MaxFrameLen, linkMax)
		}
		if err := wire.CheckMaxFrame(c.MaxFrame); err != nil {
			return c, fmt.Errorf("endpoint: Config.MaxFrame: %w", err)
		}
		if c.MaxFrame > linkMax {
			return c, fmt.Errorf("endpoint: Config.MaxFrame %d exceeds the link's MaxFrame %d; lower it or use a link that carries larger frames", c.MaxFrame, linkMax)
		}
		if c.MaxFragment == 0 {
			c.MaxFragment = wire.FragmentCeiling(c.MaxFrame)
		}
	}
	if c.Contexts == 0 {
		c.Contexts = 1
	}
	if c.Outstanding == 0 {
		c.Outstanding = 1
	}
	if c.MaxReadRate < 0 {
		return c, fmt.Errorf("endpoint: Config.MaxReadRate %d is negative; use 0 for no bound or a rate in bytes per second", c.MaxReadRate)
	}
	if c.GroupInterval < 0 {
		return c, fmt.Errorf("endpoint: Config.GroupInterval %v is negative; use 0 to send a group block's frames back to back or a positive duration", c.GroupInterval)
	}
	if c.Outstanding < 1 || c.Outstanding > MaxOutstanding {
		return c, fmt.Errorf("endpoint: Config.Outstanding %d is out of range; use 1..%d, or 0 for 1 (v1)", c.Outstanding, MaxOutstanding)
	}

	if c.Contexts < 1 || c.Contexts > MaxContexts {
		return c, fmt.Errorf("endpoint: Config.Contexts %d is out of range; use 1..%d, or 0 for 1", c.Contexts, MaxContexts)
	}
	var err error
	if c.RawQueue, err = queueLen("RawQueue", c.RawQueue, DefaultRawQueue, cur, func(k *Config) int { return k.RawQueue }); err != nil {
		return c, err
	}
	if c.EventQueue, err = queueLen("EventQueue", c.EventQueue, DefaultEventQueue, cur, func(k *Config) int { return k.EventQueue }); err != nil {
		return c, err
	}
	return c, nil
}

func queueLen(name string, v, def int, cur *Config, get func(*Config) int) (int, error) {
	if cur != nil {
		if v != 0 && v != get(cur) {
			return 0, fmt.Errorf("endpoint: Config.%s cannot change after New (it is %d); pass 0 or %d, or create a new Endpoint", name, get(cur), get(cur))
		}
		return get(cur), nil
	}
	if v == 0 {
		return def, nil
	}
	if v < 1 || v > MaxQueue {
		return 0, fmt.Errorf("endpoint: Config.%s %d is out of range; use 1..%d, or 0 for %d", name, v, MaxQueue, def)
	}
	return v, nil
}

// Peer is one entry of the peer table.
type Peer struct {
	// MAC is the peer's address: the destination of operations initiated
	// towards it, and the source address that identifies its requests. A
	// MAC may appear in several entries, as in the openENOC peer table: a
	// received request is checked against the lowest-index entry with its
	// source MAC whose Mode is not ModeNone (the others serve operations
	// initiated towards it). A group address, typically in several entries
	// (say one in ModeRMEM and one in ModeDMARead) for outgoing group
	// writes, never matches a received source. The zero MAC marks an
	// unused entry.
	MAC wire.MAC
	// Mode is the peer's access mode. An entry in ModeNone is disabled,
	// like the hardware's: it never matches a received source, so a
	// request from its MAC is dropped without a reply and counted in
	// Stats.DropUnknownSource (DisabledPeer tells the two apart).
	Mode Mode
	// WindowBase and WindowSize are the local window [WindowBase,
	// WindowBase+WindowSize) that the peer's requests may access; the
	// whole requested range must lie inside it. WindowBase+WindowSize must
	// not exceed 2^32. The window constrains received requests only;
	// operations initiated towards the peer use final remote addresses,
	// which the peer checks against its own window.
	WindowBase uint32
	WindowSize uint64
	// EventEnable is the peer's dma.irq_enable: PEER_DMA_COMPLETE events
	// for this peer need it and the global enable.
	EventEnable bool
}

// PeerStatus is a peer's latched error record (dma.error, dma.error_code).
// It reports the most recent failure of any operation with that peer,
// initiated or received; successes leave it unchanged.
type PeerStatus struct {
	Error bool
	Code  wire.Code
}

// peerTable is an immutable snapshot of the peer table.
type peerTable struct {
	entries [MaxPeers]Peer
	// bySrc maps the unicast MAC of every enabled entry (Mode not
	// ModeNone) to the lowest such index, the entry that serves its
	// requests, as the openENOC peer lookup picks the lowest enabled
	// index that matches.
	bySrc map[wire.MAC]int
	// disabled maps a unicast MAC that only disabled entries (ModeNone)
	// hold to the lowest of them: its requests are dropped as from an
	// unknown source, and DisabledPeer tells a log why.
	disabled map[wire.MAC]int
}

func (t *peerTable) with(i int, p Peer) *peerTable {
	n := &peerTable{entries: t.entries, bySrc: make(map[wire.MAC]int, len(t.bySrc)+1), disabled: map[wire.MAC]int{}}
	n.entries[i] = p
	for j := len(n.entries) - 1; j >= 0; j-- { // downwards: the lowest index is stored last
		m := n.entries[j].MAC
		if m.IsZero() || m.IsGroup() {
			continue
		}
		if n.entries[j].Mode == ModeNone {
			n.disabled[m] = j
		} else {
			n.bySrc[m] = j
		}
	}
	for m := range n.bySrc {
		delete(n.disabled, m)
	}
	return n
}

func checkPeer(i int, p Peer) error {
	if i < 0 || i >= MaxPeers {
		return fmt.Errorf("endpoint: peer index %d is out of range; use 0..%d", i, MaxPeers-1)
	}
	if p.Mode > ModeDMARead {
		return fmt.Errorf("endpoint: peer %d: Mode %d is out of range; use ModeNone, ModeRMEM, ModeDMAWrite or ModeDMARead", i, uint8(p.Mode))
	}
	if p.MAC.IsZero() {
		if p != (Peer{}) {
			return fmt.Errorf("endpoint: peer %d: MAC is zero but other fields are set; give the peer's MAC, or pass Peer{} to clear the entry", i)
		}
		return nil
	}
	if end := uint64(p.WindowBase) + p.WindowSize; end > 1<<32 {
		return fmt.Errorf("endpoint: peer %d: window %#x + %#x ends at %#x, past the 32-bit address space; WindowBase+WindowSize must be at most 0x100000000", i, p.WindowBase, p.WindowSize, end)
	}
	return nil
}
