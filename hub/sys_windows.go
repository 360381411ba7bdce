//go:build windows

package hub

// peekEOF: Windows has no cheap non-blocking peek on this socket; the hub
// notices a closed client at its next read instead.
func peekEOF(fd uintptr, buf []byte) bool { return false }
