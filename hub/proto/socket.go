package proto

import (
	"fmt"
	"os"
	"path/filepath"
)

// DefaultSocket is the socket path when none is configured:
// /run/oetp/hub.sock for root, else $XDG_RUNTIME_DIR/oetp/hub.sock, else
// /tmp/oetp-UID/hub.sock.
func DefaultSocket() string {
	if os.Geteuid() == 0 {
		return SystemSocket
	}
	return UserSocket()
}

// SystemSocket is the system-wide default socket path.
const SystemSocket = "/run/oetp/hub.sock"

// UserSocket is the per-user socket path.
func UserSocket() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "oetp", "hub.sock")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("oetp-%d", os.Geteuid()), "hub.sock")
}

// ClientSocket is the socket a client uses when given none: $OETP_HUB if
// set, else SystemSocket if it exists, else UserSocket().
func ClientSocket() string {
	if p := os.Getenv("OETP_HUB"); p != "" {
		return p
	}
	if _, err := os.Stat(SystemSocket); err == nil {
		return SystemSocket
	}
	return UserSocket()
}
