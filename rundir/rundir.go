// Package rundir is where oetp keeps the files other processes find at run
// time: the hub's Unix socket and its lock, and the role locks of package
// role. It creates those directories so that no other user can plant or
// replace a file in them, and checks a socket before a client trusts it.
//
// The directory is SystemDir (/run/oetp, owned by root, mode 0755) for
// root, else the user's own: $XDG_RUNTIME_DIR/oetp, else
// $TMPDIR/oetp-UID, mode 0700. It is never made writable by anyone but its
// owner: a directory writable by others would let any local user put a
// socket there that answers for the hub, or a file where a lock is
// expected.
//
// A client trusts a hub socket as ssh and tmux trust theirs (CheckSocket):
// the socket and every directory above it are owned by root or by the
// client's own user, the socket's directory is writable by nobody else, and
// a directory above it that others may write has the sticky bit (as /tmp
// does), so no one else can rename or replace what lies below. A socket
// shared on purpose by another user is used only when the caller says so
// (TrustAnyOwnerEnv, the CLI's --hub-trust-any-owner).
package rundir

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// SystemDir is root's run-time directory: the system hub's socket and
// root's role locks.
const SystemDir = "/run/oetp"

// SocketName is the hub socket's file name in a run-time directory.
const SocketName = "hub.sock"

// TrustAnyOwnerEnv is the environment variable that, set to 1, makes the
// clients (CLI, Go, Python) use a hub socket whatever its owner and its
// directory's permissions. Whoever owns such a socket, or can write to its
// directory, can answer in the hub's place: read results, "ok" for writes
// that never happened, and every request's data.
const TrustAnyOwnerEnv = "OETP_HUB_TRUST_ANY_OWNER"

// TrustAnyOwner reports whether TrustAnyOwnerEnv is set to 1.
func TrustAnyOwner() bool { return os.Getenv(TrustAnyOwnerEnv) == "1" }

// UserDir is the calling user's run-time directory:
// $XDG_RUNTIME_DIR/oetp, else $TMPDIR/oetp-UID (os.TempDir).
func UserDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "oetp")
	}
	return filepath.Join(os.TempDir(), "oetp-"+strconv.Itoa(os.Geteuid()))
}

// Default is the calling process's run-time directory: SystemDir for root,
// else UserDir.
func Default() string {
	if os.Geteuid() == 0 {
		return SystemDir
	}
	return UserDir()
}

// Mode is the mode Ensure gives a directory it creates: 0755 for
// SystemDir (any user may reach the system hub's socket, whose own mode
// says who may connect), 0700 for any other.
func Mode(dir string) os.FileMode {
	if filepath.Clean(dir) == SystemDir {
		return 0o755
	}
	return 0o700
}

// UntrustedError is the refusal of a path that another user could have
// made or replaced.
type UntrustedError struct {
	// Path is the socket, or the lock or run-time directory, refused.
	Path string
	// Culprit is the file or directory that failed the check: Path or one
	// of its directories.
	Culprit string
	// UID is Culprit's owner; Mode its permissions.
	UID  int
	Mode os.FileMode
	// Why says what is wrong with Culprit, Fix what to do.
	Why, Fix string
}

func (e *UntrustedError) Error() string {
	s := fmt.Sprintf("%s is not safe to use: %s", e.Path, e.Why)
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}

// owner names a uid for a message: "uid 65534 (nobody)".
func owner(uid int) string { return "uid " + strconv.Itoa(uid) + userName(uid) }

// CheckPeer checks the credentials of the process serving the socket at
// path, as the kernel reports them to a connected client (SO_PEERCRED:
// the process that listened): it must run as root or as the client's own
// user.
func CheckPeer(path string, pid, uid int) error {
	if uid == 0 || uid == os.Geteuid() {
		return nil
	}
	return &UntrustedError{Path: path, Culprit: path, UID: uid,
		Why: fmt.Sprintf("the process serving it (pid %d) runs as %s, not as %s", pid, owner(uid), trustedOwners()),
		Fix: "stop that process if it is not a hub you meant to use; to use a socket shared on purpose, set " + TrustAnyOwnerEnv + "=1 (oetp: --hub-trust-any-owner)"}
}

// trustedOwners names the owners this process trusts, for a message.
func trustedOwners() string {
	if os.Geteuid() == 0 {
		return "root (you)"
	}
	return "you (" + owner(os.Geteuid()) + ") or root"
}
