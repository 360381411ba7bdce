package conformance

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/pcap"
	"github.com/openenoc/oetp/wire"
)

// DefaultTimeout is how long the runner waits for a reply unless
// Options.Timeout says otherwise.
const DefaultTimeout = 500 * time.Millisecond

// Options configure Run.
type Options struct {
	// Link is the runner's attachment to the device's network. Run takes
	// it over and closes it at the end. The device's replies go to the
	// peers' MACs, not the link's: unless Receives says the link gets them
	// already, Run puts a link.Filter in promiscuous mode.
	Link link.Link
	// Receives says that Link already receives the frames addressed to
	// every peer MAC and to the DUT's unknown_mac (an afpacket link opened
	// with Config.ExtraAddrs), so no promiscuous mode is needed.
	Receives bool
	// Target is the device's unicast MAC.
	Target wire.MAC
	// DUT says how the device is programmed.
	DUT *DUT
	// Only selects the cases by ID prefixes (all cases when empty); see
	// Select.
	Only []string
	// Timeout bounds each wait for a reply; 0 means DefaultTimeout.
	// Cases that expect no reply end as soon as the device has answered a
	// later request (a barrier), so they take Timeout only when the
	// device answers nothing at all.
	Timeout time.Duration
	// Pcap, when not nil, records every frame the cases send and every
	// frame the device sends back.
	Pcap *pcap.Writer
	// LinkPads says that the runner's link pads frames shorter than 60
	// bytes, as a physical NIC does: the cases that must send shorter
	// frames are then skipped.
	LinkPads bool
	// Exec runs the DUT file's trigger commands; nil selects ShellExec.
	// Tests drive a stand-in device with their own.
	Exec Exec
}

// Verdict is a case's result.
type Verdict string

// The four verdicts.
const (
	// Pass: the device did what the specification's rule says.
	Pass Verdict = "pass"
	// Variant: the device did something else that the specification
	// also allows (where it leaves room); Result.Variant names it.
	Variant Verdict = "variant"
	// Fail: the device broke the rule.
	Fail Verdict = "fail"
	// Skip: the case did not run; Result.Reason names the missing DUT key.
	Skip Verdict = "skip"
)

// Role is the part of the device a case checks.
type Role string

// The two roles.
const (
	// Responder cases send the device requests and check its replies.
	Responder Role = "responder"
	// Initiator cases make the device send requests (the DUT file's
	// [initiator] triggers) and play the peer that answers them.
	Initiator Role = "initiator"
)

// Exchanged is a frame a case sent or received.
type Exchanged struct {
	Sent  bool // false: received from the device
	Frame []byte
}

// Result is the outcome of one case.
type Result struct {
	ID      string  `json:"id"`
	Section string  `json:"section"`
	Role    Role    `json:"role"`
	Rule    string  `json:"rule"`
	Verdict Verdict `json:"verdict"`
	// Variant names the allowed behaviour the device showed (Verdict
	// Variant), e.g. "mode-0 entry treated as unknown source".
	Variant string `json:"variant,omitempty"`
	// Reason says why the case was skipped (Verdict Skip): the DUT key it
	// needs.
	Reason string `json:"reason,omitempty"`
	Detail string `json:"detail"`
	// Frames are the frames the case sent and received, in order.
	Frames []Exchanged `json:"-"`
}

// Report is the outcome of a run.
type Report struct {
	Cases    []Result `json:"cases"`
	Passed   int      `json:"passed"`
	Variants int      `json:"variants"` // passed with a named variant
	Failed   int      `json:"failed"`
	Skipped  int      `json:"skipped"`
	// Silent, when not empty, says that the device stopped answering
	// during the run, after how many error replies, and the likely causes.
	Silent string `json:"silent,omitempty"`
}

// OK reports whether no case failed.
func (r *Report) OK() bool { return r.Failed == 0 }

// Select returns the cases selected by one of the prefixes, in order (all
// of them when prefixes is empty). A prefix is a whole path of an ID:
// "oetp/cmd" and "oetp/cmd/" select every case of the cmd section,
// "oetp/cmd/1" the case oetp/cmd/1 alone (not oetp/cmd/10). A prefix that
// selects no case is an error, so that a typo does not pass silently.
func Select(prefixes []string) ([]Case, error) {
	if len(prefixes) == 0 {
		return Cases(), nil
	}
	var out []Case
	for _, p := range prefixes {
		found := false
		for _, c := range Cases() {
			if selects(p, c.ID) {
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("--only %q selects no case; list them with `oetp conformance list`", p)
		}
	}
	for _, c := range Cases() {
		for _, p := range prefixes {
			if selects(p, c.ID) {
				out = append(out, c)
				break
			}
		}
	}
	return out, nil
}

// selects reports whether the ID prefix p selects id.
func selects(p, id string) bool {
	p = strings.TrimSuffix(p, "/")
	return id == p || strings.HasPrefix(id, p+"/")
}

// Run runs the selected cases against the device, one at a time, and
// returns their results. It fails only when it cannot run at all (bad
// options, a link error); a device that fails cases yields a Report with
// Failed > 0. It stops early when ctx ends.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Link == nil || o.DUT == nil {
		return nil, errors.New("conformance: Options.Link and Options.DUT are required")
	}
	defer o.Link.Close()
	if o.Target.IsZero() || o.Target.IsGroup() {
		return nil, fmt.Errorf("target %v is not a unicast MAC: give the device's own address", o.Target)
	}
	for _, p := range o.DUT.Peers {
		if p.MAC == o.Target {
			return nil, fmt.Errorf("[[peer]] %v is the target itself: the runner sends from the peers' MACs", p.MAC)
		}
	}
	cases, err := Select(o.Only)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if f, ok := o.Link.(link.Filter); ok && !o.Receives {
		if err := f.SetPromiscuous(true); err != nil {
			return nil, fmt.Errorf("the runner receives the replies to its peers' MACs in promiscuous mode: %w", err)
		}
	}
	if o.Exec == nil {
		o.Exec = ShellExec
	}
	r := &runner{o: o, exec: o.Exec, rx: make(chan []byte, 4096), rid: rand.Uint32(), done: make(chan struct{}), listen: map[wire.MAC]bool{}}
	for _, m := range ListenAddrs(o.DUT) {
		r.listen[m] = true
	}
	r.setBarrier()
	var wg sync.WaitGroup
	wg.Go(r.read)
	defer func() {
		o.Link.Close()
		wg.Wait()
	}()
	rep := &Report{Cases: []Result{}}
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		var res Result
		if r.silent && !r.alive() {
			res = Result{ID: c.ID, Section: c.Section, Role: c.role(), Rule: c.Rule, Verdict: Fail,
				Detail: "not run: the device answers no request (see the note on the silent device)"}
		} else {
			r.silent = false
			res = r.runCase(c)
			if r.missed && res.Verdict != Skip && !r.alive() {
				// A case that expected no reply would pass against a
				// device that answers nothing: it proves nothing.
				r.silent = true
				n := r.errorRsps.Load()
				if rep.Silent == "" {
					rep.Silent = fmt.Sprintf("the device stopped answering every request during %s, after %d ERROR_RSP(s) in this run. "+
						"Likely causes: an openENOC RTL whose interrupt queue is full stops answering after about 17 error replies when "+
						"nobody services its interrupt claims (service or complete the board's IRQ claims, or disable its error events, and rerun); "+
						"the device was reset, reconfigured or unplugged; the link went down", c.ID, n)
				}
				res.Verdict, res.Variant = Fail, ""
				res.Detail = "the device answers no request any more (see the note on the silent device); " + res.Detail
			}
		}
		if r.linkErr != nil {
			return rep, r.linkErr
		}
		rep.Cases = append(rep.Cases, res)
		switch res.Verdict {
		case Pass:
			rep.Passed++
		case Variant:
			rep.Variants++
		case Fail:
			rep.Failed++
		case Skip:
			rep.Skipped++
		}
	}
	return rep, nil
}

// ListenAddrs returns the addresses whose frames the runner must receive
// for d: the peers' MACs and unknown_mac (a faulty device may answer it).
// Open a link that receives them (afpacket Config.ExtraAddrs) and set
// Options.Receives, or let Run use promiscuous mode.
func ListenAddrs(d *DUT) []wire.MAC {
	var out []wire.MAC
	for _, p := range d.Peers {
		out = append(out, p.MAC)
	}
	if !d.UnknownMAC.IsZero() {
		out = append(out, d.UnknownMAC)
	}
	if m := d.Trigger.MAC; !m.IsZero() && !slices.Contains(out, m) {
		out = append(out, m)
	}
	return out
}

// runner is the state of one run.
type runner struct {
	o       Options
	exec    Exec
	rx      chan []byte // frames from the target, or to a peer
	listen  map[wire.MAC]bool
	rid     uint32
	done    chan struct{}
	linkErr error

	probe   *Peer // the barrier's peer, nil for none
	probeAt uint32
	cur     *T

	errorRsps atomic.Int64 // ERROR_RSPs received from the device in this run
	missed    bool         // the current case's barrier went unanswered
	silent    bool         // the device answered no liveness probe
	setupDone bool         // the [trigger] setup command has run
}

var errLinkClosed = link.ErrClosed

// read copies every frame the target sends, and every frame to a peer's
// MAC (a device answering from a wrong source), into r.rx until the link
// closes.
func (r *runner) read() {
	bufs := make([][]byte, 16)
	for i := range bufs {
		bufs[i] = make([]byte, r.o.Link.MaxFrame()+4)
	}
	sizes := make([]int, len(bufs))
	for {
		n, err := r.o.Link.ReadBatch(bufs, sizes)
		if err != nil {
			close(r.done)
			return
		}
		for i := range n {
			f := bufs[i][:sizes[i]]
			if len(f) < wire.HeaderLen || wire.Frame(f).Src() != r.o.Target && !r.listen[wire.Frame(f).Dst()] {
				continue
			}
			if len(f) > wire.ParamOffset && wire.Frame(f).Src() == r.o.Target && oetpFrame(f) && wire.Frame(f).Cmd() == wire.ErrorRsp {
				r.errorRsps.Add(1)
			}
			select {
			case r.rx <- bytes.Clone(f):
			default: // a flood from the device: the cases see it as excess frames anyway
			}
		}
	}
}

// setBarrier picks the request the runner sends after a case's frames to
// learn that the device has handled them: an RMEM read from an rmem peer
// (or a DMA read of one byte from a dma-read peer, or any request from any
// peer, which must get an ERROR_RSP). Every answer to it ends the wait.
func (r *runner) setBarrier() {
	d := r.o.DUT
	for _, m := range []Mode{ModeRMEM, ModeDMARead} {
		if p, ok := d.peer(m); ok && p.Window.Size >= 4 {
			r.probe = &p
			r.probeAt = (p.Window.Base + 3) &^ 3
			if uint64(r.probeAt)+4 > p.Window.End() {
				r.probeAt = p.Window.Base
			}
			return
		}
	}
	if len(d.Peers) > 0 {
		p := d.Peers[0]
		r.probe = &p
		r.probeAt = p.Window.Base &^ 3
	}
}

func (r *runner) nextRID() uint32 {
	r.rid++
	return r.rid
}

// stop ends a case early (after T.Fatalf or T.Skipf).
type stop struct{}

// role returns the case's role, Responder when not set.
func (c Case) role() Role {
	if c.Role == "" {
		return Responder
	}
	return c.Role
}

// alive reports whether the device answers the barrier request (two
// tries). Without a barrier it cannot tell and says yes.
func (r *runner) alive() bool {
	p := r.probe
	if p == nil {
		return true
	}
	for range 2 {
		rid := r.nextRID()
		var f []byte
		if p.Mode == ModeDMARead {
			f = wire.AppendDMAReadReq(nil, r.o.Target, p.MAC, rid, r.probeAt, 1)
		} else {
			f = wire.AppendRMEMReadReq(nil, r.o.Target, p.MAC, rid, r.probeAt)
		}
		if err := r.o.Link.Write(f); err != nil {
			return true // the link's fault, reported elsewhere
		}
		timeout := time.NewTimer(r.o.Timeout)
		for waiting := true; waiting; {
			select {
			case g := <-r.rx:
				if isReplyTo(g, p.MAC, rid) {
					timeout.Stop()
					return true
				}
			case <-timeout.C:
				waiting = false
			case <-r.done:
				timeout.Stop()
				return true
			}
		}
	}
	return false
}

func (r *runner) runCase(c Case) (res Result) {
	r.missed = false
	t := &T{r: r, res: Result{ID: c.ID, Section: c.Section, Role: c.role(), Rule: c.Rule, Verdict: Pass}}
	r.cur = t
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stop); !ok {
				panic(v)
			}
		}
		res = t.res
		if res.Verdict == Pass && res.Variant != "" {
			res.Verdict = Variant
		}
		if res.Verdict != Variant {
			res.Variant = ""
		}
		if res.Verdict == Skip {
			res.Reason = res.Detail
		}
		if (res.Verdict == Pass || res.Verdict == Variant) && res.Detail == "" {
			res.Detail = "ok"
		}
	}()
	for _, k := range c.Needs {
		if !r.has(k) {
			t.Skipf("needs DUT key %s", k)
		}
	}
	c.run(t)
	return t.res
}

// peerKeyModes maps the DUT keys of peers to their modes.
var peerKeyModes = map[string]Mode{KeyPeerRMEM: ModeRMEM, KeyPeerDMAWrite: ModeDMAWrite, KeyPeerDMARead: ModeDMARead, KeyPeerNone: ModeNone}

// has reports whether the DUT file provides what key names.
func (r *runner) has(key string) bool {
	d := r.o.DUT
	switch key {
	case KeyMaxFrame:
		return d.MaxFrame != 0
	case KeyGroup:
		return !d.Group.IsZero()
	case KeyUnknownMAC:
		return !d.UnknownMAC.IsZero()
	case KeySlvErr:
		return len(d.SlvErr) > 0
	case KeyDecErr:
		return len(d.DecErr) > 0
	case KeyPeerRMEM, KeyPeerDMAWrite, KeyPeerDMARead, KeyPeerNone:
		_, ok := d.peer(peerKeyModes[key])
		return ok
	case KeyShortFrames:
		return !r.o.LinkPads
	case KeyTrigRMEMRead:
		return d.Trigger.RMEMRead != "" && !d.Trigger.MAC.IsZero()
	case KeyTrigRMEMWrite:
		return d.Trigger.RMEMWrite != "" && !d.Trigger.MAC.IsZero()
	case KeyTrigDMAWrite:
		return d.Trigger.DMAWrite != "" && !d.Trigger.MAC.IsZero()
	case KeyTrigDMARead:
		return d.Trigger.DMARead != "" && !d.Trigger.MAC.IsZero()
	case KeyTrigTimeoutOff:
		return d.Trigger.TimeoutOff != "" && d.Trigger.TimeoutOn != ""
	case KeyTrigTimeoutShort:
		return d.Trigger.TimeoutShort != "" && d.Trigger.TimeoutOn != ""
	case KeyDuplicatePeer:
		if d.Trigger.SetPeer != "" && len(d.Peers) >= 2 {
			return true
		}
		for i, p := range d.Peers {
			for _, q := range d.Peers[i+1:] {
				if q.MAC == p.MAC && p.Mode != ModeNone && q.Mode != ModeNone && q.Mode != p.Mode {
					return true
				}
			}
		}
		return false
	}
	panic("conformance: unknown key " + key)
}

// The DUT keys (and one runner capability) that cases need.
const (
	KeyMaxFrame     = "max_frame"
	KeyGroup        = "group"
	KeyUnknownMAC   = "unknown_mac"
	KeySlvErr       = "slverr"
	KeyDecErr       = "decerr"
	KeyPeerRMEM     = `[[peer]] with mode = "rmem"`
	KeyPeerDMAWrite = `[[peer]] with mode = "dma-write"`
	KeyPeerDMARead  = `[[peer]] with mode = "dma-read"`
	KeyPeerNone     = `[[peer]] with mode = "none"`
	// KeyDuplicatePeer: two [[peer]]s with one MAC in different enabled
	// modes, or [trigger] set_peer to make them.
	KeyDuplicatePeer = "two [[peer]]s with one mac (or [trigger] set_peer)"
	// KeyShortFrames is not a DUT key: the case sends frames shorter than
	// 60 bytes, which a padding link (Options.LinkPads) cannot carry.
	KeyShortFrames = "a link that does not pad (the runner was told its link pads frames shorter than 60 bytes)"
)

// T is the handle a case runs with.
type T struct {
	r   *runner
	res Result
}

// Fatalf fails the case and ends it.
func (t *T) Fatalf(format string, a ...any) {
	t.Errorf(format, a...)
	panic(stop{})
}

// Errorf fails the case and goes on.
func (t *T) Errorf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if t.res.Verdict == Fail {
		t.res.Detail += "; " + msg
		return
	}
	t.res.Verdict, t.res.Detail = Fail, msg
}

// Skipf skips the case (unless it already failed) and ends it.
func (t *T) Skipf(format string, a ...any) {
	if t.res.Verdict != Fail {
		t.res.Verdict, t.res.Detail = Skip, fmt.Sprintf(format, a...)
	}
	panic(stop{})
}

// Variant records that the device showed name, a behaviour the
// specification allows besides the one the rule describes: a case that
// does not fail ends with Verdict Variant and this name (the first one
// recorded, when several are).
func (t *T) Variant(name string) {
	if t.res.Variant == "" {
		t.res.Variant = name
	}
}

// Notef adds a remark to a passing case's detail.
func (t *T) Notef(format string, a ...any) {
	if t.res.Verdict == Pass {
		if t.res.Detail != "" {
			t.res.Detail += "; "
		}
		t.res.Detail += fmt.Sprintf(format, a...)
	}
}

// DUT returns the device description.
func (t *T) DUT() *DUT { return t.r.o.DUT }

// Target returns the device's MAC.
func (t *T) Target() wire.MAC { return t.r.o.Target }

// RID returns a fresh Request ID.
func (t *T) RID() uint32 { return t.r.nextRID() }

// Peer returns the first peer with mode m (the case declared it in Needs).
func (t *T) Peer(m Mode) Peer {
	p, ok := t.r.o.DUT.peer(m)
	if !ok {
		t.Skipf("needs DUT key [[peer]] with mode = %q", m.String())
	}
	return p
}

// LinkMax returns the largest frame the runner's link carries.
func (t *T) LinkMax() int { return t.r.o.Link.MaxFrame() }

func (t *T) record(sent bool, f []byte) {
	t.res.Frames = append(t.res.Frames, Exchanged{Sent: sent, Frame: bytes.Clone(f)})
	if w := t.r.o.Pcap; w != nil {
		w.WritePacket(time.Now(), f)
	}
}

// send transmits f and records it.
func (t *T) send(f []byte) {
	t.record(true, f)
	if err := t.r.o.Link.Write(f); err != nil {
		if errors.Is(err, link.ErrClosed) {
			t.r.linkErr = err
		}
		t.Fatalf("the runner's link refused a %d-byte frame: %v", len(f), err)
	}
}

// drain discards frames that arrived after the previous exchange ended
// (late replies), noting them in the case's detail.
func (t *T) drain() {
	for n := 0; ; n++ {
		select {
		case f := <-t.r.rx:
			t.record(false, f)
		default:
			if n > 0 {
				t.Notef("%d frame(s) from the device arrived after the previous exchange had ended: %s", n, describe(t.res.Frames[len(t.res.Frames)-1].Frame))
			}
			return
		}
	}
}

// Exchange sends frames and returns every frame the device sent back
// until it has answered the barrier request that follows them, or, without
// a barrier, until Timeout has passed. The barrier's own reply is not
// returned.
func (t *T) Exchange(frames ...[]byte) [][]byte {
	t.drain()
	for _, f := range frames {
		t.send(f)
	}
	var got [][]byte
	timeout := time.NewTimer(t.r.o.Timeout)
	defer timeout.Stop()
	var prid uint32
	var pmac wire.MAC
	if p := t.r.probe; p != nil {
		prid, pmac = t.RID(), p.MAC
		if p.Mode == ModeDMARead {
			t.send(wire.AppendDMAReadReq(nil, t.r.o.Target, p.MAC, prid, t.r.probeAt, 1))
		} else {
			t.send(wire.AppendRMEMReadReq(nil, t.r.o.Target, p.MAC, prid, t.r.probeAt))
		}
	}
	for {
		select {
		case f := <-t.r.rx:
			t.record(false, f)
			if t.r.probe != nil && isReplyTo(f, pmac, prid) {
				return got
			}
			got = append(got, f)
		case <-timeout.C:
			if t.r.probe != nil {
				t.r.missed = true
				t.Notef("the device did not answer the barrier request %#08x within %v", prid, t.r.o.Timeout)
			}
			return got
		case <-t.r.done:
			t.r.linkErr = link.ErrClosed
			t.Fatalf("the runner's link closed")
		}
	}
}

// oetpFrame reports whether f carries the oETP EtherType and Magic.
func oetpFrame(f []byte) bool {
	return len(f) > wire.ParamOffset && f[12] == 0x88 && f[13] == 0xB5 && f[14] == wire.Magic
}

// isReplyTo reports whether f is an oETP response to mac carrying rid.
func isReplyTo(f []byte, mac wire.MAC, rid uint32) bool {
	c := wire.Classify(f, len(f))
	return c.Kind == wire.KindResponse && wire.Frame(f).Dst() == mac && wire.Frame(f).RequestID() == rid
}

// None sends req (and more) and requires that the device sends nothing
// back.
func (t *T) None(what string, frames ...[]byte) {
	if got := t.Exchange(frames...); len(got) > 0 {
		t.Errorf("%s: the device sent %d frame(s), want none: %s", what, len(got), describe(got[0]))
	}
}

// One sends req and requires exactly one reply to it from the device,
// which it returns.
func (t *T) One(what string, req []byte) []byte {
	got := t.Exchange(req)
	switch len(got) {
	case 1:
		return got[0]
	case 0:
		t.Fatalf("%s: no reply from the device, want exactly one", what)
	}
	t.Fatalf("%s: %d frames from the device, want exactly one reply; the second is %s", what, len(got), describe(got[1]))
	return nil
}

// Reply sends req and requires exactly one reply: cmd addressed to the
// request's source, from the target, carrying the request's Request ID,
// with the exact logical length of a pdu-byte PDU or, when that is shorter
// than 46 bytes, the 60-byte padded frame. It returns the reply.
func (t *T) Reply(what string, req []byte, cmd wire.Cmd, pdu int) []byte {
	f := t.One(what, req)
	t.checkReply(what, f, wire.Frame(req).Src(), wire.Frame(req).RequestID(), cmd, pdu)
	return f
}

// checkReply checks an oETP reply's header, length and Request ID.
func (t *T) checkReply(what string, f []byte, to wire.MAC, rid uint32, cmd wire.Cmd, pdu int) {
	exact := wire.HeaderLen + pdu
	switch {
	case len(f) < wire.ParamOffset+4:
		t.Fatalf("%s: a %d-byte frame, want %s", what, len(f), cmd)
	case f[12] != 0x88 || f[13] != 0xB5 || f[14] != wire.Magic:
		t.Fatalf("%s: EtherType/Magic % x, want 88 b5 0e", what, f[12:15])
	case wire.Frame(f).Cmd() != cmd:
		detail := ""
		if wire.Frame(f).Cmd() == wire.ErrorRsp && len(f) >= 24 {
			detail = fmt.Sprintf(" with cause %d", wire.Frame(f).ErrorCode())
		}
		t.Fatalf("%s: reply %s%s, want %s", what, wire.Frame(f).Cmd(), detail, cmd)
	case wire.Frame(f).Dst() != to:
		t.Fatalf("%s: reply to %v, want the requester %v", what, wire.Frame(f).Dst(), to)
	case wire.Frame(f).Src() != t.Target():
		t.Fatalf("%s: reply from %v, want the device's own MAC %v", what, wire.Frame(f).Src(), t.Target())
	case wire.Frame(f).RequestID() != rid:
		t.Fatalf("%s: reply carries Request ID %#08x, want the request's %#08x", what, wire.Frame(f).RequestID(), rid)
	case len(f) != exact && !(pdu < wire.MinPayloadLen && len(f) == wire.MinFrameLen):
		if pdu < wire.MinPayloadLen {
			t.Fatalf("%s: %s of %d bytes, want %d (or %d with Ethernet padding)", what, cmd, len(f), exact, wire.MinFrameLen)
		}
		t.Fatalf("%s: %s of %d bytes, want %d", what, cmd, len(f), exact)
	}
}

// ErrorRsp sends req and requires exactly one ERROR_RSP with cause.
func (t *T) ErrorRsp(what string, req []byte, cause uint32) {
	t.ErrorRspOr(what, req, cause, nil)
}

// ErrorRspOr sends req and requires exactly one ERROR_RSP: with cause it
// passes; with a cause that variants names, where the specification leaves
// room, the case records that variant.
func (t *T) ErrorRspOr(what string, req []byte, cause uint32, variants map[uint32]string) {
	f := t.One(what, req)
	t.checkErrorRsp(what, req, f, cause, variants)
}

func (t *T) checkErrorRsp(what string, req, f []byte, cause uint32, variants map[uint32]string) {
	if wire.Frame(f).Cmd() != wire.ErrorRsp && len(f) >= wire.ParamOffset {
		t.Fatalf("%s: reply %s, want ERROR_RSP with cause %d", what, wire.Frame(f).Cmd(), cause)
	}
	t.checkReply(what, f, wire.Frame(req).Src(), wire.Frame(req).RequestID(), wire.ErrorRsp, wire.ErrorRspPDULen)
	got := wire.Frame(f).ErrorCode()
	if got == cause {
		return
	}
	if v, ok := variants[got]; ok {
		t.Variant(v)
		t.Notef("%s: ERROR_RSP cause %d (%s)", what, got, v)
		return
	}
	t.Fatalf("%s: ERROR_RSP cause %d, want %d", what, got, cause)
}

// ErrorRspOrNone sends req and requires an ERROR_RSP with cause, or, as
// the variant named, no reply at all.
func (t *T) ErrorRspOrNone(what string, req []byte, cause uint32, variant string) {
	got := t.Exchange(req)
	switch len(got) {
	case 0:
		t.Variant(variant)
		return
	case 1:
		t.checkErrorRsp(what, req, got[0], cause, nil)
		return
	}
	t.Fatalf("%s: %d frames from the device, want one ERROR_RSP or none; the second is %s", what, len(got), describe(got[1]))
}

// describe is a short description of a frame for details.
func describe(f []byte) string {
	c := wire.Classify(f, len(f))
	switch c.Kind {
	case wire.KindRequest, wire.KindResponse:
		s := fmt.Sprintf("%s to %v, %d bytes", c.Cmd, wire.Frame(f).Dst(), len(f))
		if c.Cmd == wire.ErrorRsp && len(f) >= 24 {
			s = fmt.Sprintf("ERROR_RSP cause %d to %v, %d bytes", wire.Frame(f).ErrorCode(), wire.Frame(f).Dst(), len(f))
		}
		return s
	}
	if len(f) >= wire.HeaderLen {
		return fmt.Sprintf("a frame of EtherType %#04x, %d bytes", wire.Frame(f).EtherType(), len(f))
	}
	return fmt.Sprintf("a %d-byte frame", len(f))
}

// Hex formats a frame as lowercase hex bytes separated by spaces.
func Hex(f []byte) string {
	var b strings.Builder
	for i, c := range f {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(hex.EncodeToString([]byte{c}))
	}
	return b.String()
}
