package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/devices"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/wire"
)

// This file holds what the one-shot initiator commands (rmem read/write, dma
// write/read) share: their common flags, the endpoint they run, and their
// result, printed for people or as one JSON object.

// opFlags are the flags of every one-shot initiator command.
type opFlags struct {
	iface    string
	mac      macFlag
	peer     macFlag
	addr     u32Flag
	timeout  time.Duration
	maxFrame intFlag
	pcap     string
	format   formatFlag
	busyPoll time.Duration
	place    placementFlag
	json     bool
	wait     time.Duration
	// transport: v1, reliable or auto (docs/reliable.md).
	transport string
	hub       string          // --hub (see hubroute.go)
	device    string          // --device NAME (devices.go)
	devices   string          // --devices FILE
	dev       *devices.Device // the --device, once resolved
	noHub     bool            // --no-hub
	hubAny    bool            // --hub-trust-any-owner
	via       string          // the route open chose: viaDirect or viaHub
	hubPath   string          // the hub's socket, through a hub
	fs        *pflag.FlagSet  // the command's flags, to tell which were given
	rate      uint64          // --rate of dma write: bytes of frames per second; 0 unpaced

	// Set by open, for the TIMEOUT checklist.
	own      wire.MAC      // this endpoint's MAC
	ceiling  int           // the frame ceiling in force
	mode     endpoint.Mode // the local peer entry's mode
	retries  intFlag
	deadline time.Duration
	volatile bool // rmem --volatile: the operation gets one try
	read     bool // a read: a group --peer is refused

	// Set by the dma commands, for the messages: the block's length, the
	// fragment size in force and dma read's --out.
	length uint64
	frag   int
	out    string
}

func (f *opFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.iface, "iface", "", "network interface `IF` to send on")
	fs.Var(&f.mac, "mac", "own unicast `MAC` address (default the interface's)")
	fs.Var(&f.peer, "peer", "the remote endpoint's `MAC` (a group MAC for a multicast write)")
	fs.Var(&f.addr, "addr", "remote byte address `A` (decimal, 0x hex, K/M/G suffixes)")
	fs.DurationVar(&f.timeout, "timeout", time.Second, "response timeout `D`, a Go duration; 0 waits forever")
	fs.Var(&f.maxFrame, "max-frame", "frame ceiling `N` in bytes without FCS, 36..8192 (default min(8192, MTU+14))")
	fs.StringVar(&f.pcap, "pcap", "", "record every frame sent and received in `PATH` (pcapng; see --pcap-format)")
	fs.Var(&f.format, "pcap-format", pcapFormatUsage)
	fs.DurationVar(&f.busyPoll, "busy-poll", 0, busyPollUsage)
	fs.Var(&f.place, "placement", placementUsage)
	fs.BoolVar(&f.json, "json", false, "print the result as one JSON object, the last line of stdout")
	fs.DurationVar(&f.wait, "wait", 10*time.Second, waitUsage)
	fs.StringVar(&f.transport, "transport", "v1", "transport `T`: v1 (plain oETP v1), reliable (the reliable transport of docs/reliable.md: the peer's serve needs transport=reliable for this MAC), or auto (reliable if the peer answers its handshake within 3 RTOs, else v1 with a note)")
	fs.StringVar(&f.hub, "hub", "", hubUsage)
	fs.BoolVar(&f.noHub, "no-hub", false, noHubUsage)
	fs.BoolVar(&f.hubAny, "hub-trust-any-owner", false, hubTrustAnyUsage)
	f.fs = fs
	fs.Var(&f.retries, "retries", "retransmit an RMEM operation or DMA fragment up to `N` times when its try times out or is answered malformed, "+
		"each time with a new Request ID and an RTT-adaptive timeout (at most --timeout); never after an ERROR_RSP. 0 sends one try, exactly as v1")
	fs.DurationVar(&f.deadline, "deadline", endpoint.DefaultDeadline, "with --retries, bound one RMEM operation or one DMA fragment with all its tries to `D`")
	registerDevice(cmd, &f.device, &f.devices)
	// --iface and --peer are required unless --device gives them (open
	// says so).
	if err := cmd.MarkFlagRequired("addr"); err != nil {
		panic(err)
	}
}

// waitUsage is the help of --wait.
const waitUsage = "wait up to `D` for this interface and MAC's initiator role while another process (another rmem or dma) holds it, then exit 2 naming it; 0 refuses at once. " +
	"The role is a lock in " + role.SystemDir + " for root, else $XDG_RUNTIME_DIR/oetp, else $TMPDIR/oetp-UID (" + role.DirEnv + " overrides); it dies with its process"

// The route of a command (package session): its own endpoint, or a hub.
type (
	localSession = session.Local
	hubSession   = session.Hub
)

// The route a result reports ("via").
const (
	viaDirect = session.ViaDirect
	viaHub    = session.ViaHub
)

// open starts an initiator-only endpoint (no memory: every received request
// is dropped, so a `serve` on the same interface stays the only responder)
// with peer entry 0 for --peer in mode.
func (f *opFlags) open(mode endpoint.Mode) (session.Session, error) {
	if err := f.useDevice(mode); err != nil {
		return nil, err
	}
	if mode == endpoint.ModeRMEM && f.addr.v%4 != 0 {
		return nil, usagef("--addr %#x is not word aligned: RMEM accesses one aligned 32-bit word (a multiple of 4, such as %#x)", f.addr.v, f.addr.v&^3)
	}
	if f.peer.m.IsZero() {
		return nil, usagef("--peer must not be the zero MAC: give the remote endpoint's address")
	}
	if f.read && f.peer.m.IsGroup() {
		return nil, localInvalid("--peer %v is a group address: reads are unicast, so a group read is never sent; give one endpoint's MAC", f.peer.m)
	}
	if f.length > 0 && uint64(f.addr.v)+f.length > wholeSpace {
		return nil, localInvalid("--addr %#x and --length %d end past the 4 GiB address space (room for %d bytes)", f.addr.v, f.length, wholeSpace-uint64(f.addr.v))
	}
	if f.timeout < 0 {
		return nil, usagef("--timeout %v is negative: use a duration such as 1s, or 0 to wait forever", f.timeout)
	}
	if f.maxFrame.set && f.maxFrame.v == 0 {
		return nil, usagef("--max-frame 0 is out of range: use 36..8192, or leave the flag out for min(8192, MTU+14)")
	}
	if f.wait < 0 {
		return nil, usagef("--wait %v is negative: use a duration such as 10s, or 0 to refuse at once", f.wait)
	}
	tmode, err := node.ParseTransport(f.transport)
	if err != nil {
		return nil, usagef("--transport: %v", err)
	}
	if tmode != node.V1 && f.peer.m.IsGroup() {
		return nil, usagef("--transport %s with the group --peer %v: the reliable transport is unicast only; group writes are v1 (leave --transport out)", tmode, f.peer.m)
	}
	f.mode = mode
	if f.retries.v > endpoint.MaxRetries {
		return nil, usagef("--retries %d is out of range: use 0..%d (0: one try)", f.retries.v, endpoint.MaxRetries)
	}
	if f.deadline <= 0 {
		return nil, usagef("--deadline %v is not positive: use a duration such as 5s", f.deadline)
	}
	if s, err := f.hubSession(f.fs, mode); s != nil || err != nil {
		if s != nil {
			f.own = s.Dev.Local[map[endpoint.Mode]int{endpoint.ModeRMEM: 0, endpoint.ModeDMARead: 1, endpoint.ModeDMAWrite: 2}[mode]]
			f.via, f.hubPath = viaHub, s.Path
		}
		return s, err
	}
	f.via = viaDirect
	s, err := session.OpenLocal(session.LocalConfig{Iface: f.iface, MAC: f.mac.m, Peer: f.peer.m, Mode: mode, Transport: tmode,
		Timeout: f.timeout, MaxFrame: f.maxFrame.v, Pcap: f.pcap, PcapFormat: f.format.f, BusyPoll: f.busyPoll, Placement: f.place.p,
		Rate: f.rate, Wait: f.wait, Retries: f.retries.v, Deadline: f.deadline, Volatile: f.volatile, Addr: f.addr.v, HandOff: handOffOnExit})
	if err != nil {
		return nil, err
	}
	n := s.Node
	f.own, f.ceiling, f.mode = n.Link.Addr(), n.Link.Ceiling, mode
	for _, h := range n.Handshakes {
		switch {
		case h.Err != nil:
			// No request is sent: a second try of the handshake under the
			// operation would only repeat its SYNs and then report TIMEOUT
			// as if a request might have executed.
			s.Close()
			return nil, &handshakeError{peer: f.peer.m, own: f.own, mode: mode}
		case !h.Reliable:
			fmt.Fprintf(os.Stderr, "oetp: note: %v does not answer the reliable transport's handshake within %d tries: using v1\n", f.peer.m, handshakeTries)
		}
	}
	return s, nil
}

// opResult is the JSON result of an initiator command. Fields that do not
// apply to the operation are absent.
type opResult struct {
	OK bool `json:"ok"`
	// ErrorCode is the CSR error code the operation completed with, 0..15,
	// or the hub's status 136 (DENIED) when its access rules refused it.
	ErrorCode uint8 `json:"error_code"`
	// Error is its mnemonic: NONE, LOCAL_INVALID, TIMEOUT, REMOTE_AXI_WR_SLVERR...
	// or DENIED.
	Error string `json:"error"`
	// Message is the full error message when the operation failed.
	Message string `json:"message,omitempty"`
	Op      string `json:"op"`
	Peer    string `json:"peer"`
	Addr    uint32 `json:"addr"`
	// Data is the word an RMEM read returned.
	Data *uint32 `json:"data,omitempty"`
	// Bytes and Fragments are the DMA bytes and fragments completed, also
	// on failure.
	Bytes     *uint64 `json:"bytes,omitempty"`
	Fragments *int    `json:"fragments,omitempty"`
	Seconds   float64 `json:"seconds"`
	// MBPerS is Bytes per second in units of 10^6 bytes.
	MBPerS *float64 `json:"mb_per_s,omitempty"`
	// Delivery is "unconfirmed" for a write to a group --peer: it
	// completes when its frames are sent, and no member acknowledges it,
	// so a member may have missed any of them. FramesSent is the number
	// of frames sent.
	Delivery   string `json:"delivery,omitempty"`
	FramesSent *int   `json:"frames_sent,omitempty"`
	// Pacing is how a group write was paced; Members the verification of
	// each member (--verify), after which Delivery is "verified" when
	// every member is.
	Pacing  *pacingResult  `json:"pacing,omitempty"`
	Members []memberResult `json:"members,omitempty"`
	// Retries is the number of retransmissions made (--retries).
	Retries int `json:"retries"`
	// OutcomeUnknown, on every failure, says whether the operation may have
	// executed at the peer (a try was sent and not answered validly) or
	// certainly did not (refused before sending, or refused by the peer).
	OutcomeUnknown *bool `json:"outcome_unknown,omitempty"`
	// FailedAddr is the remote address of a failed block's first failed
	// fragment: with bytes and fragments completed, where to resume.
	FailedAddr *uint32 `json:"failed_addr,omitempty"`
	// Link is the initiator's view of the peer's link on a failure of an
	// attempted operation: round trips, retries and timeouts.
	Link *linkResult `json:"link,omitempty"`
	// Interrupted is "SIGINT" or "SIGTERM" when a signal interrupted the
	// operation (exit status 130 or 143); the other fields say how far it
	// got, as on any failure.
	Interrupted string `json:"interrupted,omitempty"`
	// Via is the route the operation took: "direct" (this command's own
	// endpoint) or "hub" (a running hub, whose socket Hub names); absent
	// when none was opened.
	Via string `json:"via,omitempty"`
	Hub string `json:"hub,omitempty"`

	err     error  // the operation's error
	notSent bool   // no request was sent (the transport's handshake failed)
	rtoNote string // a TIMEOUT under the reliable transport's own timer (transportNote)
	outErr  error  // the error writing dma read's --out, which LOCAL_AXI_WR_SLVERR stands for
}

// setGroup marks a group write's delivery as unconfirmed after it sent
// frames frames.
func (r *opResult) setGroup(frames int) {
	r.Delivery, r.FramesSent = "unconfirmed", &frames
}

// groupNote is the human report's note on a group write that sent frames
// frames.
func groupNote(frames int) string {
	return fmt.Sprintf("delivery unconfirmed: %d frame(s) sent to the group, and no member acknowledges a group write "+
		"(name the members with --member to pace it at what they take, and --verify to read them back; or check each member's counters, e.g. oetp serve's rx_kernel_drops)", frames)
}

// linkResult is the per-peer figures of endpoint.PeerStats in JSON.
type linkResult struct {
	RTTSamples   uint64  `json:"rtt_samples"`
	RTTMinMs     float64 `json:"rtt_min_ms"`
	RTTMeanMs    float64 `json:"rtt_mean_ms"`
	RTTMaxMs     float64 `json:"rtt_max_ms"`
	SRTTMs       float64 `json:"srtt_ms"`
	RTOMs        float64 `json:"rto_ms"`
	Retries      uint64  `json:"retries"`
	ExpiredTries uint64  `json:"expired_tries"`
	Timeouts     uint64  `json:"timeouts"`

	text string
}

func newLinkResult(ps endpoint.PeerStats) *linkResult {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return &linkResult{RTTSamples: ps.RTTSamples, RTTMinMs: ms(ps.RTTMin), RTTMeanMs: ms(ps.RTTMean), RTTMaxMs: ms(ps.RTTMax),
		SRTTMs: ms(ps.SRTT), RTOMs: ms(ps.RTO), Retries: ps.Retries, ExpiredTries: ps.ExpiredTries, Timeouts: ps.Timeouts,
		text: strings.Replace(ps.String(), "rtt: no sample", "no round trip measured", 1)}
}

// addSession adds what the session's figures tell: the retransmissions of
// a successful operation, and the link's figures after a failed attempt.
func (r *opResult) addSession(s session.Session) {
	// The hub's device keeps the link's figures (oetp hub status).
	ls, ok := s.(*localSession)
	if !ok {
		return
	}
	ps := ls.EP.PeerStats(0)
	if r.err == nil {
		r.Retries = int(ps.Retries)
		return
	}
	if !errors.Is(r.err, endpoint.ErrInvalid) {
		r.Link = newLinkResult(ps)
	}
	r.rtoNote = transportNote(ls, r)
}

// newResult fills the fields every result has from the operation's error.
func newResult(op string, f *opFlags, err error, elapsed time.Duration) opResult {
	code := endpoint.CodeOf(err)
	r := opResult{OK: err == nil, ErrorCode: uint8(code), Error: code.String(), Op: op,
		Peer: f.peer.m.String(), Addr: f.addr.v, Seconds: elapsed.Seconds(), Via: f.via, Hub: f.hubPath, err: err}
	if err != nil {
		r.Message = endpoint.Outcome(err)
		unknown := false
		var oe *endpoint.OpError
		if errors.As(err, &oe) {
			r.Retries, unknown = oe.Retries, oe.OutcomeUnknown
		}
		r.OutcomeUnknown = &unknown
		var he *handshakeError
		r.notSent = errors.As(err, &he)
		var de *client.HubError
		if errors.Is(err, client.ErrDenied) && errors.As(err, &de) {
			// The hub's access rules refused it: nothing was sent.
			r.ErrorCode, r.Error, r.Message = de.Status, de.Name, de.Name+": "+de.Message
		}
		if sig := interrupt.Signal(); sig != nil {
			// The operation's context was cancelled by the signal: the
			// engine's TIMEOUT "context canceled" is no timeout.
			r.Interrupted = interrupt.Name(sig)
			if errors.Is(err, context.Canceled) {
				r.Message = "interrupted by " + r.Interrupted
			} else {
				r.Message = "interrupted by " + r.Interrupted + ": " + r.Message
			}
		}
	}
	return r
}

// setTransfer adds a DMA transfer's figures.
func (r *opResult) setTransfer(t endpoint.Transfer) {
	r.Bytes, r.Fragments = &t.Bytes, &t.Fragments
	r.Retries = t.Retries
	var oe *endpoint.OpError
	if errors.As(r.err, &oe) && !errors.Is(r.err, endpoint.ErrInvalid) {
		a := oe.Addr
		r.FailedAddr = &a
	}
	mbps := 0.0
	if r.Seconds > 0 {
		mbps = float64(t.Bytes) / r.Seconds / 1e6
	}
	r.MBPerS = &mbps
}

// finish prints the result (JSON with --json, else human on success) and
// returns the command's error: nil on success, else a failure (exit 1) whose
// message names the operation and the code, or a usage error (exit 2) when a
// local check refused the operation before anything was sent, or the
// interruption (exit 130, 143) when a signal ended it.
func (f *opFlags) finish(cmd *cobra.Command, r opResult, human string) error {
	if r.outErr != nil && !r.OK {
		// The engine's code for a local write error; the OS says why.
		r.Message += fmt.Sprintf(": writing --out %s: %v", f.out, r.outErr)
	}
	if err := f.print(cmd, r, r.OK, human); err != nil {
		return err
	}
	if r.OK {
		return nil
	}
	msg := r.Message + r.executed()
	if r.FailedAddr != nil {
		msg += fmt.Sprintf("; failed fragment at 0x%08x after %d bytes in %d fragments", *r.FailedAddr, *r.Bytes, *r.Fragments)
	}
	if r.Link != nil && (r.Link.RTTSamples > 0 || r.Link.Retries > 0) {
		// The figures of one unanswered try say nothing the code does not.
		msg += "; link figures: " + r.Link.text
	}
	err := fmt.Errorf("%s %s at 0x%08x failed: %s", r.Op, r.Peer, r.Addr, msg)
	if r.Interrupted != "" {
		return interrupt.Wrap(err)
	}
	switch code := endpoint.CodeOf(r.err); {
	case code == wire.CodeTimeout && r.rtoNote != "":
		err = fmt.Errorf("%w\n%s", err, r.rtoNote)
	case code == wire.CodeTimeout && !r.notSent && !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, client.ErrHub):
		// The device's silence, not the hub's (its connection or deadline).
		err = fmt.Errorf("%w\n%s", err, f.timeoutChecklist())
	case code == wire.CodeRemoteInvalid:
		err = fmt.Errorf("%w\n%s", err, f.invalidChecklist(r))
	case code == wire.CodeRemoteOverflow || code == wire.CodeRemoteAXIRdDecerr || code == wire.CodeRemoteAXIWrDecerr:
		if note := f.damagedNote(r, code); note != "" {
			err = fmt.Errorf("%w\n%s", err, note)
		}
	}
	var ue *usageError
	if errors.Is(r.err, client.ErrDenied) {
		return &deniedError{err}
	}
	if errors.Is(r.err, endpoint.ErrInvalid) || errors.As(r.err, &ue) {
		// Refused by a local check before anything was sent (a group
		// read, a --fragment out of range, ...): bad usage, exit 2.
		return &usageError{Err: err}
	}
	return err
}

// deniedError is an operation the hub's access rules refused: a matter of
// configuration (exit 2) whose message names the rule, with no usage hint.
type deniedError struct{ err error }

func (e *deniedError) Error() string { return e.err.Error() }
func (e *deniedError) Unwrap() error { return e.err }

// executed says whether the failed operation may have executed: sent and
// not answered; certainly not, when nothing was sent; partly, when a DMA
// block failed after some of its fragments completed, or when a DMA read
// could not store what the peer sent.
func (r *opResult) executed() string {
	if r.OutcomeUnknown == nil {
		return ""
	}
	if *r.OutcomeUnknown {
		return "; it may have executed (sent, not answered)"
	}
	code := wire.Code(r.ErrorCode)
	done := r.Bytes != nil && *r.Bytes > 0
	switch {
	case r.notSent:
		return "; it did not execute (no request was sent)"
	case r.Op == "dma read" && (code == wire.CodeLocalAXIWrSlverr || code == wire.CodeLocalAXIWrDecerr):
		// The peer answered the failed fragment; storing it failed.
		if done {
			return "; the peer executed the reads, and the data could not be stored after the bytes before the failed fragment"
		}
		return "; the peer executed the read, and its data could not be stored"
	case code > wire.CodeLocalAXIWrDecerr:
		return "" // refused by the peer: it says what did not execute
	case done:
		return "; it executed partly: the fragments before the failed one completed, the failed one and the rest were not sent"
	}
	return "; it did not execute (refused before sending)"
}

// timeoutChecklist is what the human-readable TIMEOUT message asks to
// check, for this command's interface, MAC and modes.
func (f *opFlags) timeoutChecklist() string {
	remote := map[endpoint.Mode]string{endpoint.ModeRMEM: "1 (RMEM), mode=rmem", endpoint.ModeDMARead: "2 (accept DMA writes), mode=dma-write",
		endpoint.ModeDMAWrite: "3 (serve DMA reads), mode=dma-read"}[f.mode]
	mode, flag, _ := strings.Cut(remote, ", ")
	wait := "--timeout " + f.timeout.String()
	var b strings.Builder
	fmt.Fprintf(&b, "no response within %s; check:\n", wait)
	fmt.Fprintf(&b, "  - the remote's peer table has an entry for this MAC %v in mode %s whose window holds the address (on oetp serve: --peer %v,%s; serve logs requests from MACs it has no entry for)\n", f.own, mode, f.own, flag)
	fmt.Fprintf(&b, "  - --peer %v is the remote's MAC, and the remote is running\n", f.peer.m)
	b.WriteString("  - a board (openENOC RTL) whose interrupt claims nobody services: once its IRQ FIFO is full (16 claims, after about 17 failed requests) it answers no request at all; service or complete the board's interrupt claims (or disable its error events), then retry\n")
	if f.ceiling > 0 {
		fmt.Fprintf(&b, "  - the MTU: every device on the path carries %d-byte frames (an MTU of at least %d), or lower --max-frame\n", f.ceiling, f.ceiling-wire.HeaderLen)
	} else {
		b.WriteString("  - the MTU: every device on the path carries the frames the sender uses (--max-frame)\n")
	}
	fmt.Fprintf(&b, "  - VLANs: frames leave %s untagged; a remote on a VLAN needs the VLAN interface as --iface (such as %s.100)\n", f.iface, f.iface)
	fmt.Fprintf(&b, "  - the cable and the link: ip link show %s (state UP, carrier)\n", f.iface)
	fmt.Fprintf(&b, "  - the wire: record with --pcap FILE (or tcpdump -i %s -w FILE ether proto 0x88b5) and read it with oetp dump FILE", f.iface)
	return b.String()
}

// print prints a result: v as one JSON line with --json, else human when
// the operation succeeded (ok) and human is not empty.
func (f *opFlags) print(cmd *cobra.Command, v any, ok bool, human string) error {
	out := cmd.OutOrStdout()
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	if ok && human != "" {
		_, err := fmt.Fprintln(out, human)
		return err
	}
	return nil
}

// openFailed handles an error of open, which happens before anything is
// sent: every such error is a usage or configuration error (exit 2), also
// one that is not a flag's fault (no permission for a raw socket, an
// interface that is down). With --json the result (LOCAL_INVALID, code 1)
// is still printed, so that a script always finds one.
//
// Two errors are reported as results, also without --json: a local check
// with its code (LOCAL_INVALID: a --fragment out of range, a group read),
// and the failed handshake of --transport reliable (exit 1: the peer did
// not answer; no request was sent).
func (f *opFlags) openFailed(cmd *cobra.Command, op string, err error) error {
	var he *handshakeError
	if errors.As(err, &he) {
		r := newResult(op, f, &endpoint.OpError{Op: op, Addr: f.addr.v, Code: wire.CodeTimeout, Err: he}, 0)
		if strings.HasPrefix(op, "dma ") {
			r.setTransfer(endpoint.Transfer{})
		}
		return f.finish(cmd, r, "")
	}
	if errors.Is(err, client.ErrDenied) {
		// The hub refused the device at OPEN: the DENIED result of a refusal.
		r := newResult(op, f, err, 0)
		if strings.HasPrefix(op, "dma ") {
			r.setTransfer(endpoint.Transfer{})
		}
		return f.finish(cmd, r, "")
	}
	var ue *usageError
	if !errors.As(err, &ue) {
		err = &usageError{Err: err}
	}
	var oe *endpoint.OpError
	if errors.As(err, &oe) {
		r := newResult(op, f, err, 0)
		if strings.HasPrefix(op, "dma ") {
			r.setTransfer(endpoint.Transfer{}) // as the engine's own refusal: 0 bytes
		}
		return f.finish(cmd, r, "")
	}
	if f.json {
		return f.finish(cmd, newResult(op, f, err, 0), "")
	}
	return err
}

// localInvalid is an operation refused by a local check before anything
// is sent: LOCAL_INVALID (1), exit 2, the message in the user's words.
func localInvalid(format string, a ...any) error {
	return &usageError{Err: &endpoint.OpError{Code: wire.CodeLocalInvalid, Err: &localCheck{fmt.Sprintf(format, a...)}}}
}

// localCheck is the reason of a local refusal; it is endpoint.ErrInvalid,
// as the engine's own refusals are.
type localCheck struct{ msg string }

func (e *localCheck) Error() string        { return e.msg }
func (e *localCheck) Is(target error) bool { return target == endpoint.ErrInvalid }

// progress returns a context that drives a progress bar on stderr for a DMA
// block of n bytes when stderr is a terminal, and a function that finishes
// the bar.
func progress(ctx context.Context, cmd *cobra.Command, what string, n int64) (context.Context, func()) {
	w := cmd.ErrOrStderr()
	if !isTerminal(w) || n == 0 {
		return ctx, func() {}
	}
	bar := progressbar.NewOptions64(n,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	// The endpoint reports from its receive loop: only store the figure
	// there, and draw the bar from a goroutine of its own, so that a slow
	// terminal never holds up the transfer.
	bar.RenderBlank() // the bar shows at once, also for a block faster than a tick
	var done atomic.Uint64
	fn := func(d uint64) { done.Store(d) }
	ctx = dmafile.WithProgress(ctx, fn)
	stop := make(chan struct{})
	drawn := make(chan struct{})
	go func() {
		defer close(drawn)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				bar.Set64(int64(done.Load()))
				return
			case <-t.C:
				bar.Set64(int64(done.Load()))
			}
		}
	}()
	return ctx, func() { close(stop); <-drawn; bar.Finish() }
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// humanBytes formats a byte count (cli.HumanBytes).
func humanBytes(n uint64) string { return cli.HumanBytes(n) }

// codeString formats a code as "MNEMONIC (n)".
func codeString(c wire.Code) string { return cli.CodeString(c) }
