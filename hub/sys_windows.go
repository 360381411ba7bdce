//go:build windows

package hub

import (
	"os"

	"golang.org/x/sys/windows"
)

// peekEOF: Windows has no cheap non-blocking peek on this socket; the hub
// notices a closed client at its next read instead.
func peekEOF(fd uintptr, buf []byte) bool { return false }

// lockExclusive takes the lock file without waiting (LockFileEx); it fails
// if another process holds it.
func lockExclusive(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
}
