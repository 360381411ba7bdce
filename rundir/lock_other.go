//go:build !unix && !windows

package rundir

import (
	"errors"
	"os"
)

// TryLock fails: there is no flock(2) here.
func TryLock(path string) (*FileLock, string, error) {
	return nil, "", errors.New("cross-process locks need flock(2), which this system lacks")
}

// RemoveStale does nothing here.
func RemoveStale(string) bool { return false }

// ReadHolder knows nothing here.
func ReadHolder(string) Holder { return Holder{UID: -1} }

// release is never reached: no lock is ever held here.
func release(f *os.File, path string) error { return f.Close() }
