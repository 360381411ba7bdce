//go:build linux

package afpacket

import "time"

// SetForceOutgoingFilter makes Open use the BPF filter instead of
// PACKET_IGNORE_OUTGOING, as on kernels before 4.20, and returns a function
// that restores the default.
func SetForceOutgoingFilter() (restore func()) {
	forceOutgoingFilter = true
	return func() { forceOutgoingFilter = false }
}

// SetBlockTimeout sets the timeout of the blocking system calls of links
// opened from now on, and returns a function that restores it.
func SetBlockTimeout(d time.Duration) (restore func()) {
	old := blockTimeout
	blockTimeout = d
	return func() { blockTimeout = old }
}

// HeldPs returns the number of receives of the process holding their P
// (Config.HoldP).
func HeldPs() int { return int(heldPs.Load()) }

// SendWaits returns the number of sends that found the socket's send
// buffer full and waited for room as a blocking system call.
func (l *Link) SendWaits() uint64 { return l.sendWaits.Load() }

// ProbeSeen returns the CPU probe's entries read so far (Config.FollowCPU):
// frames received on another CPU than the one the process was placed on.
func (l *Link) ProbeSeen() uint64 {
	if l.follow == nil {
		return 0
	}
	return l.follow.seen.Load()
}
