//go:build windows

package rundir

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// TryLock takes the lock file at path without waiting (LockFileEx); it
// returns an error wrapping ErrBusy when another process holds it. This
// system has no owners to check.
func TryLock(path string) (*FileLock, string, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, "", err
	}
	var ol windows.Overlapped
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol); err != nil {
		f.Close()
		return nil, "", fmt.Errorf("lock file %s: %w", path, ErrBusy)
	}
	f.Truncate(0)
	f.WriteAt(record(), 0)
	return &FileLock{f: f, path: path}, "", nil
}

// RemoveStale does nothing here.
func RemoveStale(string) bool { return false }

// ReadHolder reads the lock file's record.
func ReadHolder(path string) Holder {
	b, _ := os.ReadFile(path)
	pid, cmd := parseRecord(b)
	return Holder{PID: pid, Command: cmd, UID: -1}
}

// release closes the lock file, which releases the lock, then removes it.
func release(f *os.File, path string) error {
	err := f.Close()
	if rerr := os.Remove(path); err == nil && !errors.Is(rerr, os.ErrNotExist) {
		err = rerr
	}
	return err
}
