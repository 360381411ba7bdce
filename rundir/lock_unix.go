//go:build unix

package rundir

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// TryLock takes the lock file at path, in a run-time directory made by
// Ensure, without waiting. It returns an error wrapping ErrBusy when
// another process holds it (ReadHolder says who).
//
// It only ever writes to a file it has just created (O_CREAT|O_EXCL,
// mode 0644, never through a symbolic link). A lock file no process holds
// (its holder was killed) is removed and made anew. An entry at path that
// is not a regular file, or whose owner is neither root nor this user,
// cannot be a lock of this user's processes: its name is removed (the
// file itself is not opened, followed or changed) and made anew, and
// replaced describes it for a warning.
func TryLock(path string) (l *FileLock, replaced string, err error) {
	for range 100 {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err == nil {
			f := os.NewFile(uintptr(fd), path)
			switch err := flockNB(f, path); {
			case errors.Is(err, ErrBusy):
				// Another process took it for stale between our create
				// and our flock: it will remove it; try again.
				f.Close()
				continue
			case err != nil:
				f.Close()
				return nil, replaced, err
			}
			if !samePath(f, path) {
				f.Close()
				continue
			}
			if _, err := f.WriteAt(record(), 0); err != nil {
				l := &FileLock{f: f, path: path}
				l.Release()
				return nil, replaced, fmt.Errorf("lock file %s: %w", path, err)
			}
			return &FileLock{f: f, path: path}, replaced, nil
		}
		if !errors.Is(err, unix.EEXIST) {
			return nil, replaced, &os.PathError{Op: "create", Path: path, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			continue // removed meanwhile
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || !trusted(st.Uid) {
			h := ReadHolder(path)
			what := "a file"
			if st.Mode&unix.S_IFMT == unix.S_IFLNK {
				what = "a symbolic link"
			} else if st.Mode&unix.S_IFMT != unix.S_IFREG {
				what = "a special file"
			}
			desc := fmt.Sprintf("%s owned by %s", what, owner(int(st.Uid)))
			if h.PID > 0 {
				desc += fmt.Sprintf(" naming process %d (%s)", h.PID, h.Command)
			}
			if err := unix.Unlink(path); err != nil && !errors.Is(err, unix.ENOENT) {
				return nil, replaced, fmt.Errorf("lock file %s is %s, which is not a lock of yours or root's, and removing it failed: %w; remove it (as root)", path, desc, err)
			}
			replaced = fmt.Sprintf("removed %s: %s, not a lock of yours or root's", path, desc)
			continue
		}
		if removeStale(path) {
			continue
		}
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		return nil, replaced, fmt.Errorf("lock file %s: %w", path, ErrBusy)
	}
	return nil, replaced, fmt.Errorf("lock file %s: it keeps changing; is another program removing it?", path)
}

// removeStale removes the regular lock file of this user or root at path
// if no process holds it, and reports whether it did.
func removeStale(path string) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || !trusted(st.Uid) {
		return false
	}
	if flockNB(f, path) != nil || !samePath(f, path) {
		return false
	}
	// Removed while locked, as Release does: a process that opened it
	// meanwhile finds it is not at path any more and tries again.
	return unix.Unlink(path) == nil
}

// RemoveStale removes the lock file at path if no process holds it and it
// is a regular file of this user or root; it reports whether it did.
func RemoveStale(path string) bool { return removeStale(path) }

func flockNB(f *os.File, path string) error {
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return ErrBusy
		}
		return fmt.Errorf("flock %s: %w", path, err)
	}
	return nil
}

// samePath reports whether the open file f is still the file at path.
func samePath(f *os.File, path string) bool {
	var held, now unix.Stat_t
	return unix.Fstat(int(f.Fd()), &held) == nil && unix.Lstat(path, &now) == nil && held.Dev == now.Dev && held.Ino == now.Ino
}

// ReadHolder reads the record of the lock file at path, without following
// a symbolic link. A holder that has just taken the lock may not have
// written it yet: it tries a few times.
func ReadHolder(path string) Holder {
	h := Holder{UID: -1}
	for range 5 {
		var st unix.Stat_t
		if unix.Lstat(path, &st) == nil {
			h.UID = int(st.Uid)
		}
		if fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			var fst unix.Stat_t
			if unix.Fstat(fd, &fst) == nil && fst.Mode&unix.S_IFMT == unix.S_IFREG {
				b := make([]byte, 512)
				n, _ := unix.Pread(fd, b, 0)
				h.PID, h.Command = parseRecord(b[:max(n, 0)])
			}
			unix.Close(fd)
		}
		if h.PID > 0 {
			return h
		}
		time.Sleep(5 * time.Millisecond)
	}
	return h
}

// release removes the lock file, then closes it, which releases the
// flock.
func release(f *os.File, path string) error {
	var err error
	if samePath(f, path) {
		err = os.Remove(path)
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
