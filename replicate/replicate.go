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
// with a margin, and Pacing.Write sends the block at that interval,
// checking the slowest member between runs of fragments. Verify then
// proves the result member by member.
//
// The functions work on endpoints the caller owns: a writer whose MAC each
// member has in mode 2 (accept DMA writes), with a peer entry for the group
// and one per member, and for Verify a reader on another MAC that each
// member has in mode 3 (serve DMA reads), with a peer entry per member.
package replicate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/wire"
)

// Message is err, an error of a probe, a paced write or Verify, in words
// for people: the engine's error within it in its outcome's words
// ("TIMEOUT (8): ..."), the context around it kept ("reading back ...").
func Message(err error) string {
	msg := err.Error()
	var oe *endpoint.OpError
	if errors.As(err, &oe) {
		msg = strings.Replace(msg, oe.Error(), oe.Outcome(), 1)
	}
	return msg
}

// Probes is the number of unicast writes of the first fragment each member
// is probed with; its time per fragment is the slowest of them.
const Probes = 5

// Margin is the factor between the slowest member's time per fragment and
// the group interval: room for a member (or a simulator) that runs slower
// during the write than during the probes. The interval also adds the
// spread of that member's round trips (slowest minus fastest), its jitter:
// next to nothing for a board, a lot for a simulator on a loaded host.
const Margin = 1.5

// Run is how many group fragments Pacing.Write sends between two checks of
// the slowest member.
const Run = 16

// Probe is what probing one member measured.
type Probe struct {
	Member wire.MAC
	// RoundTrips are the probes' times, from handing the request to the
	// link to its DMA_WRITE_RSP (one DMAWrite of one fragment each).
	RoundTrips []time.Duration
	// PerFragment is the slowest of RoundTrips: the member's time per
	// fragment, transmission and reply included, at its worst.
	PerFragment time.Duration
}

// ProbeMembers writes the first fragment of the block (the first
// min(n, fragment size) bytes of src at local) to remote on each member,
// Probes times, by unicast DMA writes through peers (the writer's entries
// for the members, in mode 3), and returns what it measured. The members
// are probed one after another; then the slowest is probed once more, so
// that the group write starts only once it has answered everything sent
// to it before (the copies of the other members' probes that a switch
// floods while it has not learned their ports included): a member that
// takes one request at a time is idle when the first group frame comes.
// The first failure is returned with the probes so far; its error names
// the member.
func ProbeMembers(ctx context.Context, ep *endpoint.Endpoint, peers []int, remote uint32, src memory.Space, local uint32, n uint64) ([]Probe, error) {
	frag := uint32(min(n, uint64(FragmentSize(ep))))
	var out []Probe
	probe := func(i int, pr *Probe) error {
		t0 := time.Now()
		if _, err := ep.DMAWriteFrom(ctx, peers[i], remote, src, local, frag); err != nil {
			return fmt.Errorf("probing member %v with a unicast DMA write of the first fragment (%d bytes at %#x): %w", pr.Member, frag, remote, err)
		}
		pr.RoundTrips = append(pr.RoundTrips, time.Since(t0))
		pr.PerFragment = slices.Max(pr.RoundTrips)
		return nil
	}
	for i, peer := range peers {
		p, _ := ep.Peer(peer)
		out = append(out, Probe{Member: p.MAC})
		for range Probes {
			if err := probe(i, &out[i]); err != nil {
				return out, err
			}
		}
	}
	if _, slowest := Interval(out); slowest >= 0 {
		if err := probe(slowest, &out[slowest]); err != nil {
			return out, err
		}
	}
	return out, nil
}

// Interval is the group interval for probes: the slowest member's time per
// fragment times Margin plus the spread of its round trips (interval), and
// that member's index in probes (-1 and 0 for none).
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
	rt := probes[slowest].RoundTrips
	return interval(slices.Min(rt), slices.Max(rt)), slowest
}

// interval is the group interval for round trips from best to worst:
// worst times Margin, plus worst - best.
func interval(best, worst time.Duration) time.Duration {
	return time.Duration(float64(worst)*Margin) + worst - best
}

// Pacing paces a group write from its members' probes, and follows the
// slowest member while it writes.
type Pacing struct {
	Probes []Probe
	// Slowest is the index in Probes of the slowest member, and Peer the
	// writer's entry for it.
	Slowest int
	Peer    int
	// Start is the interval from the probes; Interval the one in use,
	// raised by a check that found the slowest member slower.
	Start, Interval time.Duration
	// Checks are the round trips of the checks between runs, and Raised
	// how many of them raised Interval.
	Checks []time.Duration
	Raised int
	// best and worst are the slowest member's fastest and slowest round
	// trips so far, probes and checks.
	best, worst time.Duration
}

// NewPacing paces from probes (from ProbeMembers with the same peers).
func NewPacing(probes []Probe, peers []int) *Pacing {
	iv, slowest := Interval(probes)
	p := &Pacing{Probes: probes, Slowest: slowest, Start: iv, Interval: iv}
	if slowest >= 0 {
		p.Peer = peers[slowest]
		p.best, p.worst = slices.Min(probes[slowest].RoundTrips), slices.Max(probes[slowest].RoundTrips)
	}
	return p
}

// Write sends the n bytes of src at local to remote on the group (ep's
// peer group) in runs of Run fragments, each fragment Interval after the
// previous one. Between runs it checks the slowest member: Interval after
// the run's last frame it rewrites that fragment to the member by unicast
// (the same bytes: nothing changes on a member that has them) and times
// it. The reply proves the member has taken the run, so a run never
// starts on a busy member; a slower round trip than the probes' (a member
// or a simulator that slowed down, its drift) or a wider spread raises
// Interval as Interval computes it from all the member's round trips so
// far, and a check the member does not answer in time doubles Interval
// and is tried again, up to three times. at, if not nil, gives the context
// of the run at byte offset off (progress reporting). The Transfer counts
// the group's frames only.
func (p *Pacing) Write(ctx context.Context, ep *endpoint.Endpoint, group int, remote uint32, src memory.Space, local uint32, n uint64, at func(ctx context.Context, off uint64) context.Context) (endpoint.Transfer, error) {
	var total endpoint.Transfer
	if err := p.apply(ep); err != nil {
		return total, err
	}
	mfs := uint64(FragmentSize(ep))
	run := mfs * Run
	for off := uint64(0); off < n; off += run {
		c := min(run, n-off)
		rctx := ctx
		if at != nil {
			rctx = at(ctx, off)
		}
		t, err := ep.DMAWriteFrom(rctx, group, remote+uint32(off), src, local+uint32(off), uint32(c))
		total.Bytes += t.Bytes
		total.Fragments += t.Fragments
		total.Retries += t.Retries
		if err != nil || off+c >= n || p.Slowest < 0 {
			return total, err
		}
		last := (c - 1) / mfs * mfs
		if err := p.check(ctx, ep, remote+uint32(off+last), src, local+uint32(off+last), uint32(c-last)); err != nil {
			return total, err
		}
	}
	return total, nil
}

// checkTries is how many times a check is sent before the write fails.
const checkTries = 3

// check rewrites one fragment to the slowest member, Interval after the
// last group frame, and follows its round trip.
func (p *Pacing) check(ctx context.Context, ep *endpoint.Endpoint, remote uint32, src memory.Space, local, n uint32) error {
	for try := 1; ; try++ {
		if err := sleep(ctx, p.Interval); err != nil {
			return err
		}
		t0 := time.Now()
		_, err := ep.DMAWriteFrom(ctx, p.Peer, remote, src, local, n)
		if err == nil {
			rt := time.Since(t0)
			p.Checks = append(p.Checks, rt)
			p.best, p.worst = min(p.best, rt), max(p.worst, rt)
			if iv := interval(p.best, p.worst); iv > p.Interval {
				p.Interval = iv
				p.Raised++
				return p.apply(ep)
			}
			return nil
		}
		if endpoint.CodeOf(err) != wire.CodeTimeout || try == checkTries {
			return fmt.Errorf("checking member %v between group fragments with a unicast DMA write of %d bytes at %#x: %w", p.Probes[p.Slowest].Member, n, remote, err)
		}
		// Unanswered: the member was still busy, so slower than paced.
		p.Interval *= 2
		p.Raised++
		if err := p.apply(ep); err != nil {
			return err
		}
	}
}

func (p *Pacing) apply(ep *endpoint.Endpoint) error {
	c := ep.Config()
	c.GroupInterval = p.Interval
	return ep.SetConfig(c)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
