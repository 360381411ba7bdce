// Package role holds the cross-process roles of an oETP endpoint address:
// one MAC, one endpoint, also across processes.
//
// An endpoint address is an (interface, MAC) pair in one network namespace.
// It has two roles, held separately: the initiator role (the process that
// sends requests from the MAC and takes the replies addressed to it, such as
// `oetp rmem`) and the responder role (the process that answers requests to
// the MAC, such as `oetp serve`). One process of each may run at a time, so a
// one-shot `oetp rmem` beside an `oetp serve` on the same MAC works, while a
// second `serve` on that MAC (two answers to every request) or a second
// initiator (replies taken by the wrong process) is refused.
//
// A role is an flock(2) on a file in the lock directory (see Dir), so it dies
// with its process: a crash or a kill -9 never leaves an address locked. The
// holder writes its PID and command line into the file, so a refusal names
// the process that holds the role (HeldError). Release removes the file;
// the files of killed processes are removed by a later Acquire.
//
// The key includes the network namespace of the calling thread (its
// /proc/thread-self/ns/net inode): interface names are per namespace, so two
// containers' or test namespaces' "eth0" with the same MAC are different
// addresses and never contend.
package role

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openenoc/oetp/wire"
)

// Role is one of an endpoint address's two roles.
type Role uint8

// The two roles.
const (
	// Initiator is the role of a process that sends requests from the
	// address and matches the replies addressed to it.
	Initiator Role = 1
	// Responder is the role of a process that answers the requests
	// addressed to the address.
	Responder Role = 2
)

// String returns "initiator" or "responder".
func (r Role) String() string {
	switch r {
	case Initiator:
		return "initiator"
	case Responder:
		return "responder"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// DirEnv is the environment variable that, when set, names the lock
// directory instead of the defaults of Dir.
const DirEnv = "OETP_LOCK_DIR"

// SystemDir is the lock directory when it can be used (root, or a directory
// an administrator made writable).
const SystemDir = "/run/oetp"

// DirHelp describes the lock directory for a command's --help.
const DirHelp = `Roles are locks in ` + SystemDir + ` (created mode 1777 when possible), else in
$XDG_RUNTIME_DIR/oetp, else in $TMPDIR/oetp-UID; ` + DirEnv + ` overrides them.
A lock dies with its process: a crash never leaves an interface locked.`

// ErrHeld is matched (errors.Is) by the HeldError Acquire returns when
// another lock holds the role.
var ErrHeld = errors.New("role: held by another process")

// HeldError is the error Acquire returns when the role stays held by
// another lock until the wait ends.
type HeldError struct {
	Iface string
	MAC   wire.MAC
	Role  Role
	// PID is the holder's process ID; 0 when the holder's record could not
	// be read (it may be starting or ending).
	PID int
	// Command is the holder's command line as it recorded it, or "".
	Command string
	// Waited is how long Acquire waited for the role: 0 when it tried
	// once.
	Waited time.Duration
	// Path is the lock file.
	Path string
	// Fix, when set, replaces what Error tells the user to do (for a
	// program whose flags differ from the one-shot commands' --wait and
	// --mac).
	Fix string
}

// Error says who holds the role and what to do.
func (e *HeldError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
		if e.Command != "" {
			who += " (" + e.Command + ")"
		}
	}
	waited := "at once"
	if e.Waited > 0 {
		waited = "after waiting " + e.Waited.Round(time.Millisecond).String()
	}
	fix := "wait for it to finish (raise --wait), stop it, or use another --mac"
	if e.Role == Responder {
		fix = "one MAC has one responder: stop that process or serve on another --mac"
	}
	if e.Fix != "" {
		fix = e.Fix
	}
	return fmt.Sprintf("the %s role of %s %v is held by %s; refused %s: %s (lock %s)", e.Role, e.Iface, e.MAC, who, waited, fix, e.Path)
}

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// Lock is a held role. Release it (or let the process end) to let the next
// holder in.
type Lock struct {
	mu   sync.Mutex // guards f
	f    *os.File
	path string
	key  string
}

// Path returns the lock file.
func (l *Lock) Path() string { return l.path }

// Acquire takes role r of the endpoint address (iface, mac) in the calling
// thread's network namespace. If another lock holds it, Acquire tries again
// until wait has passed (0: one try) and then returns a *HeldError naming
// the holder. Other errors (no usable lock directory) say what failed.
//
// A lock is held by its open file, not by a goroutine or a thread: it
// conflicts with every other Lock, in this process too, and is released by
// Release or by the end of the process.
func Acquire(iface string, mac wire.MAC, r Role, wait time.Duration) (*Lock, error) {
	ctx, cancel := context.WithTimeout(context.Background(), max(wait, 0))
	defer cancel()
	return AcquireContext(ctx, iface, mac, r)
}

// AcquireContext is Acquire waiting until ctx is done instead of for a
// duration: a context without a deadline waits as long as it takes, a done
// one tries once. When ctx ends while the role is held it returns a
// *HeldError.
func AcquireContext(ctx context.Context, iface string, mac wire.MAC, r Role) (*Lock, error) {
	start := time.Now()
	// A context done at the start asks for one try; any other waits, and
	// its HeldError says how long, even when the first try alone outlasted
	// the wait (a loaded machine).
	waiting := ctx.Err() == nil
	if iface == "" || strings.ContainsAny(iface, "/\x00") {
		return nil, fmt.Errorf("role: interface name %q is not valid", iface)
	}
	if mac.IsZero() || mac.IsGroup() {
		return nil, fmt.Errorf("role: %v is not a unicast MAC: only an endpoint's own unicast address has roles", mac)
	}
	if r != Initiator && r != Responder {
		return nil, fmt.Errorf("role: %v is not Initiator or Responder", r)
	}
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("%s_%s_%s", iface, strings.ReplaceAll(mac.String(), ":", ""), r)
	if ns := netns(); ns != "" {
		name += "_net" + ns
	}
	path := filepath.Join(dir, name+".lock")
	delay := time.Millisecond
	for {
		l, err := tryLock(path)
		if err == nil {
			l.key = name
			if err := l.record(); err != nil {
				l.Release()
				return nil, err
			}
			sweep(dir, path)
			return l, nil
		}
		if !errors.Is(err, errBusy) {
			return nil, err
		}
		if ctx.Err() != nil {
			var waited time.Duration
			if waiting {
				waited = max(time.Since(start).Round(time.Millisecond), time.Millisecond)
			}
			pid, cmd := readHolder(path)
			return nil, &HeldError{Iface: iface, MAC: mac, Role: r, PID: pid, Command: cmd, Waited: waited, Path: path}
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, pollMax)
	}
}

// pollMax is the longest pause between two tries of a waiting Acquire: a
// try costs an open, an flock and a close, and a role handed from process
// to process (one-shot commands in a loop) should not idle long.
const pollMax = 10 * time.Millisecond

// lockName matches the names of role lock files, and no other file that
// may share the directory (the hub's socket and its own lock).
// It is compiled on first use, not at every start of every oetp command.
var lockName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[^/]+_[0-9a-f]{12}_(initiator|responder)(_net[0-9]+)?\.lock$`)
})

// sweepMax bounds the lock files one Acquire checks.
const sweepMax = 64

// sweep removes lock files in dir that no process holds: those of
// processes that were killed (a namespace's files outlive it, since its
// inode is in the name). Each is removed while locked, the way Release
// does it, so a process that opened it meanwhile notices and tries again.
func sweep(dir, own string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(sweepMax)
	d.Close()
	for _, n := range names {
		if p := filepath.Join(dir, n); p != own && lockName().MatchString(n) {
			if l, err := tryLockExisting(p); err == nil {
				l.Release()
			}
		}
	}
}

// errBusy is tryLock's error when another lock holds the file.
var errBusy = errors.New("busy")

// record writes the holder's PID and command line into the lock file.
func (l *Lock) record() error {
	rec := strconv.Itoa(os.Getpid()) + "\n" + commandLine() + "\n"
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("role: %s: %w", l.path, err)
	}
	if _, err := l.f.WriteAt([]byte(rec), 0); err != nil {
		return fmt.Errorf("role: %s: %w", l.path, err)
	}
	return nil
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

// readHolder reads the PID and command line a holder recorded. A holder
// that has just taken the lock may not have written them yet: it tries a
// few times.
func readHolder(path string) (int, string) {
	for range 5 {
		b, err := os.ReadFile(path)
		if err == nil {
			first, rest, _ := strings.Cut(string(b), "\n")
			if pid, err := strconv.Atoi(first); err == nil && pid > 0 {
				return pid, strings.TrimSpace(rest)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, ""
}

// Dir returns the lock directory, creating it if needed: $OETP_LOCK_DIR
// when set; else SystemDir when it exists or can be created and is
// writable; else $XDG_RUNTIME_DIR/oetp when XDG_RUNTIME_DIR is set; else
// os.TempDir()/oetp-UID. Processes that use different directories (root
// and a user with CAP_NET_RAW, say) do not see each other's roles.
func Dir() (string, error) { return dir(SystemDir) }

// dir is Dir with the system directory as a parameter, for tests.
func dir(system string) (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("role: %s=%s: %w", DirEnv, d, err)
		}
		return d, nil
	}
	if usable(system, os.ModeSticky|0o777) {
		return system, nil
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		if d := filepath.Join(x, "oetp"); usable(d, 0o700) {
			return d, nil
		}
	}
	d := filepath.Join(os.TempDir(), "oetp-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("role: no lock directory: %s, $XDG_RUNTIME_DIR/oetp and %s are not usable (%v); set %s to a writable directory", system, d, err, DirEnv)
	}
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("role: lock directory %s is not a directory; remove it or set %s", d, DirEnv)
	}
	return d, nil
}

// usable reports whether d exists or can be created (with mode perm, umask
// aside), and is a writable directory.
func usable(d string, perm os.FileMode) bool {
	if _, err := os.Stat(d); os.IsNotExist(err) {
		if err := os.Mkdir(d, perm); err == nil {
			os.Chmod(d, perm) // the umask trimmed the world-writable mode
		}
	}
	fi, err := os.Stat(d)
	return err == nil && fi.IsDir() && writable(d)
}
