// Package session is the route of one one-shot initiator command (rmem,
// dma, regs) to its device: the command's own endpoint, opened through
// package node (Local), or a running hub that serves the device (Hub,
// found by FindHub). A command opens one and keeps it: it never switches
// route part way.
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/cmd/oetp/internal/regs"
	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// Session is a command's route: Local or Hub.
type Session interface {
	RMEMRead(ctx context.Context, addr uint32) (uint32, error)
	RMEMWrite(ctx context.Context, addr, data, mask uint32) error
	// DMAWrite writes the input to addr, DMARead n bytes at addr into the
	// output.
	DMAWrite(ctx context.Context, addr uint32, in *dmafile.Input) (endpoint.Transfer, error)
	DMARead(ctx context.Context, addr, n uint32, dst *dmafile.Output) (endpoint.Transfer, error)
	// ReadWords reads the words at addrs in order (regs dump): one RMEM
	// read after the other, or batches through a hub. It returns the words
	// read before any failure.
	ReadWords(ctx context.Context, addrs []uint32) ([]uint32, error)
	Close() error
}

// The route a result reports ("via").
const (
	ViaDirect = "direct"
	ViaHub    = "hub"
)

// Local is the command's own endpoint on its interface.
type Local struct {
	Node *node.Node         // the local stack
	EP   *endpoint.Endpoint // its endpoint
	// Reliable: requests to the peer go through the transport (false for
	// v1, and for auto after a fallback).
	Reliable bool
}

// LocalConfig is what a command's own endpoint is opened with: its flags.
type LocalConfig struct {
	Iface      string
	MAC        wire.MAC // zero: the interface's
	Peer       wire.MAC
	Mode       endpoint.Mode // the peer entry's mode
	Transport  node.Transport
	Timeout    time.Duration
	MaxFrame   int
	Pcap       string
	PcapFormat node.CaptureFormat
	BusyPoll   time.Duration
	Placement  cli.Placement
	Rate       uint64 // bytes of frames per second; 0 unpaced
	Wait       time.Duration
	Retries    int
	Deadline   time.Duration
	// Volatile: the word at Addr gets one try, whatever Retries says.
	Volatile bool
	Addr     uint32
	// HandOff hands the socket to a process that outlives this one on
	// Close (node.Config.HandOffOnClose).
	HandOff bool
}

// wholeSpace is the size of the whole 32-bit address space.
const wholeSpace = uint64(1) << 32

// OpenLocal starts an initiator-only endpoint (no memory: every received
// request is dropped, so a `serve` on the same interface stays the only
// responder) with peer entry 0 for c.Peer. Errors the user fixes name the
// flags (usage errors).
func OpenLocal(c LocalConfig) (*Local, error) {
	// A stop-and-wait exchange stays on one CPU for serve to follow; the
	// reliable transport's window keeps both sides busy at once.
	place := node.PlaceStay
	if c.Placement == cli.PlaceOff || c.Transport != node.V1 {
		place = node.PlaceNone
	}
	peer := node.Peer{Peer: endpoint.Peer{MAC: c.Peer, Mode: c.Mode, WindowSize: wholeSpace}, Transport: c.Transport}
	if c.Retries > 0 {
		pol := endpoint.RetryPolicy{Retries: c.Retries, Deadline: c.Deadline}
		if c.Volatile {
			pol.Volatile = []endpoint.AddrRange{{Base: c.Addr, Size: 4}}
		}
		peer.Retry = &pol
	}
	// One MAC, one initiator, also across processes: another process's
	// replies would otherwise reach this one's endpoint too.
	n, err := node.Open(context.Background(), node.Config{
		LinkConfig: node.LinkConfig{Iface: c.Iface, MAC: c.MAC, MaxFrame: c.MaxFrame, Capture: c.Pcap, CaptureFormat: c.PcapFormat,
			BusyPoll: c.BusyPoll, Placement: place, Rate: float64(c.Rate)},
		Role: node.Initiator, RoleWait: c.Wait,
		Endpoint:       endpoint.Config{RMEMTimeout: c.Timeout, DMATimeout: c.Timeout},
		Peers:          []node.Peer{peer},
		HandOffOnClose: c.HandOff,
	})
	if err != nil {
		var ce *node.ConfigError
		if errors.As(err, &ce) && ce.Field == "peer" {
			return nil, cli.Usagef("--peer %v%s", c.Peer, ce.Msg)
		}
		return nil, cli.Err(err)
	}
	if n.RoleReplaced != "" {
		fmt.Fprintf(os.Stderr, "oetp: warning: %s\n", n.RoleReplaced)
	}
	return &Local{Node: n, EP: n.Endpoint, Reliable: n.Reliable(c.Peer)}, nil
}

// Close stops the endpoint, closes the capture and releases the role
// (node.Node.Close).
func (s *Local) Close() error { return s.Node.Close() }

func (s *Local) RMEMRead(ctx context.Context, addr uint32) (uint32, error) {
	return s.EP.RMEMRead(ctx, 0, addr)
}

func (s *Local) RMEMWrite(ctx context.Context, addr, data, mask uint32) error {
	return s.EP.RMEMWrite(ctx, 0, addr, data, mask)
}

func (s *Local) DMAWrite(ctx context.Context, addr uint32, in *dmafile.Input) (endpoint.Transfer, error) {
	return dmafile.Write(ctx, s.EP, addr, in)
}

func (s *Local) DMARead(ctx context.Context, addr, n uint32, dst *dmafile.Output) (endpoint.Transfer, error) {
	return s.EP.DMAReadInto(ctx, 0, addr, dst.Space(), 0, n)
}

func (s *Local) ReadWords(ctx context.Context, addrs []uint32) ([]uint32, error) {
	return regs.Read(ctx, Device{s}, addrs)
}

// Device is a session as a regs.Device; the peer is always the session's.
type Device struct{ S Session }

func (d Device) RMEMRead(ctx context.Context, _ int, addr uint32) (uint32, error) {
	return d.S.RMEMRead(ctx, addr)
}

func (d Device) RMEMWrite(ctx context.Context, _ int, addr, data, mask uint32) error {
	return d.S.RMEMWrite(ctx, addr, data, mask)
}
