package placement

import (
	"slices"
	"testing"
	"time"
)

// fakeFollower is a Follower within the CPUs allowed whose pin records the
// moves instead of moving the process.
func fakeFollower(t *testing.T, allowed ...int) (*Follower, *[]int) {
	var set Set
	for _, c := range allowed {
		set.Set(c)
	}
	moves := new([]int)
	f := NewFollower(set, func(cpu int, allowed Set) error {
		if !allowed.IsSet(cpu) {
			t.Fatalf("pin to CPU %d, outside the allowed CPUs", cpu)
		}
		*moves = append(*moves, cpu)
		return nil
	})
	return f, moves
}

// TestFollowerRules: the process moves after two batches in a row from one
// other CPU it may use, never to a CPU outside its mask, not for batches
// from several CPUs or taking turns, and not again within FollowDwell.
func TestFollowerRules(t *testing.T) {
	if _, err := Allowed(); err == ErrUnsupported {
		t.Skip(err)
	}
	f, moves := fakeFollower(t, 0, 1, 2)
	want := func(step string, w ...int) {
		t.Helper()
		if !slices.Equal(*moves, w) {
			t.Fatalf("%s: moves %v, want %v", step, *moves, w)
		}
	}
	f.Observe(1)
	want("one batch from CPU 1")
	f.Observe(2)
	want("then one from CPU 2")
	f.Observe(-1)
	want("a batch from CPUs 1 and 2")
	f.Observe(1)
	f.Observe(-1)
	want("CPU 1, then a batch received on the CPU the process runs on")
	f.Observe(1)
	if !f.Observe(1) {
		t.Fatal("Observe reported no move after two batches from CPU 1")
	}
	want("two batches from CPU 1", 1)
	if f.Home() != 1 || f.Moves() != 1 {
		t.Fatalf("home %d, moves %d after the move, want 1 and 1", f.Home(), f.Moves())
	}
	for range FollowSettle - 1 {
		f.Observe(-1)
	}
	want("batches received on CPU 1 after the move", 1)
	f.Observe(1)
	want("FollowSettle batches after the move: placed once more", 1, 1)
	f.last = time.Now()
	f.Observe(2)
	f.Observe(2)
	want("two batches from CPU 2 within FollowDwell of the move", 1, 1)
	f.last = time.Now().Add(-FollowDwell)
	f.Observe(2)
	want("a third batch from CPU 2, FollowDwell after the move", 1, 1, 2)
	f.last = time.Now().Add(-FollowDwell)
	f.Observe(5)
	f.Observe(5)
	f.Observe(5)
	want("batches from CPU 5, which the process may not use", 1, 1, 2)
}
