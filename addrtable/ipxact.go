package addrtable

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
)

// IP-XACT (IEEE 1685) register maps: the component's memoryMaps, read with
// encoding/xml into a small element tree (names, lines, text), then walked.

// The schema namespaces read.
const (
	IPXACT2014 = "http://www.accellera.org/XMLSchema/IPXACT/1685-2014"
	IPXACT2022 = "http://www.accellera.org/XMLSchema/IPXACT/1685-2022"
	spirit2009 = "http://www.spiritconsortium.org/XMLSchema/SPIRIT/1685-2009"
)

// maxElements bounds the element tree of one IP-XACT file; maxText the
// characters kept of one element's text.
const (
	maxElements = 1 << 21
	maxText     = 4096
)

// xel is one element of an IP-XACT document.
type xel struct {
	ns    string // the root's: the schema's namespace
	name  string // local name; the namespace was checked when read
	line  int
	text  string
	attrs []xml.Attr
	kids  []*xel
}

// child returns the first child element called name.
func (x *xel) child(name string) *xel {
	for _, k := range x.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// all returns the child elements called name.
func (x *xel) all(name string) []*xel {
	var out []*xel
	for _, k := range x.kids {
		if k.name == name {
			out = append(out, k)
		}
	}
	return out
}

// path follows child names: x.path("a", "b") is x.child("a").child("b").
func (x *xel) path(names ...string) *xel {
	for _, n := range names {
		if x == nil {
			return nil
		}
		x = x.child(n)
	}
	return x
}

// sniffXML returns IPXACT if the document's first element is in an
// IP-XACT namespace, UHAL otherwise (uHAL tables have no namespace).
func sniffXML(data []byte) Format {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.CharsetReader = charsetReader
	for i := 0; i < 1000; i++ {
		tok, err := d.Token()
		if err != nil {
			return UHAL
		}
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Space {
			case IPXACT2014, IPXACT2022, spirit2009:
				return IPXACT
			}
			return UHAL
		}
	}
	return UHAL
}

// readIPXACT parses data into its root element, keeping only elements of
// the root's IP-XACT namespace (vendor extensions and other namespaces
// are skipped).
func readIPXACT(file string, data []byte) (*xel, error) {
	r := newXMLReader(file, data, false)
	var stack []*xel
	var root *xel
	ns := ""
	skip := 0
	count := 0
	for tok := range r.tokens() {
		switch t := tok.(type) {
		case xml.StartElement:
			if err := r.nest(len(stack) + skip + 1); err != nil {
				return nil, err
			}
			if root == nil && len(stack) == 0 && skip == 0 {
				switch t.Name.Space {
				case IPXACT2014, IPXACT2022, spirit2009:
				default:
					return nil, r.errf("the top element <%s> is not in an IP-XACT namespace: an IP-XACT file's top element is <ipxact:component> with xmlns:ipxact=%q or %q (or 2009's <spirit:component>, xmlns:spirit=%q)", qname(t.Name), IPXACT2014, IPXACT2022, spirit2009)
				}
				if t.Name.Local != "component" {
					return nil, r.errf("the top element is <%s>: oetp reads register maps from an IP-XACT <component>", t.Name.Local)
				}
				ns = t.Name.Space
			} else if root != nil && len(stack) == 0 && skip == 0 {
				return nil, r.errf("a second top-level element after </component>")
			}
			if skip > 0 || t.Name.Space != ns {
				skip++
				continue
			}
			if count++; count > maxElements {
				return nil, r.errf("more than %d elements", maxElements)
			}
			x := &xel{name: t.Name.Local, line: r.line, attrs: t.Attr}
			if len(stack) == 0 {
				root = x
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, x)
			}
			stack = append(stack, x)
		case xml.EndElement:
			if skip > 0 {
				skip--
				continue
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if skip == 0 && len(stack) > 0 {
				x := stack[len(stack)-1]
				if room := maxText - len(x.text); room > 0 {
					if len(t) > room {
						t = t[:room]
					}
					x.text += string(t)
				}
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if root == nil {
		return nil, &Error{File: file, Msg: "no <ipxact:component> element"}
	}
	root.ns = ns
	return root, nil
}

// ipx walks an IP-XACT component into nodes.
type ipx struct {
	b    *builder
	file string
	aub  uint64 // addressUnitBits of the memory map being read
	// expanded counts the array elements walked: nested arrays of
	// register files multiply, and an empty one adds no node to stop them.
	expanded int
	// The component's parameters by name and id (ipexpr.go), the chain of
	// parameters being evaluated and its depth; spirit is set for 2009.
	params map[string]*ipParam
	chain  []string
	depth  int
	spirit bool
}

// expand counts one more array element at x.
func (p *ipx) expand(x *xel, node string) error {
	if p.expanded++; p.expanded > maxNodes {
		return p.errf(x, node, "dim", "the arrays expand to more than %d elements", maxNodes)
	}
	return nil
}

func (p *ipx) errf(x *xel, node, field, format string, a ...any) error {
	return &Error{File: p.file, Line: x.line, Node: node, Field: field, Msg: fmt.Sprintf(format, a...)}
}

func parseIPXACT(b *builder, file string, data []byte) error {
	root, err := readIPXACT(file, data)
	if err != nil {
		return err
	}
	p := &ipx{b: b, file: file, spirit: root.ns == spirit2009}
	if err := p.collectParams(root); err != nil {
		return err
	}
	maps := root.all("memoryMaps")
	var mms []*xel
	for _, m := range maps {
		mms = append(mms, m.all("memoryMap")...)
	}
	if len(mms) == 0 {
		return p.errf(root, "", "memoryMaps", "the component has no <ipxact:memoryMap>: there is no register map to read")
	}
	for _, mm := range mms {
		name, err := p.name(mm, "")
		if err != nil {
			return err
		}
		prefix := ""
		if len(mms) > 1 {
			prefix = name // several maps: each map's name leads its nodes' names
		}
		p.aub = 8
		if a := mm.child("addressUnitBits"); a != nil {
			v, err := p.number(a, name, "addressUnitBits")
			if err != nil {
				return err
			}
			if v == 0 || v%8 != 0 || v > 64 {
				return p.errf(a, name, "addressUnitBits", "%d: oetp reads memory maps of 8, 16, 32 or 64-bit address units", v)
			}
			p.aub = v
		}
		for _, k := range mm.kids {
			switch k.name {
			case "addressBlock":
				if err := p.block(k, prefix); err != nil {
					return err
				}
			case "bank", "subspaceMap", "memoryRemap":
				b.warn("%s:%d: memory map %q: <%s> is not read: its registers are not in the table", file, k.line, name, k.name)
			}
		}
	}
	return nil
}

// join appends a segment to a dotted prefix.
func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// name returns x's <name>, checked as one segment of a dotted name.
func (p *ipx) name(x *xel, parent string) (string, error) {
	n := x.child("name")
	if n == nil {
		return "", p.errf(x, parent, "name", "<ipxact:%s> has no <ipxact:name>", x.name)
	}
	s := strings.TrimSpace(n.text)
	switch {
	case s == "":
		return "", p.errf(n, parent, "name", "empty <ipxact:name> in <ipxact:%s>", x.name)
	case strings.ContainsAny(s, ".[] \t\r\n"):
		return "", p.errf(n, parent, "name", "%q contains a dot, a bracket or white space: oetp joins names with dots and indexes arrays with [i]", s)
	}
	return s, nil
}

// number reads x's value: a literal (see parseIPNumber) or an expression
// over the component's parameters (ipexpr.go), 0..2^48.
func (p *ipx) number(x *xel, node, field string) (uint64, error) {
	v, err := p.value(x, node, field)
	if err != nil {
		return 0, err
	}
	if v < 0 {
		return 0, p.errf(x, node, field, "%q is %d: negative", strings.TrimSpace(x.text), v)
	}
	if v > 1<<48 {
		return 0, p.errf(x, node, field, "%q is 0x%X: too large", strings.TrimSpace(x.text), v)
	}
	return uint64(v), nil
}

// bytesOf converts a count of address units to bytes.
func (p *ipx) bytesOf(x *xel, node, field string, units uint64) (uint64, error) {
	if units > (1<<40)/p.aub {
		return 0, p.errf(x, node, field, "0x%X address units is beyond oETP's 32-bit byte space", units)
	}
	return units * p.aub / 8, nil
}

// access reads an access value from x: 2014's <access> or 2022's
// <accessPolicies><accessPolicy><access> (a field's <fieldAccessPolicies>).
// ok is false when x gives none.
func (p *ipx) access(x *xel, node string) (Permission, bool, error) {
	a := x.child("access")
	if a == nil {
		a = x.path("accessPolicies", "accessPolicy", "access")
	}
	if a == nil {
		a = x.path("fieldAccessPolicies", "fieldAccessPolicy", "access")
	}
	if a == nil {
		return 0, false, nil
	}
	switch strings.TrimSpace(a.text) {
	case "read-only":
		return Read, true, nil
	case "write-only", "writeOnce":
		return Write, true, nil
	case "read-write", "read-writeOnce":
		return ReadWrite, true, nil
	}
	return 0, false, p.errf(a, node, "access", "%q is not one of read-only, write-only, read-write, writeOnce, read-writeOnce", strings.TrimSpace(a.text))
}

// dims returns the dimensions of a register or register file (2014's <dim>
// elements, or 2022's <array><dim>) and 2022's stride in address units (0
// if not given).
func (p *ipx) dims(x *xel, node string) (dims []uint64, stride uint64, err error) {
	src := x
	if a := x.child("array"); a != nil {
		src = a
		if s := a.child("stride"); s != nil {
			if stride, err = p.number(s, node, "stride"); err != nil {
				return nil, 0, err
			}
		}
	}
	total := uint64(1)
	for _, d := range src.all("dim") {
		v, err := p.number(d, node, "dim")
		if err != nil {
			return nil, 0, err
		}
		if v == 0 {
			return nil, 0, p.errf(d, node, "dim", "0: an array has at least one element")
		}
		if total *= v; total > maxNodes {
			return nil, 0, p.errf(d, node, "dim", "the array has more than %d elements", maxNodes)
		}
		dims = append(dims, v)
	}
	return dims, stride, nil
}

// each calls f for every element of an array of dims (row-major, the last
// dimension fastest) with its name suffix ("[1][2]") and its index in
// element order; once with "" and 0 when dims is empty.
func each(dims []uint64, f func(suffix string, i uint64) error) error {
	if len(dims) == 0 {
		return f("", 0)
	}
	total := uint64(1)
	for _, d := range dims {
		total *= d
	}
	idx := make([]uint64, len(dims))
	for i := uint64(0); i < total; i++ {
		var sb strings.Builder
		for _, v := range idx {
			fmt.Fprintf(&sb, "[%d]", v)
		}
		if err := f(sb.String(), i); err != nil {
			return err
		}
		for k := len(idx) - 1; k >= 0; k-- {
			if idx[k]++; idx[k] < dims[k] {
				break
			}
			idx[k] = 0
		}
	}
	return nil
}

func (p *ipx) block(ab *xel, prefix string) error {
	name, err := p.name(ab, prefix)
	if err != nil {
		return err
	}
	full := join(prefix, name)
	ba := ab.child("baseAddress")
	if ba == nil {
		return p.errf(ab, full, "baseAddress", "missing: an address block needs <ipxact:baseAddress>")
	}
	units, err := p.number(ba, full, "baseAddress")
	if err != nil {
		return err
	}
	base, err := p.bytesOf(ba, full, "baseAddress", units)
	if err != nil {
		return err
	}
	perm, ok, err := p.access(ab, full)
	if err != nil {
		return err
	}
	if !ok {
		perm = ReadWrite
	}
	regs := 0
	for _, k := range ab.kids {
		switch k.name {
		case "register":
			regs++
			if err := p.register(k, full, base, perm); err != nil {
				return err
			}
		case "registerFile":
			regs++
			if err := p.registerFile(k, full, base, perm, 0); err != nil {
				return err
			}
		}
	}
	if regs > 0 {
		return nil
	}
	if u := ab.child("usage"); u != nil && strings.TrimSpace(u.text) == "reserved" {
		return nil
	}
	// A block without registers (memory) is one block node of its range.
	r := ab.child("range")
	if r == nil {
		return p.errf(ab, full, "range", "missing: an address block needs <ipxact:range>")
	}
	ru, err := p.number(r, full, "range")
	if err != nil {
		return err
	}
	size, err := p.bytesOf(r, full, "range", ru)
	if err != nil {
		return err
	}
	if size == 0 || size%4 != 0 || size > 0xFFFFFFFC {
		return p.errf(r, full, "range", "%d bytes: a memory block is a whole number of 32-bit words", size)
	}
	if base > 0xFFFFFFFF {
		return p.errf(ba, full, "baseAddress", "byte address 0x%X is beyond oETP's 32-bit byte space", base)
	}
	return p.b.add(Node{Name: full, Address: uint32(base), Mask: FullMask, Perm: perm, Mode: Block,
		Size: uint32(size), Description: desc(ab), File: p.file, Line: ab.line})
}

func desc(x *xel) string {
	if d := x.child("description"); d != nil {
		return strings.Join(strings.Fields(d.text), " ")
	}
	return ""
}

// offset reads x's <addressOffset> in bytes.
func (p *ipx) offset(x *xel, node string) (uint64, error) {
	o := x.child("addressOffset")
	if o == nil {
		return 0, p.errf(x, node, "addressOffset", "missing: <ipxact:%s> needs <ipxact:addressOffset>", x.name)
	}
	u, err := p.number(o, node, "addressOffset")
	if err != nil {
		return 0, err
	}
	return p.bytesOf(o, node, "addressOffset", u)
}

func (p *ipx) registerFile(rf *xel, prefix string, base uint64, perm Permission, depth int) error {
	name, err := p.name(rf, prefix)
	if err != nil {
		return err
	}
	full := join(prefix, name)
	if depth > maxDepth {
		return p.errf(rf, full, "", "register files nested more than %d deep", maxDepth)
	}
	off, err := p.offset(rf, full)
	if err != nil {
		return err
	}
	if q, ok, err := p.access(rf, full); err != nil {
		return err
	} else if ok {
		perm = q
	}
	dims, stride, err := p.dims(rf, full)
	if err != nil {
		return err
	}
	if len(dims) > 0 && stride == 0 {
		r := rf.child("range")
		if r == nil {
			return p.errf(rf, full, "range", "missing: an array of register files needs <ipxact:range> (the distance between its elements)")
		}
		if stride, err = p.number(r, full, "range"); err != nil {
			return err
		}
	}
	strideBytes, err := p.bytesOf(rf, full, "stride", stride)
	if err != nil {
		return err
	}
	return each(dims, func(suffix string, i uint64) error {
		if err := p.expand(rf, full+suffix); err != nil {
			return err
		}
		at := base + off + i*strideBytes
		for _, k := range rf.kids {
			switch k.name {
			case "register":
				if err := p.register(k, full+suffix, at, perm); err != nil {
					return err
				}
			case "registerFile":
				if err := p.registerFile(k, full+suffix, at, perm, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// field is one parsed <ipxact:field>.
type ipField struct {
	x        *xel
	name     string
	mask     uint32
	perm     Permission
	reset    uint32
	hasReset bool
	side     bool
}

func (p *ipx) register(r *xel, prefix string, base uint64, perm Permission) error {
	name, err := p.name(r, prefix)
	if err != nil {
		return err
	}
	full := join(prefix, name)
	off, err := p.offset(r, full)
	if err != nil {
		return err
	}
	width := uint64(32)
	if s := r.child("size"); s != nil {
		if width, err = p.number(s, full, "size"); err != nil {
			return err
		}
	} else {
		return p.errf(r, full, "size", "missing: a register needs <ipxact:size> (its width in bits)")
	}
	if width == 0 || width > 32 {
		return p.errf(r.child("size"), full, "size", "%d bits: oetp reads registers of 1 to 32 bits (RMEM accesses 32-bit words); describe a wider register as 32-bit ones", width)
	}
	if q, ok, err := p.access(r, full); err != nil {
		return err
	} else if ok {
		perm = q
	}
	dims, stride, err := p.dims(r, full)
	if err != nil {
		return err
	}
	if stride == 0 {
		// 2014: array elements follow each other, one register size apart.
		stride = (width + p.aub - 1) / p.aub
	}
	strideBytes, err := p.bytesOf(r, full, "stride", stride)
	if err != nil {
		return err
	}
	regMask := uint32(1<<width - 1)
	var fields []ipField
	var used uint32
	for _, fx := range r.all("field") {
		f, err := p.field(fx, full, width, perm)
		if err != nil {
			return err
		}
		if used&f.mask != 0 {
			return p.errf(fx, full+"."+f.name, "bitOffset", "bits 0x%08X overlap another field of register %q", used&f.mask, full)
		}
		used |= f.mask
		for _, g := range fields {
			if g.name == f.name {
				return p.errf(fx, full+"."+f.name, "name", "two fields of register %q have this name (the first at line %d)", full, g.x.line)
			}
		}
		fields = append(fields, f)
	}
	// 2009 gives the reset on the register (<reset><value>, <mask> the bits
	// it covers): a field without its own takes its bits.
	var regReset, resetMask uint32
	hasRegReset := false
	if rv := r.path("reset", "value"); rv != nil {
		v, err := p.number(rv, full, "reset")
		if err != nil {
			return err
		}
		if v > uint64(regMask) {
			return p.errf(rv, full, "reset", "0x%X does not fit the register's %d bits", v, width)
		}
		regReset, resetMask, hasRegReset = uint32(v), regMask, true
		if m := r.path("reset", "mask"); m != nil {
			mv, err := p.number(m, full, "reset")
			if err != nil {
				return err
			}
			resetMask &= uint32(mv)
		}
		for i := range fields {
			if f := &fields[i]; !f.hasReset && f.mask&resetMask == f.mask {
				f.reset, f.hasReset = (regReset&f.mask)>>f.shift(), true
			}
		}
	}
	// The register's permission is its fields' union; its reset is known if
	// every field's is.
	rperm := perm
	var reset uint32
	hasReset := len(fields) > 0
	side := false
	if len(fields) == 0 && hasRegReset && resetMask == regMask {
		reset, hasReset = regReset, true
	}
	if len(fields) > 0 {
		rperm = 0
		for _, f := range fields {
			rperm |= f.perm
			reset |= f.reset << f.shift()
			hasReset = hasReset && f.hasReset
			side = side || f.side
		}
	}
	return each(dims, func(suffix string, i uint64) error {
		if err := p.expand(r, full+suffix); err != nil {
			return err
		}
		addr := base + off + i*strideBytes
		rname := full + suffix
		if addr > 0xFFFFFFFC {
			return p.errf(r, rname, "addressOffset", "byte address 0x%X is beyond oETP's 32-bit byte space", addr)
		}
		if addr%4 != 0 {
			return p.errf(r, rname, "addressOffset", "byte address 0x%X is not a multiple of 4: RMEM accesses aligned 32-bit words", addr)
		}
		n := Node{Name: rname, Address: uint32(addr), Mask: regMask, Perm: rperm, Mode: Single, Size: 4,
			Description: desc(r), SideEffects: side, Reset: reset, HasReset: hasReset, File: p.file, Line: r.line}
		if err := p.b.add(n); err != nil {
			return err
		}
		for _, f := range fields {
			fn := Node{Name: rname + "." + f.name, Address: uint32(addr), Mask: f.mask, Perm: f.perm, Mode: Single, Size: 4,
				Description: desc(f.x), SideEffects: f.side, Reset: f.reset, HasReset: f.hasReset, File: p.file, Line: f.x.line}
			if err := p.b.add(fn); err != nil {
				return err
			}
		}
		return nil
	})
}

func (f ipField) shift() uint {
	s := uint(0)
	for m := f.mask; m != 0 && m&1 == 0; m >>= 1 {
		s++
	}
	return s
}

func (p *ipx) field(fx *xel, reg string, width uint64, perm Permission) (ipField, error) {
	name, err := p.name(fx, reg)
	if err != nil {
		return ipField{}, err
	}
	full := reg + "." + name
	f := ipField{x: fx, name: name, perm: perm}
	bo, bw := fx.child("bitOffset"), fx.child("bitWidth")
	if bo == nil || bw == nil {
		return f, p.errf(fx, full, "bitOffset", "a field needs <ipxact:bitOffset> and <ipxact:bitWidth>")
	}
	off, err := p.number(bo, full, "bitOffset")
	if err != nil {
		return f, err
	}
	w, err := p.number(bw, full, "bitWidth")
	if err != nil {
		return f, err
	}
	if w == 0 || off+w > width {
		return f, p.errf(bw, full, "bitWidth", "bits %d..%d do not fit the %d-bit register %q", off, off+w-1, width, reg)
	}
	f.mask = uint32((uint64(1)<<w - 1) << off)
	if q, ok, err := p.access(fx, full); err != nil {
		return f, err
	} else if ok {
		f.perm = q
	}
	// A read action (clear, set, modify) changes the register when read: such
	// a read must never be repeated.
	if fx.child("readAction") != nil || fx.path("fieldAccessPolicies", "fieldAccessPolicy", "readAction") != nil {
		f.side = true
	}
	rv := fx.path("resets", "reset", "value")
	if rv == nil {
		rv = fx.path("reset", "value")
	}
	if rv != nil {
		v, err := p.number(rv, full, "reset")
		if err != nil {
			return f, err
		}
		if v >= uint64(1)<<w {
			return f, p.errf(rv, full, "reset", "0x%X does not fit the field's %d bits", v, w)
		}
		f.reset, f.hasReset = uint32(v), true
	}
	return f, nil
}

// parseIPNumber parses the literal forms IP-XACT files carry: decimal,
// 0x hex, Verilog-style 'h/'d/'b/'o with an optional width (32'h1000),
// #hex, and the K, M, G, T suffixes of scaledNonNegativeInteger; '_'
// separators are allowed. A sized literal must fit its width. Expressions
// and parameter references are ipexpr.go's.
func parseIPNumber(s string) (uint64, error) {
	t := strings.ReplaceAll(strings.TrimSpace(s), "_", "")
	if t == "" {
		return 0, errors.New("empty: give a number")
	}
	base := uint64(10)
	scale := uint64(1)
	width := uint64(0) // a sized literal's bits (32'h...), 0 if unsized
	switch {
	case len(t) > 2 && (t[:2] == "0x" || t[:2] == "0X"):
		base, t = 16, t[2:]
	case t[0] == '#':
		base, t = 16, t[1:]
	case strings.Contains(t, "'"):
		i := strings.IndexByte(t, '\'')
		if i > 0 {
			w, err := parseIPNumber(t[:i])
			if err != nil {
				return 0, fmt.Errorf("%q is not a number", s)
			}
			width = w
		}
		r := t[i+1:]
		if r != "" && (r[0] == 's' || r[0] == 'S') {
			r = r[1:]
		}
		if r == "" {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		switch r[0] {
		case 'h', 'H':
			base = 16
		case 'd', 'D':
			base = 10
		case 'b', 'B':
			base = 2
		case 'o', 'O':
			base = 8
		default:
			return 0, fmt.Errorf("%q is not a number: a Verilog literal has 'h, 'd, 'b or 'o", s)
		}
		t = r[1:]
	default:
		switch t[len(t)-1] {
		case 'k', 'K':
			scale = 1 << 10
		case 'm', 'M':
			scale = 1 << 20
		case 'g', 'G':
			scale = 1 << 30
		case 't', 'T':
			scale = 1 << 40
		}
		if scale != 1 {
			t = t[:len(t)-1]
		}
	}
	if t == "" {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	var v uint64
	for _, c := range t {
		d := digit(c)
		if d >= base {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		v = v*base + d
		if v > 1<<48 {
			return 0, fmt.Errorf("%q is too large", s)
		}
	}
	if v > (1<<48)/scale {
		return 0, fmt.Errorf("%q is too large", s)
	}
	if width > 0 && width < 64 && v >= 1<<width {
		return 0, fmt.Errorf("%q does not fit its %d bits", strings.TrimSpace(s), width)
	}
	return v * scale, nil
}
