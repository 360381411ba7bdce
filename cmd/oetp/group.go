package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

// This file holds what `dma write` does for a group --peer beyond sending
// the frames: pacing from the members' measured time per fragment
// (--member), and reading every member back with repairs (--verify). The
// work itself is package replicate's; this is the command's part: flags,
// the members' peer entries, the reader's endpoint and the report.

// groupFlags are the group-write flags of dma write.
type groupFlags struct {
	members   macsFlag
	verify    bool
	verifyMAC macFlag
}

func (g *groupFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.Var(&g.members, "member", "unicast `MAC` of a member of the group --peer (repeatable): each is probed with unicast DMA writes of the first fragment and the group's fragments are paced at the slowest member's time per fragment (plus 50% and the spread of its round trips), checked every 16 fragments; its entry for this MAC must accept DMA writes (mode dma-write)")
	fs.BoolVar(&g.verify, "verify", false, "after a group write, read each --member back through --verify-mac, rewrite the fragments that differ by unicast, and report per member; exit 0 only when every member verified")
	fs.Var(&g.verifyMAC, "verify-mac", "own unicast `MAC` the --verify reads are sent from: each member needs an entry for it in mode dma-read (3); a v1 entry has one mode, so it differs from --mac")
}

// macsFlag is a repeatable MAC flag.
type macsFlag []wire.MAC

func (m *macsFlag) String() string {
	s := make([]string, len(*m))
	for i, v := range *m {
		s[i] = v.String()
	}
	return strings.Join(s, ",")
}
func (m *macsFlag) Type() string { return "MAC" }
func (m *macsFlag) Set(s string) error {
	v, err := wire.ParseMAC(s)
	if err != nil {
		return err
	}
	*m = append(*m, v)
	return nil
}

// check refuses group flags that cannot apply, before anything is opened.
func (g *groupFlags) check(f *opFlags, in *dmafile.Input) error {
	if len(g.members) == 0 && !g.verify && g.verifyMAC.m.IsZero() {
		return nil
	}
	if !f.peer.m.IsGroup() {
		return usagef("--member, --verify and --verify-mac are for a group --peer; %v is a unicast MAC, whose writes are answered fragment by fragment", f.peer.m)
	}
	seen := map[wire.MAC]bool{}
	for _, m := range g.members {
		if m.IsGroup() || m.IsZero() {
			return usagef("--member %v: give a member's unicast MAC", m)
		}
		if seen[m] {
			return usagef("--member %v is given twice", m)
		}
		seen[m] = true
	}
	if len(g.members) > endpoint.MaxPeers-1 {
		return usagef("%d --member flags: at most %d", len(g.members), endpoint.MaxPeers-1)
	}
	if g.verify && len(g.members) == 0 {
		return usagef("--verify reads each member back: name them with --member MAC")
	}
	if g.verify && g.verifyMAC.m.IsZero() {
		return usagef("--verify needs --verify-mac MAC: the local MAC each member has in mode dma-read (3), from which the member is read back")
	}
	if !g.verify && !g.verifyMAC.m.IsZero() {
		return usagef("--verify-mac is used only with --verify")
	}
	if g.verifyMAC.m.IsGroup() {
		return usagef("--verify-mac %v is a group address: give a unicast MAC", g.verifyMAC.m)
	}
	if in.File == nil {
		return usagef("--member and --verify read --in %s more than once: give a regular file", in.Name)
	}
	if uint64(in.Size) >= wholeSpace {
		return usagef("--member and --verify take blocks below 4 GiB; --in %s holds %d bytes", in.Name, in.Size)
	}
	return nil
}

// groupRun is a group write's pacing and verification.
type groupRun struct {
	g       *groupFlags
	s       *localSession // the writer: peer 0 the group, 1.. the members
	reader  *localSession // --verify: peer i the member i
	pacing  *pacingResult
	pace    *replicate.Pacing // paced from the members
	members []memberResult
	failed  error // the first member that failed verification
}

// pacingResult is the JSON "pacing" of a group write.
type pacingResult struct {
	// Source is "members" (probed), "rate" (--rate) or "none" (back to back).
	Source     string        `json:"source"`
	IntervalUs float64       `json:"interval_us,omitempty"`
	Margin     float64       `json:"margin,omitempty"`
	Slowest    string        `json:"slowest,omitempty"`
	Probes     []probeResult `json:"probes,omitempty"`
	// ChecksUs are the round trips of the slowest member's checks between
	// runs of fragments; RaisedUs the interval they raised it to.
	ChecksUs []float64 `json:"checks_us,omitempty"`
	RaisedUs float64   `json:"raised_to_us,omitempty"`
}

type probeResult struct {
	Member        string    `json:"member"`
	RoundTripsUs  []float64 `json:"round_trips_us"`
	PerFragmentUs float64   `json:"per_fragment_us"`
}

// memberResult is one member's entry in the JSON "members" of --verify.
type memberResult struct {
	Member            string          `json:"member"`
	State             string          `json:"state"`
	Fragments         int             `json:"fragments"`
	FragmentsChecked  int             `json:"fragments_checked"`
	FragmentsRepaired int             `json:"fragments_repaired"`
	Repaired          []fragmentEntry `json:"repaired"`
	Error             string          `json:"error,omitempty"`
	ErrorCode         *uint8          `json:"error_code,omitempty"`
}

type fragmentEntry struct {
	Index int    `json:"index"`
	Addr  uint32 `json:"addr"`
	Len   uint32 `json:"len"`
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// start prepares a group write on s: the members' peer entries, the
// reader's endpoint for --verify, and the pacing (probing the members
// unless --rate is given). Without members and --rate it notes on stderr
// that the write is not paced.
func (g *groupFlags) start(ctx context.Context, cmd *cobra.Command, f *dmaFlags, ss session.Session, in *dmafile.Input) (*groupRun, error) {
	s, ok := ss.(*localSession)
	if !ok {
		return nil, usagef("a group --peer is sent from this command's own endpoint")
	}
	run := &groupRun{g: g, s: s}
	pol := s.EP.RetryPolicyOf(0)
	var peers []int
	for i, m := range g.members {
		if m == f.own {
			return nil, usagef("--member %v is this endpoint's own MAC", m)
		}
		if err := s.EP.SetPeer(i+1, endpoint.Peer{MAC: m, Mode: endpoint.ModeDMARead, WindowSize: wholeSpace}); err != nil {
			return nil, usagef("--member %v: %v", m, err)
		}
		if f.retries.v > 0 {
			if err := s.EP.SetRetryPolicy(i+1, pol); err != nil {
				return nil, usagef("--retries/--deadline: %v", err)
			}
		}
		peers = append(peers, i+1)
	}
	if g.verify {
		if g.verifyMAC.m == f.own {
			return nil, usagef("--verify-mac %v is the writer's own MAC: a v1 peer entry has one mode, so the reads need another local MAC (each member's entry for it in mode dma-read)", g.verifyMAC.m)
		}
		rf := f.opFlags
		rf.mac, rf.peer, rf.noHub, rf.hub = g.verifyMAC, macFlag{g.members[0]}, true, ""
		rf.rate, rf.pcap, rf.transport = 0, "", "v1"
		rs, err := rf.open(endpoint.ModeDMAWrite)
		if err != nil {
			return nil, err
		}
		r := rs.(*localSession) // --no-hub
		run.reader = r
		if f.fs.Changed("fragment") {
			c := r.EP.Config()
			c.MaxFragment = f.fragment.v
			if err := r.EP.SetConfig(c); err != nil {
				run.close()
				return nil, usagef("--fragment: %v", err)
			}
		}
		for i, m := range g.members[1:] {
			err := r.EP.SetPeer(i+1, endpoint.Peer{MAC: m, Mode: endpoint.ModeDMAWrite, WindowSize: wholeSpace})
			if err == nil && f.retries.v > 0 {
				err = r.EP.SetRetryPolicy(i+1, pol)
			}
			if err != nil {
				run.close()
				return nil, usagef("--member %v: %v", m, err)
			}
		}
	}
	switch {
	case f.rate > 0:
		run.pacing = &pacingResult{Source: "rate"}
	case len(g.members) == 0:
		run.pacing = &pacingResult{Source: "none"}
		fmt.Fprintf(cmd.ErrOrStderr(), "oetp: note: the group write to %v is not paced: its fragments go out back to back, and a member that takes one request at a time (an openENOC device) drops those that arrive while it is busy; name the members with --member MAC to pace it at what they take (or give --rate)\n", f.peer.m)
	default:
		probes, err := replicate.ProbeMembers(ctx, s.EP, peers, f.addr.v, in.Space(), 0, uint64(in.Size))
		if err != nil {
			run.close()
			return nil, err
		}
		run.pace = replicate.NewPacing(probes, peers)
		p := &pacingResult{Source: "members", IntervalUs: us(run.pace.Start), Margin: replicate.Margin, Slowest: probes[run.pace.Slowest].Member.String()}
		for _, pr := range probes {
			e := probeResult{Member: pr.Member.String(), PerFragmentUs: us(pr.PerFragment)}
			for _, d := range pr.RoundTrips {
				e.RoundTripsUs = append(e.RoundTripsUs, us(d))
			}
			p.Probes = append(p.Probes, e)
		}
		run.pacing = p
	}
	return run, nil
}

// slowestProbe is the index of the slowest member in p.Probes.
func slowestProbe(p *pacingResult) int {
	for i, pr := range p.Probes {
		if pr.Member == p.Slowest {
			return i
		}
	}
	return 0
}

// dmaWrite writes the input to the group: paced from the members and
// checking the slowest between runs of fragments when they were probed,
// as any other write otherwise (run may be nil).
func (run *groupRun) dmaWrite(ctx context.Context, s session.Session, addr uint32, in *dmafile.Input) (endpoint.Transfer, error) {
	if run == nil || run.pace == nil {
		return s.DMAWrite(ctx, addr, in)
	}
	p := run.pace
	defer func() {
		for _, d := range p.Checks {
			run.pacing.ChecksUs = append(run.pacing.ChecksUs, us(d))
		}
		if p.Raised > 0 {
			run.pacing.RaisedUs = us(p.Interval)
		}
	}()
	return p.Write(ctx, run.s.EP, 0, addr, in.Space(), 0, uint64(in.Size), dmafile.WithOffset)
}

// verify reads every member back and repairs it (--verify).
func (run *groupRun) verify(ctx context.Context, f *dmaFlags, in *dmafile.Input) {
	mfs := replicate.FragmentSize(run.s.EP)
	for i, m := range run.g.members {
		rep := replicate.Verify(ctx, replicate.Member{MAC: m, Writer: run.s.EP, WritePeer: i + 1, Reader: run.reader.EP, ReadPeer: i},
			f.addr.v, in.Space(), 0, uint64(in.Size), mfs)
		mr := memberResult{Member: m.String(), State: rep.State, Fragments: rep.Fragments, FragmentsChecked: rep.Checked,
			FragmentsRepaired: len(rep.Repaired), Repaired: []fragmentEntry{}}
		for _, fr := range rep.Repaired {
			mr.Repaired = append(mr.Repaired, fragmentEntry{Index: fr.Index, Addr: fr.Addr, Len: fr.Len})
		}
		if rep.Err != nil {
			mr.Error = userMessage(rep.Err)
			if endpoint.CodeOf(rep.Err) == wire.CodeTimeout && strings.HasPrefix(mr.Error, "reading back") {
				mr.Error += fmt.Sprintf(" (does the member have an entry for --verify-mac %v in mode dma-read (3)?)", run.g.verifyMAC.m)
			}
			code := uint8(endpoint.CodeOf(rep.Err))
			mr.ErrorCode = &code
			if run.failed == nil {
				run.failed = &memberFailure{member: m, err: rep.Err, msg: mr.Error}
			}
		}
		run.members = append(run.members, mr)
	}
}

// memberFailure is the error of a group write whose member failed
// verification.
type memberFailure struct {
	member wire.MAC
	err    error
	msg    string
}

func (e *memberFailure) Error() string {
	return fmt.Sprintf("member %v failed verification: %s", e.member, e.msg)
}
func (e *memberFailure) Unwrap() error { return e.err }

// userMessage is err with the engine's error in its outcome's words (as
// the results of the other commands give it), the context kept.
func userMessage(err error) string {
	msg := err.Error()
	var oe *endpoint.OpError
	if errors.As(err, &oe) {
		msg = strings.Replace(msg, oe.Error(), oe.Outcome(), 1)
	}
	return msg
}

// report adds the pacing and the members to the result and the human text.
func (run *groupRun) report(r *opResult, human string) string {
	r.Pacing = run.pacing
	switch p := run.pacing; p.Source {
	case "members":
		human += fmt.Sprintf("\npaced at one fragment per %.0f us: the slowest member %s takes up to %.0f us per fragment (%d unicast probes), plus %.0f%% and the spread of its round trips",
			p.IntervalUs, p.Slowest, p.Probes[slowestProbe(p)].PerFragmentUs, replicate.Probes+1, (p.Margin-1)*100)
		if p.RaisedUs > 0 {
			human += fmt.Sprintf("; raised to %.0f us by the checks between runs of %d fragments", p.RaisedUs, replicate.Run)
		}
	case "rate":
		human += "\npaced by --rate"
	}
	if !run.g.verify {
		return human
	}
	r.Members = run.members
	verified := 0
	for _, m := range run.members {
		line := fmt.Sprintf("\nmember %s: %s, %d of %d fragments checked", m.Member, m.State, m.FragmentsChecked, m.Fragments)
		if m.FragmentsRepaired > 0 {
			var ids []string
			for _, fr := range m.Repaired {
				ids = append(ids, fmt.Sprintf("%d at 0x%08x", fr.Index, fr.Addr))
			}
			line += fmt.Sprintf(", %d repaired by unicast (%s)", m.FragmentsRepaired, strings.Join(ids, ", "))
		}
		if m.Error != "" {
			line += ": " + m.Error
		} else {
			verified++
		}
		human += line
	}
	if run.failed == nil {
		r.Delivery = "verified"
	}
	human += fmt.Sprintf("\n%d of %d members verified", verified, len(run.members))
	return human
}

// close closes the reader's endpoint.
func (run *groupRun) close() {
	if run.reader != nil {
		run.reader.Close()
		run.reader = nil
	}
}
