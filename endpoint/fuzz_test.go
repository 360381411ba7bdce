package endpoint_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/wire"
)

// FuzzReceive feeds arbitrary frames to a serving endpoint from its three
// peers (modes 1, 2 and 3) and from an unknown source, to its unicast
// address, its group and other addresses. The endpoint must never panic,
// must keep serving, and every frame it sends must be a well-formed oETP
// response from its own MAC to the peer that asked.
func FuzzReceive(f *testing.F) {
	peers := []wire.MAC{macP, macQ, macC}
	seed := func(sel byte, frame []byte) { f.Add(append([]byte{sel}, frame[12:]...)) }
	seed(0, wire.AppendRMEMReadReq(nil, macB, macP, 1, ramBase))
	seed(0, wire.AppendRMEMWriteReq(nil, macB, macP, 2, ramBase+4, 0xF, 7))
	seed(1, wire.AppendDMAWriteReq(nil, macB, macQ, 3, ramBase+1, []byte{1, 2, 3, 4, 5}))
	seed(2, wire.AppendDMAReadReq(nil, macB, macC, 4, ramBase+3, 9))
	seed(2, wire.AppendDMAReadReq(nil, macB, macC, 5, 0x20000, 8))
	seed(4, wire.AppendDMAWriteReq(nil, group, macQ, 6, ramBase, []byte{9}))
	seed(0, wire.AppendErrorRsp(nil, macB, macP, 7, 2))
	seed(1, append(wire.AppendDMAWriteReq(nil, macB, macQ, 8, ramBase, make([]byte, 20)), make([]byte, 8)...))

	sw, err := mem.NewSwitch(mem.Config{QueueLen: 4096})
	if err != nil {
		f.Fatal(err)
	}
	space, _ := newSLVERRMap(f, ramBase, ramSize, 0x20000, 0x1000)
	e := newEP(f, sw, macB, space, endpoint.Config{Group: group, Contexts: 2})
	for i, m := range []endpoint.Mode{endpoint.ModeRMEM, endpoint.ModeDMAWrite, endpoint.ModeDMARead} {
		setPeer(f, e, i, endpoint.Peer{MAC: peers[i], Mode: m, WindowBase: 0, WindowSize: 1 << 32})
	}
	ports := make([]*mem.Port, 4)
	for i, m := range append(peers, macD) {
		ports[i] = attach(f, sw, m)
	}
	sniff := attach(f, sw, macS)
	if err := sniff.SetPromiscuous(true); err != nil {
		f.Fatal(err)
	}
	var mu sync.Mutex
	var bad []string
	go func() {
		bufs, sizes := [][]byte{make([]byte, 9000)}, []int{0}
		for {
			if _, err := sniff.ReadBatch(bufs, sizes); err != nil {
				return
			}
			fr := bufs[0][:sizes[0]]
			if wire.Frame(fr).Src() != macB {
				continue
			}
			c := wire.Classify(fr, wire.MaxFrameLen)
			ok := c.Kind == wire.KindResponse && c.Problem == wire.OK
			if c.Cmd == wire.DMAReadRsp { // the engine never pads: EndOfData is the last word
				eod, _ := wire.Frame(fr).EndOfDataAt(uint32(len(fr) - 24))
				ok = ok && len(fr) >= 28 && eod == wire.EndOfData
			}
			known := false
			for _, p := range peers {
				known = known || wire.Frame(fr).Dst() == p
			}
			if !ok || !known {
				mu.Lock()
				bad = append(bad, wire.Frame(fr).Cmd().String())
				mu.Unlock()
			}
		}
	}()
	f.Cleanup(func() { sniff.Close() })

	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 1 {
			return
		}
		sel := in[0]
		src := append(peers, macD)[int(sel)%4]
		var dst wire.MAC
		switch (sel >> 2) % 4 {
		case 0, 3:
			dst = macB
		case 1:
			dst = group
		case 2:
			dst = wire.Broadcast
		}
		frame := append(append(dst[:], src[:]...), in[1:]...)
		if len(frame) > wire.MaxFrameLen {
			frame = frame[:wire.MaxFrameLen]
		}
		if err := ports[int(sel)%4].Write(frame); err != nil {
			if errors.Is(err, mem.ErrFrameTooShort) {
				return // a medium cannot carry a runt; Classify's own fuzz covers it
			}
			t.Fatal(err)
		}
		// The endpoint still serves: a valid RMEM read from the mode-1 peer
		// is answered (retried: the fuzzed frame may hold the contexts).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for {
			n := e.Stats().ServedRMEMRead
			if err := ports[0].Write(wire.AppendRMEMReadReq(nil, macB, macP, 0xFFFF, ramBase)); err != nil {
				t.Fatal(err)
			}
			for e.Stats().ServedRMEMRead == n && ctx.Err() == nil {
				time.Sleep(50 * time.Microsecond)
			}
			if e.Stats().ServedRMEMRead > n {
				break
			}
			if ctx.Err() != nil {
				t.Fatal("the endpoint stopped serving")
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("the endpoint sent malformed or misaddressed frames: %v", bad)
		}
	})
}
