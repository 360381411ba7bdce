package oneshot

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/replicate"
	"github.com/openenoc/oetp/wire"
)

// This file holds what `dma write` does for a group --peer beyond sending
// the frames: pacing from the members' measured time per fragment
// (--member), and reading every member back with repairs (--verify). The
// work itself is package replicate's; this is the command's part: the
// members' peer entries, the reader's endpoint and the report.

// Group is a group write's members and verification: dma write's
// --member, --verify and --verify-mac.
type Group struct {
	Members   []wire.MAC
	Verify    bool
	VerifyMAC wire.MAC
}

// Check refuses group flags that cannot apply to a write to peer from in,
// before anything is opened.
func (g *Group) Check(peer wire.MAC, in *dmafile.Input) error {
	if len(g.Members) == 0 && !g.Verify && g.VerifyMAC.IsZero() {
		return nil
	}
	if !peer.IsGroup() {
		return cli.Usagef("--member, --verify and --verify-mac are for a group --peer; %v is a unicast MAC, whose writes are answered fragment by fragment", peer)
	}
	seen := map[wire.MAC]bool{}
	for _, m := range g.Members {
		if m.IsGroup() || m.IsZero() {
			return cli.Usagef("--member %v: give a member's unicast MAC", m)
		}
		if seen[m] {
			return cli.Usagef("--member %v is given twice", m)
		}
		seen[m] = true
	}
	if len(g.Members) > endpoint.MaxPeers-1 {
		return cli.Usagef("%d --member flags: at most %d", len(g.Members), endpoint.MaxPeers-1)
	}
	if g.Verify && len(g.Members) == 0 {
		return cli.Usagef("--verify reads each member back: name them with --member MAC")
	}
	if g.Verify && g.VerifyMAC.IsZero() {
		return cli.Usagef("--verify needs --verify-mac MAC: the local MAC each member has in mode dma-read (3), from which the member is read back")
	}
	if !g.Verify && !g.VerifyMAC.IsZero() {
		return cli.Usagef("--verify-mac is used only with --verify")
	}
	if g.VerifyMAC.IsGroup() {
		return cli.Usagef("--verify-mac %v is a group address: give a unicast MAC", g.VerifyMAC)
	}
	if in.File == nil {
		return cli.Usagef("--member and --verify read --in %s more than once: give a regular file", in.Name)
	}
	if uint64(in.Size) >= wholeSpace {
		return cli.Usagef("--member and --verify take blocks below 4 GiB; --in %s holds %d bytes", in.Name, in.Size)
	}
	return nil
}

// GroupWrite is what Start needs of a group write beyond its session.
type GroupWrite struct {
	Own, Peer wire.MAC // the writer's MAC and the group's
	Addr      uint32   // --addr
	// Retries says that --retries was given: the members' entries take
	// the writer's retry policy.
	Retries bool
	// Fragment is --fragment when it was given, for the reader too; else 0.
	Fragment uint32
	// Rate says that --rate paces the write.
	Rate bool
	// OpenReader opens the --verify reader's session: this command's own
	// endpoint on --verify-mac, peer 0 the first member, in mode dma-read.
	OpenReader func() (*session.Local, error)
}

// GroupRun is a group write's pacing and verification.
type GroupRun struct {
	g       Group
	addr    uint32
	s       *session.Local // the writer: peer 0 the group, 1.. the members
	reader  *session.Local // --verify: peer i the member i
	pacing  *PacingResult
	pace    *replicate.Pacing // paced from the members
	members []MemberResult
	failed  error // the first member that failed verification
}

// PacingResult is the JSON "pacing" of a group write.
type PacingResult struct {
	// Source is "members" (probed), "rate" (--rate) or "none" (back to back).
	Source     string        `json:"source"`
	IntervalUs float64       `json:"interval_us,omitempty"`
	Margin     float64       `json:"margin,omitempty"`
	Slowest    string        `json:"slowest,omitempty"`
	Probes     []ProbeResult `json:"probes,omitempty"`
	// ChecksUs are the round trips of the slowest member's checks between
	// runs of fragments; RaisedUs the interval they raised it to.
	ChecksUs []float64 `json:"checks_us,omitempty"`
	RaisedUs float64   `json:"raised_to_us,omitempty"`
}

// ProbeResult is one member's probes in the JSON "pacing".
type ProbeResult struct {
	Member        string    `json:"member"`
	RoundTripsUs  []float64 `json:"round_trips_us"`
	PerFragmentUs float64   `json:"per_fragment_us"`
}

// MemberResult is one member's entry in the JSON "members" of --verify.
type MemberResult struct {
	Member            string          `json:"member"`
	State             string          `json:"state"`
	Fragments         int             `json:"fragments"`
	FragmentsChecked  int             `json:"fragments_checked"`
	FragmentsRepaired int             `json:"fragments_repaired"`
	Repaired          []FragmentEntry `json:"repaired"`
	Error             string          `json:"error,omitempty"`
	ErrorCode         *uint8          `json:"error_code,omitempty"`
}

// FragmentEntry is a repaired fragment of a MemberResult.
type FragmentEntry struct {
	Index int    `json:"index"`
	Addr  uint32 `json:"addr"`
	Len   uint32 `json:"len"`
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// Start prepares a group write of in on ss: the members' peer entries, the
// reader's endpoint for --verify, and the pacing (probing the members
// unless --rate is given). Without members and --rate it notes on stderr
// that the write is not paced.
func (g *Group) Start(ctx context.Context, stderr io.Writer, w GroupWrite, ss session.Session, in *dmafile.Input) (*GroupRun, error) {
	s, ok := ss.(*session.Local)
	if !ok {
		return nil, cli.Usagef("a group --peer is sent from this command's own endpoint")
	}
	run := &GroupRun{g: *g, addr: w.Addr, s: s}
	pol := s.EP.RetryPolicyOf(0)
	var peers []int
	for i, m := range g.Members {
		if m == w.Own {
			return nil, cli.Usagef("--member %v is this endpoint's own MAC", m)
		}
		if err := s.EP.SetPeer(i+1, endpoint.Peer{MAC: m, Mode: endpoint.ModeDMARead, WindowSize: wholeSpace}); err != nil {
			return nil, cli.Usagef("--member %v: %v", m, err)
		}
		if w.Retries {
			if err := s.EP.SetRetryPolicy(i+1, pol); err != nil {
				return nil, cli.Usagef("--retries/--deadline: %v", err)
			}
		}
		peers = append(peers, i+1)
	}
	if g.Verify {
		if g.VerifyMAC == w.Own {
			return nil, cli.Usagef("--verify-mac %v is the writer's own MAC: a v1 peer entry has one mode, so the reads need another local MAC (each member's entry for it in mode dma-read)", g.VerifyMAC)
		}
		r, err := w.OpenReader()
		if err != nil {
			return nil, err
		}
		run.reader = r
		if w.Fragment > 0 {
			c := r.EP.Config()
			c.MaxFragment = w.Fragment
			if err := r.EP.SetConfig(c); err != nil {
				run.Close()
				return nil, cli.Usagef("--fragment: %v", err)
			}
		}
		for i, m := range g.Members[1:] {
			err := r.EP.SetPeer(i+1, endpoint.Peer{MAC: m, Mode: endpoint.ModeDMAWrite, WindowSize: wholeSpace})
			if err == nil && w.Retries {
				err = r.EP.SetRetryPolicy(i+1, pol)
			}
			if err != nil {
				run.Close()
				return nil, cli.Usagef("--member %v: %v", m, err)
			}
		}
	}
	switch {
	case w.Rate:
		run.pacing = &PacingResult{Source: "rate"}
	case len(g.Members) == 0:
		run.pacing = &PacingResult{Source: "none"}
		fmt.Fprintf(stderr, "oetp: note: the group write to %v is not paced: its fragments go out back to back, and a member that takes one request at a time (an openENOC device) drops those that arrive while it is busy; name the members with --member MAC to pace it at what they take (or give --rate)\n", w.Peer)
	default:
		probes, err := replicate.ProbeMembers(ctx, s.EP, peers, w.Addr, in.Space(), 0, uint64(in.Size))
		if err != nil {
			run.Close()
			return nil, err
		}
		run.pace = replicate.NewPacing(probes, peers)
		p := &PacingResult{Source: "members", IntervalUs: us(run.pace.Start), Margin: replicate.Margin, Slowest: probes[run.pace.Slowest].Member.String()}
		for _, pr := range probes {
			e := ProbeResult{Member: pr.Member.String(), PerFragmentUs: us(pr.PerFragment)}
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
func slowestProbe(p *PacingResult) int {
	for i, pr := range p.Probes {
		if pr.Member == p.Slowest {
			return i
		}
	}
	return 0
}

// Write writes the input to the group: paced from the members and checking
// the slowest between runs of fragments when they were probed, as any other
// write otherwise (run may be nil).
func (run *GroupRun) Write(ctx context.Context, s session.Session, addr uint32, in *dmafile.Input) (endpoint.Transfer, error) {
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

// Verify reads every member back and repairs it (--verify).
func (run *GroupRun) Verify(ctx context.Context, in *dmafile.Input) {
	mfs := replicate.FragmentSize(run.s.EP)
	for i, m := range run.g.Members {
		rep := replicate.Verify(ctx, replicate.Member{MAC: m, Writer: run.s.EP, WritePeer: i + 1, Reader: run.reader.EP, ReadPeer: i},
			run.addr, in.Space(), 0, uint64(in.Size), mfs)
		mr := MemberResult{Member: m.String(), State: rep.State, Fragments: rep.Fragments, FragmentsChecked: rep.Checked,
			FragmentsRepaired: len(rep.Repaired), Repaired: []FragmentEntry{}}
		for _, fr := range rep.Repaired {
			mr.Repaired = append(mr.Repaired, FragmentEntry{Index: fr.Index, Addr: fr.Addr, Len: fr.Len})
		}
		if rep.Err != nil {
			mr.Error = replicate.Message(rep.Err)
			if endpoint.CodeOf(rep.Err) == wire.CodeTimeout && strings.HasPrefix(mr.Error, "reading back") {
				mr.Error += fmt.Sprintf(" (does the member have an entry for --verify-mac %v in mode dma-read (3)?)", run.g.VerifyMAC)
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

// Report adds the pacing and the members to the result of a write that
// completed, and to its human text, which it returns; a member that failed
// verification fails the result (it may have executed).
func (run *GroupRun) Report(r *Result, human string) string {
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
	if !run.g.Verify {
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
	if run.failed != nil {
		unknown := true
		r.OK, r.err, r.OutcomeUnknown = false, run.failed, &unknown
		c := endpoint.CodeOf(run.failed)
		r.ErrorCode, r.Error, r.Message = uint8(c), c.String(), run.failed.Error()
	}
	return human
}

// Close closes the reader's endpoint.
func (run *GroupRun) Close() {
	if run.reader != nil {
		run.reader.Close()
		run.reader = nil
	}
}
