package proto

import (
	"os"
	"path/filepath"

	"github.com/openenoc/oetp/rundir"
)

// DefaultSocket is the socket path when none is configured:
// /run/oetp/hub.sock for root, else $XDG_RUNTIME_DIR/oetp/hub.sock, else
// $TMPDIR/oetp-UID/hub.sock (package rundir).
func DefaultSocket() string { return filepath.Join(rundir.Default(), rundir.SocketName) }

// SystemSocket is the system-wide default socket path.
const SystemSocket = rundir.SystemDir + "/" + rundir.SocketName

// UserSocket is the per-user socket path.
func UserSocket() string { return filepath.Join(rundir.UserDir(), rundir.SocketName) }

// ClientSocket is the socket a client uses when given none: $OETP_HUB if
// set, else SystemSocket if something is there, else UserSocket(). The
// client checks the socket it picks (rundir.CheckSocket) before it
// connects.
func ClientSocket() string {
	if p := os.Getenv("OETP_HUB"); p != "" {
		return p
	}
	if _, err := os.Lstat(SystemSocket); err == nil {
		return SystemSocket
	}
	return UserSocket()
}
