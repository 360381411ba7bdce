// Package cli holds what the command oetp and its subpackages share: a
// usage error (exit status 2) and the translation of a node's configuration
// errors into usage errors that name the flags, the flag syntax of thread
// placement and busy polling, the interface lookup, byte counts and codes as
// people read them, and the build's version.
package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// UsageError marks bad usage or configuration: exit status 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError; the message should name the flag or
// argument and the fix.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }

// Err turns the errors of a node that the user fixes by changing a flag
// into usage errors (exit 2) naming it: a node's *node.ConfigError names
// its setting as the flag does, a role held by another process names that
// process, and a lock directory that may not be trusted says why.
func Err(err error) error {
	var ce *node.ConfigError
	if errors.As(err, &ce) {
		switch ce.Field {
		case "endpoint":
			return &UsageError{ce.Err}
		case "retry":
			return Usagef("--retries/--deadline%s", ce.Msg)
		}
		return &UsageError{fmt.Errorf("--%w", ce)}
	}
	var he *node.RoleHeldError
	var ue *node.UntrustedError
	if errors.As(err, &he) || errors.As(err, &ue) {
		return &UsageError{err}
	}
	return err
}

// Placement of the threads of serve and the one-shot commands
// (--placement, config key placement). A stop-and-wait exchange between
// two processes runs fastest with both on one CPU: each frame then wakes
// the other process on the CPU it was sent from, where a wake-up across
// CPUs costs tens of µs on a VM whose idle vCPU is halted. The kernel's
// scheduler does not keep them together on its own: it wakes a thread on
// its previous CPU when that CPU is idle.
//
//   - auto (the default): serve moves its threads to the CPU its requests
//     are received on (afpacket Config.FollowCPU: after two receive
//     batches in a row from one other CPU, at most every 10 ms, within the
//     CPUs it was given), and a one-shot rmem or dma command keeps all its
//     threads on the CPU it started on, so that over veth serve follows it
//     there. Only for an endpoint that waits in a blocking receive: not
//     with --busy-poll (a spinning loop must not share its peer's CPU),
//     not through a hub, never outside the process's affinity mask (taskset
//     still decides), and nothing on a process given one CPU. Not with the
//     reliable transport either (a serve with a reliable or auto peer, a
//     command with --transport reliable or auto): its window keeps both
//     sides busy at once, and on one CPU they would take turns.
//   - off: the threads are left to the kernel's scheduler, as before.
type Placement int

const (
	PlaceAuto Placement = iota
	PlaceOff
)

// ParsePlacement parses auto or off.
func ParsePlacement(s string) (Placement, error) {
	switch s {
	case "auto":
		return PlaceAuto, nil
	case "off":
		return PlaceOff, nil
	}
	return PlaceAuto, fmt.Errorf("%q: use auto or off", s)
}

func (p Placement) String() string {
	if p == PlaceOff {
		return "off"
	}
	return "auto"
}

// CheckBusyPoll validates a --busy-poll value. It goes with --pcap too: the
// capture keeps the link's receive loop and busy polling.
func CheckBusyPoll(d time.Duration) error {
	if d < 0 || d > node.MaxBusyPoll {
		return Usagef("--busy-poll %v: use 0 (off) through %v, such as 50us", d, node.MaxBusyPoll)
	}
	return nil
}

// CodeString names a CSR code with its number: "TIMEOUT (1)".
func CodeString(c wire.Code) string { return fmt.Sprintf("%s (%d)", c, uint8(c)) }

// FileWords is a file operation's error as "PATH: REASON" ("/x: no such
// file or directory"), without Go's name of the operation ("open /x: ...").
func FileWords(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}

// HumanBytes formats a byte count: "102400 bytes (100 KiB)".
func HumanBytes(n uint64) string {
	s := strconv.FormatUint(n, 10) + " bytes"
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		s += fmt.Sprintf(" (%d MiB)", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		s += fmt.Sprintf(" (%d KiB)", n>>10)
	}
	return s
}

// LookupIface finds the interface name given by flag (--iface), as a usage
// error in the user's words: "--iface eth9: no such network interface",
// not the Go library's "route ip+net: ...".
func LookupIface(flag, name string) (*net.Interface, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return nil, Usagef("%s %s: %v: list the interfaces with `ip link`", flag, name, err)
	}
	return ifi, nil
}

// OSError is the cause of a file operation's error without the file's
// name: "no space left on device" for a write to a temporary file whose
// name the user never gave.
func OSError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
