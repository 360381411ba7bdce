package node

import (
	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/link/mem"
	"github.com/openenoc/oetp/wire"
)

// ErrClosed is the error of a Medium's reads and writes once it is closed.
var ErrClosed = link.ErrClosed

// A Switch is an in-process Ethernet switch (package link/mem): a medium
// with no sockets and no privileges, for `oetp demo`, the bench and tests.
// Its ports are Mediums, which a node takes in LinkConfig.Link.
type Switch struct{ sw *mem.Switch }

// SwitchConfig sets up a Switch. The zero value is valid: 8192-byte frames,
// 256-frame receive queues, no loss.
type SwitchConfig struct {
	// QueueLen is each port's receive queue in frames; zero: 256. A frame
	// that finds it full is dropped (Link.KernelDrops counts it).
	QueueLen int
	// Loss is the probability that the switch loses a frame, drawn from a
	// random source seeded with Seed: the same seed and the same frames
	// lose the same frames.
	Loss float64
	Seed int64
}

// NewSwitch builds a switch with no port.
func NewSwitch(cfg SwitchConfig) (*Switch, error) {
	sw, err := mem.NewSwitch(mem.Config{QueueLen: cfg.QueueLen, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	if err := sw.SetLoss(cfg.Loss); err != nil {
		return nil, err
	}
	return &Switch{sw: sw}, nil
}

// Attach attaches a port with the unicast address mac. The port implements
// link.Looper and link.FillWriter, for a tool that moves raw frames.
func (s *Switch) Attach(mac wire.MAC) (Medium, error) {
	p, err := s.sw.Attach(mac)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// LoseNext makes the switch lose the next frame that from sends to to.
func (s *Switch) LoseNext(from, to wire.MAC) error {
	return s.sw.AddRule(mem.Rule{From: from, To: to, Action: mem.Drop, Count: 1})
}

// lossy returns l with the frames lose picks lost on their way out: not
// sent, yet reported written, as a wire loses them (LinkConfig.Lose).
func lossy(l link.Link, lose func(frame []byte) bool) link.Link {
	return link.Wrap(l, link.Hooks{Write: func(frames [][]byte, next func([][]byte) (int, error)) (int, error) {
		for i := range frames {
			if lose(frames[i]) {
				continue
			}
			if _, err := next(frames[i : i+1]); err != nil {
				return i, err
			}
		}
		return len(frames), nil
	}})
}
