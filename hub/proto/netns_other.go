//go:build !unix

package proto

// NetNS identifies the network namespace of this process: 0, unknown, where
// there are no network namespaces.
func NetNS() uint64 { return 0 }
