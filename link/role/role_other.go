//go:build !unix

package role

import "errors"

// tryLock fails: there is no flock(2) here.
func tryLock(path string) (*Lock, error) {
	return nil, errors.New("role: cross-process roles need flock(2), which this system lacks")
}

// tryLockExisting fails like tryLock.
func tryLockExisting(path string) (*Lock, error) { return tryLock(path) }

// Release does nothing: no lock is ever held here.
func (l *Lock) Release() error { return nil }

func writable(string) bool { return false }

func netns() string { return "" }
