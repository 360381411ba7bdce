// Package affinity places the threads of the whole process on one CPU, for
// the placement of oetp serve and the one-shot commands (cmd/oetp
// --placement) and of an AF_PACKET link that follows its traffic
// (afpacket Config.FollowCPU).
//
// A process with one endpoint has one thread that matters, the one that
// runs the receive loop, but which OS thread that is changes whenever the
// Go scheduler moves the goroutine (preemption, a wake-up), and the threads
// the runtime creates later inherit the affinity of the thread that creates
// them. Placing every thread of the process is what keeps the receive loop
// where it was put, without locking a goroutine to a thread (a locked
// goroutine pays a thread hand-off at every scheduling point).
package placement

import "errors"

// ErrUnsupported is returned on systems without thread affinity.
var ErrUnsupported = errors.New("affinity: thread placement needs Linux")

// Stay keeps every thread of the process on the CPU the caller runs on, if
// the process may use more than one. It is best effort: a process that
// cannot be placed runs as it would have.
func Stay() {
	allowed, err := Allowed()
	if err != nil || allowed.Count() < 2 {
		return
	}
	if cpu := Current(); cpu >= 0 {
		_ = Pin(cpu, allowed)
	}
}
