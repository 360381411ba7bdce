package main

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"

	"github.com/openenoc/oetp/cmd/oetp/internal/frames"
	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/node"
	"github.com/openenoc/oetp/wire"
)

// The flag types of every command. Every address, size and length flag
// and configuration value is parsed by internal/num, the one number syntax
// of oetp: decimal, 0x hex, and K/M/G or KiB/MiB/GiB suffixes (powers of
// two). pflag names the flag and the value in the error; num adds the
// reason and an example.

// u32Flag is a pflag.Value for a 32-bit number (an address, a length, a
// data word). hex selects how help shows a non-zero default.
type u32Flag struct {
	v   uint32
	hex bool
}

func (u *u32Flag) String() string {
	switch {
	case u.v == 0:
		return "0" // pflag shows no default for a zero value
	case u.hex:
		return fmt.Sprintf("0x%08x", u.v)
	}
	return strconv.FormatUint(uint64(u.v), 10)
}
func (u *u32Flag) Type() string { return "uint32" }
func (u *u32Flag) Set(s string) error {
	v, err := num.Uint32(s)
	u.v = v
	return err
}

// intFlag is a pflag.Value for a non-negative int of at most 2^31-1 (a
// frame size, a byte count, a number of contexts), in the num syntax.
// set records that the flag was given, so that an explicit 0 can be told
// from the default.
type intFlag struct {
	v   int
	set bool
}

func (u *intFlag) String() string { return strconv.Itoa(u.v) }
func (u *intFlag) Type() string   { return "int" }
func (u *intFlag) Set(s string) error {
	v, err := num.ParseMax(s, math.MaxInt32)
	u.v, u.set = int(v), true
	return err
}

// macFlag is a pflag.Value for a MAC address; the zero MAC means not given
// and shows no default in the help.
type macFlag struct{ m wire.MAC }

func (m *macFlag) String() string {
	if m.m.IsZero() {
		return ""
	}
	return m.m.String()
}
func (m *macFlag) Type() string { return "MAC" }
func (m *macFlag) Set(s string) error {
	v, err := wire.ParseMAC(s)
	m.m = v
	return err
}

// formatFlag is a pflag.Value for a capture file format: pcapng (the
// default) or pcap.
type formatFlag struct{ f node.CaptureFormat }

func (f *formatFlag) String() string { return f.f.String() }
func (f *formatFlag) Type() string   { return "FORMAT" }
func (f *formatFlag) Set(s string) error {
	v, err := node.ParseCaptureFormat(s)
	f.f = v
	return err
}

// pcapFormatUsage is the help of --pcap-format.
const pcapFormatUsage = "file format of --pcap: pcapng, or pcap for classic libpcap files (microsecond timestamps) for older tools"

// hexValue is a pflag.Value for bytes written in hex (see parseHex).
type hexValue struct{ b []byte }

func (h *hexValue) String() string { return hex.EncodeToString(h.b) }
func (h *hexValue) Type() string   { return "HEX" }
func (h *hexValue) Set(s string) error {
	b, err := frames.ParseHex(s)
	h.b = b
	return err
}
