//go:build linux

package placement

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Set is a set of CPUs.
type Set = unix.CPUSet

// Allowed returns the CPUs the calling thread may run on: before any
// placement, the affinity mask the process was started with.
func Allowed() (Set, error) {
	var s Set
	if err := unix.SchedGetaffinity(0, &s); err != nil {
		return s, os.NewSyscallError("sched_getaffinity", err)
	}
	return s, nil
}

// Current returns the CPU the calling thread runs on (getcpu(2)), or -1.
func Current() int {
	var cpu, node uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), uintptr(unsafe.Pointer(&node)), 0); e != 0 {
		return -1
	}
	return int(cpu)
}

var freeze sync.Once

// Pin makes every thread of the process run on cpu only; the threads the
// process creates later inherit it. The calling thread is moved last, and
// is on cpu when Pin returns. cpu must be in allowed (the mask the process
// was given): Pin refuses any other, so placement never widens what the
// user allowed.
//
// Before the first placement it fixes GOMAXPROCS at its current value
// (runtime.GOMAXPROCS with the same number, which stops nothing): the Go
// runtime otherwise lowers GOMAXPROCS to the new mask's size within a
// second, and the process would lose the second P that a receive holding
// its P (afpacket Config.HoldP) needs.
//
// Pin reads /proc/self/task and allocates: it is for the rare moves, not
// for a per-frame path.
func Pin(cpu int, allowed Set) error {
	if cpu < 0 || !allowed.IsSet(cpu) {
		return fmt.Errorf("affinity: CPU %d is not among the %d CPUs this process may use", cpu, allowed.Count())
	}
	freeze.Do(func() { runtime.GOMAXPROCS(runtime.GOMAXPROCS(0)) })
	var one Set
	one.Set(cpu)
	return setAll(&one)
}

// Restore gives every thread of the process the CPUs in set again (the
// mask Allowed returned before any Pin).
func Restore(set Set) error { return setAll(&set) }

// setAll sets the affinity of every thread, the caller's last. A thread
// created while it runs, by a thread not yet moved, inherits the old mask:
// it looks again until a pass finds every thread set (a few passes at most).
func setAll(set *Set) error {
	self := unix.Gettid()
	for pass := 0; pass < 8; pass++ {
		d, err := os.Open("/proc/self/task")
		if err != nil {
			return err
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return err
		}
		changed := false
		for _, n := range names {
			tid, err := strconv.Atoi(n)
			if err != nil || tid == self {
				continue
			}
			var cur Set
			if unix.SchedGetaffinity(tid, &cur) == nil && cur == *set {
				continue
			}
			// A thread that has just exited is not an error.
			if err := unix.SchedSetaffinity(tid, set); err != nil && err != unix.ESRCH {
				return os.NewSyscallError("sched_setaffinity", err)
			}
			changed = true
		}
		if !changed {
			break
		}
	}
	if err := unix.SchedSetaffinity(0, set); err != nil {
		return os.NewSyscallError("sched_setaffinity", err)
	}
	return nil
}
