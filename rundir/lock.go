package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// ErrBusy is wrapped by TryLock's error when another process holds the
// lock.
var ErrBusy = errors.New("held by another process")

// Holder is what a lock file tells of the process that holds it.
type Holder struct {
	// PID is the holder's process ID; 0 when its record could not be read
	// (it may be starting or ending).
	PID int
	// Command is the holder's command line as it recorded it, or "".
	Command string
	// UID is the lock file's owner, the holder's user; -1 if unknown.
	UID int
}

// String describes the holder for a message: "process 123 (oetp serve
// ...) of uid 1000 (alice)".
func (h Holder) String() string {
	s := "another process"
	if h.PID > 0 {
		s = "process " + strconv.Itoa(h.PID)
		if h.Command != "" {
			s += " (" + h.Command + ")"
		}
	}
	if h.UID >= 0 && h.UID != os.Geteuid() {
		s += " of " + owner(h.UID)
	}
	return s
}

// FileLock is a held lock file: an flock(2) on a file this process
// created, holding its PID and command line. It dies with its process.
type FileLock struct {
	mu   sync.Mutex // guards f
	f    *os.File
	path string
}

// Release gives the lock up (see release for each system). Releasing twice
// does nothing; it is safe for concurrent use.
func (l *FileLock) Release() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := release(l.f, l.path)
	l.f = nil
	return err
}

// Path returns the lock file.
func (l *FileLock) Path() string { return l.path }

// record is what a holder writes into its lock file.
func record() []byte {
	return []byte(strconv.Itoa(os.Getpid()) + "\n" + commandLine() + "\n")
}

// commandLine is the process's command line, shortened for a message.
func commandLine() string {
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	s := strings.Join(args, " ")
	s = strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// parseRecord reads a lock file's record.
func parseRecord(b []byte) (int, string) {
	first, rest, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(first)
	if err != nil || pid <= 0 {
		return 0, ""
	}
	return pid, strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < ' ' {
			return ' '
		}
		return r
	}, rest))
}
