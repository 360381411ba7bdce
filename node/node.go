// Package node assembles an oETP stack: a link (an AF_PACKET socket or a
// link the caller opened), a capture and a pacer on it, the reliable
// transport beneath the endpoint for the peers that use it, the endpoint
// with its memory and peer table, and the cross-process role of its
// address. It is the one place that builds a stack: `oetp serve`, the
// one-shot commands, the hub and the bench open theirs with Open; a tool
// that needs only a link opens it with OpenLink, `oetp relay` its two
// with OpenRelay, and `oetp dump --iface` watches an interface through a
// read-only Tap (OpenTap). An in-process Switch gives stacks a medium
// without sockets (`oetp demo`, the bench's mem rows, tests).
//
// Open owns the rules every stack follows:
//
//   - a reliable peer's requests carry the transport's 24 bytes, so the
//     endpoint's fragments are that much shorter (rlink.FragmentCeiling),
//     and a DMA block keeps the transport's window in flight
//     (transport.DefaultDepth) instead of one fragment;
//   - an initiator runs the handshake with its reliable peers before its
//     first request; a peer in mode auto that does not answer is reached by
//     v1, and the window falls back to one request;
//   - the first Request ID is random (crypto/rand), so that a reply a slow
//     peer sends to an earlier process on the same MAC is never taken for
//     this one's;
//   - the role of the address (one initiator, one responder per MAC across
//     processes) is held for the node's life;
//   - Close is the one cleanup path, in the reverse order of Open; a
//     one-shot command's node may hand its sockets to a child on Close so
//     that the kernel's wait on their last close delays no one.
package node

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/link/rlink"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/transport"
	"github.com/openenoc/oetp/wire"
)

// Transport is how a peer is reached: V1, Reliable or Auto.
type Transport = rlink.Mode

// Transports.
const (
	V1       = rlink.V1
	Reliable = rlink.Reliable
	Auto     = rlink.Auto
)

// ParseTransport parses "v1", "reliable" or "auto".
func ParseTransport(s string) (Transport, error) { return rlink.ParseMode(s) }

// FragmentCeiling returns the largest DMA fragment to a reliable peer over
// frames of maxFrame bytes.
func FragmentCeiling(maxFrame int) uint32 { return rlink.FragmentCeiling(maxFrame) }

// Window is the reliable transport's window: the requests a node keeps in
// flight to a reliable peer.
const Window = transport.DefaultDepth

// HandshakeInterval is the wait between the tries of the handshake, and
// HandshakeTries how many it makes.
const (
	HandshakeInterval = transport.DefaultInitialRTO
	HandshakeTries    = transport.DefaultSynAttempts
)

// MaxRTO is the reliable transport's longest retransmission timeout.
const MaxRTO = transport.DefaultMaxRTO

// TransportStats are the reliable transport's counters.
type TransportStats = rlink.Stats

// Peer is one peer table entry and how it is reached.
type Peer struct {
	endpoint.Peer
	Transport Transport
	// Retry, if not nil, is the entry's retry policy.
	Retry *endpoint.RetryPolicy
}

// Role is the cross-process role a node holds on its (interface, MAC).
type Role int

const (
	NoRole    Role = iota // none (tests, a hub that does not hold roles)
	Initiator             // one initiator per MAC: replies reach one process
	Responder             // one responder per MAC: requests are answered once
)

// Config says what to open.
type Config struct {
	LinkConfig
	// Role is held for the node's life, waiting up to RoleWait for
	// another process to give it up.
	Role     Role
	RoleWait time.Duration
	// Endpoint is the endpoint's configuration; Open sets MAC and
	// MaxFrame from the link (unless given), InitialRequestID (random
	// unless given), and, with a reliable peer, MaxFragment and
	// Outstanding.
	Endpoint endpoint.Config
	// Memory is the address space served; nil for an initiator only.
	Memory memory.Space
	// Peers are the peer table's entries 0, 1, ...
	Peers []Peer
	// HandOffOnClose hands the AF_PACKET sockets to a child process on
	// Close (see HandOff): for a process that exits right after.
	HandOffOnClose bool
}

func peerErr(i int, format string, a ...any) *ConfigError {
	e := configErr("peer", format, a...)
	e.Peer = i
	return e
}

// Handshake is the outcome of the handshake with a reliable peer.
type Handshake struct {
	Peer      wire.MAC
	Transport Transport
	// Reliable is true when the transport is established; false when an
	// auto peer fell back to v1 (Err nil) or a reliable peer did not
	// answer (Err is rlink.ErrHandshake).
	Reliable bool
	Err      error
}

// Node is an open stack.
type Node struct {
	// Endpoint is the node's engine.
	Endpoint *endpoint.Endpoint
	// Link is the medium's link under the transport.
	Link *Link
	// Handshakes are the handshakes an initiator ran in Open.
	Handshakes []Handshake
	// RoleReplaced, if not empty, says what taking the role removed from
	// the lock file's place (role.Lock.Replaced): worth a warning.
	RoleReplaced string

	rl       *rlink.Link
	role     *role.Lock
	handOff  bool
	closed   bool
	closeErr error
}

// RoleHeldError is returned by Open when another process holds the role,
// and UntrustedError when its lock directory may not be trusted.
type (
	RoleHeldError  = role.HeldError
	UntrustedError = rundir.UntrustedError
)

// Open opens the stack cfg describes. ctx bounds the handshakes. Errors the
// user fixes in the configuration are *ConfigError, *RoleHeldError or
// *UntrustedError. On an
// error, a Link given in cfg is closed.
func Open(ctx context.Context, cfg Config) (*Node, error) {
	for i, p := range cfg.Peers {
		if p.Transport != V1 && p.MAC.IsGroup() {
			if cfg.Link != nil {
				cfg.Link.Close()
			}
			return nil, peerErr(i, " %v with transport %s: the reliable transport is unicast only; group writes are v1", p.MAC, p.Transport)
		}
	}
	l, err := OpenLink(cfg.LinkConfig)
	if err != nil {
		return nil, err
	}
	n := &Node{Link: l, handOff: cfg.HandOffOnClose}
	fail := func(err error) (*Node, error) {
		n.Close()
		return nil, err
	}
	own := l.Addr()
	if cfg.Role != NoRole {
		r := role.Initiator
		if cfg.Role == Responder {
			r = role.Responder
		}
		lk, err := role.Acquire(cfg.Iface, own, r, cfg.RoleWait)
		if err != nil {
			var he *role.HeldError
			var ue *rundir.UntrustedError
			if !errors.As(err, &he) && !errors.As(err, &ue) {
				err = fmt.Errorf("taking the %s role of %s %v: %w", r, cfg.Iface, own, err)
			}
			l.Close()
			return nil, err
		}
		n.role, n.RoleReplaced = lk, lk.Replaced
	}
	ecfg := cfg.Endpoint
	ecfg.MAC = own
	if ecfg.MaxFrame == 0 {
		ecfg.MaxFrame = l.Ceiling
	}
	ecfg.MaxFrame = min(ecfg.MaxFrame, wire.MaxFrameLen)
	if ecfg.InitialRequestID == 0 {
		if ecfg.InitialRequestID, err = RandomRequestID(); err != nil {
			l.Close()
			n.release()
			return nil, err
		}
	}
	epLink := l.Link
	for i, p := range cfg.Peers {
		if p.Transport == V1 {
			continue
		}
		if n.rl == nil {
			if n.rl, err = rlink.New(l.Link, rlink.Config{MAC: own}); err != nil {
				break
			}
			epLink = n.rl.Link()
			// The transport's frames carry 24 bytes more, so the
			// fragments are 24 bytes shorter; a DMA block keeps the
			// transport's window in flight.
			ecfg.MaxFragment = FragmentCeiling(ecfg.MaxFrame)
			ecfg.Outstanding = Window
		}
		if err = n.rl.SetPeer(p.MAC, p.Transport); err != nil {
			err = peerErr(i, ",transport=%s: %v", p.Transport, err)
			break
		}
	}
	if err != nil {
		if n.rl != nil {
			n.rl.Close()
		}
		l.finish()
		l.Link.Close()
		n.release()
		return nil, err
	}
	ep, err := endpoint.New(epLink, cfg.Memory, ecfg)
	if err != nil {
		epLink.Close()
		l.finish()
		n.release()
		return nil, &ConfigError{Field: "endpoint", Msg: ": " + err.Error(), Err: err}
	}
	n.Endpoint = ep
	for i, p := range cfg.Peers {
		if p.MAC == own {
			return fail(peerErr(i, " is this endpoint's own MAC (on %s): a peer entry names a remote endpoint", cfg.Iface))
		}
		if err := ep.SetPeer(i, p.Peer); err != nil {
			return fail(peerErr(i, ": %v", err))
		}
		if p.Retry != nil {
			if err := ep.SetRetryPolicy(i, *p.Retry); err != nil {
				return fail(&ConfigError{Field: "retry", Peer: i, Msg: ": " + err.Error(), Err: err})
			}
		}
	}
	if n.rl != nil && cfg.Memory == nil {
		n.handshake(ctx, cfg.Peers)
	}
	return n, nil
}

// handshake runs the handshake with each reliable peer of an initiator now,
// so that its first operation does not wait for it and auto learns whether
// to fall back; with no reliable peer left, the window is one request again.
func (n *Node) handshake(ctx context.Context, peers []Peer) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	any := false
	for _, p := range peers {
		if p.Transport == V1 {
			continue
		}
		ok, err := n.rl.Open(ctx, p.MAC)
		n.Handshakes = append(n.Handshakes, Handshake{Peer: p.MAC, Transport: p.Transport, Reliable: ok, Err: err})
		any = any || ok || err != nil
	}
	if !any {
		c := n.Endpoint.Config()
		c.Outstanding = 1 // v1: one request at a time
		n.Endpoint.SetConfig(c)
	}
}

// Reliable reports whether requests to peer go through the reliable
// transport (false for v1, and for auto after a fallback).
func (n *Node) Reliable(peer wire.MAC) bool {
	for _, h := range n.Handshakes {
		if h.Peer == peer {
			return h.Reliable
		}
	}
	return false
}

// ErrNoTransport is returned by SetTransport and Handshake on a node opened
// with no reliable or auto peer: it has no transport to set.
var ErrNoTransport = errors.New("the node was opened with no reliable peer")

// SetTransport sets how peer is reached from now on (V1 drops the peer's
// transport state), for a node opened with a reliable or auto peer; the
// caller sets the endpoint's MaxFragment and Outstanding to match.
func (n *Node) SetTransport(peer wire.MAC, t Transport) error {
	if n.rl == nil {
		return ErrNoTransport
	}
	return n.rl.SetPeer(peer, t)
}

// Handshake runs the handshake with peer now, if it has not run, and
// reports whether the transport is established (rlink.Link.Open).
func (n *Node) Handshake(ctx context.Context, peer wire.MAC) (bool, error) {
	if n.rl == nil {
		return false, ErrNoTransport
	}
	return n.rl.Open(ctx, peer)
}

// Transport returns the reliable transport's counters, and false when no
// peer uses it.
func (n *Node) Transport() (TransportStats, bool) {
	if n.rl == nil {
		return TransportStats{}, false
	}
	return n.rl.Stats(), true
}

// TransportPeer is the reliable transport's state for one peer.
type TransportPeer = rlink.PeerInfo

// TransportPeer returns the reliable transport's state for peer, and false
// when the transport does not reach it.
func (n *Node) TransportPeer(peer wire.MAC) (TransportPeer, bool) {
	if n.rl == nil {
		return TransportPeer{}, false
	}
	return n.rl.Peer(peer)
}

// Stats are a node's counters.
type Stats struct {
	endpoint.Stats
	// KernelDrops counts the frames the kernel dropped because the
	// socket's receive queue was full (a Switch port's queue), which the
	// endpoint never saw.
	KernelDrops uint64
	// CPUMoves counts the moves of the process to the CPU its frames
	// arrive on (PlaceFollow).
	CPUMoves uint64
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	return Stats{Stats: n.Endpoint.Stats(), KernelDrops: n.Link.KernelDrops(), CPUMoves: n.Link.CPUMoves()}
}

// Close stops the endpoint (which closes the transport and the link),
// ends the capture and releases the role. It returns the capture's first
// error. Calling it again returns the same.
func (n *Node) Close() error {
	if n.closed {
		return n.closeErr
	}
	n.closed = true
	if n.handOff {
		keepHandOff(n.Link.Link)
	}
	if n.Endpoint != nil {
		n.Endpoint.Close()
	} else {
		n.Link.Link.Close()
	}
	n.release()
	n.closeErr = n.Link.finish()
	return n.closeErr
}

func (n *Node) release() {
	if n.role != nil {
		n.role.Release()
		n.role = nil
	}
}

// RandomRequestID returns a random 32-bit initial Request ID from
// crypto/rand. Each process is a new endpoint instance on a MAC that
// earlier processes may have used; a reply that a slow peer sends to an
// earlier process (after its timeout) then carries a Request ID this
// process is not waiting for, so it is dropped as unmatched and never
// completes a later operation. The chance that a given stale reply matches
// is 2^-32 per outstanding request.
func RandomRequestID() (uint32, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("choosing a random initial Request ID: %w", err)
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}
