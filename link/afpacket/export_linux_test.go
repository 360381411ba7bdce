//go:build linux

package afpacket

// SetForceOutgoingFilter makes Open use the BPF filter instead of
// PACKET_IGNORE_OUTGOING, as on kernels before 4.20, and returns a function
// that restores the default.
func SetForceOutgoingFilter() (restore func()) {
	forceOutgoingFilter = true
	return func() { forceOutgoingFilter = false }
}
