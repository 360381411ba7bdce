package addrtable

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// litex is what csr.csv and csr.json share, before it becomes nodes.
type litex struct {
	file      string
	regs      []litexReg
	mems      []litexMem
	bases     map[string]uint32
	constants map[string]string
	where     map[string]litexWhere // constant -> where it was defined
}

type litexWhere struct {
	line  int
	field string
}

type litexReg struct {
	name  string
	addr  uint32
	words uint32
	ro    bool
	line  int
	field string // JSON key path
}

type litexMem struct {
	name  string
	base  uint32
	size  uint32
	typ   string
	line  int
	field string
}

func newLitex(file string) *litex {
	return &litex{file: file, bases: map[string]uint32{}, constants: map[string]string{}, where: map[string]litexWhere{}}
}

// LiteX constants that fix how CSR words are laid out (lower case, as
// csr.csv and csr.json write them).
const (
	litexDataWidth = "config_csr_data_width"
	litexAlignment = "config_csr_alignment"
)

// nodes turns the registers and memories into nodes.
func (lx *litex) nodes(b *builder) error {
	width, err := lx.intConstant(b, litexDataWidth, 32, "CSR words assumed 32 bits wide (LiteX's default since 2020)")
	if err != nil {
		return err
	}
	switch width {
	case 8, 16, 32:
	case 64:
		return lx.constErr(litexDataWidth, "a CSR data width of 64 bits does not fit oETP's 32-bit RMEM words")
	default:
		return lx.constErr(litexDataWidth, fmt.Sprintf("a CSR data width of %d bits: LiteX uses 8, 16 or 32", width))
	}
	align, err := lx.intConstant(b, litexAlignment, 32, "")
	if err != nil {
		return err
	}
	if align != 32 && align != 64 {
		return lx.constErr(litexAlignment, fmt.Sprintf("a CSR alignment of %d bits: LiteX uses 32 or 64", align))
	}
	b.t.bases, b.t.constants = lx.bases, lx.constants
	stride := uint32(align / 8)
	mask := uint32(1<<width - 1)
	if width == 32 {
		mask = FullMask
	}
	for _, r := range lx.regs {
		if r.words == 0 {
			return &Error{File: lx.file, Line: r.line, Node: r.name, Field: r.fieldOr("size"), Msg: "size 0: a CSR has at least one word"}
		}
		span := uint64(r.words-1)*uint64(stride) + 4
		if uint64(r.addr)+span > 1<<32 {
			return &Error{File: lx.file, Line: r.line, Node: r.name, Field: r.fieldOr("size"), Msg: fmt.Sprintf("%d words from 0x%08X run past the 32-bit byte space", r.words, r.addr)}
		}
		perm := ReadWrite
		if r.ro {
			perm = Read
		}
		n := Node{Name: r.name, Address: r.addr, Mask: mask, Perm: perm, Mode: Single, Size: uint32(span),
			Words: r.words, Stride: stride, File: lx.file, Line: r.line}
		if err := b.add(n); err != nil {
			return lx.keyed(err, r.field)
		}
	}
	for _, m := range lx.mems {
		if m.size == 0 {
			b.warn("%s: memory region %q has size 0: left out", lx.file, m.name)
			continue
		}
		n := Node{Name: "mems." + m.name, Address: m.base, Mask: FullMask, Perm: ReadWrite, Mode: Block, Size: m.size,
			Description: "memory region (" + m.typ + ")", Words: 1, Stride: 4, File: lx.file, Line: m.line}
		if err := b.add(n); err != nil {
			return lx.keyed(err, m.field)
		}
	}
	return nil
}

func (r litexReg) fieldOr(def string) string {
	if r.field != "" {
		return r.field + "." + def
	}
	return def
}

// keyed puts a JSON key path into an Error's field.
func (lx *litex) keyed(err error, field string) error {
	var e *Error
	if field != "" && errors.As(err, &e) {
		if e.Field != "" {
			e.Field = field + "." + e.Field
		} else {
			e.Field = field
		}
	}
	return err
}

func (lx *litex) constErr(name, msg string) error {
	w := lx.where[name]
	field := w.field
	if field == "" {
		field = name
	}
	return &Error{File: lx.file, Line: w.line, Field: field, Msg: msg}
}

func (lx *litex) intConstant(b *builder, name string, def int, warn string) (int, error) {
	s, ok := lx.constants[name]
	if !ok {
		if warn != "" && len(lx.regs) > 0 {
			b.warn("%s: no %s constant: %s", lx.file, name, warn)
		}
		return def, nil
	}
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, lx.constErr(name, fmt.Sprintf("%q is not a number", s))
	}
	return v, nil
}

// litexNumber parses a csr.csv number (0x hex or decimal), at most 32 bits.
func litexNumber(s string) (uint32, error) { return parseNumber(s) }

func parseLiteXCSV(b *builder, file string, data []byte) error {
	lx := newLitex(file)
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return &Error{File: file, Line: pe.Line, Msg: "CSV: " + pe.Err.Error()}
			}
			return &Error{File: file, Msg: "CSV", Err: err}
		}
		line, _ := r.FieldPos(0)
		get := func(i int) string {
			if i < len(rec) {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		kind, name := get(0), get(1)
		errf := func(field, format string, a ...any) error {
			return &Error{File: file, Line: line, Node: name, Field: field, Msg: fmt.Sprintf(format, a...)}
		}
		need := func(n int, layout string) error {
			if len(rec) < n {
				return errf("", "a %s row has %d fields, needs %d: %s", kind, len(rec), n, layout)
			}
			if name == "" {
				return errf("name", "empty (column 2)")
			}
			return nil
		}
		num := func(col int, field string) (uint32, error) {
			v, err := litexNumber(get(col))
			if err != nil {
				return 0, errf(field, "%v (column %d)", err, col+1)
			}
			return v, nil
		}
		switch kind {
		case "csr_base":
			if err := need(3, "csr_base,NAME,ADDRESS,,"); err != nil {
				return err
			}
			v, err := num(2, "address")
			if err != nil {
				return err
			}
			lx.bases[name] = v
		case "csr_register":
			if err := need(5, "csr_register,NAME,ADDRESS,SIZE,MODE"); err != nil {
				return err
			}
			addr, err := num(2, "address")
			if err != nil {
				return err
			}
			size, err := num(3, "size")
			if err != nil {
				return err
			}
			ro, err := litexMode(get(4))
			if err != nil {
				return errf("mode", "%v (column 5)", err)
			}
			lx.regs = append(lx.regs, litexReg{name: name, addr: addr, words: size, ro: ro, line: line})
		case "constant":
			if err := need(3, "constant,NAME,VALUE,,"); err != nil {
				return err
			}
			lx.constants[name] = get(2)
			lx.where[name] = litexWhere{line: line}
		case "memory_region":
			if err := need(5, "memory_region,NAME,BASE,SIZE,TYPE"); err != nil {
				return err
			}
			base, err := num(2, "base")
			if err != nil {
				return err
			}
			size, err := num(3, "size")
			if err != nil {
				return err
			}
			lx.mems = append(lx.mems, litexMem{name: name, base: base, size: size, typ: get(4), line: line})
		case "":
			continue
		default:
			return errf("", "unknown row type %q: csr.csv rows are csr_base, csr_register, constant and memory_region", kind)
		}
	}
	return lx.nodes(b)
}

// litexMode parses a register type: ro or rw.
func litexMode(s string) (readOnly bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "ro":
		return true, nil
	case "rw":
		return false, nil
	}
	return false, fmt.Errorf("%q is not ro or rw", s)
}

func parseLiteXJSON(b *builder, file string, data []byte) error {
	lx := newLitex(file)
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return jsonErr(file, data, "", err)
	}
	known := map[string]bool{"csr_bases": true, "csr_registers": true, "constants": true, "memories": true}
	for _, k := range sortedKeys(doc) {
		if !known[k] {
			return &Error{File: file, Field: k, Msg: "unknown key: csr.json has csr_bases, csr_registers, constants and memories"}
		}
	}
	if _, ok := doc["csr_registers"]; !ok {
		return &Error{File: file, Field: "csr_registers", Msg: "missing: this is not a LiteX csr.json"}
	}
	obj := func(key string) (map[string]json.RawMessage, error) {
		raw, ok := doc[key]
		if !ok {
			return nil, nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, jsonErr(file, nil, key, err)
		}
		return m, nil
	}
	u32 := func(field string, raw json.RawMessage) (uint32, error) {
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return 0, &Error{File: file, Field: field, Msg: fmt.Sprintf("%s is not a number", raw)}
		}
		v, err := strconv.ParseUint(n.String(), 10, 64)
		if err != nil {
			return 0, &Error{File: file, Field: field, Msg: fmt.Sprintf("%s is not a non-negative integer", n)}
		}
		if v > 0xFFFFFFFF {
			return 0, &Error{File: file, Field: field, Msg: fmt.Sprintf("%d (0x%X) does not fit oETP's 32-bit byte addresses", v, v)}
		}
		return uint32(v), nil
	}
	bases, err := obj("csr_bases")
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(bases) {
		v, err := u32("csr_bases."+k, bases[k])
		if err != nil {
			return err
		}
		lx.bases[k] = v
	}
	consts, err := obj("constants")
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(consts) {
		var v any
		d := json.NewDecoder(bytes.NewReader(consts[k]))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return &Error{File: file, Field: "constants." + k, Msg: err.Error()}
		}
		switch x := v.(type) {
		case nil:
			lx.constants[k] = ""
		case json.Number:
			lx.constants[k] = x.String()
		case string:
			lx.constants[k] = x
		case bool:
			lx.constants[k] = strconv.FormatBool(x)
		default:
			return &Error{File: file, Field: "constants." + k, Msg: fmt.Sprintf("%s is not a number, string or null", consts[k])}
		}
		lx.where[k] = litexWhere{field: "constants." + k}
	}
	regs, err := obj("csr_registers")
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(regs) {
		field := "csr_registers." + k
		var r map[string]json.RawMessage
		if err := json.Unmarshal(regs[k], &r); err != nil {
			return &Error{File: file, Field: field, Msg: "not an object with addr, size and type"}
		}
		for _, rk := range sortedKeys(r) {
			if rk != "addr" && rk != "size" && rk != "type" {
				return &Error{File: file, Field: field + "." + rk, Msg: "unknown key: a register has addr, size and type"}
			}
		}
		for _, rk := range []string{"addr", "size", "type"} {
			if _, ok := r[rk]; !ok {
				return &Error{File: file, Field: field + "." + rk, Msg: "missing"}
			}
		}
		addr, err := u32(field+".addr", r["addr"])
		if err != nil {
			return err
		}
		size, err := u32(field+".size", r["size"])
		if err != nil {
			return err
		}
		var typ string
		if err := json.Unmarshal(r["type"], &typ); err != nil {
			return &Error{File: file, Field: field + ".type", Msg: fmt.Sprintf("%s is not a string", r["type"])}
		}
		ro, err := litexMode(typ)
		if err != nil {
			return &Error{File: file, Field: field + ".type", Msg: err.Error()}
		}
		lx.regs = append(lx.regs, litexReg{name: k, addr: addr, words: size, ro: ro, field: field})
	}
	mems, err := obj("memories")
	if err != nil {
		return err
	}
	for _, k := range sortedKeys(mems) {
		field := "memories." + k
		var m map[string]json.RawMessage
		if err := json.Unmarshal(mems[k], &m); err != nil {
			return &Error{File: file, Field: field, Msg: "not an object with base, size and type"}
		}
		for _, mk := range []string{"base", "size"} {
			if _, ok := m[mk]; !ok {
				return &Error{File: file, Field: field + "." + mk, Msg: "missing"}
			}
		}
		base, err := u32(field+".base", m["base"])
		if err != nil {
			return err
		}
		size, err := u32(field+".size", m["size"])
		if err != nil {
			return err
		}
		var typ string
		if raw, ok := m["type"]; ok {
			_ = json.Unmarshal(raw, &typ)
		}
		lx.mems = append(lx.mems, litexMem{name: k, base: base, size: size, typ: typ, field: field})
	}
	// JSON objects have no order: registers are laid out by address anyway.
	sort.SliceStable(lx.regs, func(i, j int) bool { return lx.regs[i].addr < lx.regs[j].addr })
	return lx.nodes(b)
}

// jsonErr reports a JSON error with the line of its offset when known.
func jsonErr(file string, data []byte, field string, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &Error{File: file, Line: lineOf(data, se.Offset), Field: field, Msg: "JSON syntax: " + se.Error()}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		f := field
		if te.Field != "" {
			f = strings.TrimPrefix(field+"."+te.Field, ".")
		}
		return &Error{File: file, Line: lineOf(data, te.Offset), Field: f, Msg: fmt.Sprintf("a JSON %s where %s was expected", te.Value, jsonKind(te.Type.Kind().String()))}
	}
	return &Error{File: file, Field: field, Msg: "JSON", Err: err}
}

func jsonKind(k string) string {
	if k == "map" {
		return "an object"
	}
	return "a " + k
}

func lineOf(data []byte, off int64) int {
	if data == nil || off < 0 || off > int64(len(data)) {
		return 0
	}
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
