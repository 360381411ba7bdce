package node_test

import (
	"context"
	"errors"
	"testing"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

var (
	ownMAC  = endpointtest.MAC(1)
	peerMAC = endpointtest.MAC(2)
)

// newSwitch builds an in-process switch.
func newSwitch(t *testing.T, cfg node.SwitchConfig) *node.Switch {
	t.Helper()
	sw, err := node.NewSwitch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

// port attaches mac to a new in-process switch.
func port(t *testing.T, mac wire.MAC) node.Medium {
	t.Helper()
	p, err := newSwitch(t, node.SwitchConfig{Seed: 1}).Attach(mac)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func peer(tr node.Transport) node.Peer {
	return node.Peer{Peer: endpoint.Peer{MAC: peerMAC, Mode: endpoint.ModeRMEM, WindowSize: 1 << 32}, Transport: tr}
}

// TestOpenRules: a node with a reliable peer opens its endpoint with the
// transport's fragment ceiling and window and a random first Request ID;
// a v1 node keeps one request at a time and the full fragment; an auto
// peer that does not answer the handshake falls back to v1 and the window
// to one request; SetTransport and Handshake reach the transport of a node
// that has one; Close is one path, and a second Close returns the same.
func TestOpenRules(t *testing.T) {
	ctx := context.Background()
	open := func(tr node.Transport) *node.Node {
		t.Helper()
		n, err := node.Open(ctx, node.Config{LinkConfig: node.LinkConfig{Link: port(t, ownMAC)}, Peers: []node.Peer{peer(tr)},
			Endpoint: endpoint.Config{RMEMTimeout: 1e9, DMATimeout: 1e9}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	v1 := open(node.V1)
	c := v1.Endpoint.Config()
	if c.Outstanding > 1 || c.MaxFragment != wire.FragmentCeiling(c.MaxFrame) || len(v1.Handshakes) != 0 {
		t.Errorf("v1: window %d, fragment %d, %d handshakes; want 1, %d, none", c.Outstanding, c.MaxFragment, len(v1.Handshakes), wire.FragmentCeiling(c.MaxFrame))
	}
	v1b := open(node.V1)
	if v1.Endpoint.Config().InitialRequestID == v1b.Endpoint.Config().InitialRequestID {
		t.Errorf("two nodes start at Request ID %#x both: not random", v1.Endpoint.Config().InitialRequestID)
	}
	v1b.Close()

	rel := open(node.Reliable)
	c = rel.Endpoint.Config()
	if c.Outstanding != node.Window || c.MaxFragment != node.FragmentCeiling(c.MaxFrame) {
		t.Errorf("reliable: window %d, fragment %d; want %d, %d", c.Outstanding, c.MaxFragment, node.Window, node.FragmentCeiling(c.MaxFrame))
	}
	if len(rel.Handshakes) != 1 || rel.Handshakes[0].Err == nil || rel.Reliable(peerMAC) {
		t.Errorf("reliable peer that does not answer: handshakes %+v; want one failed", rel.Handshakes)
	}
	if _, ok := rel.Transport(); !ok {
		t.Error("reliable: no transport stats")
	}
	rel.Close()

	auto := open(node.Auto)
	c = auto.Endpoint.Config()
	if len(auto.Handshakes) != 1 || auto.Handshakes[0].Err != nil || auto.Handshakes[0].Reliable || c.Outstanding != 1 {
		t.Errorf("auto peer that does not answer: handshakes %+v, window %d; want a fallback to v1 and 1", auto.Handshakes, c.Outstanding)
	}
	// SetTransport and Handshake reach the transport of a node that has
	// one: a peer set to v1 is established by no handshake.
	if err := auto.SetTransport(peerMAC, node.V1); err != nil {
		t.Errorf("SetTransport v1: %v", err)
	}
	if ok, err := auto.Handshake(ctx, peerMAC); ok || err != nil {
		t.Errorf("Handshake with a v1 peer: %v, %v; want false, nil", ok, err)
	}
	if err := v1.SetTransport(peerMAC, node.Reliable); !errors.Is(err, node.ErrNoTransport) {
		t.Errorf("SetTransport on a v1 node: %v; want ErrNoTransport", err)
	}
	if _, err := v1.Handshake(ctx, peerMAC); !errors.Is(err, node.ErrNoTransport) {
		t.Errorf("Handshake on a v1 node: %v; want ErrNoTransport", err)
	}
	if err, again := auto.Close(), auto.Close(); err != nil || again != nil {
		t.Errorf("Close: %v, then %v", err, again)
	}
	if err := v1.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenConfigErrors: what the user fixes in the configuration comes back
// as a *ConfigError naming the setting (and the peer entry).
func TestOpenConfigErrors(t *testing.T) {
	group := peer(node.Reliable)
	group.MAC = wire.MAC{0x03, 0x0e, 0x0c, 0, 0, 9}
	own := peer(node.V1)
	own.MAC = ownMAC
	for _, c := range []struct {
		name  string
		cfg   node.Config
		field string
		peer  int
	}{
		{"no interface", node.Config{}, "iface", 0},
		{"reliable group peer", node.Config{LinkConfig: node.LinkConfig{Link: port(t, ownMAC)}, Peers: []node.Peer{peer(node.V1), group}}, "peer", 1},
		{"own MAC as peer", node.Config{LinkConfig: node.LinkConfig{Link: port(t, ownMAC)}, Peers: []node.Peer{own}}, "peer", 0},
		{"busy poll", node.Config{LinkConfig: node.LinkConfig{Iface: "lo", BusyPoll: -1}}, "busy-poll", 0},
	} {
		n, err := node.Open(context.Background(), c.cfg)
		var ce *node.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || ce.Peer != c.peer {
			t.Errorf("%s: %v (%T); want a ConfigError for %s #%d", c.name, err, err, c.field, c.peer)
		}
		if n != nil {
			t.Errorf("%s: a node with the error", c.name)
		}
	}
}

// TestSwitchLoss: a Switch's ports carry frames between links a node opens;
// LinkConfig.Lose loses the frames it picks and reports them written, on a
// link that keeps its group filter; LoseNext loses one frame at the switch;
// a frame that finds a port's queue full counts in KernelDrops.
func TestSwitchLoss(t *testing.T) {
	sw := newSwitch(t, node.SwitchConfig{QueueLen: 3})
	third := endpointtest.MAC(3)
	open := func(mac wire.MAC, lose func([]byte) bool) *node.Link {
		t.Helper()
		p, err := sw.Attach(mac)
		if err != nil {
			t.Fatal(err)
		}
		l, err := node.OpenLink(node.LinkConfig{Link: p, Lose: lose})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	frame := func(dst wire.MAC, tag byte) []byte {
		return append(append(append([]byte{}, dst[:]...), ownMAC[:]...), 0x88, 0xb5, tag)
	}
	lost := 0
	a := open(ownMAC, func(f []byte) bool {
		if f[14] == 'x' {
			lost++
			return true
		}
		return false
	})
	b, c := open(peerMAC, nil), open(third, nil)
	if _, ok := a.Link.(link.Filter); !ok {
		t.Error("the lossy link lost link.Filter")
	}
	if n, err := a.WriteBatch([][]byte{frame(peerMAC, 'x'), frame(peerMAC, '1'), frame(peerMAC, 'x')}); n != 3 || err != nil || lost != 2 {
		t.Errorf("WriteBatch with two frames lost = %d, %v (%d lost), want 3, nil, 2 lost", n, err, lost)
	}
	if err := sw.LoseNext(ownMAC, peerMAC); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]byte{frame(peerMAC, '2'), frame(peerMAC, '3'), frame(peerMAC, 'e')} {
		if err := a.Write(f); err != nil {
			t.Fatal(err)
		}
	}
	// b's queue holds what arrived, up to the end mark 'e'.
	if got := tags(t, b); got != "13e" {
		t.Errorf("b received %q, want \"13e\" (x lost by Lose, 2 by LoseNext)", got)
	}
	for tag := range byte(5) {
		if err := a.Write(frame(third, '0'+tag)); err != nil {
			t.Fatal(err)
		}
	}
	if got, drops := tags(t, c), c.KernelDrops(); got != "012" || drops != 2 {
		t.Errorf("c received %q with %d drops, want \"012\" with 2 (a queue of 3)", got, drops)
	}
	if m, err := sw.Attach(ownMAC); m != nil || err == nil {
		t.Errorf("attaching a MAC twice: %v, %v", m, err)
	}
}

// tags reads the frames queued at l and returns their tag octets.
func tags(t *testing.T, l *node.Link) string {
	t.Helper()
	bufs := [][]byte{make([]byte, 64), make([]byte, 64), make([]byte, 64)}
	sizes := make([]int, 3)
	n, err := l.ReadBatch(bufs, sizes)
	if err != nil {
		t.Fatal(err)
	}
	var s []byte
	for i := range n {
		s = append(s, bufs[i][14])
	}
	return string(s)
}
