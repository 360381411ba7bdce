//go:build !linux

package node

import "runtime"

// A Tap reads the oETP frames crossing an interface: Linux only (an
// AF_PACKET socket).
type Tap struct{}

var errTapLinux = configErr("iface", ": a tap needs Linux (AF_PACKET); this is %s", runtime.GOOS)

// OpenTap needs Linux.
func OpenTap(cfg TapConfig) (*Tap, error) { return nil, errTapLinux }

// Read, Drops and Close of a tap that cannot be opened.
func (t *Tap) Read() ([]byte, TapInfo, error) { return nil, TapInfo{}, errTapLinux }
func (t *Tap) Drops() (uint64, error)         { return 0, errTapLinux }
func (t *Tap) Close() error                   { return nil }
