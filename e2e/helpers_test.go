package e2e_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/afpacket"
	"github.com/openenoc/oetp/link/afpacket/afpackettest"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/netns"
	"github.com/openenoc/oetp/wire"
)

// The helpers shared with the engine's tests (internal/testutil).
const waitLong = testutil.WaitLong

var (
	bg          = testutil.Background
	openLink    = afpackettest.OpenLink
	newEndpoint = endpointtest.NewEndpoint
	setPeer     = endpointtest.SetPeer
	eventually  = testutil.Eventually
	waitStats   = endpointtest.WaitStats
	wantCode    = endpointtest.WantCode
	wantStatus  = endpointtest.WantStatus
	failed      = endpointtest.Failed
	wantEvent   = endpointtest.WantEvent
	noEvent     = endpointtest.NoEvent
)

// newRAM returns zeroed RAM over the test range.
func newRAM(t testing.TB) *memory.RAM { t.Helper(); return endpointtest.NewRAM(t, ramBase, ramSize) }

// win is a peer entry whose window is the whole test RAM.
func win(mac wire.MAC, mode endpoint.Mode) endpoint.Peer {
	return endpointtest.Window(mac, mode, ramBase, ramSize)
}

// Every test RAM and every default window cover [ramBase, ramBase+ramSize).
const (
	ramBase = 0x10000
	ramSize = 0x200000 // 2 MiB: room for a 1 MiB block and guards
)

// Peer indices in the two-host tests: A's entry for B and B's entry for A.
// They differ on purpose: peer indices are local and never on the wire.
const (
	peerAB = 3
	peerBA = 7
)

var (
	group      = endpointtest.GroupMAC(0x01)
	otherGroup = endpointtest.GroupMAC(0x02)
)

// teeFile wraps l in a pcap Tee recording into a new file of the test's
// temporary directory, and returns the wrapped link and the file's path.
func teeFile(t testing.TB, l link.Link, name string) (link.Link, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".pcap")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w, err := pcap.NewWriter(f, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Err(); err != nil {
			t.Errorf("pcap writer %s: %v", name, err)
		}
	})
	return pcap.Tee(l, w), path
}

// splitBySource splits frames into those sent by mac and the others,
// keeping their order.
func splitBySource(frames [][]byte, mac wire.MAC) (sent, received [][]byte) {
	for _, f := range frames {
		if wire.Frame(f).Src() == mac {
			sent = append(sent, f)
		} else {
			received = append(received, f)
		}
	}
	return sent, received
}

// port is a raw AF_PACKET link used directly by a test, with a goroutine
// queueing every frame it receives. In promiscuous mode it is a sniffer:
// it sees every oETP frame arriving at its host's interface (not the
// frames its host sends: an AF_PACKET link never reads those).
type port struct {
	name   string
	l      *afpacket.Link
	frames chan []byte
	seq    atomic.Uint32
}

func openPort(t testing.TB, h *netns.Host, promisc bool, cfg afpacket.Config) *port {
	t.Helper()
	p := &port{name: h.Name(), l: openLink(t, h, cfg), frames: make(chan []byte, 1<<16)}
	if promisc {
		if err := p.l.SetPromiscuous(true); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(p.frames)
		bufs := make([][]byte, 16)
		for i := range bufs {
			bufs[i] = make([]byte, 9100)
		}
		sizes := make([]int, len(bufs))
		for {
			n, err := p.l.ReadBatch(bufs, sizes)
			if err != nil {
				return
			}
			for i := range n {
				p.frames <- bytes.Clone(bufs[i][:sizes[i]])
			}
		}
	}()
	t.Cleanup(func() { p.l.Close(); <-done })
	return p
}

// sniff opens a promiscuous port on h.
func sniff(t testing.TB, h *netns.Host) *port {
	t.Helper()
	return openPort(t, h, true, afpacket.Config{})
}

// next returns the next frame the port received.
func (p *port) next(t testing.TB) []byte {
	t.Helper()
	select {
	case f, ok := <-p.frames:
		if !ok {
			t.Fatalf("port on %s closed", p.name)
		}
		return f
	case <-time.After(waitLong):
		t.Fatalf("no frame arrived at %s", p.name)
	}
	return nil
}

// expect checks that the next frames the port receives are exactly want.
func (p *port) expect(t testing.TB, what string, want ...[]byte) {
	t.Helper()
	for i, w := range want {
		eqFrame(t, fmt.Sprintf("%s: frame %d of %d at %s", what, i+1, len(want), p.name), w, p.next(t))
	}
}

// send writes f on the port's link.
func (p *port) send(t testing.TB, f []byte) {
	t.Helper()
	if err := p.l.Write(f); err != nil {
		t.Fatal(err)
	}
}

// quiet checks that nothing arrived at p since the frames already taken:
// it has e (an endpoint on another host) send a marker frame towards p's
// host, 0x88B5 without the oETP Magic, and expects the marker to be the
// very next frame. Any frame sent before the marker arrives before it.
func (p *port) quiet(t testing.TB, e *endpoint.Endpoint, dst wire.MAC) {
	t.Helper()
	m := make([]byte, wire.MinFrameLen)
	copy(m, dst[:])
	src := e.Config().MAC
	copy(m[6:], src[:])
	binary.BigEndian.PutUint16(m[12:], wire.EtherType)
	copy(m[14:], "\x00marker")
	binary.BigEndian.PutUint32(m[24:], p.seq.Add(1))
	if err := e.SendRaw(m); err != nil {
		t.Fatal(err)
	}
	eqFrame(t, "after the expected frames, only the marker", m, p.next(t))
}

// eqFrame fails the test if got is not exactly want.
func eqFrame(t testing.TB, what string, want, got []byte) {
	t.Helper()
	if !bytes.Equal(want, got) {
		t.Fatalf("%s:\nwant %d bytes %s\n got %d bytes %s", what, len(want), dump(want), len(got), dump(got))
	}
}

// dump shows a frame: in full when short, else its head and tail.
func dump(b []byte) string {
	if len(b) <= 64 {
		return fmt.Sprintf("% x", b)
	}
	return fmt.Sprintf("% x ... % x", b[:40], b[len(b)-16:])
}

// eqMem fails the test if space does not hold want at addr.
func eqMem(t testing.TB, what string, space memory.Space, addr uint32, want []byte) {
	t.Helper()
	got := make([]byte, len(want))
	if r := space.ReadAt(got, addr); r != memory.OKAY {
		t.Fatalf("%s: reading %d bytes at %#x: %v", what, len(want), addr, r)
	}
	eqBytesAt(t, what, addr, want, got)
}

// eqBytesAt fails the test unless got, the bytes at addr, equals want,
// naming the first byte that differs.
func eqBytesAt(t testing.TB, what string, addr uint32, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	t.Fatalf("%s: %d bytes at %#x (want %d) differ from byte %d (address %#x): want % x, got % x",
		what, len(got), addr, len(want), i, addr+uint32(i), want[i:min(len(want), i+16)], got[i:min(len(got), i+16)])
}

// random returns n deterministic pseudo-random bytes.
func random(n int, seed uint64) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16), 0xe2, 0xe0}).Read(b)
	return b
}

// fill returns n bytes of value v.
func fill(n int, v byte) []byte { return bytes.Repeat([]byte{v}, n) }

// pair is two endpoints, A on h1 and B on h2, each with a RAM, joined by a
// veth pair, with a sniffer on each host: snA sees every frame arriving at
// h1 (B's frames), snB every frame arriving at h2 (A's frames).
type pair struct {
	net        *netns.Net
	a, b       *endpoint.Endpoint
	macA, macB wire.MAC
	ramA, ramB *memory.RAM
	snA, snB   *port
	la, lb     *afpacket.Link // the endpoints' links (A's before wrapA)
}

// pairSetup says how to build a pair; zero fields take defaults.
type pairSetup struct {
	topo           netns.Topology // Hosts is set to 2
	link           afpacket.Config
	cfgA, cfgB     endpoint.Config
	spaceB         memory.Space // B's served memory; nil: ramB
	wrapA          func(link.Link) link.Link
	modeAB, modeBA endpoint.Mode
	winBA          *endpoint.Peer // B's entry for A; nil: win(macA, modeBA)
}

func newPair(t *testing.T, s pairSetup) *pair {
	t.Helper()
	s.topo.Hosts = 2
	n := netns.NewT(t, s.topo)
	h1, h2 := n.Host(0), n.Host(1)
	p := &pair{net: n, macA: h1.MAC(), macB: h2.MAC(), ramA: newRAM(t), ramB: newRAM(t)}
	p.snA = openPort(t, h1, true, s.link)
	p.snB = openPort(t, h2, true, s.link)
	p.la, p.lb = openLink(t, h1, s.link), openLink(t, h2, s.link)
	var la link.Link = p.la
	if s.wrapA != nil {
		la = s.wrapA(la)
	}
	spaceB := memory.Space(p.ramB)
	if s.spaceB != nil {
		spaceB = s.spaceB
	}
	p.a = newEndpoint(t, la, p.ramA, s.cfgA)
	p.b = newEndpoint(t, p.lb, spaceB, s.cfgB)
	setPeer(t, p.a, peerAB, win(p.macB, s.modeAB))
	if s.winBA != nil {
		e := *s.winBA
		e.MAC = p.macA
		setPeer(t, p.b, peerBA, e)
	} else {
		setPeer(t, p.b, peerBA, win(p.macA, s.modeBA))
	}
	return p
}

// modes rewrites the mode of A's entry for B and of B's entry for A,
// keeping everything else.
func (p *pair) modes(t testing.TB, ab, ba endpoint.Mode) {
	t.Helper()
	ea, _ := p.a.Peer(peerAB)
	ea.Mode = ab
	setPeer(t, p.a, peerAB, ea)
	eb, _ := p.b.Peer(peerBA)
	eb.Mode = ba
	setPeer(t, p.b, peerBA, eb)
}

// quiet checks that neither sniffer has an unexpected frame.
func (p *pair) quiet(t testing.TB) {
	t.Helper()
	p.snA.quiet(t, p.b, p.macA)
	p.snB.quiet(t, p.a, p.macB)
}
