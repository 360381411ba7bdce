//go:build unix

package role

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// tryLock opens (creating) the lock file and takes an exclusive flock on it
// without waiting. It returns errBusy when another open file holds it. A
// file that a releasing holder removed after this call opened it is not
// the lock any more: it tries again on the file now at path.
func tryLock(path string) (*Lock, error) { return lockFile(path, os.O_CREATE) }

// tryLockExisting is tryLock for a file that exists: it creates none.
func tryLockExisting(path string) (*Lock, error) { return lockFile(path, 0) }

func lockFile(path string, create int) (*Lock, error) {
	for {
		f, err := os.OpenFile(path, os.O_RDWR|create, 0o666)
		if err != nil {
			return nil, fmt.Errorf("role: lock file: %w; set %s to a writable directory", err, DirEnv)
		}
		fchmod(f)
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, errBusy
			}
			return nil, fmt.Errorf("role: flock %s: %w", path, err)
		}
		var held, now unix.Stat_t
		if unix.Fstat(int(f.Fd()), &held) == nil && unix.Stat(path, &now) == nil && held.Dev == now.Dev && held.Ino == now.Ino {
			return &Lock{f: f, path: path}, nil
		}
		f.Close() // removed or replaced by its last holder's Release
		if create == 0 {
			return nil, os.ErrNotExist
		}
	}
}

// fchmod makes a lock file that this process created usable by every user
// (the umask trims the mode), so that a user's command can take a role
// whose file root created.
func fchmod(f *os.File) {
	var st unix.Stat_t
	if unix.Fstat(int(f.Fd()), &st) == nil && int(st.Uid) == os.Getuid() && st.Mode&0o777 != 0o666 {
		f.Chmod(0o666)
	}
}

// Release gives the role up: it removes the lock file, then closes it,
// which releases the flock. Releasing twice does nothing; it is safe for
// concurrent use.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := os.Remove(l.path)
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// writable reports whether the process may create files in d.
func writable(d string) bool { return unix.Access(d, unix.W_OK|unix.X_OK) == nil }

// netns returns the inode number of the calling thread's network namespace,
// or "" where there is none to read.
func netns() string {
	var st unix.Stat_t
	for _, p := range []string{"/proc/thread-self/ns/net", "/proc/self/ns/net"} {
		if unix.Stat(p, &st) == nil {
			return strconv.FormatUint(uint64(st.Ino), 10)
		}
	}
	return ""
}
