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
// the process and the user that hold the role (HeldError). Release removes
// the file; the files of killed processes are removed by a later Acquire.
// The lock directory is one no other user can write (package rundir), and
// a lock file is only ever written by the process that created it, never
// through a symbolic link (rundir.TryLock).
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
	"strings"
	"sync"
	"time"

	"github.com/openenoc/oetp/rundir"
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
	if int(r) < len(roleNames) && roleNames[r] != "" {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

var roleNames = [...]string{Initiator: "initiator", Responder: "responder"}

// DirEnv is the environment variable that, when set, names the lock
// directory instead of the defaults of Dir.
const DirEnv = "OETP_LOCK_DIR"

// SystemDir is root's lock directory.
const SystemDir = rundir.SystemDir

// DirHelp describes the lock directory for a command's --help.
const DirHelp = `Roles are locks in ` + SystemDir + ` for root (mode 0755), else in
$XDG_RUNTIME_DIR/oetp, else in $TMPDIR/oetp-UID (mode 0700); ` + DirEnv + ` overrides
them. No other user can write there. A lock dies with its process: a crash
never leaves an interface locked.`

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
	// UID is the holder's user (its lock file's owner), -1 if unknown.
	UID int
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
	who := rundir.Holder{PID: e.PID, Command: e.Command, UID: e.UID}.String()
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
	fl  *rundir.FileLock
	key string
	// Replaced says what Acquire removed from the lock file's place: an
	// entry that was not a lock of this user's or root's (another user's
	// file, a symbolic link), "" when none. Print it as a warning.
	Replaced string
}

// Path returns the lock file.
func (l *Lock) Path() string { return l.fl.Path() }

// Release gives the role up: it removes the lock file, then closes it,
// which releases the flock. Releasing twice does nothing; it is safe for
// concurrent use.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	return l.fl.Release()
}

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
	var replaced string
	for {
		fl, rep, err := rundir.TryLock(path)
		if rep != "" {
			replaced = rep
		}
		if err == nil {
			sweep(dir, path)
			return &Lock{fl: fl, key: name, Replaced: replaced}, nil
		}
		if !errors.Is(err, rundir.ErrBusy) {
			return nil, fmt.Errorf("role lock: %w; set %s to a directory of yours", err, DirEnv)
		}
		if ctx.Err() != nil {
			var waited time.Duration
			if waiting {
				waited = max(time.Since(start).Round(time.Millisecond), time.Millisecond)
			}
			h := rundir.ReadHolder(path)
			return nil, &HeldError{Iface: iface, MAC: mac, Role: r, PID: h.PID, Command: h.Command, UID: h.UID, Waited: waited, Path: path}
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
			rundir.RemoveStale(p)
		}
	}
}

// Dir returns the lock directory, made by rundir.Ensure (created when
// missing, refused when another user could write to it): $OETP_LOCK_DIR
// when set; else SystemDir for root; else $XDG_RUNTIME_DIR/oetp when
// XDG_RUNTIME_DIR is set; else os.TempDir()/oetp-UID. Processes that use
// different directories (root and a user with CAP_NET_RAW, say) do not see
// each other's roles.
func Dir() (string, error) {
	d := os.Getenv(DirEnv)
	what := DirEnv + "=" + d
	if d == "" {
		d = rundir.Default()
		what = d
	}
	if err := rundir.Ensure(d); err != nil {
		return "", fmt.Errorf("the role lock directory %s: %w (or set %s to a directory of yours)", what, err, DirEnv)
	}
	return d, nil
}
