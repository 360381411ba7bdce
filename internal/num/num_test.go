package num

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]uint64{
		"0": 0, "4096": 4096, "0x1000": 4096, "0X1000": 4096, "0xffffFFFF": math.MaxUint32,
		"010": 10, " 7 ": 7,
		"4K": 4096, "4k": 4096, "4KiB": 4096, "4kib": 4096, "4KIB": 4096,
		"16M": 16 << 20, "16MiB": 16 << 20, "1G": 1 << 30, "4GiB": 4 << 30,
		"0x10K": 16 << 10, "0x1MiB": 1 << 20,
		"18446744073709551615": math.MaxUint64,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for in, reason := range map[string]string{
		"":                     "empty",
		"  ":                   "empty",
		"K":                    "not a number",
		"KiB":                  "not a number",
		"0x":                   "not a number",
		"0xK":                  "not a number",
		"-1":                   "not a number",
		"+1":                   "not a number",
		"1_000":                "not a number",
		"6 4":                  "not a number",
		"64Q":                  "not a number",
		"1.5K":                 "not a number",
		"4KiBi":                "not a number",
		"64KB":                 "uses KB, which is ambiguous",
		"1mb":                  "uses MB, which is ambiguous",
		"2GB":                  "uses GB, which is ambiguous",
		"18446744073709551616": "too large",
		"0xFFFFFFFFFFFFFFFFK":  "too large",
		"17179869184G":         "too large",
		"0x10000000000000000":  "too large",
	} {
		_, err := Parse(in)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) error = %v; want *Error", in, err)
			continue
		}
		if e.Value != in || !strings.Contains(e.Reason, reason) {
			t.Errorf("Parse(%q) = %+v; want value %q and reason containing %q", in, e, in, reason)
		}
		if !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("Parse(%q) message %q does not quote the value", in, err)
		}
		if reason == "not a number" && !strings.Contains(err.Error(), Example) {
			t.Errorf("Parse(%q) message %q has no example", in, err)
		}
	}
}

func TestParseMax(t *testing.T) {
	if v, err := ParseMax("4G", 1<<32); err != nil || v != 1<<32 {
		t.Errorf("ParseMax(4G, 2^32) = %d, %v", v, err)
	}
	_, err := ParseMax("4G", math.MaxUint32)
	if err == nil || Reason(err) != "is too large; at most 4294967295 (0xffffffff)" {
		t.Errorf("ParseMax(4G, 2^32-1) error = %v", err)
	}
	if v, err := Uint32("0xFFFFFFFF"); err != nil || v != math.MaxUint32 {
		t.Errorf("Uint32 = %d, %v", v, err)
	}
	if _, err := Uint32("0x100000000"); err == nil {
		t.Error("Uint32(0x100000000) accepted")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "0x1000", "64K", "16MiB", "4GB", "-1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseMax(s, 1<<40)
		if err == nil && v > 1<<40 {
			t.Fatalf("ParseMax(%q) = %d above max", s, v)
		}
	})
}
