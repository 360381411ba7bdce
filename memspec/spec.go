// Package memspec parses the memory arguments users write: a region
// "BASE:SIZE[:PATH]" (oetp serve --region, the hub's device config, the
// conformance DUT) and a fault region "BASE:SIZE:slverr|decerr" (--fault).
// The parsed specs are what memory's constructors take; memory itself knows
// no syntax.
package memspec

import (
	"fmt"
	"math"
	"strings"

	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/memory"
)

// addrSpaceEnd is the first address past the 32-bit address space.
const addrSpaceEnd = uint64(1) << 32

// RegionSpec is a parsed memory region argument "BASE:SIZE[:PATH]": RAM
// when Path is empty, else a shared mapping of the file at Path (see
// OpenFile).
type RegionSpec struct {
	Base uint32
	Size uint64
	Path string
}

// FaultSpec is a parsed fault region argument "BASE:SIZE:slverr|decerr".
type FaultSpec struct {
	Base uint32
	Size uint64
	Resp memory.Resp
}

// Examples shown in parse errors.
const (
	regionExample = `--region "0x1000:64K" or --region "0x1000:64K:/dev/shm/oetp.mem"`
	faultExample  = `--fault "0x8000:4K:slverr"`
)

// SpecError is the error of ParseRegion and ParseFault. It names the part
// of the argument that is wrong and carries a correct example.
type SpecError struct {
	Flag    string // the command-line flag the argument belongs to: "--region" or "--fault"
	Input   string // the whole argument
	Part    string // BASE, SIZE, PATH or RESP; empty when the overall shape is wrong
	Reason  string // what is wrong
	Example string // a correct argument for Flag
}

// Error returns a one-line message naming the input, the part and the fix.
func (e *SpecError) Error() string {
	part := ""
	if e.Part != "" {
		part = " " + e.Part
	}
	return fmt.Sprintf("%s %q:%s %s; example: %s", e.Flag, e.Input, part, e.Reason, e.Example)
}

// ParseRegion parses "BASE:SIZE[:PATH]", the argument of `oetp serve
// --region`. BASE and SIZE are numbers in the one syntax of oetp
// (internal/num): decimal or 0x-prefixed hexadecimal (a leading 0 does not
// mean octal), each optionally followed by K, M or G or KiB, MiB, GiB
// (either case) multiplying it by 2^10, 2^20 or 2^30. SIZE must be at least
// 1 and BASE+SIZE at most 2^32 (0x100000000). Everything after the second
// colon is PATH, so a path may contain colons; PATH, if present, must not
// be empty. Spaces around BASE and SIZE are ignored.
func ParseRegion(s string) (RegionSpec, error) {
	fail := func(part, reason string) (RegionSpec, error) {
		return RegionSpec{}, &SpecError{Flag: "--region", Input: s, Part: part, Reason: reason, Example: regionExample}
	}
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 2 {
		return fail("", "must be BASE:SIZE or BASE:SIZE:PATH")
	}
	base, size, part, reason := parseRange(parts[0], parts[1])
	if reason != "" {
		return fail(part, reason)
	}
	r := RegionSpec{Base: base, Size: size}
	if len(parts) == 3 {
		if parts[2] == "" {
			return fail("PATH", "is empty; give a file path, or omit the last colon for RAM")
		}
		r.Path = parts[2]
	}
	return r, nil
}

// ParseFault parses "BASE:SIZE:RESP", the argument of `oetp serve --fault`:
// BASE and SIZE as for ParseRegion, RESP either slverr or decerr (either
// case).
func ParseFault(s string) (FaultSpec, error) {
	fail := func(part, reason string) (FaultSpec, error) {
		return FaultSpec{}, &SpecError{Flag: "--fault", Input: s, Part: part, Reason: reason, Example: faultExample}
	}
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return fail("", "must be BASE:SIZE:RESP with RESP slverr or decerr")
	}
	base, size, part, reason := parseRange(parts[0], parts[1])
	if reason != "" {
		return fail(part, reason)
	}
	f := FaultSpec{Base: base, Size: size}
	switch r := strings.TrimSpace(parts[2]); {
	case strings.EqualFold(r, "slverr"):
		f.Resp = memory.SLVERR
	case strings.EqualFold(r, "decerr"):
		f.Resp = memory.DECERR
	default:
		return fail("RESP", fmt.Sprintf("%q is not slverr or decerr", r))
	}
	return f, nil
}

// String returns r in the form ParseRegion accepts, numbers in hex.
func (r RegionSpec) String() string {
	s := fmt.Sprintf("%#x:%#x", r.Base, r.Size)
	if r.Path != "" {
		s += ":" + r.Path
	}
	return s
}

// String returns f in the form ParseFault accepts, numbers in hex.
func (f FaultSpec) String() string {
	return fmt.Sprintf("%#x:%#x:%s", f.Base, f.Size, strings.ToLower(f.Resp.String()))
}

// parseRange parses BASE and SIZE and checks the range they describe. On
// failure it returns the wrong part and the reason.
func parseRange(bs, ss string) (base uint32, size uint64, part, reason string) {
	b, reason := parseNumber(bs)
	if reason != "" {
		return 0, 0, "BASE", reason
	}
	if b > math.MaxUint32 {
		return 0, 0, "BASE", fmt.Sprintf("%#x is past the 32-bit address space (largest 0xffffffff)", b)
	}
	size, reason = parseNumber(ss)
	if reason != "" {
		return 0, 0, "SIZE", reason
	}
	if size == 0 {
		return 0, 0, "SIZE", "is 0; a region holds at least 1 byte"
	}
	if size > addrSpaceEnd-b {
		return 0, 0, "SIZE", fmt.Sprintf("%#x from base %#x ends past the 32-bit address space; BASE+SIZE must be at most 0x100000000", size, b)
	}
	return uint32(b), size, "", ""
}

// parseNumber parses a number in the syntax of internal/num (decimal or 0x
// hex, optional K/M/G or KiB/MiB/GiB suffix). It returns a reason instead
// of an error.
func parseNumber(s string) (uint64, string) {
	v, err := num.Parse(s)
	if err != nil {
		return 0, err.Error()
	}
	return v, ""
}
