package replicate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/endpoint/endpointtest"
	"github.com/openenoc/oetp/internal/testutil"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

var (
	macW  = wire.MAC{0x02, 0, 0, 0, 0, 0xa1} // the master's writer
	macR  = wire.MAC{0x02, 0, 0, 0, 0, 0xa2} // the master's reader
	group = wire.MAC{0x03, 0, 0, 0, 0, 0x01}
)

const base = 0x1000

func newEP(t *testing.T, sw *mem.Switch, mac wire.MAC, space memory.Space, cfg endpoint.Config) *endpoint.Endpoint {
	t.Helper()
	p, err := sw.Attach(mac)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DMATimeout = 200 * time.Millisecond
	return endpointtest.NewEndpoint(t, p, space, cfg)
}

// newBlock returns a switch and the block the tests replicate: n bytes of
// testutil.Pattern(n, seed), and a source memory at 0 holding them.
func newBlock(t *testing.T, n int, seed byte) (*mem.Switch, []byte, *memory.RAM) {
	t.Helper()
	sw, err := mem.NewSwitch(mem.Config{QueueLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	src := testutil.Pattern(n, seed)
	space := endpointtest.NewRAM(t, 0, uint64(n))
	space.WriteAt(src, 0)
	return sw, src, space
}

// waitServed waits until member i has served want DMA writes.
func waitServed(t *testing.T, i int, ep *endpoint.Endpoint, want uint64) {
	t.Helper()
	endpointtest.WaitStats(t, fmt.Sprintf("member %d serving %d DMA writes", i, want), ep, func(s endpoint.Stats) bool { return s.ServedDMAWrite == want })
}

func setPeer(t *testing.T, ep *endpoint.Endpoint, i int, mac wire.MAC, mode endpoint.Mode) {
	t.Helper()
	if err := ep.SetPeer(i, endpoint.Peer{MAC: mac, Mode: mode, WindowSize: 1 << 32}); err != nil {
		t.Fatal(err)
	}
}

// TestProbeWriteVerify: three members get a 10-fragment group write paced
// at the interval the probes give; then B loses fragments 2 and 9 (their
// bytes overwritten, as if dropped), C keeps everything and D has no entry
// for the reader. Verify reports B repaired with exactly those fragments
// and its memory exact, C verified, D failed with TIMEOUT.
func TestProbeWriteVerify(t *testing.T) {
	const frag = 100
	sw, src, srcSpace := newBlock(t, 10*frag-30, 3)
	w := newEP(t, sw, macW, nil, endpoint.Config{MaxFragment: frag})
	r := newEP(t, sw, macR, nil, endpoint.Config{})
	setPeer(t, w, 0, group, endpoint.ModeDMARead)
	macs := []wire.MAC{{0x02, 0, 0, 0, 0, 0x0b}, {0x02, 0, 0, 0, 0, 0x0c}, {0x02, 0, 0, 0, 0, 0x0d}}
	var rams []*memory.RAM
	var members []*endpoint.Endpoint
	for i, m := range macs {
		ram := endpointtest.NewRAM(t, base, 0x1000)
		ep := newEP(t, sw, m, ram, endpoint.Config{Group: group})
		setPeer(t, ep, 0, macW, endpoint.ModeDMAWrite)
		if i < 2 {
			setPeer(t, ep, 1, macR, endpoint.ModeDMARead)
		}
		setPeer(t, w, i+1, m, endpoint.ModeDMARead)
		setPeer(t, r, i, m, endpoint.ModeDMAWrite)
		rams, members = append(rams, ram), append(members, ep)
	}
	ctx := context.Background()

	probes, err := replicate.ProbeMembers(ctx, w, []int{1, 2, 3}, base, srcSpace, 0, uint64(len(src)))
	if err != nil || len(probes) != 3 {
		t.Fatalf("ProbeMembers = %v, %v", probes, err)
	}
	interval, slowest := replicate.Interval(probes)
	served := make([]uint64, len(members))
	for i, p := range probes {
		served[i] = replicate.Probes
		if i == slowest {
			served[i]++ // probed once more after the others
		}
		if p.Member != macs[i] || len(p.RoundTrips) != int(served[i]) || p.PerFragment <= 0 {
			t.Fatalf("probe %d: %+v", i, p)
		}
		if st := members[i].Stats(); st.ServedDMAWrite != served[i] {
			t.Fatalf("member %d served %d probes, want %d", i, st.ServedDMAWrite, served[i])
		}
	}
	if rt := probes[slowest].RoundTrips; interval != rule(slices.Min(rt), slices.Max(rt)) {
		want := rule(slices.Min(rt), slices.Max(rt))
		t.Fatalf("Interval = %v, %d; want %v", interval, slowest, want)
	}
	for _, p := range probes {
		if p.PerFragment > probes[slowest].PerFragment {
			t.Fatalf("slowest %d is not the slowest: %+v", slowest, probes)
		}
	}

	if _, err := w.DMAWriteFrom(ctx, 0, base, srcSpace, 0, uint32(len(src))); err != nil {
		t.Fatal(err)
	}
	for i, ep := range members {
		waitServed(t, i, ep, served[i]+10)
	}
	rams[0].WriteAt(bytes.Repeat([]byte{0xee}, frag), base+2*frag)
	rams[0].WriteAt([]byte{0xee}, base+9*frag+69)

	mfs := replicate.FragmentSize(w)
	if mfs != frag {
		t.Fatalf("FragmentSize = %d", mfs)
	}
	for i, m := range macs {
		rep := replicate.Verify(ctx, replicate.Member{MAC: m, Writer: w, WritePeer: i + 1, Reader: r, ReadPeer: i}, base, srcSpace, 0, uint64(len(src)), mfs)
		switch i {
		case 0:
			want := []replicate.Fragment{{Index: 2, Addr: base + 200, Len: 100}, {Index: 9, Addr: base + 900, Len: 70}}
			if rep.State != replicate.Repaired || rep.Err != nil || rep.Rounds != 1 || rep.Fragments != 10 || rep.Checked != 10 || len(rep.Repaired) != 2 || rep.Repaired[0] != want[0] || rep.Repaired[1] != want[1] {
				t.Fatalf("B: %+v", rep)
			}
		case 1:
			if rep.State != replicate.Verified || rep.Err != nil || len(rep.Repaired) != 0 || rep.Checked != 10 {
				t.Fatalf("C: %+v", rep)
			}
		case 2:
			var oe *endpoint.OpError
			if rep.State != replicate.Failed || !errors.As(rep.Err, &oe) || oe.Code != wire.CodeTimeout || rep.Checked != 0 {
				t.Fatalf("D: %+v", rep)
			}
		}
		got := make([]byte, len(src))
		rams[i].ReadAt(got, base)
		if !bytes.Equal(got, src) {
			t.Fatalf("member %d's memory differs", i)
		}
	}
}
