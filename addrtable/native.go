package addrtable

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/openenoc/oetp/internal/num"
	"github.com/openenoc/oetp/internal/tomlin"
)

// nativeFile is the native TOML format (see the package doc).
type nativeFile struct {
	Description string       `toml:"description"`
	Node        []nativeNode `toml:"node"`
}

type nativeNode struct {
	Name        string     `toml:"name"`
	Address     *nativeNum `toml:"address"`
	Mask        *nativeNum `toml:"mask"`
	Bits        *string    `toml:"bits"`
	Permission  *string    `toml:"permission"`
	Mode        *string    `toml:"mode"`
	Size        *nativeNum `toml:"size"`
	Volatile    bool       `toml:"volatile"`
	Description string     `toml:"description"`
}

// nativeNum is a TOML integer (0x hex is TOML's own) or a string in oetp's
// number syntax ("0x1000", "64K"); at most 32 bits.
type nativeNum struct{ v uint32 }

func (n *nativeNum) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 || x > 0xFFFFFFFF {
			return fmt.Errorf("%d does not fit 32 bits unsigned", x)
		}
		n.v = uint32(x)
	case string:
		// oetp's own format: the one number syntax of every flag and
		// configuration value (decimal, 0x hex, K/M/G, KiB/MiB/GiB).
		u, err := num.Uint32(x)
		if err != nil {
			return err
		}
		n.v = u
	default:
		return fmt.Errorf("%v is not a number: write an integer (4096, 0x1000) or a string (\"0x1000\")", v)
	}
	return nil
}

func parseNative(b *builder, file string, data []byte) error {
	var f nativeFile
	md, err := tomlin.Decode(file, data, &f)
	var le *tomlin.LimitError
	if errors.As(err, &le) {
		return &Error{File: file, Line: le.Line, Msg: le.Reason()}
	}
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return &Error{File: file, Line: pe.Position.Line, Msg: "TOML: " + pe.Message}
		}
		return &Error{File: file, Msg: "TOML", Err: err}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return &Error{File: file, Field: und[0].String(), Msg: "unknown key: a [[node]] has name, address, mask or bits, permission, mode, size, volatile and description"}
	}
	lines := nodeLines(data, len(f.Node))
	for i, nn := range f.Node {
		line := 0
		if lines != nil {
			line = lines[i]
		}
		id := nn.Name
		if id == "" {
			id = fmt.Sprintf("#%d", i+1)
		}
		errf := func(field, format string, a ...any) error {
			return &Error{File: file, Line: line, Node: id, Field: field, Msg: fmt.Sprintf(format, a...)}
		}
		if nn.Name == "" {
			return errf("name", "missing: every [[node]] needs a dotted name")
		}
		if nn.Address == nil {
			return errf("address", "missing: give the node's oETP byte address")
		}
		n := Node{Name: nn.Name, Address: nn.Address.v, Mask: FullMask, Perm: ReadWrite, Mode: Single, Size: 4,
			Description: nn.Description, Words: 1, Stride: 4, SideEffects: nn.Volatile, File: file, Line: line}
		switch {
		case nn.Mask != nil && nn.Bits != nil:
			return errf("bits", "give mask or bits, not both")
		case nn.Mask != nil:
			n.Mask = nn.Mask.v
		case nn.Bits != nil:
			m, err := parseBits(*nn.Bits)
			if err != nil {
				return errf("bits", "%v", err)
			}
			n.Mask = m
		}
		if nn.Permission != nil {
			p, err := ParsePermission(*nn.Permission)
			if err != nil {
				return errf("permission", "%v", err)
			}
			n.Perm = p
		}
		if nn.Mode != nil {
			m, err := ParseMode(*nn.Mode)
			if err != nil {
				return errf("mode", "%v", err)
			}
			n.Mode = m
		}
		if n.Mode != Single && n.Masked() {
			return errf("mask", "a %s node cannot have a mask: masks select bits of one word", n.Mode)
		}
		switch {
		case nn.Size != nil && n.Mode == Single:
			if nn.Size.v != 4 {
				return errf("size", "%d bytes on a single node: a single node is one 4-byte word (use mode = \"block\" for a range)", nn.Size.v)
			}
		case nn.Size != nil:
			if nn.Size.v == 0 || nn.Size.v%4 != 0 {
				return errf("size", "%d bytes: a %s node's size is a positive multiple of 4 bytes", nn.Size.v, n.Mode)
			}
			n.Size = nn.Size.v
		case n.Mode.IsBlock():
			return errf("size", "missing: mode %q needs a size in bytes", n.Mode)
		}
		if err := b.add(n); err != nil {
			return err
		}
	}
	return nil
}

// parseBits parses "5" (one bit) or "7:4" (bits 7 down to 4) into a mask.
func parseBits(s string) (uint32, error) {
	hi, lo, found := strings.Cut(strings.TrimSpace(s), ":")
	h, err := strconv.ParseUint(strings.TrimSpace(hi), 10, 8)
	if err != nil || h > 31 {
		return 0, fmt.Errorf("%q: write one bit (\"5\") or a range high:low (\"7:4\") of bits 0..31", s)
	}
	l := h
	if found {
		l, err = strconv.ParseUint(strings.TrimSpace(lo), 10, 8)
		if err != nil || l > h {
			return 0, fmt.Errorf("%q: write a range high:low with high >= low (\"7:4\")", s)
		}
	}
	return uint32((uint64(1)<<(h+1) - 1) &^ (uint64(1)<<l - 1)), nil
}

// nodeLines returns the line of each [[node]] header when the file has one
// per node (nodes written as [[node]] tables), else nil.
func nodeLines(data []byte, n int) []int {
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxFileSize)
	for ln := 1; sc.Scan(); ln++ {
		t := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(t, "[[") {
			name, _, _ := strings.Cut(strings.TrimPrefix(t, "[["), "]]")
			if strings.TrimSpace(name) == "node" {
				lines = append(lines, ln)
			}
		}
	}
	if len(lines) != n {
		return nil
	}
	return lines
}
