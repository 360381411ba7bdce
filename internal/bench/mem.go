package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/openenoc/oetp/link"
	linkmem "github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/wire"
)

// MACs on the in-process switch: the engine pair and the baseline pair.
var (
	memMACA   = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x01, 0x01}
	memMACB   = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x01, 0x02}
	memMACRaw = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x01, 0x03}
	memMACEch = wire.MAC{0x02, 0x0e, 0x0c, 0x00, 0x01, 0x04}
)

// memEcho answers frames on a switch port with prepared replies chosen by
// the request's Cmd octet, until the port closes: the far side of the
// in-process baseline.
func memEcho(p *linkmem.Port, replies map[wire.Cmd][]byte, done chan<- error) {
	var table [256][]byte
	for c, f := range replies {
		table[c] = f
	}
	bufs := [][]byte{make([]byte, p.MaxFrame())}
	sizes := make([]int, 1)
	var werr error
	// ReadLoop, like the engine's receive loop: the port hands over its
	// queue slots instead of copying frames out.
	err := p.ReadLoop(bufs, sizes, func(n int) bool {
		if n == 1 && sizes[0] > wire.ParamOffset {
			if rsp := table[bufs[0][15]]; rsp != nil {
				if werr = p.Write(rsp); werr != nil {
					return false
				}
			}
		}
		return true
	})
	if errors.Is(err, link.ErrClosed) {
		err = nil
	}
	if werr != nil {
		err = werr
	}
	done <- err
}

// memRawStep is the baseline of op on the in-process switch: one goroutine
// writes the request frame to a port and reads the reply from it, another
// echoes, no protocol work.
func memRawStep(p *linkmem.Port, op string) *step {
	reqF, rspF := rawFrames(op, memMACRaw, memMACEch)
	s := &step{m: newMeter(true)}
	s.res = Result{Scenario: ScenarioMem, Name: "raw " + frameLabel(len(reqF), len(rspF)),
		Frames: frameLabel(len(reqF), len(rspF)), Baseline: true}
	bufs := [][]byte{make([]byte, p.MaxFrame())}
	sizes := make([]int, 1)
	// Reads with ReadLoop, as the engine does: no copy out of the queue.
	reply := func(n int) bool { return sizes[0] != len(rspF) }
	rt := func() error {
		if err := p.Write(reqF); err != nil {
			return err
		}
		return p.ReadLoop(bufs, sizes, reply)
	}
	warm := true
	s.round = func(d time.Duration, maxOps int64) error {
		if warm {
			warm = false
			if err := newMeter(false).run(warmTime, warmOps, 0, 0, rt); err != nil {
				return err
			}
		}
		return s.m.run(d, maxOps, 2, bytesPerOp(op), rt)
	}
	return s
}

// memEnv is the in-process switch with an engine pair and a baseline
// pair of ports.
type memEnv struct {
	p         *pair
	raw, echo *linkmem.Port
	done      chan error
}

// newMemEnv builds the in-process medium for blocks up to maxBlock bytes.
func newMemEnv(maxBlock int) (*memEnv, error) {
	sw, err := linkmem.NewSwitch(linkmem.Config{})
	if err != nil {
		return nil, err
	}
	ports := make([]*linkmem.Port, 4)
	for i, mac := range []wire.MAC{memMACA, memMACB, memMACRaw, memMACEch} {
		if ports[i], err = sw.Attach(mac); err != nil {
			for _, p := range ports[:i] {
				p.Close()
			}
			return nil, err
		}
	}
	m := &memEnv{raw: ports[2], echo: ports[3], done: make(chan error, 1)}
	if m.p, err = newPair(ports[0], ports[1], maxBlock); err != nil {
		m.raw.Close()
		m.echo.Close()
		return nil, err
	}
	replies := map[wire.Cmd][]byte{}
	for _, op := range []string{opRMEMRead, opDMAWrite, opDMARead} {
		req, rsp := rawFrames(op, memMACRaw, memMACEch)
		replies[wire.Cmd(req[15])] = rsp
	}
	go memEcho(m.echo, replies, m.done)
	return m, nil
}

func (m *memEnv) scenario() string { return ScenarioMem }

func (m *memEnv) bases(op string) []*step { return []*step{memRawStep(m.raw, op)} }

func (m *memEnv) engine(op string, n int) *step { return engineStep(ScenarioMem, m.p, op, n) }

func (m *memEnv) close() error {
	m.p.close()
	m.raw.Close()
	m.echo.Close()
	if err := <-m.done; err != nil {
		return fmt.Errorf("bench: in-process echo: %w", err)
	}
	return nil
}

// runMem runs the engine on the in-process switch: an RMEM read, then DMA
// writes and reads of every block size, each next to a raw ping-pong of the
// same frame sizes on the same switch.
func runMem(o *Options) ([]Result, error) {
	m, err := newMemEnv(o.maxBlock())
	if err != nil {
		return nil, err
	}
	return runEnv(o, m)
}
