package addrtable

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Permission says which accesses a node allows.
type Permission uint8

// Permissions.
const (
	Read      Permission = 1
	Write     Permission = 2
	ReadWrite Permission = Read | Write
)

// Readable reports whether p allows reads.
func (p Permission) Readable() bool { return p&Read != 0 }

// Writable reports whether p allows writes.
func (p Permission) Writable() bool { return p&Write != 0 }

// String returns "r", "w" or "rw".
func (p Permission) String() string {
	switch p {
	case Read:
		return "r"
	case Write:
		return "w"
	case ReadWrite:
		return "rw"
	}
	return fmt.Sprintf("Permission(%d)", uint8(p))
}

// MarshalText encodes p as its String.
func (p Permission) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// ParsePermission parses r, w, rw and uHAL's other spellings (read, write,
// wr, readwrite, writeread), in any case.
func ParsePermission(s string) (Permission, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "r", "read", "ro":
		return Read, nil
	case "w", "write", "wo":
		return Write, nil
	case "rw", "wr", "readwrite", "writeread":
		return ReadWrite, nil
	}
	return 0, fmt.Errorf("permission %q is not one of r, w, rw (or read, write, readwrite, wr, writeread)", s)
}

// Mode is a node's access mode.
type Mode uint8

// Modes. Single is one word; Block (uHAL "block") and Incremental
// (uHAL "incremental"/"inc") are ranges of Size bytes at increasing
// addresses; NonIncremental (uHAL "non-incremental"/"non-inc") and Port
// (uHAL "port") are FIFO-like ports: Size bytes are read or written one word
// at a time, all at Address.
const (
	Single Mode = iota
	Block
	Incremental
	NonIncremental
	Port
)

var modeNames = [...]string{Single: "single", Block: "block", Incremental: "incremental", NonIncremental: "non-incremental", Port: "port"}

// String returns the mode's uHAL spelling.
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// MarshalText encodes m as its String.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// IsBlock reports whether m is a range mode (Block or Incremental).
func (m Mode) IsBlock() bool { return m == Block || m == Incremental }

// IsPort reports whether m is a FIFO-like port (NonIncremental or Port).
func (m Mode) IsPort() bool { return m == NonIncremental || m == Port }

// ParseMode parses single, block, incremental, inc, non-incremental,
// non-inc and port, in any case.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "single":
		return Single, nil
	case "block":
		return Block, nil
	case "incremental", "inc":
		return Incremental, nil
	case "non-incremental", "non-inc":
		return NonIncremental, nil
	case "port":
		return Port, nil
	}
	return 0, fmt.Errorf("mode %q is not one of single, block, incremental, inc, non-incremental, non-inc, port", s)
}

// FullMask is the mask of a whole 32-bit word.
const FullMask = 0xFFFFFFFF

// Node is one named register, bitfield, block or port.
type Node struct {
	// Name is the dotted path without the top node's id (uHAL getNode
	// style): "ctrl.reset".
	Name string `json:"name"`
	// Address is the oETP byte address (a multiple of 4).
	Address uint32 `json:"address"`
	// Mask selects the node's bits in its word(s); FullMask for a whole word.
	Mask uint32     `json:"mask"`
	Perm Permission `json:"permission"`
	Mode Mode       `json:"mode"`
	// Size is the length in bytes: the range of a block mode, the bytes
	// moved through a port, 4 for a single word, and (Words-1)*Stride+4
	// for a multi-word LiteX CSR.
	Size        uint32 `json:"size"`
	Description string `json:"description,omitempty"`

	// Words is the number of 32-bit words a single value spans: 1, or n
	// for a LiteX CSR of size n > 1 (most significant word first, at
	// Address, Address+Stride, ...). Each word carries the bits of Mask.
	Words uint32 `json:"words"`
	// Stride is the byte distance between the words of a multi-word
	// value (4, or 8 with a 64-bit LiteX CSR alignment).
	Stride uint32 `json:"stride"`
	// Branch marks a uHAL node with unmasked children (a hierarchical
	// node). As in uHAL it can still be read as the word at Address.
	Branch bool `json:"branch,omitempty"`
	// SideEffects marks a node whose accesses must not be repeated (the
	// native format's volatile = true); ports are volatile regardless.
	SideEffects bool `json:"side_effects,omitempty"`
	// Reset is the node's value after reset (shifted down, as Field
	// returns it) when HasReset; IP-XACT tables give it.
	Reset    uint32 `json:"reset,omitempty"`
	HasReset bool   `json:"has_reset,omitempty"`
	// File and Line say where the node was defined (Line 0 if unknown).
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Volatile reports whether an access to the node may not be repeated:
// non-incremental and port nodes (each access moves a FIFO), and nodes
// marked volatile in the native format. A transport must never retry them.
func (n Node) Volatile() bool { return n.Mode.IsPort() || n.SideEffects }

// Shift is the bit position of the mask's lowest set bit.
func (n Node) Shift() uint { return uint(bits.TrailingZeros32(n.Mask)) }

// Width is the number of bits of one word's field.
func (n Node) Width() uint { return uint(bits.OnesCount32(n.Mask)) }

// Masked reports whether the node is a bitfield (a mask other than FullMask).
func (n Node) Masked() bool { return n.Mask != FullMask }

// Field returns the node's bits of word, shifted down: (word & Mask) >> Shift.
func (n Node) Field(word uint32) uint32 {
	if n.Mask == 0 {
		return 0
	}
	return (word & n.Mask) >> n.Shift()
}

// Place shifts v up into the node's mask and returns the RMEM data and
// BitEnable of the one masked write that stores it. It fails if the node is
// not writable, is not a single word (blocks, ports and multi-word values
// are written otherwise), or if v does not fit the field.
func (n Node) Place(v uint32) (data, mask uint32, err error) {
	if !n.Perm.Writable() {
		return 0, 0, fmt.Errorf("node %q is read-only (permission %s): not written", n.Name, n.Perm)
	}
	if n.Mode != Single || n.Words > 1 {
		return 0, 0, fmt.Errorf("node %q is a %s node of %d bytes, not a single word", n.Name, n.modeWords(), n.Size)
	}
	if n.Mask == 0 {
		return 0, 0, fmt.Errorf("node %q has an empty mask", n.Name)
	}
	max := n.Mask >> n.Shift()
	if v > max {
		return 0, 0, fmt.Errorf("value 0x%X does not fit node %q: its field is %d bits wide (mask 0x%08X), largest 0x%X", v, n.Name, n.Width(), n.Mask, max)
	}
	return v << n.Shift(), n.Mask, nil
}

func (n Node) modeWords() string {
	if n.Words > 1 {
		return fmt.Sprintf("%d-word", n.Words)
	}
	return n.Mode.String()
}

// Span is the number of bytes of address space the node covers: Size,
// except for a port, which covers its one word whatever it moves.
func (n Node) Span() uint32 {
	if n.Mode.IsPort() {
		return 4
	}
	return n.Size
}

// WordAddress returns the byte address of word i of a multi-word value (0 is
// the most significant word, at Address).
func (n Node) WordAddress(i int) uint32 { return n.Address + uint32(i)*n.stride() }

func (n Node) stride() uint32 {
	if n.Stride == 0 {
		return 4
	}
	return n.Stride
}

func (n Node) words() int {
	if n.Words == 0 {
		return 1
	}
	return int(n.Words)
}

// Bits is the width of the node's whole value: Words × Width.
func (n Node) Bits() uint { return uint(n.words()) * n.Width() }

// Join assembles a value from the words read at WordAddress(0..Words-1):
// the field of each word, most significant first.
func (n Node) Join(words []uint32) (*big.Int, error) {
	if len(words) != n.words() {
		return nil, fmt.Errorf("node %q has %d words, got %d", n.Name, n.words(), len(words))
	}
	v := new(big.Int)
	for _, w := range words {
		v.Lsh(v, n.Width())
		v.Or(v, new(big.Int).SetUint64(uint64(n.Field(w))))
	}
	return v, nil
}

// Split is the inverse of Join: the RMEM data words (already shifted into
// Mask; write each with BitEnable = Mask, at WordAddress(i)) that store v.
// It fails if the node is not writable or v does not fit Bits.
func (n Node) Split(v *big.Int) ([]uint32, error) {
	if !n.Perm.Writable() {
		return nil, fmt.Errorf("node %q is read-only (permission %s): not written", n.Name, n.Perm)
	}
	if n.Mode != Single {
		return nil, fmt.Errorf("node %q is a %s node, not a register", n.Name, n.Mode)
	}
	if v.Sign() < 0 || uint(v.BitLen()) > n.Bits() {
		return nil, fmt.Errorf("value 0x%X does not fit node %q: it is %d bits wide", v, n.Name, n.Bits())
	}
	k := n.words()
	out := make([]uint32, k)
	field := new(big.Int).SetUint64(uint64(n.Mask >> n.Shift()))
	t := new(big.Int).Set(v)
	for i := k - 1; i >= 0; i-- {
		w := new(big.Int).And(t, field)
		out[i] = uint32(w.Uint64()) << n.Shift()
		t.Rsh(t, n.Width())
	}
	return out, nil
}

// Format is an address-table file format.
type Format uint8

// Formats.
const (
	UHAL      Format = iota + 1 // IPbus uHAL XML
	LiteXCSV                    // LiteX csr.csv
	LiteXJSON                   // LiteX csr.json
	Native                      // oetp's TOML
	IPXACT                      // IP-XACT (IEEE 1685-2014 or -2022) XML
)

func (f Format) String() string {
	switch f {
	case UHAL:
		return "uHAL XML"
	case LiteXCSV:
		return "LiteX csr.csv"
	case LiteXJSON:
		return "LiteX csr.json"
	case Native:
		return "oetp TOML"
	case IPXACT:
		return "IP-XACT XML"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// FormatOf returns the format a file name's extension selects: .xml, .csv,
// .json or .toml (any case). An .xml file may be uHAL or IP-XACT: FormatOf
// says UHAL, Load and Sniff look at the content.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".xml":
		return UHAL, nil
	case ".csv":
		return LiteXCSV, nil
	case ".json":
		return LiteXJSON, nil
	case ".toml":
		return Native, nil
	}
	return 0, &Error{File: path, Msg: "unknown address-table format: the file name must end in .xml (IPbus uHAL or IP-XACT), .csv or .json (LiteX csr.csv / csr.json) or .toml (oetp)"}
}

// Table is a loaded address table. It is immutable and safe for concurrent
// use.
type Table struct {
	format    Format
	file      string
	nodes     []Node // address order
	byName    map[string]int
	bases     map[string]uint32
	constants map[string]string
	warnings  []string
}

// Format is the format the table was read from.
func (t *Table) Format() Format { return t.format }

// File is the path the table was read from.
func (t *Table) File() string { return t.file }

// Node returns the node called name.
func (t *Table) Node(name string) (Node, error) {
	if i, ok := t.byName[name]; ok {
		return t.nodes[i], nil
	}
	msg := fmt.Sprintf("no node %q in %s", name, t.file)
	if s := t.suggest(name); len(s) > 0 {
		msg += ": did you mean " + strings.Join(s, ", ") + "?"
	} else {
		msg += " (oetp regs list shows its nodes)"
	}
	return Node{}, errors.New(msg)
}

// suggest returns up to 3 names that contain name, end like it, or differ
// only in case or in '.' versus '_'.
func (t *Table) suggest(name string) []string {
	norm := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", ".") }
	want := norm(name)
	var out []string
	for _, n := range t.nodes {
		have := norm(n.Name)
		if have == want || strings.HasSuffix(have, "."+want) || (len(want) >= 3 && strings.Contains(have, want)) {
			out = append(out, fmt.Sprintf("%q", n.Name))
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}

// Nodes returns every node in address order (nodes at one address in the
// order the file defines them: a register before its bitfields).
func (t *Table) Nodes() []Node { return append([]Node(nil), t.nodes...) }

// Len is the number of nodes.
func (t *Table) Len() int { return len(t.nodes) }

// Bases returns LiteX's csr_base entries (name to byte address); empty for
// other formats.
func (t *Table) Bases() map[string]uint32 {
	m := make(map[string]uint32, len(t.bases))
	for k, v := range t.bases {
		m[k] = v
	}
	return m
}

// Constants returns LiteX's constants as written in the file; empty for
// other formats.
func (t *Table) Constants() map[string]string {
	m := make(map[string]string, len(t.constants))
	for k, v := range t.constants {
		m[k] = v
	}
	return m
}

// Warnings are the things the loader accepted but a user should know: a
// uHAL size without mode, a LiteX file without its CSR data width.
func (t *Table) Warnings() []string { return append([]string(nil), t.warnings...) }

// Error is an address-table error. File is the file at fault (an include's
// own name for an error inside it), Line its line (0 when unknown), Node the
// node's name or id and Field the attribute, column or key.
type Error struct {
	File  string
	Line  int
	Node  string
	Field string
	Msg   string
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Node != "" {
		fmt.Fprintf(&b, "node %q: ", e.Node)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "%s: ", e.Field)
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		if e.Msg != "" {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Limits that keep a hostile file from exhausting memory or the stack.
const (
	maxNodes        = 1 << 20
	maxDepth        = 64
	maxIncludeDepth = 32
	maxFileSize     = 64 << 20
)

// Load reads the table at path, choosing the format by the extension (see
// FormatOf). uHAL module includes are read relative to the including file.
func Load(path string) (*Table, error) {
	f, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	data, err := osReader(path)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read the address table", Err: osReason(err)}
	}
	return parse(Sniff(f, data), path, data, osReader)
}

// Sniff refines the format an extension selected by the content: an XML
// document whose top element is in an IP-XACT namespace is IPXACT, other
// XML is UHAL. Other formats are returned as they are.
func Sniff(f Format, data []byte) Format {
	if f == UHAL || f == IPXACT {
		return sniffXML(bytes.TrimPrefix(data, []byte("\uFEFF")))
	}
	return f
}

// Parse reads a table of format f from data; name is used in errors. uHAL
// module includes are read from the file system relative to name's
// directory.
func Parse(f Format, name string, data []byte) (*Table, error) {
	return parse(f, name, data, osReader)
}

// reader reads an included file.
type reader func(path string) ([]byte, error)

func osReader(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory", path)
	}
	if fi.Size() > maxFileSize {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d an address table may have", path, fi.Size(), maxFileSize)
	}
	return os.ReadFile(path)
}

// osReason is a file error's reason without Go's operation and path
// ("no such file or directory", not "stat x.xml: no such file or
// directory"): the Error names the file.
func osReason(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func load(f Format, path string, read reader) (*Table, error) {
	data, err := read(path)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read the address table", Err: osReason(err)}
	}
	return parse(f, path, data, read)
}

func parse(f Format, name string, data []byte, read reader) (*Table, error) {
	data = bytes.TrimPrefix(data, []byte("\uFEFF")) // a UTF-8 byte-order mark, as editors on Windows write
	b := &builder{t: &Table{format: f, file: name, byName: map[string]int{}}}
	var err error
	switch f {
	case UHAL:
		err = parseUHAL(b, name, data, read)
	case LiteXCSV:
		err = parseLiteXCSV(b, name, data)
	case LiteXJSON:
		err = parseLiteXJSON(b, name, data)
	case Native:
		err = parseNative(b, name, data)
	case IPXACT:
		err = parseIPXACT(b, name, data)
	default:
		err = &Error{File: name, Msg: fmt.Sprintf("unknown format %d", f)}
	}
	if err != nil {
		return nil, err
	}
	return b.finish()
}

// builder collects a table's nodes.
type builder struct {
	t *Table
}

func (b *builder) warn(format string, a ...any) {
	if len(b.t.warnings) < 100 {
		b.t.warnings = append(b.t.warnings, fmt.Sprintf(format, a...))
	}
}

// add appends n after checking what every format shares.
func (b *builder) add(n Node) error {
	errf := func(field, format string, a ...any) error {
		return &Error{File: n.File, Line: n.Line, Node: n.Name, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	if len(b.t.nodes) >= maxNodes {
		return errf("", "more than %d nodes", maxNodes)
	}
	if err := checkName(n.Name); err != nil {
		return errf("name", "%v", err)
	}
	if n.Address%4 != 0 {
		return errf("address", "byte address 0x%08X is not a multiple of 4: RMEM accesses aligned 32-bit words", n.Address)
	}
	if n.Mask == 0 {
		return errf("mask", "mask 0x00000000 selects no bits")
	}
	if !contiguous(n.Mask) {
		return errf("mask", "mask 0x%08X is not one contiguous run of bits", n.Mask)
	}
	if n.Perm == 0 || n.Perm > ReadWrite {
		return errf("permission", "no permission")
	}
	if n.Words == 0 {
		n.Words = 1
	}
	if n.Stride == 0 {
		n.Stride = 4
	}
	if n.Size == 0 {
		return errf("size", "size 0: a node spans at least one word")
	}
	if uint64(n.Address)+uint64(n.Span()) > 1<<32 {
		return errf("size", "address 0x%08X + size %d bytes runs past the 32-bit byte address space", n.Address, n.Size)
	}
	if j, dup := b.t.byName[n.Name]; dup {
		o := b.t.nodes[j]
		where := o.File
		if o.Line > 0 {
			where += fmt.Sprintf(":%d", o.Line)
		}
		return errf("name", "defined twice (first at %s)", where)
	}
	b.t.byName[n.Name] = len(b.t.nodes)
	b.t.nodes = append(b.t.nodes, n)
	return nil
}

func (b *builder) finish() (*Table, error) {
	t := b.t
	sort.SliceStable(t.nodes, func(i, j int) bool { return t.nodes[i].Address < t.nodes[j].Address })
	for i, n := range t.nodes {
		t.byName[n.Name] = i
	}
	if t.format == UHAL || t.format == Native || t.format == IPXACT {
		b.overlaps()
	}
	return t, nil
}

// overlaps warns about nodes that share bits without one being the other's
// ancestor (uHAL warns too): usually a typo in an address or a mask. LiteX
// tables are left alone: their memory regions cover the CSRs by design.
func (b *builder) overlaps() {
	nodes := b.t.nodes
	const maxChecks = 1 << 20
	checks, found := 0, 0
	for i, a := range nodes {
		end := uint64(a.Address) + uint64(a.Span())
		for j := i + 1; j < len(nodes) && uint64(nodes[j].Address) < end; j++ {
			if checks++; checks > maxChecks || found >= 20 {
				return
			}
			c := nodes[j]
			if strings.HasPrefix(c.Name, a.Name+".") || strings.HasPrefix(a.Name, c.Name+".") {
				continue
			}
			if !a.Mode.IsBlock() && !c.Mode.IsBlock() && a.Address == c.Address && a.Mask&c.Mask == 0 {
				continue // disjoint bitfields of one word
			}
			found++
			b.warn("%s overlaps %s (0x%08X mask 0x%08X and 0x%08X mask 0x%08X)", where(a), where(c), a.Address, a.Mask, c.Address, c.Mask)
		}
	}
}

func where(n Node) string {
	if n.Line > 0 {
		return fmt.Sprintf("node %q (%s:%d)", n.Name, n.File, n.Line)
	}
	return fmt.Sprintf("node %q", n.Name)
}

func contiguous(m uint32) bool {
	if m == 0 {
		return false
	}
	m >>= bits.TrailingZeros32(m)
	return m&(m+1) == 0
}

// checkName accepts dotted names of non-empty segments without white space
// or control characters.
func checkName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) > 1024 {
		return errors.New("name longer than 1024 bytes")
	}
	for _, seg := range strings.Split(name, ".") {
		if seg == "" {
			return fmt.Errorf("name %q has an empty segment", name)
		}
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || r == '"' || r == '\'' || r == '\\' {
			return fmt.Errorf("name %q contains %q: use letters, digits, '_', '-' and '.'", name, r)
		}
	}
	return nil
}

// parseNumber parses a decimal or 0x hex unsigned number of at most 32
// bits (as uHAL writes addresses and masks); '_' separators are allowed.
func parseNumber(s string) (uint32, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	base := 10
	if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
		base, t = 16, t[2:]
	}
	if t == "" {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	var v uint64
	for _, c := range t {
		d := digit(c)
		if d >= uint64(base) {
			return 0, fmt.Errorf("%q is not a number: use decimal (4096) or 0x hex (0x1000)", s)
		}
		v = v*uint64(base) + d
		if v > 0xFFFFFFFF {
			return 0, fmt.Errorf("%q does not fit 32 bits", s)
		}
	}
	return uint32(v), nil
}

// digit is the value of the hex digit c, or 99 for any other character.
func digit(c rune) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'f':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return uint64(c-'A') + 10
	}
	return 99
}

// xmlError is the *Error of an XML decoding error at line (the syntax
// error's own line when it has one).
func xmlError(file string, line int, err error) error {
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return &Error{File: file, Line: se.Line, Msg: "XML syntax: " + se.Msg}
	}
	return &Error{File: file, Line: line, Msg: "XML", Err: err}
}
