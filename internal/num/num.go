// Package num is the one number syntax of oetp: every address, size and
// length on the command line and in configuration files is parsed here.
//
// A number is decimal (4096) or 0x-prefixed hexadecimal (0x1000; a leading 0
// does not mean octal), optionally followed by a binary suffix: K or KiB
// (2^10), M or MiB (2^20), G or GiB (2^30), in either case. The suffixes are
// powers of two, never of ten: 64K, 64k and 64KiB all mean 65536. KB, MB and
// GB are refused because they are read either way. Spaces around the number
// are ignored; signs, underscores and inner spaces are not numbers.
package num

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Example is a short list of accepted forms, quoted in error messages.
const Example = "4096, 0x1000, 64K, 16MiB"

// Error is a number that could not be parsed or is out of range.
type Error struct {
	Value  string // the text as given
	Reason string // what is wrong and how to write it, without the value
}

// Error returns `"VALUE" REASON`, e.g. `"64Q" is not a number; write ...`.
func (e *Error) Error() string { return fmt.Sprintf("%q %s", e.Value, e.Reason) }

// suffixes are the accepted binary suffixes, longest first.
var suffixes = []struct {
	s     string
	shift uint
}{
	{"KIB", 10}, {"MIB", 20}, {"GIB", 30},
	{"K", 10}, {"M", 20}, {"G", 30},
}

const notNumber = "is not a number; write decimal, 0x hex, optionally with K, M, G or KiB, MiB, GiB (powers of two), e.g. " + Example

// Parse parses s as described in the package comment; the result may be
// any uint64.
func Parse(s string) (uint64, error) { return ParseMax(s, math.MaxUint64) }

// ParseMax parses s and refuses a value above max.
func ParseMax(s string, max uint64) (uint64, error) {
	fail := func(reason string) (uint64, error) { return 0, &Error{Value: s, Reason: reason} }
	t := strings.TrimSpace(s)
	if t == "" {
		return fail("is empty; write decimal, 0x hex, optionally with K, M, G or KiB, MiB, GiB (powers of two), e.g. " + Example)
	}
	u := strings.ToUpper(t)
	var shift uint
	for _, suf := range suffixes {
		if strings.HasSuffix(u, suf.s) && len(u) > len(suf.s) {
			shift, t = suf.shift, t[:len(t)-len(suf.s)]
			break
		}
	}
	if shift == 0 {
		for _, bad := range []string{"KB", "MB", "GB"} {
			if strings.HasSuffix(u, bad) {
				return fail(fmt.Sprintf("uses %s, which is ambiguous (a power of ten or of two): write %s or %siB for 2^%d",
					bad, bad[:1], bad[:1], map[byte]int{'K': 10, 'M': 20, 'G': 30}[bad[0]]))
			}
		}
	}
	digits, base := t, 10
	if len(t) >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		digits, base = t[2:], 16
	}
	// ParseUint with an explicit base refuses signs, underscores and spaces.
	v, err := strconv.ParseUint(digits, base, 64)
	if err != nil || digits == "" {
		if errors.Is(err, strconv.ErrRange) {
			return fail(tooLarge(max))
		}
		return fail(notNumber)
	}
	if v > math.MaxUint64>>shift || v<<shift > max {
		return fail(tooLarge(max))
	}
	return v << shift, nil
}

func tooLarge(max uint64) string {
	return fmt.Sprintf("is too large; at most %d (%#x)", max, max)
}

// Uint32 parses a 32-bit number: ParseMax(s, 0xFFFFFFFF).
func Uint32(s string) (uint32, error) {
	v, err := ParseMax(s, math.MaxUint32)
	return uint32(v), err
}

// Reason returns the reason of a *Error (the message without the value, for
// callers such as flag parsers that print the value themselves), or
// err.Error() for any other error.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return err.Error()
}
