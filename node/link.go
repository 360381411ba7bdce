package node

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/link/pace"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/placement"
	"github.com/openenoc/oetp/wire"
)

// Placement says what a node does with the threads of its process when its
// link waits in a blocking receive (package placement).
type Placement int

const (
	// PlaceNone leaves the threads to the kernel's scheduler.
	PlaceNone Placement = iota
	// PlaceFollow moves them to the CPU the node's frames arrive on
	// (afpacket Config.FollowCPU): a server.
	PlaceFollow
	// PlaceStay keeps them on the CPU the process started on: a one-shot
	// initiator, which a following server then joins.
	PlaceStay
)

// IOMode says how a node's link waits for frames (afpacket's I/O modes,
// docs/design/afpacket.md).
type IOMode int

const (
	// IOAuto is the node's choice: the network poller for a Shared node
	// or one that busy-polls; else a blocking receive that keeps its
	// runtime P while it waits (afpacket Config.HoldP), which suits one
	// node per process.
	IOAuto IOMode = iota
	// IOBlocking receives with blocking system calls on the reader's
	// thread without keeping its P: several such nodes may share a
	// process. BusyPoll does not apply.
	IOBlocking
	// IOPoll waits in the Go runtime's network poller.
	IOPoll
)

// MaxBusyPoll is the longest LinkConfig.BusyPoll.
const MaxBusyPoll = afpacket.MaxBusyPoll

// MaxExtraAddrs is the most LinkConfig.ExtraAddrs.
const MaxExtraAddrs = afpacket.MaxGroups

// Medium is a link to a medium (package link's Link) that a caller opened
// itself and gives a node in LinkConfig.Link: an in-process switch port, a
// hub device's link.
type Medium = link.Link

// LinkConfig says how to open a node's link: an AF_PACKET socket on Iface,
// or Link, a link the caller opened (an in-process switch port, a hub
// device's opener), which the node takes over.
type LinkConfig struct {
	Iface string
	Link  Medium

	// MAC is the node's own unicast address; zero: the interface's.
	MAC wire.MAC
	// MaxFrame is the frame ceiling; zero: min(8192, MTU+14), or the
	// given Link's.
	MaxFrame int
	// AnyFrame opens the interface for frames up to its MTU, not only
	// oETP's (a relay, the conformance runner's oversized frames):
	// MaxFrame defaults to MTU+14 and is not held to oETP's ceiling.
	AnyFrame bool
	// ExtraAddrs are more unicast addresses the socket receives frames
	// for (the interface registers them), at most MaxExtraAddrs.
	ExtraAddrs []wire.MAC
	// AllEtherTypes binds to every EtherType (a raw receive policy).
	AllEtherTypes bool
	// BusyPoll is how long the reader keeps reading an empty socket after
	// each frame; zero never spins. At most MaxBusyPoll.
	BusyPoll time.Duration
	// Shared says the process runs many nodes (the hub): their readers
	// wait in the network poller instead of holding a runtime P each.
	Shared bool
	// IO is how the link waits for frames; IOAuto (the zero value) lets
	// Shared and BusyPoll decide.
	IO IOMode
	// Placement of the process's threads; only for a node that waits in
	// a blocking receive (IOBlocking, or IOAuto neither Shared nor
	// busy-polling).
	Placement Placement

	// Capture, if not empty, records every frame sent and received in a
	// pcap file at this path, in CaptureFormat.
	Capture       string
	CaptureFormat CaptureFormat
	// Rate paces the frames written to this many bytes of frames per
	// second; zero is unpaced.
	Rate float64
	// Lose, if not nil, is asked about every frame written: one it reports
	// lost is not sent yet counts as written, as if the wire lost it (a
	// lossy network for a demonstration). A capture records it.
	Lose func(frame []byte) bool
}

// ConfigError is an error the user fixes by changing the configuration.
// Field names the setting as the command line does ("iface", "mac",
// "max-frame", "busy-poll", "pcap", "rate", "peer", "retry"; "endpoint"
// for the endpoint's own configuration, whose error Err is); Msg follows
// it: the CLI prints "--" + Field + Msg, the hub its own key. For a peer
// entry, Peer is its index in Config.Peers, and Msg follows the entry.
type ConfigError struct {
	Field string
	Peer  int
	Msg   string
	Err   error // the cause, if any
}

func (e *ConfigError) Error() string {
	if e.Field == "peer" {
		return fmt.Sprintf("peer #%d%s", e.Peer+1, e.Msg)
	}
	return e.Field + e.Msg
}
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(field, format string, a ...any) *ConfigError {
	err := fmt.Errorf(format, a...)
	return &ConfigError{Field: field, Msg: err.Error(), Err: errors.Unwrap(err)}
}

// Link is a node's open link: the medium's link wrapped by any capture and
// pacer. Close it with Close, which also ends the capture.
type Link struct {
	link.Link
	// MTU is the interface's MTU (0 for a given Link).
	MTU int
	// Ceiling is the frame ceiling in force.
	Ceiling int

	capture *Capture
}

// OpenLink opens the link cfg describes. Errors the user fixes in the
// configuration are *ConfigError.
func OpenLink(cfg LinkConfig) (*Link, error) {
	if cfg.Link != nil {
		return wrapLink(cfg, &Link{Link: cfg.Link, Ceiling: min(cfg.Link.MaxFrame(), wire.MaxFrameLen)}, cfg.Link)
	}
	if cfg.Iface == "" {
		return nil, configErr("iface", " is required: name the network interface (list them with `ip link`)")
	}
	if cfg.IO < IOAuto || cfg.IO > IOPoll {
		return nil, configErr("io", " mode %d: use IOAuto, IOBlocking or IOPoll", int(cfg.IO))
	}
	if cfg.BusyPoll < 0 || cfg.BusyPoll > afpacket.MaxBusyPoll {
		return nil, configErr("busy-poll", " %v: use 0 (off) through %v, such as 50us", cfg.BusyPoll, afpacket.MaxBusyPoll)
	}
	ifi, err := lookupIface(cfg.Iface)
	if err != nil {
		return nil, err
	}
	if !cfg.MAC.IsZero() && cfg.MAC.IsGroup() {
		return nil, configErr("mac", " %v is a group address: an endpoint's own address must be unicast (bit 0 of the first octet clear)", cfg.MAC)
	}
	carried := ifi.MTU + wire.HeaderLen
	maxFrame := cfg.MaxFrame
	switch {
	case cfg.AnyFrame:
		if maxFrame == 0 {
			maxFrame = min(carried, 65549)
		}
	case maxFrame == 0:
		maxFrame = min(wire.MaxFrameLen, carried)
		if maxFrame < wire.MinMaxFrameLen {
			return nil, configErr("iface", " %s has MTU %d, too small for oETP frames: raise it (ip link set dev %s mtu 9000)", cfg.Iface, ifi.MTU, cfg.Iface)
		}
	default:
		if err := wire.CheckMaxFrame(maxFrame); err != nil {
			return nil, configErr("max-frame", ": %v", err)
		}
		if maxFrame > carried {
			return nil, configErr("max-frame", " %d needs an MTU of at least %d on %s, which has MTU %d: raise it (ip link set dev %s mtu 9000) or lower --max-frame to %d",
				maxFrame, maxFrame-wire.HeaderLen, cfg.Iface, ifi.MTU, cfg.Iface, carried)
		}
	}
	acfg := afpacket.Config{MaxFrame: maxFrame, Addr: cfg.MAC, AllEtherTypes: cfg.AllEtherTypes, BusyPoll: cfg.BusyPoll, ExtraAddrs: cfg.ExtraAddrs}
	switch {
	case cfg.IO == IOPoll, cfg.IO == IOAuto && cfg.Shared:
		acfg.IO = afpacket.IOPoll
	case cfg.IO == IOBlocking:
		acfg.IO = afpacket.IOBlocking
		acfg.FollowCPU = cfg.Placement == PlaceFollow
	case cfg.BusyPoll == 0:
		// One endpoint per process: its receive loop waits in a blocking
		// recvmmsg, one system call per frame like a plain blocking
		// socket, where the network poller adds about two epoll_pwait
		// per frame (docs/design/afpacket.md). Busy polling needs
		// the poller's mode; so do many endpoints in one process, whose
		// blocked readers would hold the runtime's Ps. The one receive
		// keeps its P while it waits (afpacket Config.HoldP): the
		// runtime's monitor then neither takes it away nor wakes up to
		// look (docs/design/afpacket.md).
		acfg.IO = afpacket.IOBlocking
		acfg.HoldP = true
		acfg.FollowCPU = cfg.Placement == PlaceFollow
	}
	al, err := afpacket.Open(cfg.Iface, acfg)
	if err != nil {
		// Nothing was sent: an interface that is down or not Ethernet, or
		// no permission for a raw socket, is a configuration error.
		// afpacket's errors say what to do, e.g. "eth1 is down: bring it
		// up (ip link set eth1 up)" or "needs CAP_NET_RAW: run as root".
		// In the user's words: "eth1 is down: ...", without the package's
		// prefix and the name only once.
		msg := strings.TrimPrefix(err.Error(), "afpacket: ")
		if !strings.HasPrefix(msg, cfg.Iface+" ") && !strings.HasPrefix(msg, cfg.Iface+":") {
			msg = cfg.Iface + ": " + msg
		}
		return nil, &ConfigError{Field: "iface", Msg: " " + msg, Err: err}
	}
	if cfg.Placement == PlaceStay && acfg.IO == afpacket.IOBlocking {
		placement.Stay()
	}
	return wrapLink(cfg, &Link{Link: al, Ceiling: maxFrame, MTU: ifi.MTU}, al)
}

// lookupIface returns the interface name; not finding it is a *ConfigError
// in the user's words: "no such network interface", not the Go library's
// "route ip+net: ...".
func lookupIface(name string) (*net.Interface, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return nil, configErr("iface", " %s: %v: list the interfaces with `ip link`", name, err)
	}
	return ifi, nil
}

// wrapLink adds the loss, the capture and the pacer to l, whose medium's
// link is inner; on an error it closes inner.
func wrapLink(cfg LinkConfig, l *Link, inner link.Link) (*Link, error) {
	if cfg.Lose != nil {
		l.Link = lossy(l.Link, cfg.Lose)
	}
	if cfg.Capture != "" {
		c, err := CreateCapture(cfg.Capture, cfg.CaptureFormat)
		if err != nil {
			inner.Close()
			return nil, err
		}
		l.Link, l.capture = pcap.Tee(l.Link, c.w), c
	}
	if cfg.Rate > 0 {
		// The pacer sleeps in the endpoint's receive loop too (the chained
		// DMA path sends the next fragment from there): a node that only
		// waits for its own transfers delays nothing else.
		p, err := pace.New(l.Link, cfg.Rate)
		if err != nil {
			l.Link.Close()
			l.finish()
			return nil, &ConfigError{Field: "rate", Msg: fmt.Sprintf(": %v", err), Err: err}
		}
		l.Link = p
	}
	return l, nil
}

// Close closes the link and then the capture, and reports the first
// capture error.
func (l *Link) Close() error {
	l.Link.Close()
	return l.finish()
}

// finish closes the capture file once the link is closed and reports the
// first capture error.
func (l *Link) finish() error {
	if l.capture == nil {
		return nil
	}
	return l.capture.Close()
}

// socket returns the AF_PACKET link under l, or nil.
func (l *Link) socket() *afpacket.Link {
	al, _ := link.Innermost(l.Link).(*afpacket.Link)
	return al
}

// KernelDrops returns the frames for this link that found its receive
// queue full: the socket's in the kernel, or a Switch port's (0 for another
// given Link).
func (l *Link) KernelDrops() uint64 {
	switch in := link.Innermost(l.Link).(type) {
	case *afpacket.Link:
		return in.Stats().DropQueueFull
	case *mem.Port:
		return in.Stats().DropQueueFull
	}
	return 0
}

// CPUMoves returns the moves of the process to the CPU its frames arrive
// on (PlaceFollow), 0 without a socket.
func (l *Link) CPUMoves() uint64 {
	if al := l.socket(); al != nil {
		return al.Stats().CPUMoves
	}
	return 0
}

// Follows reports whether the link moves the process to the CPU its frames
// arrive on.
func (l *Link) Follows() bool {
	al := l.socket()
	return al != nil && al.FollowCPU()
}

// osReason is a file error's reason without Go's operation and path: the
// message names the file.
func osReason(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
