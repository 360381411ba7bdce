package wire

import (
	"errors"
	"fmt"
	"strings"
)

// MAC is an Ethernet MAC address in wire octet order.
type MAC [6]byte

// Broadcast is the Ethernet broadcast address ff:ff:ff:ff:ff:ff.
var Broadcast = MAC{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// IsGroup reports whether the I/G bit (bit 0 of the first octet) is set. It
// is true for multicast and broadcast addresses; the specification selects
// reply behaviour by this bit alone.
func (m MAC) IsGroup() bool { return m[0]&0x01 != 0 }

// IsBroadcast reports whether m is ff:ff:ff:ff:ff:ff.
func (m MAC) IsBroadcast() bool { return m == Broadcast }

// IsZero reports whether m is 00:00:00:00:00:00. A zero multicast address
// disables group reception.
func (m MAC) IsZero() bool { return m == MAC{} }

// IsLocal reports whether the U/L bit (bit 1 of the first octet) is set.
func (m MAC) IsLocal() bool { return m[0]&0x02 != 0 }

// String formats m as six lowercase hex octets separated by colons.
func (m MAC) String() string {
	const hexd = "0123456789abcdef"
	var b [17]byte
	for i, o := range m {
		if i > 0 {
			b[i*3-1] = ':'
		}
		b[i*3] = hexd[o>>4]
		b[i*3+1] = hexd[o&0xf]
	}
	return string(b[:])
}

// MarshalText implements encoding.TextMarshaler.
func (m MAC) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *MAC) UnmarshalText(b []byte) error {
	v, err := ParseMAC(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// ErrMAC is wrapped by ParseMAC's errors.
var ErrMAC = errors.New("invalid MAC address")

// ParseMAC parses six hex octets of one or two digits separated by ':' or
// '-' (one kind per address: 02:0e:0c:00:00:01), or twelve hex digits with no
// separators. Surrounding white space is ignored.
func ParseMAC(s string) (MAC, error) {
	var m MAC
	t := strings.TrimSpace(s)
	var parts []string
	switch {
	case strings.Contains(t, ":") && !strings.Contains(t, "-"):
		parts = strings.Split(t, ":")
	case strings.Contains(t, "-") && !strings.Contains(t, ":"):
		parts = strings.Split(t, "-")
	case len(t) == 12:
		for i := 0; i < 12; i += 2 {
			parts = append(parts, t[i:i+2])
		}
	}
	if len(parts) != 6 {
		return m, fmt.Errorf("%w %q: want six hex octets such as 02:0e:0c:00:00:01", ErrMAC, s)
	}
	for i, p := range parts {
		if len(p) < 1 || len(p) > 2 {
			return m, fmt.Errorf("%w %q: octet %q is not one or two hex digits", ErrMAC, s, p)
		}
		var v byte
		for _, c := range []byte(p) {
			d, ok := unhex(c)
			if !ok {
				return m, fmt.Errorf("%w %q: octet %q is not hex", ErrMAC, s, p)
			}
			v = v<<4 | d
		}
		m[i] = v
	}
	return m, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
