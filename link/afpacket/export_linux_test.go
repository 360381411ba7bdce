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
