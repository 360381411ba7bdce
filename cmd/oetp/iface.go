package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/placement"
	"github.com/openenoc/oetp/wire"
)

// ifaceOptions say how to open a network interface for a command.
type ifaceOptions struct {
	Name     string        // --iface
	MAC      wire.MAC      // --mac; zero: the interface's own
	MaxFrame int           // --max-frame; zero: min(8192, MTU+14)
	Pcap     string        // --pcap; empty: no capture
	Format   pcap.Format   // --pcap-format
	AllTypes bool          // bind to every EtherType (a raw receive policy)
	BusyPoll time.Duration // --busy-poll; zero: never spin
	// IO is the link's I/O mode. IODefault picks IOBlocking for a process
	// with one endpoint that does not busy-poll (serve, the one-shot
	// commands), IOPoll otherwise; a process with many endpoints (the
	// hub) asks for IOPoll.
	IO afpacket.IOMode
	// Place is what to do with the process's threads when the link waits
	// in a blocking receive (placement.go).
	Place placeRole
}

// checkBusyPoll validates a --busy-poll value. It goes with --pcap too: the
// capture (pcap.Tee) keeps the link's receive loop and busy polling.
func checkBusyPoll(d time.Duration) error {
	if d < 0 || d > afpacket.MaxBusyPoll {
		return usagef("--busy-poll %v: use 0 (off) through %v, such as 50us", d, afpacket.MaxBusyPoll)
	}
	return nil
}

// ifaceLink is an AF_PACKET link on an interface, possibly teed into a pcap
// file. Link is passed to endpoint.New itself (not ifaceLink, which would
// hide its link.Filter methods, so the endpoint could not join its group).
type ifaceLink struct {
	Link     link.Link
	ceiling  int // the frame ceiling in force
	MTU      int
	pcapFile *os.File
	pcapW    *pcap.Writer
}

// openIface opens the interface. Errors that the user fixes by changing a
// flag are usage errors naming it. The caller owns the link (endpoint.New
// takes it over) and must call finish after the link is closed.
func openIface(o ifaceOptions) (*ifaceLink, error) {
	if o.Name == "" {
		return nil, usagef("--iface is required: name the network interface (list them with `ip link`)")
	}
	if err := checkBusyPoll(o.BusyPoll); err != nil {
		return nil, err
	}
	ifi, err := lookupIface("--iface", o.Name)
	if err != nil {
		return nil, err
	}
	if !o.MAC.IsZero() && o.MAC.IsGroup() {
		return nil, usagef("--mac %v is a group address: an endpoint's own address must be unicast (bit 0 of the first octet clear)", o.MAC)
	}
	carried := ifi.MTU + wire.HeaderLen
	maxFrame := o.MaxFrame
	if maxFrame == 0 {
		maxFrame = min(wire.MaxFrameLen, carried)
		if maxFrame < wire.MinMaxFrameLen {
			return nil, usagef("--iface %s has MTU %d, too small for oETP frames: raise it (ip link set dev %s mtu 9000)", o.Name, ifi.MTU, o.Name)
		}
	} else if err := wire.CheckMaxFrame(maxFrame); err != nil {
		return nil, usagef("--max-frame: %v", err)
	} else if maxFrame > carried {
		return nil, usagef("--max-frame %d needs an MTU of at least %d on %s, which has MTU %d: raise it (ip link set dev %s mtu 9000) or lower --max-frame to %d",
			maxFrame, maxFrame-wire.HeaderLen, o.Name, ifi.MTU, o.Name, carried)
	}
	cfg := afpacket.Config{MaxFrame: maxFrame, Addr: o.MAC, AllEtherTypes: o.AllTypes, BusyPoll: o.BusyPoll}
	cfg.IO = o.IO
	if o.IO == afpacket.IODefault && o.BusyPoll == 0 {
		// One endpoint per process: its receive loop waits in a blocking
		// recvmmsg, one system call per frame like a plain blocking
		// socket, where the network poller adds about two epoll_pwait
		// per frame. Busy polling needs
		// the poller's mode; so do many endpoints in one process, whose
		// blocked readers would hold the runtime's Ps. The one receive
		// keeps its P while it waits (afpacket Config.HoldP): the
		// runtime's monitor then neither takes it away nor wakes up to
		// look (docs/design/afpacket.md).
		cfg.IO = afpacket.IOBlocking
		cfg.HoldP = true
		cfg.FollowCPU = o.Place == placeFollow
	}
	l, err := afpacket.Open(o.Name, cfg)
	if err != nil {
		// Nothing was sent: an interface that is down or not Ethernet, or
		// no permission for a raw socket, is a configuration error (exit
		// 2). afpacket's errors say what to do, e.g. "eth1 is down: bring
		// it up (ip link set eth1 up)" or "needs CAP_NET_RAW: run as root".
		return nil, &usageError{ifaceError(o.Name, err)}
	}
	if o.Place == placeStay && cfg.IO == afpacket.IOBlocking {
		placement.Stay()
	}
	il := &ifaceLink{Link: l, ceiling: maxFrame, MTU: ifi.MTU}
	if o.Pcap != "" {
		f, err := os.Create(o.Pcap)
		if err != nil {
			l.Close()
			return nil, usagef("--pcap: %v", err)
		}
		w, err := pcap.NewWriterFormat(f, o.Format, 0)
		if err != nil {
			l.Close()
			f.Close()
			return nil, fmt.Errorf("--pcap %s: %w", o.Pcap, err)
		}
		il.Link, il.pcapFile, il.pcapW = pcap.Tee(l, w), f, w
	}
	return il, nil
}

// finish closes the capture file once the link is closed and reports the
// first capture error.
func (l *ifaceLink) finish() error {
	if l.pcapFile == nil {
		return nil
	}
	err := l.pcapW.Err()
	if cerr := l.pcapFile.Close(); err == nil {
		err = cerr
	}
	l.pcapFile = nil
	if err != nil {
		return fmt.Errorf("--pcap: %w", err)
	}
	return nil
}

// busyPollUsage is the help of --busy-poll.
const busyPollUsage = "after each frame received, keep reading the socket for `D` (such as 50us, at most 10ms) before sleeping: lower latency for a CPU that spins; 0 never spins"

// lookupIface finds the interface name given by flag (--iface), as a usage
// error in the user's words: "--iface eth9: no such network interface",
// not the Go library's "route ip+net: ...".
func lookupIface(flag, name string) (*net.Interface, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return nil, usagef("%s %s: %v: list the interfaces with `ip link`", flag, name, err)
	}
	return ifi, nil
}

// ifaceFlag is the flag the interface errors name.
const ifaceFlag = "--iface"

// ifaceError words an error of opening interface name for the user:
// "--iface eth1 is down: bring it up (...)", without the package's
// "afpacket:" prefix. It wraps err.
func ifaceError(name string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "afpacket: ")
	if strings.HasPrefix(msg, name+" ") || strings.HasPrefix(msg, name+":") {
		msg = "--iface " + msg
	} else {
		msg = "--iface " + name + ": " + msg
	}
	return &reworded{msg, err}
}

// reworded is err with a message in the user's words.
type reworded struct {
	msg string
	err error
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }
