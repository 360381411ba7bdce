package endpoint_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

var (
	macA = endpointtest.MAC(0x0a)
	macB = endpointtest.MAC(0x0b)
	macC = endpointtest.MAC(0x0c)
	macD = endpointtest.MAC(0x0d)
	macP = endpointtest.MAC(0x50) // a scripted peer
	macQ = endpointtest.MAC(0x51) // a second scripted peer
	// The sniffer has the lowest address: link/mem fans a frame out to its
	// receivers in address order, so the sniffer gets every frame before
	// any receiver can react to it, and sees frames in causal order.
	macS  = endpointtest.MAC(0x01)
	macX  = endpointtest.MAC(0x77) // attached to nothing
	group = endpointtest.GroupMAC(0x01)
	grp2  = endpointtest.GroupMAC(0x02)
)

// Every endpoint's RAM and every default window cover [ramBase, ramBase+ramSize).
const (
	ramBase = 0x1000
	ramSize = 0x10000
)

// The helpers shared with the end-to-end tests (internal/testutil).
const waitLong = testutil.WaitLong // only reached when a test is failing

var (
	bg         = testutil.Background
	newEPOn    = endpointtest.NewEndpoint
	setPeer    = endpointtest.SetPeer
	eventually = testutil.Eventually
	pattern    = testutil.Pattern
	wantCode   = endpointtest.WantCode
	wantStatus = endpointtest.WantStatus
	failed     = endpointtest.Failed
)

func newRAM(t testing.TB) *memory.RAM { t.Helper(); return endpointtest.NewRAM(t, ramBase, ramSize) }

// newSLVERRMap returns a Map with RAM at [base, base+size) and, unless
// slvSize is 0, a region at [slvBase, slvBase+slvSize) that answers SLVERR;
// an address in neither is a hole, which answers DECERR.
func newSLVERRMap(t testing.TB, base uint32, size uint64, slvBase uint32, slvSize uint64) (*memory.Map, *memory.RAM) {
	t.Helper()
	m := memory.NewMap()
	ram, err := memory.NewRAM(base, size)
	if err == nil {
		err = m.Add(base, size, ram)
	}
	if err == nil && slvSize != 0 {
		var f *memory.Fault
		if f, err = memory.NewFault(slvBase, slvSize, memory.SLVERR); err == nil {
			err = m.Add(slvBase, slvSize, f)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return m, ram
}

// win returns a peer entry whose window is the whole test RAM.
func win(mac wire.MAC, mode endpoint.Mode) endpoint.Peer {
	return endpointtest.Window(mac, mode, ramBase, ramSize)
}

// newSwitch returns a switch with the default configuration and a deep queue.
func newSwitch(t testing.TB) *mem.Switch { t.Helper(); return newSwitchWith(t, mem.Config{}) }

// dmaPath sets up the peer entries for DMA from the memory of from to
// that of to, with windows over the whole test RAM: from's peer i is to in
// mode dma-read (from writes to it, or serves its reads), to's peer j is
// from in mode dma-write (to accepts its writes, or reads from it).
func dmaPath(t testing.TB, from *endpoint.Endpoint, i int, to *endpoint.Endpoint, j int) {
	t.Helper()
	setPeer(t, from, i, win(to.Config().MAC, endpoint.ModeDMARead))
	setPeer(t, to, j, win(from.Config().MAC, endpoint.ModeDMAWrite))
}

func newSwitchWith(t testing.TB, cfg mem.Config) *mem.Switch {
	t.Helper()
	if cfg.QueueLen == 0 {
		cfg.QueueLen = 4096
	}
	sw, err := mem.NewSwitch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return sw
}

func attach(t testing.TB, sw *mem.Switch, mac wire.MAC) *mem.Port {
	t.Helper()
	p, err := sw.Attach(mac)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newEP starts an endpoint on a new port of sw, closed at the end of the test.
func newEP(t testing.TB, sw *mem.Switch, mac wire.MAC, space memory.Space, cfg endpoint.Config) *endpoint.Endpoint {
	t.Helper()
	return newEPOn(t, attach(t, sw, mac), space, cfg)
}

// newSwitchTap returns a new switch with a tap at mac on it: the start of
// every test that watches or scripts the wire.
func newSwitchTap(t testing.TB, mac wire.MAC, promisc bool) (*mem.Switch, *tap) {
	t.Helper()
	sw := newSwitch(t)
	return sw, newTap(t, sw, mac, promisc)
}

// tap is a raw port that records every frame it receives.
type tap struct {
	p      *mem.Port
	frames chan []byte
}

func newTap(t testing.TB, sw *mem.Switch, mac wire.MAC, promisc bool) *tap {
	t.Helper()
	tp := &tap{p: attach(t, sw, mac), frames: make(chan []byte, 1<<16)}
	if promisc {
		if err := tp.p.SetPromiscuous(true); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		bufs := [][]byte{make([]byte, 9000)}
		sizes := []int{0}
		for {
			n, err := tp.p.ReadBatch(bufs, sizes)
			if err != nil {
				close(tp.frames)
				return
			}
			for i := range n {
				tp.frames <- bytes.Clone(bufs[i][:sizes[i]])
			}
		}
	}()
	t.Cleanup(func() { tp.p.Close() })
	return tp
}

// next returns the next frame the tap received.
func (tp *tap) next(t testing.TB) []byte {
	t.Helper()
	select {
	case f, ok := <-tp.frames:
		if !ok {
			t.Fatal("tap closed")
		}
		return f
	case <-time.After(waitLong):
		t.Fatal("no frame arrived at the tap")
	}
	return nil
}

// none asserts that no frame arrives within d.
func (tp *tap) none(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case f := <-tp.frames:
		t.Fatalf("unexpected frame % x", f)
	case <-time.After(d):
	}
}

func (tp *tap) send(t testing.TB, f []byte) {
	t.Helper()
	if err := tp.p.Write(f); err != nil {
		t.Fatal(err)
	}
}

// unhex parses hex with optional spaces.
func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func eqBytes(t testing.TB, what string, want, got []byte) {
	t.Helper()
	if !bytes.Equal(want, got) {
		t.Fatalf("%s:\nwant % x\n got % x", what, want, got)
	}
}

func diff(t testing.TB, what string, want, got any) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("%s (-want +got):\n%s", what, d)
	}
}

// gateLink wraps a port with link.Wrap: it can hold the next frame
// written until released, and it logs every frame written. The endpoint
// uses its Link, which keeps the port's receive loop and sends the frames
// of WriteFill through the gate too.
type gateLink struct {
	link.Link
	mu      sync.Mutex
	hold    bool
	entered chan struct{}
	release chan struct{}
	log     [][]byte
	writes  int // completed writes
}

// newGatedEP starts an endpoint on test RAM behind a gate on a new port
// of sw.
func newGatedEP(t testing.TB, sw *mem.Switch, mac wire.MAC, cfg endpoint.Config) (*endpoint.Endpoint, *gateLink) {
	t.Helper()
	g := &gateLink{entered: make(chan struct{}, 1), release: make(chan struct{})}
	g.Link = link.Wrap(attach(t, sw, mac), link.Hooks{Write: g.write})
	return newEPOn(t, g.Link, newRAM(t), cfg), g
}

func (g *gateLink) holdNext() {
	g.mu.Lock()
	g.hold = true
	g.mu.Unlock()
}

func (g *gateLink) write(frames [][]byte, next func([][]byte) (int, error)) (int, error) {
	for i, f := range frames {
		g.mu.Lock()
		h := g.hold
		g.hold = false
		g.mu.Unlock()
		if h {
			g.entered <- struct{}{}
			<-g.release
		}
		_, err := next(frames[i : i+1])
		g.mu.Lock()
		g.log = append(g.log, bytes.Clone(f))
		g.writes++
		g.mu.Unlock()
		if err != nil {
			return i, err
		}
	}
	return len(frames), nil
}

func (g *gateLink) frames() [][]byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]byte(nil), g.log...)
}

// newScripted starts endpoint A whose peer 0 is the raw port P in mode, so
// the test plays the remote side byte by byte.
func newScripted(t *testing.T, mode endpoint.Mode, cfg endpoint.Config) (*endpoint.Endpoint, *tap, *mem.Switch) {
	t.Helper()
	sw, p := newSwitchTap(t, macP, false)
	a := newEP(t, sw, macA, newRAM(t), cfg)
	setPeer(t, a, 0, win(macP, mode))
	return a, p, sw
}

type result struct {
	data uint32
	tr   endpoint.Transfer
	err  error
}

// async runs op in a goroutine and returns the channel of its result.
func async(op func() result) <-chan result {
	c := make(chan result, 1)
	go func() { c <- op() }()
	return c
}

func await(t testing.TB, c <-chan result) result {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(waitLong):
		t.Fatal("operation did not complete")
	}
	return result{}
}

// failedRead is what a failed RMEM read returns: all ones.
var failedRead = result{data: 0xFFFFFFFF}

// moved is the result of a block that moved n bytes in frags fragments.
func moved(n uint64, frags int) result {
	return result{tr: endpoint.Transfer{Bytes: n, Fragments: frags}}
}

// wantFailed fails t unless r's error wraps err and r's data and transfer
// are want's.
func wantFailed(t testing.TB, what string, r result, err error, want result) {
	t.Helper()
	if !errors.Is(r.err, err) || r.data != want.data || r.tr != want.tr {
		t.Fatalf("%s = %#x, %+v, %v; want %#x, %+v and an error wrapping %v", what, r.data, r.tr, r.err, want.data, want.tr, err)
	}
}

func pending(t testing.TB, c <-chan result) {
	t.Helper()
	select {
	case r := <-c:
		t.Fatalf("operation completed early: %+v", r)
	case <-time.After(20 * time.Millisecond):
	}
}

func rmemRead(a *endpoint.Endpoint, peer int, addr uint32) <-chan result {
	return async(func() result { d, err := a.RMEMRead(bg(), peer, addr); return result{data: d, err: err} })
}

func dmaRead(a *endpoint.Endpoint, peer int, addr uint32, dst []byte) <-chan result {
	return async(func() result { tr, err := a.DMARead(bg(), peer, addr, dst); return result{tr: tr, err: err} })
}

func dmaWrite(a *endpoint.Endpoint, peer int, addr uint32, src []byte) <-chan result {
	return async(func() result { tr, err := a.DMAWrite(bg(), peer, addr, src); return result{tr: tr, err: err} })
}
