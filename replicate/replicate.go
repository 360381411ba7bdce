// Package replicate makes group DMA writes (one master to the members of a
// group address) arrive whole: it measures what each member can take and
// paces the group's fragments to the slowest, and it reads every member
// back afterwards, rewriting by unicast the fragments a member missed.
//
// A group write has no reply: each fragment completes when the master's
// link has taken it. A member that takes one request at a time, as an
// openENOC device does (one responder context; a request that arrives while
// it is busy is dropped without a trace), loses the fragments that arrive
// faster than it retires them. Probe measures each member's time per
// fragment with unicast DMA writes of the block's first fragment (answered,
// so timed); Interval turns the slowest into endpoint.Config.GroupInterval
// with a margin. Verify then proves the result member by member.
//
// The functions work on endpoints the caller owns: a writer whose MAC each
// member has in mode 2 (accept DMA writes), with a peer entry for the group
// and one per member, and for Verify a reader on another MAC that each
// member has in mode 3 (serve DMA reads), with a peer entry per member.
package replicate

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// Probes is the number of unicast writes of the first fragment each member
// is probed with; its time per fragment is their median.
const Probes = 3

// Margin is the factor between the slowest member's time per fragment and
// the group interval: room for a member (or a simulator) that runs slower
// during the write than during the probes.
const Margin = 1.5

// Probe is what probing one member measured.
type Probe struct {
	Member wire.MAC
	// RoundTrips are the probes' times, from handing the request to the
	// link to its DMA_WRITE_RSP (one DMAWrite of one fragment each).
	RoundTrips []time.Duration
	// PerFragment is the median of RoundTrips: the member's time per
	// fragment, transmission and reply included.
	PerFragment time.Duration
}

// ProbeMembers writes the first fragment of the block (the first
// min(n, fragment size) bytes of src at local) to remote on each member,
// Probes times, by unicast DMA writes through peers (the writer's entries
// for the members, in mode 3), and returns what it measured. The members
// are probed one after another. The first failure is returned with the
// probes so far; its error names the member.
func ProbeMembers(ctx context.Context, ep *endpoint.Endpoint, peers []int, remote uint32, src memory.Space, local uint32, n uint64) ([]Probe, error) {
	frag := uint32(min(n, uint64(FragmentSize(ep))))
	var out []Probe
	for _, i := range peers {
		p, _ := ep.Peer(i)
		pr := Probe{Member: p.MAC}
		for range Probes {
			t0 := time.Now()
			if _, err := ep.DMAWriteFrom(ctx, i, remote, src, local, frag); err != nil {
				return out, fmt.Errorf("probing member %v with a unicast DMA write of the first fragment (%d bytes at %#x): %w", p.MAC, frag, remote, err)
			}
			pr.RoundTrips = append(pr.RoundTrips, time.Since(t0))
		}
		s := slices.Clone(pr.RoundTrips)
		slices.Sort(s)
		pr.PerFragment = s[len(s)/2]
		out = append(out, pr)
	}
	return out, nil
}

// Interval is the group interval for probes: the slowest member's time per
// fragment times Margin, and that member's index in probes (-1 and 0 for
// none).
func Interval(probes []Probe) (time.Duration, int) {
	slowest := -1
	for i, p := range probes {
		if slowest < 0 || p.PerFragment > probes[slowest].PerFragment {
			slowest = i
		}
	}
	if slowest < 0 {
		return 0, -1
	}
	return time.Duration(float64(probes[slowest].PerFragment) * Margin), slowest
}

// FragmentSize is the size of the fragments ep's DMA blocks use now.
func FragmentSize(ep *endpoint.Endpoint) uint32 {
	c := ep.Config()
	mfs, ok := wire.EffectiveFragment(c.MaxFragment, wire.FragmentCeiling(c.MaxFrame))
	if !ok {
		return 4
	}
	return mfs
}

// Member is one member to verify: its unicast MAC, the writer's entry for
// it (mode 3, for repairs) and the reader's (mode 2, to read it back).
type Member struct {
	MAC       wire.MAC
	Writer    *endpoint.Endpoint
	WritePeer int
	Reader    *endpoint.Endpoint
	ReadPeer  int
}

// The states of a Report.
const (
	// Verified: every fragment read back equal to the source.
	Verified = "verified"
	// Repaired: some fragments differed; each was rewritten by unicast and
	// then read back equal.
	Repaired = "repaired"
	// Failed: the member could not be read back, or a fragment could not
	// be repaired; Err says why.
	Failed = "failed"
)

// Fragment is one fragment of the group write: its index in the block, its
// remote address and length.
type Fragment struct {
	Index int
	Addr  uint32
	Len   uint32
}

// Report is the outcome of Verify for one member.
type Report struct {
	Member wire.MAC
	State  string
	// Fragments is the number of fragments of the block; Checked how many
	// were read back and compared (all of them unless reading failed).
	Fragments int
	Checked   int
	// Repaired are the fragments that differed and were rewritten, in
	// order; Rounds the number of repair rounds it took.
	Repaired []Fragment
	Rounds   int
	// Err is why the member failed.
	Err error
}

// Rounds is how many times Verify rewrites and reads again a fragment that
// still differs before it gives the member up.
const Rounds = 3

// readChunk is how many bytes Verify reads back at a time.
const readChunk = 1 << 20

// Verify reads back the n bytes of the block at remote from the member,
// compares them fragment by fragment (fragments of mfs bytes, as the group
// write sent them) with src at local, rewrites each differing fragment by a
// unicast DMA write and reads it back again, up to Rounds times. The
// report says which fragments were repaired, and the member's final state.
func Verify(ctx context.Context, m Member, remote uint32, src memory.Space, local uint32, n uint64, mfs uint32) Report {
	r := Report{Member: m.MAC, Fragments: int((n + uint64(mfs) - 1) / uint64(mfs))}
	chunk := max(uint64(readChunk)/uint64(mfs), 1) * uint64(mfs)
	got := make([]byte, min(chunk, n))
	want := make([]byte, len(got))
	var bad []Fragment
	for off := uint64(0); off < n; off += chunk {
		c := min(chunk, n-off)
		if err := read(ctx, m, remote+uint32(off), got[:c]); err != nil {
			return r.fail(err)
		}
		if resp := src.ReadAt(want[:c], local+uint32(off)); resp != memory.OKAY {
			return r.fail(fmt.Errorf("reading the source at offset %d: %v", off, resp))
		}
		for fo := uint64(0); fo < c; fo += uint64(mfs) {
			fl := min(uint64(mfs), c-fo)
			r.Checked++
			if !bytes.Equal(got[fo:fo+fl], want[fo:fo+fl]) {
				bad = append(bad, Fragment{Index: int((off + fo) / uint64(mfs)), Addr: remote + uint32(off+fo), Len: uint32(fl)})
			}
		}
	}
	r.Repaired = bad
	for len(bad) > 0 {
		if r.Rounds == Rounds {
			f := bad[0]
			return r.fail(fmt.Errorf("%d fragment(s) still differ after %d repair rounds, the first %d at %#x", len(bad), Rounds, f.Index, f.Addr))
		}
		r.Rounds++
		var still []Fragment
		for _, f := range bad {
			local := local + (f.Addr - remote)
			if _, err := m.Writer.DMAWriteFrom(ctx, m.WritePeer, f.Addr, src, local, f.Len); err != nil {
				return r.fail(fmt.Errorf("rewriting fragment %d at %#x by unicast: %w", f.Index, f.Addr, err))
			}
			if err := read(ctx, m, f.Addr, got[:f.Len]); err != nil {
				return r.fail(fmt.Errorf("reading back repaired fragment %d: %w", f.Index, err))
			}
			if resp := src.ReadAt(want[:f.Len], local); resp != memory.OKAY {
				return r.fail(fmt.Errorf("reading the source of fragment %d: %v", f.Index, resp))
			}
			if !bytes.Equal(got[:f.Len], want[:f.Len]) {
				still = append(still, f)
			}
		}
		bad = still
	}
	r.State = Verified
	if len(r.Repaired) > 0 {
		r.State = Repaired
	}
	return r
}

func (r Report) fail(err error) Report {
	r.State, r.Err = Failed, err
	return r
}

// read reads len(p) bytes of the member at addr through its read entry.
func read(ctx context.Context, m Member, addr uint32, p []byte) error {
	if _, err := m.Reader.DMARead(ctx, m.ReadPeer, addr, p); err != nil {
		return fmt.Errorf("reading back %d bytes at %#x: %w", len(p), addr, err)
	}
	return nil
}
