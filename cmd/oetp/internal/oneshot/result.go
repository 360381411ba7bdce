// Package oneshot holds what the one-shot initiator commands of oetp (rmem
// read/write, dma write/read, regs read/write) report: their result,
// printed for people or as one JSON object; what a failure says beyond its
// code (whether it may have executed, the checklist of a TIMEOUT or a
// REMOTE_INVALID, the note on an ERROR_RSP a damaged request can cause, the
// failed handshake of --transport reliable); the exit status it maps to; a
// group write's pacing and verification; and the progress bar of a DMA
// block. The commands keep their flags and open their route (package
// session); Op tells this package what they were given and found.
package oneshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openenoc/oetp/client"
	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/wire"
)

// Op is what a one-shot command's report says about its operation: the
// flags it was given and what opening its route found.
type Op struct {
	Iface   string        // --iface
	Peer    wire.MAC      // --peer
	Addr    uint32        // --addr
	Timeout time.Duration // --timeout
	JSON    bool          // --json

	// Set by the route's opening, for the TIMEOUT checklist.
	Own     wire.MAC      // this endpoint's MAC
	Ceiling int           // the frame ceiling in force
	Mode    endpoint.Mode // the local peer entry's mode

	// Set by the dma commands, for the messages: the block's length, the
	// fragment size in force and dma read's --out.
	Length uint64
	Frag   int
	Out    string

	// Via is the route taken (session.ViaDirect or session.ViaHub) and Hub
	// the hub's socket through a hub.
	Via, Hub string
}

// Result is the JSON result of a one-shot command. Fields that do not
// apply to the operation are absent.
type Result struct {
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
	Pacing  *PacingResult  `json:"pacing,omitempty"`
	Members []MemberResult `json:"members,omitempty"`
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
	Link *LinkResult `json:"link,omitempty"`
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

// SetGroup marks a group write's delivery as unconfirmed after it sent
// frames frames.
func (r *Result) SetGroup(frames int) {
	r.Delivery, r.FramesSent = "unconfirmed", &frames
}

// GroupNote is the human report's note on a group write that sent frames
// frames.
func GroupNote(frames int) string {
	return fmt.Sprintf("delivery unconfirmed: %d frame(s) sent to the group, and no member acknowledges a group write "+
		"(name the members with --member to pace it at what they take, and --verify to read them back; or check each member's counters, e.g. oetp serve's rx_kernel_drops)", frames)
}

// SetOutErr records the error writing dma read's --out: the failed
// operation's message then names it.
func (r *Result) SetOutErr(err error) { r.outErr = err }

// LinkResult is the per-peer figures of endpoint.PeerStats in JSON.
type LinkResult struct {
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

func newLinkResult(ps endpoint.PeerStats) *LinkResult {
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	return &LinkResult{RTTSamples: ps.RTTSamples, RTTMinMs: ms(ps.RTTMin), RTTMeanMs: ms(ps.RTTMean), RTTMaxMs: ms(ps.RTTMax),
		SRTTMs: ms(ps.SRTT), RTOMs: ms(ps.RTO), Retries: ps.Retries, ExpiredTries: ps.ExpiredTries, Timeouts: ps.Timeouts,
		text: strings.Replace(ps.String(), "rtt: no sample", "no round trip measured", 1)}
}

// AddSession adds what the session's figures tell: the retransmissions of
// a successful operation, and the link's figures after a failed attempt.
func (r *Result) AddSession(s session.Session) {
	// The hub's device keeps the link's figures (oetp hub status).
	ls, ok := s.(*session.Local)
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

// New fills the fields every result has from the operation's error.
func New(op string, o *Op, err error, elapsed time.Duration) Result {
	code := endpoint.CodeOf(err)
	r := Result{OK: err == nil, ErrorCode: uint8(code), Error: code.String(), Op: op,
		Peer: o.Peer.String(), Addr: o.Addr, Seconds: elapsed.Seconds(), Via: o.Via, Hub: o.Hub, err: err}
	if err != nil {
		r.Message = endpoint.Outcome(err)
		unknown := false
		var oe *endpoint.OpError
		if errors.As(err, &oe) {
			r.Retries, unknown = oe.Retries, oe.OutcomeUnknown
		}
		r.OutcomeUnknown = &unknown
		var he *HandshakeError
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

// SetTransfer adds a DMA transfer's figures.
func (r *Result) SetTransfer(t endpoint.Transfer) {
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

// Finish prints the result (JSON with --json, else human on success) and
// returns the command's error: nil on success, else a failure (exit 1) whose
// message names the operation and the code, or a usage error (exit 2) when a
// local check refused the operation before anything was sent, or the
// interruption (exit 130, 143) when a signal ended it.
func Finish(cmd *cobra.Command, o *Op, r Result, human string) error {
	if r.outErr != nil && !r.OK {
		// The engine's code for a local write error; the OS says why.
		r.Message += fmt.Sprintf(": writing --out %s: %v", o.Out, r.outErr)
	}
	if err := Print(cmd, o.JSON, r, r.OK, human); err != nil {
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
		err = fmt.Errorf("%w\n%s", err, o.timeoutChecklist())
	case code == wire.CodeRemoteInvalid:
		err = fmt.Errorf("%w\n%s", err, o.invalidChecklist(r))
	case code == wire.CodeRemoteOverflow || code == wire.CodeRemoteAXIRdDecerr || code == wire.CodeRemoteAXIWrDecerr:
		if note := o.damagedNote(r, code); note != "" {
			err = fmt.Errorf("%w\n%s", err, note)
		}
	}
	var ue *cli.UsageError
	if errors.Is(r.err, client.ErrDenied) {
		return &DeniedError{err}
	}
	if errors.Is(r.err, endpoint.ErrInvalid) || errors.As(r.err, &ue) {
		// Refused by a local check before anything was sent (a group
		// read, a --fragment out of range, ...): bad usage, exit 2.
		return &cli.UsageError{Err: err}
	}
	return err
}

// DeniedError is an operation the hub's access rules refused: a matter of
// configuration (exit 2) whose message names the rule, with no usage hint.
type DeniedError struct{ Err error }

func (e *DeniedError) Error() string { return e.Err.Error() }
func (e *DeniedError) Unwrap() error { return e.Err }

// executed says whether the failed operation may have executed: sent and
// not answered; certainly not, when nothing was sent; partly, when a DMA
// block failed after some of its fragments completed, or when a DMA read
// could not store what the peer sent.
func (r *Result) executed() string {
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

// Print prints a result: v as one JSON line with asJSON (--json), else
// human when the operation succeeded (ok) and human is not empty.
func Print(cmd *cobra.Command, asJSON bool, v any, ok bool, human string) error {
	out := cmd.OutOrStdout()
	if asJSON {
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

// OpenFailed handles an error of opening op's route, which happens before
// anything is sent: every such error is a usage or configuration error
// (exit 2), also one that is not a flag's fault (no permission for a raw
// socket, an interface that is down). With --json the result
// (LOCAL_INVALID, code 1) is still printed, so that a script always finds
// one.
//
// Three errors are reported as results, also without --json: a local check
// with its code (LOCAL_INVALID: a --fragment out of range, a group read),
// the failed handshake of --transport reliable (exit 1: the peer did not
// answer; no request was sent), and the hub's refusal of the device at
// OPEN (DENIED).
func OpenFailed(cmd *cobra.Command, o *Op, op string, err error) error {
	result := func(err error) error {
		r := New(op, o, err, 0)
		if strings.HasPrefix(op, "dma ") {
			r.SetTransfer(endpoint.Transfer{}) // as the engine's own refusal: 0 bytes
		}
		return Finish(cmd, o, r, "")
	}
	var he *HandshakeError
	if errors.As(err, &he) {
		return result(&endpoint.OpError{Op: op, Addr: o.Addr, Code: wire.CodeTimeout, Err: he})
	}
	if errors.Is(err, client.ErrDenied) {
		// The hub refused the device at OPEN: the DENIED result of a refusal.
		return result(err)
	}
	var ue *cli.UsageError
	if !errors.As(err, &ue) {
		err = &cli.UsageError{Err: err}
	}
	var oe *endpoint.OpError
	if errors.As(err, &oe) {
		return result(err)
	}
	if o.JSON {
		return Finish(cmd, o, New(op, o, err, 0), "")
	}
	return err
}

// LocalInvalid is an operation refused by a local check before anything
// is sent: LOCAL_INVALID (1), exit 2, the message in the user's words.
func LocalInvalid(format string, a ...any) error {
	return &cli.UsageError{Err: &endpoint.OpError{Code: wire.CodeLocalInvalid, Err: &localCheck{fmt.Sprintf(format, a...)}}}
}

// localCheck is the reason of a local refusal; it is endpoint.ErrInvalid,
// as the engine's own refusals are.
type localCheck struct{ msg string }

func (e *localCheck) Error() string        { return e.msg }
func (e *localCheck) Is(target error) bool { return target == endpoint.ErrInvalid }
