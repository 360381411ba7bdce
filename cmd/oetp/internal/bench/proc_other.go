//go:build !linux

package bench

import (
	"errors"
	"io"
)

func procUnavailable(*Options) string { return vethUnavailable() }

func runProc(*Options) ([]Result, error) { return nil, nil }

// RawEchoFlag is the hidden flag of `oetp bench` that runs RawEcho.
const RawEchoFlag = "raw-echo"

// RawEcho needs AF_PACKET (Linux).
func RawEcho(ifname string, stdin io.Reader, ready io.Writer) error {
	return errors.New("the raw echo needs Linux (AF_PACKET)")
}

// FloorFlag is the hidden flag of `oetp bench` that runs FloorEcho.
const FloorFlag = "raw-echo-floor"

// FloorEcho needs AF_PACKET (Linux).
func FloorEcho(ifname, spec string, stdin io.Reader, ready io.Writer) error {
	return errors.New("the floor echo needs Linux (AF_PACKET)")
}

// WindowEchoFlag is the hidden flag of `oetp bench` that runs WindowEcho.
const WindowEchoFlag = "raw-window-echo"

// WindowEcho needs AF_PACKET (Linux).
func WindowEcho(ifname, floor string, stdin io.Reader, ready io.Writer) error {
	return errors.New("the windowed echo needs Linux (AF_PACKET)")
}
