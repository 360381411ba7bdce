package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/openenoc/oetp/cmd/oetp/internal/interrupt"
	"github.com/openenoc/oetp/cmd/oetp/internal/oneshot"
	"github.com/openenoc/oetp/cmd/oetp/internal/session"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/wire"
)

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
