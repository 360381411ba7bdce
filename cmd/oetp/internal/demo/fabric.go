package demo

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// fabric is the network the demo's endpoints are attached to: link 0 is the
// master's, link i the i-th slave's.
type fabric interface {
	// links returns one link per node, in node order.
	links() []link.Link
	// loseNext makes the network lose the next frame that from sends to to.
	loseNext(from, to wire.MAC) error
	// queueDrops returns how many frames for node i found its receive queue
	// full (the switch port's queue, or the socket's kernel queue).
	queueDrops(i int) uint64
	// describe names the network for the report.
	describe() string
	// close releases what the fabric built once its links are closed.
	close() error
}

// nodeMAC is the MAC address of node i: 02:0e:0c:00:00:<i+1>, which is also
// netns.HostMAC(i+1), so both networks use the same addresses.
func nodeMAC(i int) wire.MAC { return wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, byte(i + 1)} }

// memFabric is the in-process switch of link/mem.
type memFabric struct {
	sw    *mem.Switch
	ports []link.Link
}

// memQueueLen is the switch ports' receive queue length in frames (0: the
// switch's default); tests shorten it.
var memQueueLen = 0

func newMemFabric(nodes int, loss float64, seed uint64) (*memFabric, error) {
	sw, err := mem.NewSwitch(mem.Config{Seed: int64(seed), QueueLen: memQueueLen})
	if err != nil {
		return nil, err
	}
	if err := sw.SetLoss(loss); err != nil {
		return nil, err
	}
	f := &memFabric{sw: sw}
	for i := range nodes {
		p, err := sw.Attach(nodeMAC(i))
		if err != nil {
			f.closeLinks()
			return nil, err
		}
		f.ports = append(f.ports, p)
	}
	return f, nil
}

func (f *memFabric) links() []link.Link { return f.ports }

// loseNext adds a switch fault rule that drops exactly one frame.
func (f *memFabric) loseNext(from, to wire.MAC) error {
	return f.sw.AddRule(mem.Rule{From: from, To: to, Action: mem.Drop, Count: 1})
}

func (f *memFabric) queueDrops(i int) uint64 { return f.ports[i].(*mem.Port).Stats().DropQueueFull }

func (f *memFabric) describe() string { return "the in-memory switch (link/mem)" }

func (f *memFabric) closeLinks() {
	for _, p := range f.ports {
		p.Close()
	}
}

func (f *memFabric) close() error { return nil }

// netnsFabric is a Linux bridge joining one network namespace per node,
// each reached through an AF_PACKET link (netns, link/afpacket).
type netnsFabric struct {
	net   *netns.Net
	lossy []*lossyLink
	ls    []link.Link
}

// ErrNetNS is wrapped by Run's error when --netns cannot build its network,
// typically because the process is not root.
var ErrNetNS = errors.New("network namespaces unavailable")

func newNetnsFabric(nodes int, loss float64, seed uint64) (*netnsFabric, error) {
	if err := netns.Available(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNetNS, err)
	}
	n, err := netns.New(netns.Topology{Hosts: nodes, Bridge: true})
	if err != nil {
		return nil, fmt.Errorf("%w: building %d hosts on a bridge: %v", ErrNetNS, nodes, err)
	}
	f := &netnsFabric{net: n}
	for i, h := range n.Hosts() {
		var l *afpacket.Link
		err := h.Do(func() error {
			var err error
			l, err = afpacket.Open(h.IfName(), afpacket.Config{})
			return err
		})
		if err != nil {
			for _, l := range f.ls {
				l.Close()
			}
			n.Close()
			return nil, fmt.Errorf("opening %s on %s: %w", h.IfName(), h, err)
		}
		ll := newLossyLink(l, loss, seed+uint64(i))
		f.lossy = append(f.lossy, ll)
		f.ls = append(f.ls, ll.Link)
	}
	return f, nil
}

func (f *netnsFabric) links() []link.Link { return f.ls }

// loseNext makes the sender's link discard its next frame to to, as if the
// wire lost it: a Linux bridge has no fault rules of its own.
func (f *netnsFabric) loseNext(from, to wire.MAC) error {
	for _, l := range f.lossy {
		if l.Addr() == from {
			l.dropNextTo(to)
			return nil
		}
	}
	return fmt.Errorf("no link with address %v", from)
}

func (f *netnsFabric) queueDrops(i int) uint64 {
	return f.lossy[i].inner.(*afpacket.Link).Stats().DropQueueFull
}

func (f *netnsFabric) describe() string {
	return "a Linux bridge of network namespaces (netns, link/afpacket)"
}

func (f *netnsFabric) close() error { return f.net.Close() }

// lossyLink is a link that loses transmitted frames: each with probability
// loss, and the next one to an address chosen by dropNextTo. A lost frame
// counts as accepted, as on a real wire. Link is the inner link wrapped by
// link.Wrap, so it keeps every optional capability of the inner link (the
// group filter, the receive loop, busy polling).
type lossyLink struct {
	link.Link
	inner  link.Link
	mu     sync.Mutex
	rng    *rand.Rand
	loss   float64
	dropTo map[wire.MAC]int
}

func newLossyLink(l link.Link, loss float64, seed uint64) *lossyLink {
	ll := &lossyLink{inner: l, loss: loss, rng: rand.New(rand.NewPCG(seed, 0x6f657470)), dropTo: map[wire.MAC]int{}}
	ll.Link = link.Wrap(l, link.Hooks{Write: ll.write})
	return ll
}

func (l *lossyLink) dropNextTo(to wire.MAC) {
	l.mu.Lock()
	l.dropTo[to]++
	l.mu.Unlock()
}

// lose reports whether frame is lost.
func (l *lossyLink) lose(frame []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(frame) >= 6 {
		dst := wire.MAC(frame[:6])
		if l.dropTo[dst] > 0 {
			l.dropTo[dst]--
			return true
		}
	}
	return l.loss > 0 && l.rng.Float64() < l.loss
}

// write is the Write hook: it hands on the frames that are not lost, one at
// a time, and reports the lost ones as accepted.
func (l *lossyLink) write(frames [][]byte, next func([][]byte) (int, error)) (int, error) {
	for i := range frames {
		if l.lose(frames[i]) {
			continue
		}
		if _, err := next(frames[i : i+1]); err != nil {
			return i, err
		}
	}
	return len(frames), nil
}
