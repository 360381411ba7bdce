package placement

import (
	"sync/atomic"
	"time"
)

// FollowBatches is how many receive batches in a row must all have been
// received on the same other CPU before a Follower moves the process, and
// FollowDwell the least time between two moves: several clients on
// different CPUs, whose frames interleave, do not move the process at all,
// and clients taking turns move it at most every FollowDwell.
const (
	FollowBatches = 2
	FollowDwell   = 10 * time.Millisecond
)

// FollowSettle is how many receive batches after a move the process is
// placed once more: a thread whose creation was under way during the move
// may have inherited the old CPU (it was not yet in /proc/self/task).
const FollowSettle = 64

// Follower decides when a process that follows its traffic moves its
// threads, from the CPU each receive batch was received on. A link that can
// tell that CPU (afpacket Config.FollowCPU) owns one and calls Observe after
// each batch from its receive loop; it is not safe for concurrent use.
type Follower struct {
	allowed Set                              // the CPUs the process was given
	home    int                              // the CPU the process was placed on; -1: not yet
	cand    int                              // the other CPU the last batches came from
	streak  int                              // batches in a row from cand
	last    time.Time                        // the last move
	settle  int                              // batches left before the last move's second placement
	pin     func(cpu int, allowed Set) error // Pin; tests replace it

	moves atomic.Uint64
}

// NewFollower returns a Follower that moves the process within allowed
// (the mask Allowed returned) with pin; a nil pin is Pin.
func NewFollower(allowed Set, pin func(cpu int, allowed Set) error) *Follower {
	if pin == nil {
		pin = Pin
	}
	return &Follower{allowed: allowed, home: -1, cand: -1, pin: pin}
}

// Home returns the CPU the process was last moved to, or -1.
func (f *Follower) Home() int { return f.home }

// Moves returns how many times the process was moved.
func (f *Follower) Moves() uint64 { return f.moves.Load() }

// Observe runs after each receive batch. cpu is the one other CPU than
// Home the batch's frames were received on, or -1 when they were received
// on Home or on several CPUs. It moves the process when the last
// FollowBatches batches all came from one other CPU it may use, and
// reports whether it did (the caller then tells its probe the new Home).
func (f *Follower) Observe(cpu int) (moved bool) {
	if cpu < 0 || cpu == f.home || !f.allowed.IsSet(cpu) {
		// Received here, from several CPUs, or from a CPU the process
		// may not use.
		f.streak = 0
		if f.settle > 0 {
			if f.settle--; f.settle == 0 {
				f.pin(f.home, f.allowed)
			}
		}
		return false
	}
	if cpu != f.cand {
		f.cand, f.streak = cpu, 0
	}
	if f.streak++; f.streak < FollowBatches {
		return false
	}
	now := time.Now()
	if !f.last.IsZero() && now.Sub(f.last) < FollowDwell {
		return false
	}
	f.streak, f.last = 0, now
	if err := f.pin(cpu, f.allowed); err != nil {
		return false
	}
	f.moves.Add(1)
	f.settle = FollowSettle
	f.home = cpu
	return true
}
