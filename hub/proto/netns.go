//go:build unix

package proto

import (
	"os"
	"syscall"
)

// NetNS identifies the network namespace of this process: the inode of
// /proc/self/ns/net, 0 where unknown. Interface names are per namespace, so
// a client that finds a hub by its default socket routes an interface
// through it only when both are in the same namespace.
func NetNS() uint64 {
	fi, err := os.Stat("/proc/self/ns/net")
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
