//go:build !linux

package afpacket

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/openenoc/oetp/link"
	"github.com/openenoc/oetp/wire"
)

var (
	_ link.Link    = (*Link)(nil)
	_ link.Filter  = (*Link)(nil)
	_ link.Spinner = (*Link)(nil)
)

var errNoPacket = fmt.Errorf("afpacket: AF_PACKET sockets need Linux, not %s: %w", runtime.GOOS, errors.ErrUnsupported)

// Link is an AF_PACKET socket; on this system Open always fails.
type Link struct{}

// Open fails: AF_PACKET sockets need Linux.
func Open(ifname string, cfg Config) (*Link, error) { return nil, errNoPacket }

// ReadBatch fails: AF_PACKET sockets need Linux.
func (*Link) ReadBatch([][]byte, []int) (int, error) { return 0, errNoPacket }

// WriteBatch fails: AF_PACKET sockets need Linux.
func (*Link) WriteBatch([][]byte) (int, error) { return 0, errNoPacket }

// Write fails: AF_PACKET sockets need Linux.
func (*Link) Write([]byte) error { return errNoPacket }

// Addr returns the zero MAC.
func (*Link) Addr() wire.MAC { return wire.MAC{} }

// MaxFrame returns 0.
func (*Link) MaxFrame() int { return 0 }

// Close does nothing.
func (*Link) Close() error { return nil }

// JoinGroup fails: AF_PACKET sockets need Linux.
func (*Link) JoinGroup(wire.MAC) error { return errNoPacket }

// LeaveGroup fails: AF_PACKET sockets need Linux.
func (*Link) LeaveGroup(wire.MAC) error { return errNoPacket }

// SetPromiscuous fails: AF_PACKET sockets need Linux.
func (*Link) SetPromiscuous(bool) error { return errNoPacket }

// Stats returns zero counts.
func (*Link) Stats() Stats { return Stats{} }

// IfName returns "".
func (*Link) IfName() string { return "" }

// MTU returns 0.
func (*Link) MTU() int { return 0 }

// Mode returns IODefault.
func (*Link) Mode() IOMode { return IODefault }

// BusyPoll returns 0: AF_PACKET sockets need Linux.
func (*Link) BusyPoll() time.Duration { return 0 }

// FollowCPU returns false: AF_PACKET sockets need Linux.
func (*Link) FollowCPU() bool { return false }

// HoldP returns false: AF_PACKET sockets need Linux.
func (*Link) HoldP() bool { return false }

// HandOff returns an error: AF_PACKET is Linux only.
func (*Link) HandOff() ([]*os.File, error) { return nil, errNoPacket }
