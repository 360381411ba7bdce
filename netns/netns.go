// Package netns builds throwaway Linux test networks: hosts that are network
// namespaces, joined by a veth pair (two hosts) or by a Linux bridge (any
// number of hosts), for tests, benchmarks and `oetp demo --netns`.
//
// Every namespace is unnamed: it is held only by a file descriptor of this
// process, so it vanishes with everything in it (veths, the bridge, addresses)
// when Close releases the descriptors or the process exits, even after a
// failed test or a crash. The initial (host) namespace is never modified:
// links are created inside the child namespaces directly, veth peers placed in
// their namespace at creation.
//
// Hosts are numbered from 1 in names and MACs: host i (0-based index i-1 in
// Hosts) is named "h<i>", has interface IfName (default "eth0") with the
// locally administered MAC 02:0e:0c:00:00:<i> and MTU 9000. IPv6 is disabled
// in every namespace, so the only frames on a link are the ones a test sends.
//
// A program reaches a host two ways. Host.Do runs a function on an OS thread
// that has entered the host's namespace; sockets opened there (for example by
// afpacket.Open) stay bound to that namespace when used from any goroutine.
// Host.Command builds an *exec.Cmd that runs inside the namespace through
// nsenter(1) from util-linux.
//
// Building a network needs CAP_SYS_ADMIN (to create namespaces) and
// CAP_NET_ADMIN (to create links): in practice, root. Available says why it
// cannot be used; NewT, NewPair and NewBridge skip the calling test with that
// reason.
package netns

import (
	"fmt"
	"os/exec"

	"github.com/openenoc/oetp/wire"
)

// DefaultMTU is the MTU of every link unless Topology.MTU says otherwise. It
// carries the largest oETP frame (8192 bytes) with room to spare.
const DefaultMTU = 9000

// DefaultIfName is the name of each host's interface unless Topology.IfName
// says otherwise.
const DefaultIfName = "eth0"

// MaxHosts is the largest number of hosts in one network; it keeps the last
// MAC octet (the host number) within 1..254.
const MaxHosts = 254

// Topology describes a network to build.
type Topology struct {
	// Hosts is the number of hosts, 2 through MaxHosts.
	Hosts int
	// Bridge joins the hosts through a Linux bridge in a namespace of its
	// own even when there are only two; more than two always use a bridge.
	Bridge bool
	// MTU of every link; 0 means DefaultMTU.
	MTU int
	// IfName is the name of every host's interface; "" means DefaultIfName.
	IfName string
	// Relay joins the hosts through a namespace of their own that
	// forwards nothing by itself: host i's interface is a veth to
	// interface p<i> there (h1's to RelayIfA, h2's to RelayIfB), and no
	// bridge joins them. Programs in that namespace (Net.Relay) carry
	// frames between them, such as link/relay impairing them: with three
	// hosts, one relay between p1 and p2 and another between p1 and p3
	// give h1 a different path to each of the others. Not with Bridge.
	Relay bool
}

// The interfaces of the relay namespace (Topology.Relay) that face h1 and
// h2; host i faces p<i>.
const (
	RelayIfA = "p1"
	RelayIfB = "p2"
)

// HostMAC is the deterministic MAC of host i (1-based): 02:0e:0c:00:00:<i>.
func HostMAC(i int) wire.MAC { return wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, byte(i)} }

// Net is a built network. Close it (or let the test cleanup of NewT do so)
// to delete everything it created.
type Net struct {
	hosts []*Host
	sw    *Host // the bridge's (or relay's) namespace, nil for a direct veth pair
	relay bool  // sw is a relay namespace: ports without a bridge
}

// Relay returns the relay namespace of a Topology.Relay network (its
// interfaces are RelayIfA and RelayIfB; IfName reports RelayIfA), or nil.
func (n *Net) Relay() *Host {
	if n.relay {
		return n.sw
	}
	return nil
}

// Hosts returns the hosts in order; Hosts()[0] is h1.
func (n *Net) Hosts() []*Host { return n.hosts }

// Host returns host i (0-based: Host(0) is h1). It panics if i is out of
// range, like a slice index.
func (n *Net) Host(i int) *Host { return n.hosts[i] }

// Host is one network namespace with one Ethernet interface.
type Host struct {
	name   string
	ifname string
	mac    wire.MAC
	index  int
	ns     *nsHandle
}

// Name is the host's name: h1, h2, ...
func (h *Host) Name() string { return h.name }

// IfName is the name of the host's interface inside its namespace.
func (h *Host) IfName() string { return h.ifname }

// MAC is the host interface's MAC address.
func (h *Host) MAC() wire.MAC { return h.mac }

// Index is the host interface's ifindex inside its namespace.
func (h *Host) Index() int { return h.index }

// String returns the host's name.
func (h *Host) String() string { return h.name }

// Do runs fn on a fresh OS thread that has entered the host's network
// namespace and returns fn's error. Sockets fn opens belong to the namespace
// for their whole life. Only fn's own goroutine is inside the namespace:
// goroutines it starts run elsewhere. The thread is discarded afterwards
// (the main thread, which cannot exit, is first put back into its own
// namespace), so the namespace never leaks into other goroutines. A panic in fn is
// re-raised in the caller, and runtime.Goexit in fn (t.FailNow, t.Skip) ends
// the caller too, so test helpers behave as if called directly.
func (h *Host) Do(fn func() error) error { return h.ns.do(fn) }

// Command returns a command that runs name with args inside the host's
// namespace, through `nsenter --net=/proc/<pid>/fd/<fd> -- name args...`.
// name is resolved in PATH first. The command must be started before the Net
// is closed; once started it keeps the namespace alive until it exits (kill
// it before Close to make the network disappear at once). cmd.Process is the
// program itself, since nsenter execs it without forking.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	path := name
	var lookErr error
	if p, err := exec.LookPath(name); err == nil {
		path = p
	} else {
		lookErr = err
	}
	cmd := exec.Command("nsenter", append([]string{"--net=" + h.ns.path(), "--", path}, args...)...)
	if cmd.Err == nil && lookErr != nil {
		cmd.Err = fmt.Errorf("netns: %s: %w", h.name, lookErr)
	} else if cmd.Err != nil {
		cmd.Err = fmt.Errorf("netns: %s needs nsenter (util-linux) to run commands: %w", h.name, cmd.Err)
	}
	return cmd
}

// SetMTU sets the MTU of the host's interface.
func (h *Host) SetMTU(mtu int) error { return h.ns.setMTU(h.ifname, mtu) }

// SetLinkUp brings the host's interface up or down.
func (h *Host) SetLinkUp(up bool) error { return h.ns.setUp(h.ifname, up) }

// New builds the network described by topo. The caller must Close it.
func New(topo Topology) (*Net, error) {
	if topo.Relay && topo.Bridge {
		return nil, fmt.Errorf("netns: Topology.Relay joins the hosts without a bridge; Bridge must be false")
	}
	if topo.Hosts < 2 || topo.Hosts > MaxHosts {
		return nil, fmt.Errorf("netns: Topology.Hosts is %d: use 2 through %d", topo.Hosts, MaxHosts)
	}
	if topo.MTU == 0 {
		topo.MTU = DefaultMTU
	}
	if topo.MTU < 68 || topo.MTU > 65535 {
		return nil, fmt.Errorf("netns: Topology.MTU is %d: use 68 through 65535, or 0 for %d", topo.MTU, DefaultMTU)
	}
	if topo.IfName == "" {
		topo.IfName = DefaultIfName
	}
	if len(topo.IfName) > 15 {
		return nil, fmt.Errorf("netns: Topology.IfName %q is longer than 15 bytes", topo.IfName)
	}
	return build(topo)
}

// Close deletes the network: it releases every namespace, which takes the
// interfaces and the bridge with it. Sockets opened in Host.Do and processes
// started by Host.Command keep their namespace alive until they are closed or
// exit. Close is idempotent.
func (n *Net) Close() error {
	var first error
	for _, h := range n.hosts {
		if err := h.ns.close(); err != nil && first == nil {
			first = err
		}
	}
	if n.sw != nil {
		if err := n.sw.ns.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// TB is the part of testing.TB that NewT uses, so that this package does not
// import testing into programs.
type TB interface {
	Helper()
	Cleanup(func())
	Skipf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// NewT builds topo for a test: it skips the test with the reason when
// Available reports an error, fails it when building fails, and closes the
// network in tb.Cleanup.
func NewT(tb TB, topo Topology) *Net {
	tb.Helper()
	if err := Available(); err != nil {
		tb.Skipf("%v", err)
	}
	n, err := New(topo)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	tb.Cleanup(func() {
		if err := n.Close(); err != nil {
			tb.Fatalf("%v", err)
		}
	})
	return n
}

// NewPair builds two hosts joined by one veth pair; see NewT.
func NewPair(tb TB) *Net {
	tb.Helper()
	return NewT(tb, Topology{Hosts: 2})
}

// NewBridge builds n hosts joined by a Linux bridge; see NewT.
func NewBridge(tb TB, n int) *Net {
	tb.Helper()
	return NewT(tb, Topology{Hosts: n, Bridge: true})
}

// NewRelay builds two hosts joined through a relay namespace
// (Topology.Relay); see NewT.
func NewRelay(tb TB) *Net {
	tb.Helper()
	return NewT(tb, Topology{Hosts: 2, Relay: true})
}
