package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/devices"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/wire"
)

// This file holds what the one-shot initiator commands (rmem read/write, dma
// write/read, regs read/write) share: their common flags and the route they
// open. Their result and what it says is package oneshot's.

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
		return nil, oneshot.LocalInvalid("--peer %v is a group address: reads are unicast, so a group read is never sent; give one endpoint's MAC", f.peer.m)
	}
	if f.length > 0 && uint64(f.addr.v)+f.length > wholeSpace {
		return nil, oneshot.LocalInvalid("--addr %#x and --length %d end past the 4 GiB address space (room for %d bytes)", f.addr.v, f.length, wholeSpace-uint64(f.addr.v))
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
			return nil, &oneshot.HandshakeError{Peer: f.peer.m, Own: f.own, Mode: mode}
		case !h.Reliable:
			fmt.Fprintf(os.Stderr, "oetp: note: %v does not answer the reliable transport's handshake within %d tries: using v1\n", f.peer.m, oneshot.HandshakeTries)
		}
	}
	return s, nil
}

// op is what the command's report says about its operation (package
// oneshot).
func (f *opFlags) op() *oneshot.Op {
	return &oneshot.Op{Iface: f.iface, Peer: f.peer.m, Addr: f.addr.v, Timeout: f.timeout, JSON: f.json, Own: f.own, Ceiling: f.ceiling,
		Mode: f.mode, Length: f.length, Frag: f.frag, Out: f.out, Via: f.via, Hub: f.hubPath}
}

// result fills the fields every result has from the operation's error.
func (f *opFlags) result(op string, err error, elapsed time.Duration) oneshot.Result {
	return oneshot.New(op, f.op(), err, elapsed)
}

// finish prints the result and returns the command's error (oneshot.Finish).
func (f *opFlags) finish(cmd *cobra.Command, r oneshot.Result, human string) error {
	return oneshot.Finish(cmd, f.op(), r, human)
}

// openFailed reports an error of open (oneshot.OpenFailed).
func (f *opFlags) openFailed(cmd *cobra.Command, op string, err error) error {
	return oneshot.OpenFailed(cmd, f.op(), op, err)
}

// do runs the command op's operation work on the route opened in mode,
// under the command's handling of SIGINT and SIGTERM, and returns its
// result. A non-nil error is the command's outcome already: the route could
// not be opened, or closing it failed.
func (f *opFlags) do(cmd *cobra.Command, op string, mode endpoint.Mode, work func(context.Context, session.Session) error) (oneshot.Result, error) {
	ctx, cancel := interrupt.Context(cmd)
	defer cancel()
	s, err := f.open(mode)
	if err != nil {
		return oneshot.Result{}, f.openFailed(cmd, op, err)
	}
	t0 := time.Now()
	err = work(ctx, s)
	elapsed := time.Since(t0)
	if cerr := s.Close(); err == nil && cerr != nil {
		return oneshot.Result{}, cerr
	}
	r := f.result(op, err, elapsed)
	r.AddSession(s)
	return r, nil
}

// The one-shot commands (rmem read/write, dma write/read) go through a
// running hub when it serves their --iface and --peer: the hub's endpoint
// then sends the request from its own local MAC for that kind of
// operation, so a shell loop neither opens AF_PACKET sockets nor collides
// with the hub's other clients. The hub is found through --hub PATH, else
// $OETP_HUB, /run/oetp/hub.sock or the per-user socket; --no-hub always runs
// the command's own endpoint.

// hubUsage is the help of --hub; noHubUsage of --no-hub.
const (
	hubUsage   = "go through the hub at `PATH` (or tcp://HOST:PORT); default: $OETP_HUB, /run/oetp/hub.sock or the per-user socket, if a hub there serves --iface and --peer"
	noHubUsage = "never go through a hub: run this command's own endpoint on --iface"
	// hubTrustAnyUsage is the help of --hub-trust-any-owner.
	hubTrustAnyUsage = "use the hub's socket even if it, a directory above it or the process serving it belongs to another user " +
		"(or its directory is writable by others): only for a socket shared on purpose, since whoever owns it can answer in the hub's place " +
		"(read results, \"ok\" for writes never made); also $" + rundir.TrustAnyOwnerEnv + "=1"
)

// hubSession opens the hub route for mode (session.FindHub), or returns nil
// (and no error) when the command should run its own endpoint. Flags of
// session.Bypass not defined on a command are ignored.
func (f *opFlags) hubSession(fs *pflag.FlagSet, mode endpoint.Mode) (*session.Hub, error) {
	q := session.HubQuery{Hub: f.hub, Explicit: fs.Changed("hub"), NoHub: f.noHub, TrustAny: f.hubAny, Iface: f.iface,
		Peer: f.peer.m, MAC: f.mac.m, MACGiven: fs.Changed("mac"), DialHint: hubDialHint}
	for _, name := range session.Bypass {
		if fl := fs.Lookup(name); fl != nil && fl.Changed && name != "mac" {
			// --mac naming the hub's own local MAC is still the hub's route.
			q.Bypass = name
			break
		}
	}
	q.Context = interrupt.CommandContext()
	s, err := session.FindHub(q, mode)
	var oi *session.OpenInterrupted
	if errors.As(err, &oi) {
		return nil, f.hubOpenInterrupted(mode, oi.Path)
	}
	var od *session.OpenDenied
	if errors.As(err, &od) {
		// The device's rules refuse this user any access: the
		// operation's DENIED result (openFailed), as a later refusal.
		f.via, f.hubPath = viaHub, od.Path
		return nil, &oneshot.DeniedError{Err: od.Err}
	}
	return s, err
}

// hubOpenInterrupted is the error of a command whose signal came while
// its hub route was opening: nothing was sent, as an operation the
// engine's context ends before accepting it (TIMEOUT, outcome known).
func (f *opFlags) hubOpenInterrupted(mode endpoint.Mode, path string) error {
	op := map[endpoint.Mode]string{endpoint.ModeRMEM: "RMEM write", endpoint.ModeDMARead: "DMA write", endpoint.ModeDMAWrite: "DMA read"}[mode]
	if mode == endpoint.ModeRMEM && f.read {
		op = "RMEM read"
	}
	f.via, f.hubPath = viaHub, path
	return &endpoint.OpError{Op: op, Addr: f.addr.v, Code: wire.CodeTimeout,
		Err: fmt.Errorf("%w while opening the hub at %s; nothing was sent", context.Canceled, path)}
}

// hubDialHint is what to do when no hub answers at the socket or address a
// command was given: empty for other failures (a refused token, an
// untrusted socket), whose messages say it themselves.
func hubDialHint(err error) string {
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return "; start a hub there (oetp hub --config FILE), or give the socket of a running one"
	}
	return ""
}

// cliErr turns the errors of a node that the user fixes by changing a flag
// into usage errors (exit 2) naming it (cli.Err).
func cliErr(err error) error { return cli.Err(err) }

// openLink opens a command's link (node.OpenLink) with usage errors that
// name the flags.
func openLink(cfg node.LinkConfig) (*node.Link, error) {
	l, err := node.OpenLink(cfg)
	return l, cliErr(err)
}

// openNode opens a command's stack (node.Open) with usage errors that name
// the flags.
func openNode(ctx context.Context, cfg node.Config) (*node.Node, error) {
	n, err := node.Open(ctx, cfg)
	return n, cliErr(err)
}

// busyPollUsage is the help of --busy-poll.
const busyPollUsage = "after each frame received, keep reading the socket for `D` (such as 50us, at most 10ms) before sleeping: lower latency for a CPU that spins; 0 never spins"

// checkBusyPoll validates a --busy-poll value (cli.CheckBusyPoll).
func checkBusyPoll(d time.Duration) error { return cli.CheckBusyPoll(d) }

// lookupIface finds the interface name given by flag (cli.LookupIface).
func lookupIface(flag, name string) (*net.Interface, error) { return cli.LookupIface(flag, name) }
