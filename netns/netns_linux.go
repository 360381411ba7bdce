//go:build linux

package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/openenoc/oetp/wire"
)

// nsHandle is one unnamed network namespace, held open by fd, with a
// netlink socket created inside it.
type nsHandle struct {
	mu   sync.Mutex
	name string
	fd   int // -1 once closed
	nl   *netlink.Handle
}

// onNewThread runs fn on a new goroutine locked to its OS thread and never
// unlocks it, so the runtime discards the thread when fn returns: whatever
// namespace fn moved the thread into dies with it. A panic in fn is re-raised
// in the caller; a runtime.Goexit in fn exits the caller's goroutine too.
func onNewThread(fn func() error) error {
	c := make(chan threadResult, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		runLocked(fn, c)
	}()
	r := <-c
	switch r.how {
	case panicked:
		panic(r.value)
	case exited:
		runtime.Goexit()
	}
	return r.err
}

const (
	returned = iota
	panicked
	exited
)

// threadResult is how fn ended in runLocked.
type threadResult struct {
	how   int
	err   error
	value any
}

// runLocked runs fn on the calling goroutine, locked to a thread it never
// leaves, and sends how fn ended to c.
func runLocked(fn func() error, c chan<- threadResult) {
	if unix.Gettid() == unix.Getpid() {
		// The main thread cannot exit: the runtime parks it for good
		// instead. Put it back into its own namespace first, so that it
		// neither keeps fn's namespace alive nor shows it as the process's
		// namespace in /proc/<pid>/ns/net.
		if orig, err := openThreadNS(); err == nil {
			defer func() {
				unix.Setns(orig, unix.CLONE_NEWNET)
				unix.Close(orig)
			}()
		}
	}
	done := false
	defer func() {
		if done {
			return
		}
		if r := recover(); r != nil {
			c <- threadResult{how: panicked, value: r}
		} else {
			c <- threadResult{how: exited}
		}
	}()
	err := fn()
	done = true
	c <- threadResult{how: returned, err: err}
}

// openThreadNS opens the calling thread's network namespace.
func openThreadNS() (int, error) {
	p := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return fd, nil
}

// newNS creates an unnamed network namespace with loopback up and IPv6
// disabled, and a netlink handle inside it.
func newNS(name string) (*nsHandle, error) {
	ns := &nsHandle{name: name, fd: -1}
	err := onNewThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("netns: create namespace for %s: %w", name, os.NewSyscallError("unshare", err))
		}
		fd, err := openThreadNS()
		if err != nil {
			return fmt.Errorf("netns: %s: %w", name, err)
		}
		ns.fd = fd
		for _, f := range []string{"all", "default"} {
			p := "/proc/sys/net/ipv6/conf/" + f + "/disable_ipv6"
			if err := os.WriteFile(p, []byte("1\n"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("netns: disable IPv6 in %s: %w", name, err)
			}
		}
		nl, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netns: netlink socket in %s: %w", name, err)
		}
		ns.nl = nl
		lo, err := nl.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("netns: find lo in %s: %w", name, err)
		}
		if err := nl.LinkSetUp(lo); err != nil {
			return fmt.Errorf("netns: bring lo up in %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		ns.close()
		return nil, err
	}
	return ns, nil
}

func (ns *nsHandle) do(fn func() error) error {
	return onNewThread(func() (err error) {
		ns.mu.Lock()
		fd := ns.fd
		if fd >= 0 {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
		}
		ns.mu.Unlock()
		if fd < 0 {
			return fmt.Errorf("netns: %s is closed", ns.name)
		}
		if err != nil {
			return fmt.Errorf("netns: enter %s: %w", ns.name, os.NewSyscallError("setns", err))
		}
		return fn()
	})
}

func (ns *nsHandle) path() string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), ns.fd)
}

func (ns *nsHandle) link(ifname string) (netlink.Link, error) {
	if ns.nl == nil {
		return nil, fmt.Errorf("netns: %s is closed", ns.name)
	}
	l, err := ns.nl.LinkByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("netns: %s: find %s: %w", ns.name, ifname, err)
	}
	return l, nil
}

func (ns *nsHandle) setMTU(ifname string, mtu int) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	l, err := ns.link(ifname)
	if err != nil {
		return err
	}
	if err := ns.nl.LinkSetMTU(l, mtu); err != nil {
		return fmt.Errorf("netns: %s: set %s MTU %d: %w", ns.name, ifname, mtu, err)
	}
	return nil
}

func (ns *nsHandle) setUp(ifname string, up bool) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	l, err := ns.link(ifname)
	if err != nil {
		return err
	}
	if up {
		err = ns.nl.LinkSetUp(l)
	} else {
		err = ns.nl.LinkSetDown(l)
	}
	if err != nil {
		return fmt.Errorf("netns: %s: set %s up=%v: %w", ns.name, ifname, up, err)
	}
	return nil
}

// waitUp waits until ifname's operational state is up (carrier on and, for a
// bridge port, the bridge told of it: both happen under the RTNL lock that
// the query takes).
func (ns *nsHandle) waitUp(ifname string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := ns.link(ifname)
		if err != nil {
			return err
		}
		if l.Attrs().OperState == netlink.OperUp {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("netns: %s: %s still %v after 10s", ns.name, ifname, l.Attrs().OperState)
		}
		time.Sleep(time.Millisecond)
	}
}

func (ns *nsHandle) close() error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if ns.nl != nil {
		ns.nl.Close()
		ns.nl = nil
	}
	if ns.fd < 0 {
		return nil
	}
	err := unix.Close(ns.fd)
	ns.fd = -1
	if err != nil {
		return fmt.Errorf("netns: close %s: %w", ns.name, os.NewSyscallError("close", err))
	}
	return nil
}

func hw(m wire.MAC) net.HardwareAddr { return net.HardwareAddr(m[:]) }

func build(topo Topology) (n *Net, err error) {
	n = &Net{}
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	for i := 1; i <= topo.Hosts; i++ {
		name := fmt.Sprintf("h%d", i)
		ns, err := newNS(name)
		if err != nil {
			return nil, err
		}
		n.hosts = append(n.hosts, &Host{name: name, ifname: topo.IfName, mac: HostMAC(i), ns: ns})
	}
	if topo.Relay {
		if err := buildRelay(n, topo); err != nil {
			return nil, err
		}
	} else if topo.Hosts == 2 && !topo.Bridge {
		a, b := n.hosts[0], n.hosts[1]
		veth := &netlink.Veth{
			LinkAttrs:        netlink.LinkAttrs{Name: topo.IfName, MTU: topo.MTU, HardwareAddr: hw(a.mac)},
			PeerName:         topo.IfName,
			PeerHardwareAddr: hw(b.mac),
			PeerMTU:          uint32(topo.MTU),
			PeerNamespace:    netlink.NsFd(b.ns.fd),
		}
		if err := a.ns.nl.LinkAdd(veth); err != nil {
			return nil, fmt.Errorf("netns: create veth pair %s/%s: %w", a.name, b.name, err)
		}
	} else {
		if err := buildBridge(n, topo); err != nil {
			return nil, err
		}
	}
	for _, h := range n.hosts {
		if err := h.ns.setUp(h.ifname, true); err != nil {
			return nil, err
		}
	}
	for _, h := range n.hosts {
		if err := h.ns.waitUp(h.ifname); err != nil {
			return nil, err
		}
		l, err := h.ns.link(h.ifname)
		if err != nil {
			return nil, err
		}
		h.index = l.Attrs().Index
	}
	if n.sw != nil {
		for i := range n.hosts {
			if err := n.sw.ns.waitUp(portName(i + 1)); err != nil {
				return nil, err
			}
		}
		if !n.relay {
			if err := n.sw.ns.waitUp(bridgeName); err != nil {
				return nil, err
			}
		}
	}
	return n, nil
}

const bridgeName = "br0"

func portName(i int) string { return fmt.Sprintf("p%d", i) }

// veth creates a veth from host h's interface to port in ns, whose end
// there has MAC peer.
func (ns *nsHandle) veth(h *Host, port string, peer wire.MAC, mtu int) error {
	veth := &netlink.Veth{
		LinkAttrs:        netlink.LinkAttrs{Name: h.ifname, MTU: mtu, HardwareAddr: hw(h.mac)},
		PeerName:         port,
		PeerHardwareAddr: hw(peer),
		PeerMTU:          uint32(mtu),
		PeerNamespace:    netlink.NsFd(ns.fd),
	}
	if err := h.ns.nl.LinkAdd(veth); err != nil {
		return fmt.Errorf("netns: create veth %s/%s: %w", h.name, port, err)
	}
	return nil
}

// buildRelay creates the relay namespace and, for host i, a veth from the
// host's interface to p<i> there (MAC 02:0e:0c:00:02:<i>), without a bridge.
func buildRelay(n *Net, topo Topology) error {
	ns, err := newNS("relay")
	if err != nil {
		return err
	}
	n.sw, n.relay = &Host{name: "relay", ifname: RelayIfA, ns: ns}, true
	for i, h := range n.hosts {
		port := portName(i + 1)
		if err := ns.veth(h, port, wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x02, byte(i + 1)}, topo.MTU); err != nil {
			return err
		}
		if err := ns.setUp(port, true); err != nil {
			return err
		}
	}
	return nil
}

// buildBridge creates the bridge namespace with br0 (MAC 02:0e:0c:00:01:00)
// and, for host i, a veth from the host's interface to bridge port p<i>
// (MAC 02:0e:0c:00:01:<i>).
func buildBridge(n *Net, topo Topology) error {
	ns, err := newNS("switch")
	if err != nil {
		return err
	}
	n.sw = &Host{name: "switch", ifname: bridgeName, ns: ns}
	off := false
	br := &netlink.Bridge{
		LinkAttrs:         netlink.LinkAttrs{Name: bridgeName, MTU: topo.MTU, HardwareAddr: hw(wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x01, 0x00})},
		MulticastSnooping: &off,
	}
	if err := ns.nl.LinkAdd(br); err != nil {
		return fmt.Errorf("netns: create bridge %s: %w", bridgeName, err)
	}
	if err := ns.setUp(bridgeName, true); err != nil {
		return err
	}
	brl, err := ns.link(bridgeName)
	if err != nil {
		return err
	}
	for i, h := range n.hosts {
		port := portName(i + 1)
		if err := ns.veth(h, port, wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x01, byte(i + 1)}, topo.MTU); err != nil {
			return err
		}
		pl, err := ns.link(port)
		if err != nil {
			return err
		}
		if err := ns.nl.LinkSetMasterByIndex(pl, brl.Attrs().Index); err != nil {
			return fmt.Errorf("netns: attach %s to %s: %w", port, bridgeName, err)
		}
		if err := ns.setUp(port, true); err != nil {
			return err
		}
	}
	return nil
}

var available = sync.OnceValue(checkAvailable)

// Available reports why test networks cannot be built here, or nil if they
// can: it needs CAP_SYS_ADMIN and CAP_NET_ADMIN, and a kernel with network
// namespaces and veth. The check creates (and deletes) a scratch namespace
// with a veth pair once per process.
func Available() error { return available() }

func checkAvailable() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("netns: read capabilities: %w", os.NewSyscallError("capget", err))
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	var missing []string
	if !has(unix.CAP_SYS_ADMIN) {
		missing = append(missing, "CAP_SYS_ADMIN")
	}
	if !has(unix.CAP_NET_ADMIN) {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	switch len(missing) {
	case 1:
		return fmt.Errorf("building network namespaces needs %s: run as root", missing[0])
	case 2:
		return fmt.Errorf("building network namespaces needs %s and %s: run as root", missing[0], missing[1])
	}
	ns, err := newNS("probe")
	if err != nil {
		return err
	}
	defer ns.close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}, PeerName: "probe1"}
	if err := ns.nl.LinkAdd(veth); err != nil {
		return fmt.Errorf("cannot create a veth pair (load the veth module: modprobe veth): %w", err)
	}
	return nil
}
