// Package afpacket is a link.Link over a Linux AF_PACKET raw socket: it sends
// and receives whole Ethernet frames on one network interface.
//
// The socket is bound to one interface. A classic BPF program in the kernel
// filters received frames by destination like a NIC (own address, broadcast,
// joined groups, or everything when promiscuous), and the link never reads
// the frames its own host sends. The kernel strips a received frame's VLAN
// tag; the link reads it from PACKET_AUXDATA and puts it back, so a tagged
// frame arrives as it was on the wire (and is never answered as an untagged
// request). Frames are sent as given, without padding.
//
// IOPoll (the default) parks in the Go network poller like a net.Conn;
// IOBlocking uses blocking system calls on the caller's thread, which suits
// a process with one endpoint. Both receive with recvmmsg and send with
// sendmmsg and allocate nothing per frame. Config.HoldP keeps the runtime's
// P through a blocking receive, Config.FollowCPU moves the process to the
// CPU its frames are received on, and Config.BusyPoll polls the socket for
// a while before parking.
//
// Open needs CAP_NET_RAW; with CAP_NET_ADMIN it also forces socket buffers
// beyond rmem_max/wmem_max. docs/design/afpacket.md explains each mode, why
// it exists and what it costs.
package afpacket

import (
	"errors"
	"fmt"
	"time"

	"github.com/openenoc/oetp/wire"
)

// DefaultMaxFrame is the largest frame, in bytes without FCS, that a link
// carries unless Config.MaxFrame says otherwise: the oETP frame ceiling.
const DefaultMaxFrame = 8192

// DefaultSocketBuffer is the receive and send socket buffer size unless
// Config.SocketBuffer says otherwise.
const DefaultSocketBuffer = 4 << 20

// EtherType is oETP's EtherType, the one a link binds to by default.
const EtherType = 0x88B5

// MaxGroups is the most groups one link can join.
const MaxGroups = 256

// IOMode selects how a Link waits for its socket.
type IOMode int

const (
	// IODefault picks the faster mode measured for this package: IOPoll.
	IODefault IOMode = iota
	// IOBlocking uses blocking system calls on the caller's OS thread.
	IOBlocking
	// IOPoll uses a non-blocking socket and the Go runtime's network poller.
	IOPoll
)

// String returns "default", "blocking" or "poll".
func (m IOMode) String() string {
	switch m {
	case IODefault:
		return "default"
	case IOBlocking:
		return "blocking"
	case IOPoll:
		return "poll"
	}
	return fmt.Sprintf("IOMode(%d)", int(m))
}

// Config configures Open. The zero value binds to EtherType 0x88B5 with an
// 8192-byte frame ceiling in the default I/O mode.
type Config struct {
	// MaxFrame is the largest frame in bytes without FCS, 14 through 65549;
	// 0 means DefaultMaxFrame. Open fails if the interface's MTU + 14 is
	// smaller, and Write refuses longer frames.
	MaxFrame int
	// AllEtherTypes binds the socket to every EtherType (ETH_P_ALL), for a
	// raw receive policy, instead of 0x88B5 alone.
	AllEtherTypes bool
	// Addr overrides the link's own unicast address; the zero MAC means the
	// interface's. The link receives frames to this address only (besides
	// broadcast and joined groups), and registers it with the interface
	// (PACKET_MR_UNICAST) so a NIC accepts it.
	Addr wire.MAC
	// ExtraAddrs are further unicast addresses the link receives frames
	// for, like Addr (registered with PACKET_MR_UNICAST, accepted by the
	// filter), without being the link's own address: a tool that speaks
	// for several MACs on one socket, such as the conformance runner
	// sending from a device's peers, receives their replies without
	// promiscuous mode. At most MaxGroups.
	ExtraAddrs []wire.MAC
	// IO selects the I/O mode; IODefault means IOPoll.
	IO IOMode
	// SocketBuffer is the size of the receive and send socket buffers in
	// bytes; 0 means DefaultSocketBuffer.
	SocketBuffer int
	// BusyPoll, in IOPoll mode, makes ReadLoop keep reading the socket
	// without waiting for up to this long after the last frame it received
	// before it parks in the network poller (see "Busy polling" above).
	// 0, the default, never spins; the most is MaxBusyPoll. IOBlocking
	// mode and ReadBatch ignore it.
	BusyPoll time.Duration
	// HoldP, in IOBlocking mode, makes a blocking receive keep its
	// goroutine's processor (the Go scheduler's P) while it waits in the
	// kernel, as long as at least one other P stays free for the rest of
	// the process (see "A receive that keeps its P" above). It is meant
	// for a process with one endpoint, such as oetp serve and the
	// one-shot commands; IOPoll mode ignores it.
	HoldP bool
	// FollowCPU, in IOBlocking mode, moves the whole process (every
	// thread) to the CPU its frames are received on, among the CPUs the
	// process may use: after two receive batches in a row from one other
	// CPU, at most every 10 ms (see "Following the traffic"). It is meant
	// for a process with one endpoint that answers requests, such as
	// oetp serve, whose receive loop then runs where its client sends
	// (over veth: on the client's CPU) and is woken without a wake-up
	// across CPUs. It does nothing when the process may use one CPU
	// only; IOPoll mode ignores it.
	FollowCPU bool
}

// MaxBusyPoll is the largest Config.BusyPoll: a spin window longer than this
// only burns a CPU that a parked reader would give back.
const MaxBusyPoll = 10 * time.Millisecond

// Stats counts a link's traffic since Open.
type Stats struct {
	TxFrames uint64 // frames accepted by the kernel
	TxBytes  uint64 // bytes of those frames
	RxFrames uint64 // frames returned by ReadBatch
	RxBytes  uint64 // bytes returned by ReadBatch (after any truncation)
	// DropQueueFull counts frames for this socket that the kernel dropped
	// because the receive queue was full (PACKET_STATISTICS tp_drops): the
	// kernel drops, which no reader ever sees (oetp serve's
	// rx_kernel_drops). Stats reads the kernel's counter, which each read
	// resets, with one getsockopt(2) and adds it up here; the receive path
	// makes no system call for it.
	DropQueueFull uint64
	// BusyPolls counts the reads of an empty socket that ReadLoop made
	// while busy polling (Config.BusyPoll), each after yielding the
	// processor: the price of the spin window in system calls.
	BusyPolls uint64
	// RxTagged counts received frames with an 802.1Q or 802.1ad tag,
	// which the link put back into the frame (see "VLAN tags").
	RxTagged uint64
	// CPUMoves counts the moves of the process to the CPU its frames
	// arrive on (Config.FollowCPU).
	CPUMoves uint64
}

// ErrFrameTooLong is wrapped by the error Write and WriteBatch return for a
// frame longer than MaxFrame.
var ErrFrameTooLong = errors.New("afpacket: frame longer than MaxFrame")

// ErrFrameTooShort is wrapped by the error Write and WriteBatch return for a
// frame shorter than the 14-byte Ethernet header.
var ErrFrameTooShort = errors.New("afpacket: frame shorter than the 14-byte Ethernet header")

// maxFrame validates Config.MaxFrame and applies the default.
func (c *Config) maxFrame() (int, error) {
	switch {
	case c.MaxFrame == 0:
		return DefaultMaxFrame, nil
	case c.MaxFrame < 14 || c.MaxFrame > 65535+14:
		return 0, fmt.Errorf("afpacket: Config.MaxFrame is %d: use 14 through 65549 bytes, or 0 for %d", c.MaxFrame, DefaultMaxFrame)
	}
	return c.MaxFrame, nil
}

// busyPoll validates Config.BusyPoll.
func (c *Config) busyPoll() (time.Duration, error) {
	if c.BusyPoll < 0 || c.BusyPoll > MaxBusyPoll {
		return 0, fmt.Errorf("afpacket: Config.BusyPoll is %v: use 0 (off) through %v", c.BusyPoll, MaxBusyPoll)
	}
	return c.BusyPoll, nil
}
