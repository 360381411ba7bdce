//go:build linux

package bench

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// threadCPUs returns the affinity of every thread of the process.
func threadCPUs(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]unix.CPUSet{}
	for _, d := range tids {
		var tid int
		for _, c := range d.Name() {
			tid = tid*10 + int(c-'0')
		}
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) == nil {
			out[tid] = set
		}
	}
	return out
}

// TestPinProcessRestores: pinProcess moves every thread to one CPU with
// GOMAXPROCS 1, and its restore gives every thread the CPUs the process
// started with and GOMAXPROCS its value, even when
// called from a thread that is itself still pinned; a thread locked with
// lockThread(-1) from a pinned thread runs on those CPUs too.
func TestPinProcessRestores(t *testing.T) {
	if startCPUs.Count() < 2 {
		t.Skipf("the process may run on %d CPU: pinning changes nothing", startCPUs.Count())
	}
	// As Run does around every pinProcess: an earlier Run's release gave
	// the runtime its automatic GOMAXPROCS updates back (Go 1.25+), and
	// one of those landing between this test's reading of GOMAXPROCS and
	// pinProcess's own call would make restore keep the runtime's value
	// (seen once in a loaded full -race run: "restored: GOMAXPROCS 1,
	// want 2").
	defer holdGOMAXPROCS()()
	cpu := lastCPU()
	var one unix.CPUSet
	one.Set(cpu)
	procs := runtime.GOMAXPROCS(0)
	restore, err := pinProcess(cpu)
	if err != nil {
		t.Fatal(err)
	}
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Errorf("pinned: GOMAXPROCS %d, want 1", n)
	}
	for tid, set := range threadCPUs(t) {
		if set != one {
			t.Errorf("pinned: thread %d may run on %d CPUs, want only CPU %d", tid, set.Count(), cpu)
		}
	}
	// A goroutine on a pinned thread starts a free one and restores.
	done := make(chan unix.CPUSet)
	go func() {
		runtime.LockOSThread() // a pinned thread, never unlocked: it exits with the goroutine
		go func() {
			if err := lockThread(-1); err != nil {
				t.Error(err)
			}
			var set unix.CPUSet
			unix.SchedGetaffinity(0, &set)
			done <- set
		}()
		restore()
		done <- <-done
	}()
	if set := <-done; set != startCPUs {
		t.Errorf("lockThread(-1) from a pinned thread: %d CPUs, want the process's %d", set.Count(), startCPUs.Count())
	}
	if n := runtime.GOMAXPROCS(0); n != procs {
		t.Errorf("restored: GOMAXPROCS %d, want %d", n, procs)
	}
	for tid, set := range threadCPUs(t) {
		if set != startCPUs {
			t.Errorf("restored: thread %d may run on %d CPUs, want the process's %d", tid, set.Count(), startCPUs.Count())
		}
	}
}
