// Package afpacket is a link.Link over a Linux AF_PACKET raw socket: it sends
// and receives whole Ethernet frames on one network interface.
//
// The socket is bound to one interface and receives, by default, EtherType
// 0x88B5 (oETP) only; Config.AllEtherTypes makes it receive every EtherType
// for a raw receive policy. The link filters received frames by destination like a NIC, in a
// classic BPF program inside the kernel: it delivers frames to its own
// address (Addr), to broadcast, and to the groups it joined, or everything in
// promiscuous mode. A veth or a bridge port delivers every frame it sees,
// whatever its destination, so without this filter a socket would receive
// other hosts' unicast and unjoined groups. Group membership and promiscuous
// mode are also registered with the kernel (PACKET_ADD_MEMBERSHIP) so a real
// NIC's hardware filter lets the frames in; they end with the socket. The
// link never reads frames its own host transmits, which an ETH_P_ALL socket
// would otherwise see (PACKET_IGNORE_OUTGOING, or the BPF filter on kernels
// older than 4.20).
//
// # VLAN tags
//
// The kernel takes the outermost 802.1Q or 802.1ad tag out of a received
// frame before any packet socket sees it (a socket bound to one EtherType
// even gets the frame with the tag dropped, indistinguishable from an
// untagged one). The link therefore binds to every EtherType, filters in
// its BPF program, and reads the tag from each frame's PACKET_AUXDATA
// (tp_vlan_tci, tp_vlan_tpid, TP_STATUS_VLAN_VALID): it puts the tag back
// at offset 12, so a tagged frame arrives exactly as it was on the wire,
// 4 bytes longer, and Stats.RxTagged counts it. VLAN tags are outside oETP
// v1: to the endpoint a tagged frame is not oETP (its EtherType is 0x8100
// or 0x88A8) and goes to the raw receive policy; it is never answered as an
// untagged request. Without Config.AllEtherTypes only tagged frames whose
// inner EtherType is 0x88B5 arrive (counted and dropped by the endpoint's
// raw policy); a second, inner tag is left in the frame as the kernel
// delivers it.
//
// Frames are sent as given: the kernel does not pad short frames on veth,
// while a real NIC pads them to 60 bytes, so receivers may see either.
//
// # I/O modes
//
// IOPoll (the default) uses a non-blocking socket registered with the Go
// runtime's network poller, like a net.Conn: a ReadBatch waiting for frames
// parks its goroutine, not an OS thread, and Close wakes it at once. It sends
// on a second socket that receives nothing, so that the write-space signal
// the kernel raises for every sent frame does not wake the network poller
// for nothing (which cost about 1 µs per round trip).
//
// IOBlocking uses blocking system calls on the caller's OS thread. The
// receive and send timeouts (SO_RCVTIMEO/SO_SNDTIMEO, 50 ms) bound a
// blocked call should Close fail to interrupt it (Close signals the
// process's threads, see Link.Close); an arriving frame wakes the reader at
// once.
//
// In both modes ReadBatch calls recvmmsg(2) with MSG_WAITFORONE (read(2) for
// one buffer) and WriteBatch sendmmsg(2) (write(2) for one frame), so a
// single frame never waits for a batch to fill, and neither allocates.
//
// ReadLoop (link.Looper), which the endpoint uses, hands batches to a
// callback while it keeps waiting. In IOPoll mode that saves a system call
// per wake-up: ReadBatch must read the empty socket once more before it may
// park (the poller forgets readiness at the start of each wait), while
// ReadLoop parks straight after a recvmmsg that came back short, which
// means the socket was empty, and any frame after that raises a new
// readiness event. Over veth with the engine on one CPU: RMEM read p50 about
// 1.30× the raw ping-pong instead of 1.48×, DMA +5–15 %.
//
// Ping-pong round trip between two namespaces over veth (h1 writes, h2
// echoes, h1 reads), 2 vCPUs shared with other work. BenchmarkModes
// alternates chunks of 100 round trips between the modes so that load hits
// both alike; ranges of the median over 6 runs of
// `go test -run '^$' -bench Modes -benchtime 300x -count 2 ./link/afpacket`:
//
//	frame        IOPoll           IOBlocking
//	24 bytes      9.8 - 10.2 µs    9.7 - 12.8 µs
//	8192 bytes   14.0 - 14.4 µs   14.0 - 21.8 µs
//
// At best the modes tie; IOBlocking is often slower because a thread that
// sleeps in a system call can lose its scheduler P and must win one back on
// wake-up, which IOPoll never needs. That holds for several readers in one
// process; a process with one endpoint (oetp serve, the one-shot commands)
// is better served by IOBlocking, which the oetp command picks for them
// unless they busy-poll: one recvmmsg per frame received, where IOPoll adds
// about two epoll_pwait, and 15–60 % more DMA MB/s between two processes
// (BENCHMARKS.md, the proc rows). Locking the reader's OS thread made no
// measurable difference. One-way streaming of 1024-byte frames
// (BenchmarkThroughput) favours IOBlocking slightly: 2.6 against 3.1 µs per
// frame written one at a time, 2.4 against 2.6 µs in batches of 32.
//
// # A receive that keeps its P
//
// A blocking receive tells the Go runtime that it enters a system call
// that may block (entersyscall): its processor, the P that runs
// goroutines, stays with the thread, but the runtime's monitor (sysmon)
// may take it away when the call lasts longer than one of its ticks and
// another goroutine is waiting or no other P is idle, and the thread must
// then win a P back when the frame arrives (exitsyscall's slow path).
// The monitor itself then keeps waking every 20 µs to look, since a P it
// took resets its back-off. Between two processes over veth each side saw
// about 0.1 monitor wake-ups per fragment of a DMA block, and one in 25
// fragments found its P gone: a wake-up of a sleeping thread costs several
// µs of CPU on this VM.
//
// With Config.HoldP an IOBlocking receive is a raw system call that the
// runtime does not see: the goroutine counts as running while its thread
// sleeps in the kernel, so the monitor neither takes the P nor shortens
// its sleep for it. A receive holds its P only while fewer than GOMAXPROCS
// - 1 others do (across the process), so that the other goroutines always
// have a P; beyond that, and with GOMAXPROCS 1, it waits as an ordinary
// system call. The runtime still preempts a goroutine that has run for
// 10 ms, and stops the world for the garbage collector, by a signal
// (SIGURG): the receive, bounded by SO_RCVTIMEO, then returns EINTR and
// waits again after the goroutine was rescheduled. Close interrupts it the
// same way. A frame wakes it at once, as before.
//
// Every send is first made with MSG_DONTWAIT as a raw system call, which
// cannot block, and again as an ordinary blocking one only when the
// socket's send buffer is full.
//
// # Following the traffic
//
// With Config.FollowCPU the link moves its process to the CPU its frames
// are received on. An AF_PACKET socket cannot tell that CPU
// (SO_INCOMING_CPU is only set by TCP and UDP), but its socket filter can:
// a second socket on the interface, the probe, runs the link's filter
// ending in "return 1 + the CPU" (the classic BPF load SKF_AD_CPU) instead
// of "accept", into a PACKET_MMAP ring that the receive loop reads after
// each batch without a system call. When two batches in a row came from
// one other CPU that the process may use (its affinity mask at Open), and
// the last move was at least 10 ms ago, every thread of the process is
// moved there (sched_setaffinity; GOMAXPROCS is kept). Once placed, the
// probe's filter drops the frames received on that CPU, so in the steady
// state it receives nothing. Clients on different CPUs whose frames
// interleave do not move the process; clients taking turns move it at
// most every 10 ms. Over veth a frame is received on the CPU that sent it,
// so oetp serve then runs on its client's CPU. Where the scheduler had
// kept the two apart, 64 MiB `oetp dma write` against serve went from 214
// to 392 MB/s and reads from 134 to 341 MB/s, with 5–10 µs less CPU per
// fragment; where it had put them together, nothing changed
// (BENCHMARKS.md, "where the threads run").
//
// # Busy polling
//
// With Config.BusyPoll (IOPoll mode), ReadLoop does not park in the network
// poller as soon as the socket is empty: for up to BusyPoll after the last
// frame it received it reads the socket again and again, yielding the
// processor (runtime.Gosched) every 256 attempts (the endpoint yields
// after a batch that readied a caller waiting for its response). The
// endpoint also warms the caches for the next DMA fragment over a link
// that busy-polls (link.Spinner). A frame that
// arrives inside the window is read without an epoll wake-up, a parked
// goroutine's wake-up or a context switch; after the window the loop parks
// as before, so an idle link costs nothing. Stats.BusyPolls counts the
// empty reads. It is off by default, like the kernel's own busy polling
// (net.core.busy_read): it spends a CPU, and it only pays with a CPU to
// spare. A loop spinning on the CPU its peer needs delays the peer: over
// veth with both endpoints and the raw baseline's placement on one CPU it
// fell to a tenth of the raw ping-pong's DMA rate.
//
// Over a veth pair on 2 vCPUs with the threads free on any CPU (oetp bench
// --scenario veth, its veth-busy rows: both endpoints busy-polling 100 µs;
// 5 runs), an RMEM read took 7.2–7.5 µs p50, 0.81–0.84× the raw blocking
// ping-pong's (1.32–1.34× without busy polling, on one CPU), and DMA moved
// a median 1.06–1.13× of the raw ping-pong's MB/s (0.76–0.81× without),
// with runs at 0.79–0.97× when other work on the VM took a spinning
// loop's CPU. See BENCHMARKS.md.
//
// # Capabilities
//
// Open needs CAP_NET_RAW; with CAP_NET_ADMIN it also forces socket buffers
// beyond the system's rmem_max/wmem_max.
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
