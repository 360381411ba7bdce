package mem

import (
	"fmt"
	"slices"
	"time"

	"github.com/openenoc/oetp/wire"
)

// Action is what a fault Rule does to a frame it selects.
type Action int

// The fault actions. Every action but Drop delivers the frame, or a modified
// copy of it, to the receivers the unmodified frame would reach.
const (
	// Drop discards the frame; it counts in the sender's Stats.DropFault.
	Drop Action = iota + 1
	// Truncate delivers only the first Rule.Len bytes (a frame no longer
	// than Len is delivered whole).
	Truncate
	// Corrupt delivers the frame with the byte at Rule.Offset XORed with
	// Rule.XOR (a frame no longer than Offset is delivered unchanged).
	Corrupt
	// Duplicate delivers the frame twice, back to back.
	Duplicate
	// Delay makes the frame readable Rule.By later than it would have been;
	// frames written after it may overtake it.
	Delay
	// Reorder holds the frame and delivers it right after the next frame
	// that the same port sends to the same destination address and that is
	// delivered (not dropped or held). ClearRules releases held frames.
	Reorder
)

var actionNames = [...]string{"invalid", "Drop", "Truncate", "Corrupt", "Duplicate", "Delay", "Reorder"}

// String returns the action's name, such as "Drop".
func (a Action) String() string {
	if a < Drop || a > Reorder {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return actionNames[a]
}

// Rule selects frames at the switch ingress and applies an Action to them.
// A rule selects a frame when From, To and Match all accept it, it has Count
// left, and its Prob draw succeeds; otherwise the next rule is tried.
type Rule struct {
	// Match, if not nil, must return true for the rule to select the frame.
	// It sees the frame as written and must neither keep nor modify it, nor
	// call methods of the Switch.
	Match func(frame []byte) bool
	// From, if not zero, restricts the rule to frames written by the port
	// with this address.
	From wire.MAC
	// To, if not zero, restricts the rule to frames whose destination
	// address (bytes 0..5) is this address.
	To wire.MAC

	// Action is what the rule does; it must be set.
	Action Action
	// Len is the length Truncate cuts the frame to; it must be positive.
	Len int
	// Offset is the byte Corrupt changes; it must not be negative.
	Offset int
	// XOR is the mask Corrupt applies to the byte at Offset; it must not be
	// zero.
	XOR byte
	// By is how much later Delay makes the frame readable; it must be
	// positive.
	By time.Duration

	// Prob is the probability that a frame the rule matches is selected,
	// drawn from the switch's seeded random source; 0 means always.
	Prob float64
	// Count limits the rule to its first Count selected frames; 0 means no
	// limit.
	Count int
}

type ruleState struct {
	Rule
	left int // selections left; -1 means no limit
}

// heldFrame is a frame held by a Reorder rule.
type heldFrame struct {
	from *Port
	dst  wire.MAC
	b    []byte
}

// AddRule appends a fault rule. Rules are tried in the order added and the
// first that selects a frame acts on it. AddRule returns an error naming the
// Rule field that is out of range.
func (sw *Switch) AddRule(r Rule) error {
	if err := r.validate(); err != nil {
		return err
	}
	rs := &ruleState{Rule: r, left: -1}
	if r.Count > 0 {
		rs.left = r.Count
	}
	sw.fmu.Lock()
	defer sw.fmu.Unlock()
	sw.rules = append(sw.rules, rs)
	sw.updateFaulty()
	return nil
}

func (r *Rule) validate() error {
	switch r.Action {
	case Drop, Duplicate, Reorder:
	case Truncate:
		if r.Len <= 0 {
			return fmt.Errorf("mem: Rule.Len is %d: Truncate needs a positive length in bytes", r.Len)
		}
	case Corrupt:
		if r.Offset < 0 {
			return fmt.Errorf("mem: Rule.Offset is %d: Corrupt needs a byte offset of 0 or more", r.Offset)
		}
		if r.XOR == 0 {
			return fmt.Errorf("mem: Rule.XOR is 0: Corrupt needs a nonzero mask, such as 0x01")
		}
	case Delay:
		if r.By <= 0 {
			return fmt.Errorf("mem: Rule.By is %v: Delay needs a positive duration", r.By)
		}
	case 0:
		return fmt.Errorf("mem: Rule.Action is unset: choose Drop, Truncate, Corrupt, Duplicate, Delay or Reorder")
	default:
		return fmt.Errorf("mem: Rule.Action is %v: choose Drop, Truncate, Corrupt, Duplicate, Delay or Reorder", r.Action)
	}
	if !(r.Prob >= 0 && r.Prob <= 1) {
		return fmt.Errorf("mem: Rule.Prob is %v: want 0 (always) or a probability in (0, 1]", r.Prob)
	}
	if r.Count < 0 {
		return fmt.Errorf("mem: Rule.Count is %d: want 0 (no limit) or a positive number of frames", r.Count)
	}
	return nil
}

// ClearRules removes every rule added by AddRule and delivers the frames
// Reorder rules still hold. It does not change SetLoss.
func (sw *Switch) ClearRules() {
	sw.fmu.Lock()
	defer sw.fmu.Unlock()
	sw.rules = nil
	held := sw.held
	sw.held = nil
	for _, h := range held {
		sw.deliver(h.from, h.dst, h.b, 0)
	}
	sw.updateFaulty()
}

// SetLoss drops each frame written to the switch with probability p, drawn
// from the seeded random source, before any rule is tried; 0 turns loss off.
// Dropped frames count in the sender's Stats.DropFault.
func (sw *Switch) SetLoss(p float64) error {
	if !(p >= 0 && p <= 1) {
		return fmt.Errorf("mem: loss probability is %v: want 0 (no loss) through 1 (drop everything)", p)
	}
	sw.fmu.Lock()
	defer sw.fmu.Unlock()
	sw.loss = p
	sw.updateFaulty()
	return nil
}

// updateFaulty records whether Write must take the fault path. sw.fmu must
// be held.
func (sw *Switch) updateFaulty() {
	sw.faulty.Store(len(sw.rules) > 0 || sw.loss > 0 || len(sw.held) > 0)
}

// faultWrite is Write's path while faults are configured: it applies loss
// and the first selecting rule, delivers, and releases held frames.
func (sw *Switch) faultWrite(from *Port, frame []byte, at int64) {
	sw.fmu.Lock()
	defer sw.fmu.Unlock()
	dst := wire.MAC(frame[:6])
	if sw.loss > 0 && sw.rng.Float64() < sw.loss {
		from.st.dropFault.Add(1)
		return
	}
	r := sw.selectRule(from.mac, dst, frame)
	switch {
	case r == nil:
		sw.deliver(from, dst, frame, at)
	case r.Action == Drop:
		from.st.dropFault.Add(1)
		return
	case r.Action == Truncate:
		sw.deliver(from, dst, frame[:min(len(frame), r.Len)], at)
	case r.Action == Corrupt:
		b := frame
		if r.Offset < len(b) {
			b = slices.Clone(frame)
			b[r.Offset] ^= r.XOR
		}
		sw.deliver(from, dst, b, at)
	case r.Action == Duplicate:
		sw.deliver(from, dst, frame, at)
		sw.deliver(from, dst, frame, at)
	case r.Action == Delay:
		if at == 0 {
			at = sw.now()
		}
		at += int64(r.By)
		sw.deliver(from, dst, frame, at)
	case r.Action == Reorder:
		sw.held = append(sw.held, heldFrame{from: from, dst: dst, b: slices.Clone(frame)})
		sw.updateFaulty()
		return
	}
	sw.release(from, dst, at)
}

// selectRule returns the first rule that selects the frame, after counting
// the selection, or nil. sw.fmu must be held.
func (sw *Switch) selectRule(from, dst wire.MAC, frame []byte) *ruleState {
	for _, r := range sw.rules {
		if r.left == 0 ||
			(!r.From.IsZero() && r.From != from) ||
			(!r.To.IsZero() && r.To != dst) ||
			(r.Match != nil && !r.Match(frame)) ||
			(r.Prob > 0 && sw.rng.Float64() >= r.Prob) {
			continue
		}
		if r.left > 0 {
			r.left--
		}
		return r
	}
	return nil
}

// release delivers, in the order held, the frames held for the direction
// from -> dst, readable from at. sw.fmu must be held.
func (sw *Switch) release(from *Port, dst wire.MAC, at int64) {
	if len(sw.held) == 0 {
		return
	}
	kept := sw.held[:0]
	for _, h := range sw.held {
		if h.from == from && h.dst == dst {
			sw.deliver(h.from, h.dst, h.b, at)
		} else {
			kept = append(kept, h)
		}
	}
	clear(sw.held[len(kept):])
	sw.held = kept
	sw.updateFaulty()
}
