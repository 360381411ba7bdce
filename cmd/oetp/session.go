package main

import (
	"context"
	"errors"

	"github.com/openenoc/oetp/cmd/oetp/internal/dmafile"
	"github.com/openenoc/oetp/cmd/oetp/internal/regs"
	"github.com/openenoc/oetp/endpoint"
)

// session is the route of one initiator command (rmem, dma, regs) to its
// device: the command's own endpoint (localSession), or a running hub
// (hubSession, hubroute.go). A command opens one and keeps it: it never
// switches route part way.
type session interface {
	rmemRead(ctx context.Context, addr uint32) (uint32, error)
	rmemWrite(ctx context.Context, addr, data, mask uint32) error
	// dmaWrite writes the input to addr, dmaRead n bytes at addr into the
	// output.
	dmaWrite(ctx context.Context, addr uint32, in *dmafile.Input) (endpoint.Transfer, error)
	dmaRead(ctx context.Context, addr, n uint32, dst *dmafile.Output) (endpoint.Transfer, error)
	// readWords reads the words at addrs in order (regs dump): one RMEM
	// read after the other, or batches through a hub. It returns the words
	// read before any failure.
	readWords(ctx context.Context, addrs []uint32) ([]uint32, error)
	// addFigures adds what the route knows of the link to a result: the
	// retransmissions of a success, the link's figures after a failure.
	addFigures(r *opResult)
	close() error
}

// The route a result reports ("via").
const (
	viaDirect = "direct"
	viaHub    = "hub"
)

func (s *localSession) rmemRead(ctx context.Context, addr uint32) (uint32, error) {
	return s.ep.RMEMRead(ctx, 0, addr)
}

func (s *localSession) rmemWrite(ctx context.Context, addr, data, mask uint32) error {
	return s.ep.RMEMWrite(ctx, 0, addr, data, mask)
}

func (s *localSession) dmaWrite(ctx context.Context, addr uint32, in *dmafile.Input) (endpoint.Transfer, error) {
	return dmafile.Write(ctx, s.ep, addr, in)
}

func (s *localSession) dmaRead(ctx context.Context, addr, n uint32, dst *dmafile.Output) (endpoint.Transfer, error) {
	return s.ep.DMAReadInto(ctx, 0, addr, dst.Space(), 0, n)
}

func (s *localSession) addFigures(r *opResult) {
	ps := s.ep.PeerStats(0)
	if r.err == nil {
		r.Retries = int(ps.Retries)
		return
	}
	if !errors.Is(r.err, endpoint.ErrInvalid) {
		r.Link = newLinkResult(ps)
	}
	r.rtoNote = s.transportNote(r)
}

func (s *localSession) readWords(ctx context.Context, addrs []uint32) ([]uint32, error) {
	return regs.Read(ctx, sessionDevice{s}, addrs)
}
