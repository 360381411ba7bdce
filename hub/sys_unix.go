//go:build unix

package hub

import (
	"golang.org/x/sys/unix"
)

// peekEOF reports whether the socket fd has reached end of file: a
// non-blocking peek that reads nothing.
func peekEOF(fd uintptr, buf []byte) bool {
	n, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	return n == 0 && err == nil
}
