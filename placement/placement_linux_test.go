//go:build linux

package placement

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func masks(t *testing.T) map[int]Set {
	t.Helper()
	names, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]Set{}
	for _, d := range names {
		tid, _ := strconv.Atoi(d.Name())
		var s Set
		if unix.SchedGetaffinity(tid, &s) == nil {
			out[tid] = s
		}
	}
	return out
}

// TestPin: Pin puts every thread (and threads created afterwards) on one
// CPU of the allowed set, keeps GOMAXPROCS, refuses a CPU outside the set,
// and Restore gives every thread the set back.
func TestPin(t *testing.T) {
	allowed, err := Allowed()
	if err != nil {
		t.Fatal(err)
	}
	if allowed.Count() < 2 {
		t.Skipf("the process may run on %d CPU", allowed.Count())
	}
	defer Restore(allowed)
	var cpus []int
	for c := 0; len(cpus) < 2; c++ {
		if allowed.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	var only Set
	only.Set(cpus[0])
	if err := Pin(cpus[1], only); err == nil {
		t.Fatalf("Pin(%d) with only CPU %d allowed: no error", cpus[1], cpus[0])
	}
	for tid, s := range masks(t) {
		if s != allowed {
			t.Fatalf("a refused Pin changed thread %d's affinity", tid)
		}
	}
	for _, cpu := range cpus {
		if err := Pin(cpu, allowed); err != nil {
			t.Fatal(err)
		}
		if c := Current(); c != cpu {
			t.Errorf("Pin(%d) returned on CPU %d", cpu, c)
		}
		// A thread created now inherits the placement.
		done := make(chan Set)
		go func() {
			runtime.LockOSThread() // a thread of its own, ended with the goroutine
			var s Set
			unix.SchedGetaffinity(0, &s)
			done <- s
		}()
		var one Set
		one.Set(cpu)
		if s := <-done; s != one {
			t.Errorf("after Pin(%d) a locked goroutine's thread may run on %d CPUs", cpu, s.Count())
		}
		for tid, s := range masks(t) {
			if s != one {
				t.Errorf("after Pin(%d) thread %d may run on %d CPUs", cpu, tid, s.Count())
			}
		}
	}
	if n := runtime.GOMAXPROCS(0); n != procs {
		t.Errorf("GOMAXPROCS %d after Pin, was %d", n, procs)
	}
	if err := Restore(allowed); err != nil {
		t.Fatal(err)
	}
	for tid, s := range masks(t) {
		if s != allowed {
			t.Errorf("after Restore thread %d may run on %d CPUs, want %d", tid, s.Count(), allowed.Count())
		}
	}
}
