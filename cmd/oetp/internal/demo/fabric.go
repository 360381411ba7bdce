package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// fabric is the network the demo's endpoints are attached to: node 0 is the
// master, node i the i-th slave.
type fabric interface {
	// open opens node i's stack, cfg with the fabric's link for it.
	open(ctx context.Context, i int, cfg node.Config) (*node.Node, error)
	// loseNext makes the network lose the next frame that from sends to to.
	loseNext(from, to wire.MAC) error
	// describe names the network for the report.
	describe() string
	// close releases what the fabric built once its nodes are closed.
	close() error
}

// nodeMAC is the MAC address of node i: 02:0e:0c:00:00:<i+1>, which is also
// netns.HostMAC(i+1), so both networks use the same addresses.
func nodeMAC(i int) wire.MAC { return wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x00, byte(i + 1)} }

// memFabric is the in-process switch.
type memFabric struct{ sw *node.Switch }

// memQueueLen is the switch ports' receive queue length in frames (0: the
// switch's default); tests shorten it.
var memQueueLen = 0

func newMemFabric(loss float64, seed uint64) (*memFabric, error) {
	sw, err := node.NewSwitch(node.SwitchConfig{Seed: int64(seed), QueueLen: memQueueLen, Loss: loss})
	if err != nil {
		return nil, err
	}
	return &memFabric{sw: sw}, nil
}

func (f *memFabric) open(ctx context.Context, i int, cfg node.Config) (*node.Node, error) {
	p, err := f.sw.Attach(nodeMAC(i))
	if err != nil {
		return nil, err
	}
	cfg.Link = p
	return node.Open(ctx, cfg)
}

// loseNext adds a switch fault rule that drops exactly one frame.
func (f *memFabric) loseNext(from, to wire.MAC) error { return f.sw.LoseNext(from, to) }

func (f *memFabric) describe() string { return "the in-memory switch (link/mem)" }

func (f *memFabric) close() error { return nil }

// netnsFabric is a Linux bridge joining one network namespace per node,
// each reached through an AF_PACKET link.
type netnsFabric struct {
	net   *netns.Net
	loss  float64
	seed  uint64
	lossy []*lossyWire
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
	return &netnsFabric{net: n, loss: loss, seed: seed}, nil
}

// open opens the node on its host's interface, in the host's namespace;
// its frames go out through a lossy wire. The nodes share the process, so
// their links wait in the network poller.
func (f *netnsFabric) open(ctx context.Context, i int, cfg node.Config) (*node.Node, error) {
	h := f.net.Hosts()[i]
	w := newLossyWire(h.MAC(), f.loss, f.seed+uint64(i))
	cfg.Iface, cfg.Shared, cfg.Lose = h.IfName(), true, w.lose
	var nd *node.Node
	err := h.Do(func() (err error) {
		nd, err = node.Open(ctx, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("opening %s on %s: %w", h.IfName(), h, err)
	}
	f.lossy = append(f.lossy, w)
	return nd, nil
}

// loseNext makes the sender's wire discard its next frame to to: a Linux
// bridge has no fault rules of its own.
func (f *netnsFabric) loseNext(from, to wire.MAC) error {
	for _, w := range f.lossy {
		if w.from == from {
			w.dropNextTo(to)
			return nil
		}
	}
	return fmt.Errorf("no link with address %v", from)
}

func (f *netnsFabric) describe() string {
	return "a Linux bridge of network namespaces (netns, link/afpacket)"
}

func (f *netnsFabric) close() error { return f.net.Close() }

// lossyWire picks the frames a node's wire loses (node.LinkConfig.Lose):
// each with probability loss, and the next one to an address chosen by
// dropNextTo.
type lossyWire struct {
	from   wire.MAC
	mu     sync.Mutex
	rng    *rand.Rand
	loss   float64
	dropTo map[wire.MAC]int
}

func newLossyWire(from wire.MAC, loss float64, seed uint64) *lossyWire {
	return &lossyWire{from: from, loss: loss, rng: rand.New(rand.NewPCG(seed, 0x6f657470)), dropTo: map[wire.MAC]int{}}
}

func (w *lossyWire) dropNextTo(to wire.MAC) {
	w.mu.Lock()
	w.dropTo[to]++
	w.mu.Unlock()
}

// lose reports whether frame is lost.
func (w *lossyWire) lose(frame []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(frame) >= 6 {
		dst := wire.MAC(frame[:6])
		if w.dropTo[dst] > 0 {
			w.dropTo[dst]--
			return true
		}
	}
	return w.loss > 0 && w.rng.Float64() < w.loss
}
