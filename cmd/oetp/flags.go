package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/openenoc/oetp/wire"
)

// parseUint parses a decimal number or a 0x-prefixed hex number of at most
// bits bits. A leading zero does not mean octal.
func parseUint(s string, bits int) (uint64, error) {
	t := strings.TrimSpace(s)
	base := 10
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		base, t = 16, t[2:]
	}
	v, err := strconv.ParseUint(t, base, bits)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("%q does not fit %d bits (largest %d = 0x%X)", s, bits, uint64(1)<<bits-1, uint64(1)<<bits-1)
		}
		return 0, fmt.Errorf("%q is not a number: use decimal (4096) or 0x hex (0x1000)", s)
	}
	return v, nil
}

// u32Value is a pflag.Value for a 32-bit number in decimal or 0x hex; hex
// selects how help shows its default.
type u32Value struct {
	v   uint32
	hex bool
}

func (u *u32Value) String() string {
	if u.hex {
		return fmt.Sprintf("0x%08X", u.v)
	}
	return strconv.FormatUint(uint64(u.v), 10)
}
func (u *u32Value) Type() string { return "uint32" }
func (u *u32Value) Set(s string) error {
	v, err := parseUint(s, 32)
	u.v = uint32(v)
	return err
}

// intValue is a pflag.Value for a non-negative int in decimal or 0x hex.
type intValue struct{ v int }

func (u *intValue) String() string { return strconv.Itoa(u.v) }
func (u *intValue) Type() string   { return "int" }
func (u *intValue) Set(s string) error {
	v, err := parseUint(s, 31)
	u.v = int(v)
	return err
}

// macValue is a pflag.Value for a MAC address.
type macValue struct{ m wire.MAC }

func (m *macValue) String() string {
	if m.m.IsZero() {
		return "" // no default shown in help
	}
	return m.m.String()
}
func (m *macValue) Type() string { return "MAC" }
func (m *macValue) Set(s string) error {
	v, err := wire.ParseMAC(s)
	m.m = v
	return err
}

// hexValue is a pflag.Value for bytes written in hex (see parseHex).
type hexValue struct{ b []byte }

func (h *hexValue) String() string { return hex.EncodeToString(h.b) }
func (h *hexValue) Type() string   { return "HEX" }
func (h *hexValue) Set(s string) error {
	b, err := parseHex(s)
	h.b = b
	return err
}

// parseHex decodes bytes written in hex. White space and colons separate
// groups, each group may carry a 0x prefix and must hold whole bytes (an
// even number of digits): "020e0c00000b", "02:0e:0c:00:00:0b",
// "0x020e 0x0c00", "88 B5 0E 10" are all accepted.
func parseHex(s string) ([]byte, error) {
	groups := strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == ':' })
	var out []byte
	for _, g := range groups {
		digits := g
		if len(digits) >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
			digits = digits[2:]
		}
		for _, r := range digits {
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return nil, fmt.Errorf("hex group %q contains %q, which is not a hex digit", g, r)
			}
		}
		if len(digits)%2 != 0 {
			return nil, fmt.Errorf("hex group %q has an odd number of digits: write whole bytes, e.g. 0e rather than e", g)
		}
		b, err := hex.DecodeString(digits)
		if err != nil {
			return nil, fmt.Errorf("hex group %q: %v", g, err)
		}
		out = append(out, b...)
	}
	return out, nil
}
