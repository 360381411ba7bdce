package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/openenoc/oetp/endpoint"
	"github.com/openenoc/oetp/memory"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// remoteBase is where the responder's memory starts; every engine
// operation addresses it.
const remoteBase = 0x1000_0000

// engineTimeout is the response timeout of every engine operation, so that
// a lost frame fails one operation instead of hanging the run.
const engineTimeout = time.Second

// Engine operations measured by the mem and veth scenarios.
const (
	opRMEMRead = "rmem-read"
	opDMAWrite = "dma-write"
	opDMARead  = "dma-read"
	opMcast    = "multicast-write"
)

// pair is two endpoints on two links of one medium: a initiates, b
// responds from its RAM. Peer entry 0 at each end names the other; its
// mode is switched with use before each kind of operation, since a peer
// has one mode.
type pair struct {
	a, b     *endpoint.Endpoint
	amac     wire.MAC
	bmac     wire.MAC
	ram      *memory.RAM
	src, dst []byte
	mode     string
	// written is the length of the prefix of the responder's memory that
	// DMA writes have overwritten with src; beyond it the memory holds
	// ramPattern.
	written int
	ctx     context.Context
}

// pairConfig is the configuration of a pair's endpoints: the default but
// for the timeouts, which bound the run.
var pairConfig = endpoint.Config{RMEMTimeout: engineTimeout, DMATimeout: engineTimeout}

// newPair starts an initiating endpoint on la and a responding one on lb
// with maxBlock bytes of memory to move. It takes ownership of both links:
// on failure they are closed.
func newPair(la, lb node.Medium, maxBlock int) (*pair, error) {
	fail := func(err error) (*pair, error) {
		la.Close()
		lb.Close()
		return nil, err
	}
	ram, err := pairRAM(maxBlock)
	if err != nil {
		return fail(err)
	}
	local, err := memory.NewRAM(remoteBase, 4096)
	if err != nil {
		return fail(err)
	}
	a, err := endpoint.New(la, local, pairConfig)
	if err != nil {
		return fail(fmt.Errorf("initiating endpoint: %w", err))
	}
	b, err := endpoint.New(lb, ram, pairConfig)
	if err != nil {
		a.Close()
		lb.Close()
		return nil, fmt.Errorf("responding endpoint: %w", err)
	}
	return newPairOf(a, b, la.Addr(), lb.Addr(), ram, maxBlock), nil
}

// pairRAM returns a pair's responder memory of maxBlock bytes, filled with
// ramPattern before the responder starts, so that its goroutines see it.
func pairRAM(maxBlock int) (*memory.RAM, error) {
	ram, err := memory.NewRAM(remoteBase, uint64(maxBlock))
	if err != nil {
		return nil, err
	}
	for i, b := 0, ram.Bytes(); i < len(b); i++ {
		b[i] = ramPattern(i)
	}
	return ram, nil
}

// newPairOf makes a pair of the initiator a (MAC amac) and the responder b
// (MAC bmac) serving ram (from pairRAM).
func newPairOf(a, b *endpoint.Endpoint, amac, bmac wire.MAC, ram *memory.RAM, maxBlock int) *pair {
	p := &pair{a: a, b: b, amac: amac, bmac: bmac, ram: ram, ctx: context.Background()}
	p.src = make([]byte, maxBlock)
	for i := range p.src {
		p.src[i] = byte(i*31 + 7)
	}
	p.dst = make([]byte, maxBlock)
	return p
}

// use configures both peer tables for op: RMEM at both ends for an RMEM
// read; a DMA write needs ModeDMARead at the initiator and ModeDMAWrite at
// the responder, a DMA read the reverse.
func (p *pair) use(op string) error {
	if p.mode == op {
		return nil
	}
	am, bm := endpoint.ModeRMEM, endpoint.ModeRMEM
	switch op {
	case opDMAWrite:
		am, bm = endpoint.ModeDMARead, endpoint.ModeDMAWrite
	case opDMARead:
		am, bm = endpoint.ModeDMAWrite, endpoint.ModeDMARead
	}
	if err := p.a.SetPeer(0, endpoint.Peer{MAC: p.bmac, Mode: am}); err != nil {
		return err
	}
	size := p.ram.Size()
	if err := p.b.SetPeer(0, endpoint.Peer{MAC: p.amac, Mode: bm, WindowBase: remoteBase, WindowSize: size}); err != nil {
		return err
	}
	p.mode = op
	return nil
}

// op returns the function that performs one operation of kind op on a
// block of n bytes (ignored for RMEM). It allocates nothing per call.
func (p *pair) op(op string, n int) func() error {
	switch op {
	case opRMEMRead:
		return func() error {
			_, err := p.a.RMEMRead(p.ctx, 0, remoteBase)
			return err
		}
	case opDMAWrite:
		src := p.src[:n]
		p.written = max(p.written, n) // from the first write on
		return func() error {
			_, err := p.a.DMAWrite(p.ctx, 0, remoteBase, src)
			return err
		}
	case opDMARead:
		dst := p.dst[:n]
		return func() error {
			_, err := p.a.DMARead(p.ctx, 0, remoteBase, dst)
			return err
		}
	}
	panic("bench: unknown engine operation " + op)
}

// ramPattern is the initial content of byte i of the responder's memory.
func ramPattern(i int) byte { return byte(i*17 + 3) }

// verify checks, through the engine alone, that the last DMA write of n
// bytes arrived intact (by reading them back) or that the last DMA read
// returned what the responder holds. Reading the responder's memory
// directly would race with its goroutines, which synchronise with the
// initiator only through the medium.
func (p *pair) verify(op string, n int) error {
	switch op {
	case opDMAWrite:
		if err := p.use(opDMARead); err != nil {
			return err
		}
		dst := p.dst[:n]
		clear(dst)
		if _, err := p.a.DMARead(p.ctx, 0, remoteBase, dst); err != nil {
			return fmt.Errorf("reading back a %s of %d bytes: %w", op, n, err)
		}
		for i := range n {
			if dst[i] != p.src[i] {
				return fmt.Errorf("%s of %d bytes: byte %d reads back as %#x, sent %#x", op, n, i, dst[i], p.src[i])
			}
		}
	case opDMARead:
		for i := range n {
			want := ramPattern(i)
			if i < p.written {
				want = p.src[i]
			}
			if p.dst[i] != want {
				return fmt.Errorf("%s of %d bytes: byte %d is %#x, the responder holds %#x", op, n, i, p.dst[i], want)
			}
		}
	}
	return nil
}

func (p *pair) close() {
	p.a.Close()
	p.b.Close()
}

// fragments returns the number of fragments of an n-byte block.
func fragments(n int) int64 {
	return int64((n + wire.MaxFragment - 1) / wire.MaxFragment)
}

// frameSizes returns the request↔response frame sizes of one full fragment
// or RMEM read, from the codec's own lengths.
func frameSizes(op string) (req, rsp int) {
	switch op {
	case opRMEMRead:
		return wire.FrameLen(wire.RMEMReadReq, 0), wire.FrameLen(wire.RMEMReadRsp, 0)
	case opDMAWrite:
		return wire.FrameLen(wire.DMAWriteReq, wire.MaxFragment), wire.FrameLen(wire.DMAWriteRsp, 0)
	case opDMARead:
		return wire.FrameLen(wire.DMAReadReq, wire.MaxFragment), wire.FrameLen(wire.DMAReadRsp, wire.MaxFragment)
	}
	panic("bench: unknown engine operation " + op)
}

// rawFrames returns the request and reply frames of the baseline for op,
// from near to far and back: real oETP encodings of the same lengths the
// engine sends, so the medium carries identical bytes counts.
func rawFrames(op string, near, far wire.MAC) (req, rsp []byte) {
	payload := make([]byte, wire.MaxFragment)
	switch op {
	case opRMEMRead:
		return wire.AppendRMEMReadReq(nil, far, near, 1, remoteBase), wire.AppendRMEMReadRsp(nil, near, far, 1, 0xdeadbeef)
	case opDMAWrite, opMcast:
		return wire.AppendDMAWriteReq(nil, far, near, 1, remoteBase, payload), wire.AppendDMAWriteRsp(nil, near, far, 1)
	case opDMARead:
		return wire.AppendDMAReadReq(nil, far, near, 1, remoteBase, wire.MaxFragment), wire.AppendDMAReadRsp(nil, near, far, 1, payload)
	}
	panic("bench: unknown engine operation " + op)
}

// frameLabel formats request↔response frame sizes.
func frameLabel(req, rsp int) string { return fmt.Sprintf("%d↔%d", req, rsp) }

// bytesPerOp is the payload one baseline exchange stands for: the 4-byte
// word of an RMEM read or a full 8160-byte fragment.
func bytesPerOp(op string) int64 {
	if op == opRMEMRead {
		return 4
	}
	return wire.MaxFragment
}

// ctxBackground is the context of every engine operation: operations are
// bounded by the engine's response timeouts, not by cancellation.
var ctxBackground = context.Background()
