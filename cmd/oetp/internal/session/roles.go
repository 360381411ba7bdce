package session

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/openenoc/oetp/cmd/oetp/internal/cli"
	"github.com/openenoc/oetp/role"
	"github.com/openenoc/oetp/rundir"
	"github.com/openenoc/oetp/wire"
)

// AcquireRole takes role r of (iface, mac), waiting up to wait. A role
// held by another process is a usage error (exit 2) that names it.
func AcquireRole(iface string, mac wire.MAC, r role.Role, wait time.Duration) (*role.Lock, error) {
	l, err := role.Acquire(iface, mac, r, wait)
	var he *role.HeldError
	var ue *rundir.UntrustedError
	if errors.As(err, &he) || errors.As(err, &ue) {
		return nil, cli.Usagef("%v", err)
	}
	if err == nil && l.Replaced != "" {
		fmt.Fprintf(os.Stderr, "oetp: warning: %s\n", l.Replaced)
	}
	if err != nil {
		return nil, fmt.Errorf("taking the %s role of %s %v: %w", r, iface, mac, err)
	}
	return l, nil
}

// AcquireRoles takes role r of (iface, mac) for each distinct MAC of macs,
// in order, each waiting up to wait (one wait for the whole set, not per
// MAC). On an error it releases the roles it took.
func AcquireRoles(iface string, macs []wire.MAC, r role.Role, wait time.Duration) ([]*role.Lock, error) {
	var locks []*role.Lock
	seen := map[wire.MAC]bool{}
	deadline := time.Now().Add(wait)
	for _, m := range macs {
		if seen[m] {
			continue
		}
		seen[m] = true
		l, err := AcquireRole(iface, m, r, max(0, time.Until(deadline)))
		if err != nil {
			for _, l := range locks {
				l.Release()
			}
			return nil, err
		}
		locks = append(locks, l)
	}
	return locks, nil
}
