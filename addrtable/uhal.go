package addrtable

import (
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// xnode is one parsed <node> element.
type xnode struct {
	line     int
	attrs    []xml.Attr
	children []*xnode
}

func (x *xnode) attr(name string) (string, bool) {
	for _, a := range x.attrs {
		if a.Name.Space == "" && a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

// uhalAttrs are the attributes uHAL's NodeTreeBuilder knows; the last four
// are accepted and ignored.
var uhalAttrs = map[string]bool{
	"id": true, "address": true, "mask": true, "permission": true, "mode": true, "size": true,
	"description": true, "module": true, "class": true, "parameters": true, "tags": true, "fwinfo": true,
}

// readXML parses data into its top <node> element.
func readXML(file string, data []byte) (*xnode, error) {
	r := newXMLReader(file, data, true)
	var stack []*xnode
	var top *xnode
	var open []xml.Name // every element open, nodes or not
	skip := 0           // >0 while inside a non-node element
	for tok := range r.tokens() {
		switch t := tok.(type) {
		case xml.StartElement:
			open = append(open, t.Name)
			depth := len(open)
			if err := r.nest(depth); err != nil {
				return nil, err
			}
			if skip > 0 || t.Name.Local != "node" {
				if depth == 1 {
					return nil, r.errf("the top element is <%s>: a uHAL address table's top element is <node>", t.Name.Local)
				}
				skip++
				continue
			}
			n := &xnode{line: r.line, attrs: t.Attr}
			if len(stack) == 0 {
				if top != nil {
					return nil, r.errf("a second top-level <node>: a uHAL address table has exactly one top node")
				}
				top = n
			} else {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(open) == 0 || open[len(open)-1] != t.Name {
				msg := fmt.Sprintf("unexpected end element </%s>", qname(t.Name))
				if len(open) > 0 {
					msg = fmt.Sprintf("element <%s> closed by </%s>", qname(open[len(open)-1]), qname(t.Name))
				}
				return nil, r.errf("XML syntax: %s", msg)
			}
			open = open[:len(open)-1]
			if skip > 0 {
				skip--
				continue
			}
			stack = stack[:len(stack)-1]
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(open) > 0 {
		r.line, _ = r.d.InputPos()
		return nil, r.errf("XML syntax: unexpected EOF: <%s> is not closed", qname(open[len(open)-1]))
	}
	if top == nil {
		return nil, &Error{File: file, Msg: "no <node> element: a uHAL address table's top element is <node>"}
	}
	return top, nil
}

func qname(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}

// uhalLoader builds nodes from uHAL XML files, following module includes.
type uhalLoader struct {
	b     *builder
	read  reader
	stack []string // files being included, outermost first
	count int
}

func parseUHAL(b *builder, file string, data []byte, read reader) error {
	l := &uhalLoader{b: b, read: read}
	top, err := l.file(file, data)
	if err != nil {
		return err
	}
	// The top node's own address offsets everything; it is not itself a
	// named node (uHAL names are relative to it).
	return l.children(top, "", 0)
}

// unode is a node of the resolved tree: attributes checked, includes
// expanded, addresses still partial.
type unode struct {
	file     string
	line     int
	id       string
	addr     uint32 // partial word address
	mask     uint32
	perm     Permission
	mode     Mode
	hasMode  bool
	size     uint32 // words
	desc     string
	children []*unode
}

// file parses one file into its resolved top node.
func (l *uhalLoader) file(file string, data []byte) (*unode, error) {
	if len(l.stack) >= maxIncludeDepth {
		return nil, &Error{File: file, Msg: fmt.Sprintf("module includes nested more than %d deep", maxIncludeDepth)}
	}
	l.stack = append(l.stack, file)
	defer func() { l.stack = l.stack[:len(l.stack)-1] }()
	x, err := readXML(file, data)
	if err != nil {
		return nil, err
	}
	return l.node(file, x, 0, true)
}

func (l *uhalLoader) node(file string, x *xnode, depth int, top bool) (*unode, error) {
	l.count++
	if l.count > maxNodes {
		return nil, &Error{File: file, Line: x.line, Msg: fmt.Sprintf("more than %d nodes", maxNodes)}
	}
	id, hasID := x.attr("id")
	errf := func(field, format string, a ...any) error {
		return &Error{File: file, Line: x.line, Node: id, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	for _, a := range x.attrs {
		if a.Name.Space != "" || a.Name.Local == "xmlns" {
			continue // namespaced attributes (xmlns:..., xsi:...) are not uHAL's
		}
		if !uhalAttrs[a.Name.Local] {
			return nil, errf(a.Name.Local, "unknown attribute: a uHAL node has id, address, mask, permission, mode, size, description, module (class, parameters, tags and fwinfo are ignored)")
		}
	}
	if !top && !hasID {
		return nil, errf("id", "missing: every node below the top one needs an id")
	}
	if hasID {
		switch {
		case id == "":
			return nil, errf("id", "empty")
		case strings.Contains(id, "."):
			return nil, errf("id", "%q contains a dot: dots separate the ids of a path", id)
		case strings.TrimSpace(id) != id || strings.ContainsAny(id, " \t\r\n"):
			return nil, errf("id", "%q contains white space", id)
		}
	}
	u := &unode{file: file, line: x.line, id: id, mask: FullMask, perm: ReadWrite, size: 1}
	if s, ok := x.attr("address"); ok {
		v, err := parseNumber(s)
		if err != nil {
			return nil, errf("address", "%v", err)
		}
		u.addr = v
	}
	if s, ok := x.attr("description"); ok {
		u.desc = s
	}
	_, hasMask := x.attr("mask")
	module, hasModule := x.attr("module")
	forbid := func(kind string, names ...string) error {
		for _, name := range names {
			if _, ok := x.attr(name); ok {
				return errf(name, "not allowed on a %s node", kind)
			}
		}
		return nil
	}
	switch {
	case hasModule:
		if err := forbid("module", "mask", "mode", "size", "permission"); err != nil {
			return nil, err
		}
		if len(x.children) > 0 {
			return nil, errf("module", "a module node cannot have child nodes: its children come from %s", module)
		}
		inc, err := l.include(file, x.line, id, module)
		if err != nil {
			return nil, err
		}
		// uHAL: the module node takes the included top node's tree; its id
		// replaces the top's, its address is OR-ed into the top's.
		inc.id = id
		inc.addr |= u.addr
		inc.line = x.line
		if u.desc != "" {
			if inc.desc != "" {
				inc.desc = inc.desc + " [" + u.desc + "]"
			} else {
				inc.desc = u.desc
			}
		}
		return inc, nil
	case hasMask:
		if err := forbid("masked", "mode", "size"); err != nil {
			return nil, err
		}
		if len(x.children) > 0 {
			return nil, errf("mask", "a masked node (bitfield) cannot have child nodes")
		}
		s, _ := x.attr("mask")
		v, err := parseNumber(s)
		if err != nil {
			return nil, errf("mask", "%v", err)
		}
		if v == 0 {
			return nil, errf("mask", "%q selects no bits", s)
		}
		if !contiguous(v) {
			return nil, errf("mask", "0x%08X is not one contiguous run of bits", v)
		}
		u.mask = v
	}
	if s, ok := x.attr("permission"); ok {
		p, err := ParsePermission(s)
		if err != nil {
			return nil, errf("permission", "%v", err)
		}
		u.perm = p
	}
	if s, ok := x.attr("mode"); ok {
		m, err := ParseMode(s)
		if err != nil {
			return nil, errf("mode", "%v", err)
		}
		u.mode, u.hasMode = m, true
	}
	sizeStr, hasSize := x.attr("size")
	switch {
	case hasSize && !u.hasMode:
		l.b.warn("%s:%d: node %q: size=%q without mode is ignored (as uHAL ignores it): add mode=\"block\" or remove size", file, x.line, id, sizeStr)
	case hasSize:
		v, err := parseNumber(sizeStr)
		if err != nil {
			return nil, errf("size", "%v", err)
		}
		if v == 0 {
			return nil, errf("size", "0 words: a %s node moves at least one word", u.mode)
		}
		u.size = v
	case u.mode.IsBlock():
		return nil, errf("size", "missing: mode %q needs a size (in 32-bit words)", u.mode)
	}
	if u.mode.IsPort() && len(x.children) > 0 {
		return nil, errf("mode", "a %s node cannot have child nodes", u.mode)
	}
	if depth >= maxDepth {
		return nil, errf("", "nodes nested more than %d deep", maxDepth)
	}
	seen := map[string]int{}
	for _, cx := range x.children {
		c, err := l.node(file, cx, depth+1, false)
		if err != nil {
			return nil, err
		}
		if first, dup := seen[c.id]; dup {
			return nil, &Error{File: file, Line: cx.line, Node: c.id, Field: "id", Msg: fmt.Sprintf("two children of %q have this id (the first at line %d)", id, first)}
		}
		seen[c.id] = cx.line
		u.children = append(u.children, c)
	}
	return u, nil
}

// include reads and resolves a module file relative to the including one.
func (l *uhalLoader) include(from string, line int, id, module string) (*unode, error) {
	errf := func(format string, a ...any) error {
		return &Error{File: from, Line: line, Node: id, Field: "module", Msg: fmt.Sprintf(format, a...)}
	}
	path := strings.TrimSpace(module)
	if i := strings.Index(path, "://"); i >= 0 {
		if path[:i] != "file" {
			return nil, errf("%q: only file:// modules are supported", module)
		}
		path = path[i+3:]
	}
	if path == "" {
		return nil, errf("empty module path")
	}
	if strings.ContainsAny(path, "*?[;") {
		return nil, errf("%q: wildcards and lists are not supported: name one file", module)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(from), path)
	}
	path = filepath.Clean(path)
	for i, f := range l.stack {
		if filepath.Clean(f) == path {
			chain := append(append([]string(nil), l.stack[i:]...), path)
			return nil, errf("include cycle: %s", strings.Join(chain, " -> "))
		}
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext != ".xml" {
		return nil, errf("%q: a module must be a uHAL .xml file", module)
	}
	data, err := l.read(path)
	if err != nil {
		return nil, &Error{File: from, Line: line, Node: id, Field: "module", Msg: fmt.Sprintf("cannot read %s", path), Err: err}
	}
	return l.file(path, data)
}

// children adds u's children, whose partial word addresses are relative to
// base (the word address of u), under the dotted prefix.
func (l *uhalLoader) children(u *unode, prefix string, base uint64) error {
	base += uint64(u.addr)
	for _, c := range u.children {
		name := c.id
		if prefix != "" {
			name = prefix + "." + c.id
		}
		if err := l.add(c, name, base); err != nil {
			return err
		}
	}
	return nil
}

// add adds node c at word address parentBase + c.addr, then its children.
func (l *uhalLoader) add(c *unode, name string, parentBase uint64) error {
	errf := func(field, format string, a ...any) error {
		return &Error{File: c.file, Line: c.line, Node: name, Field: field, Msg: fmt.Sprintf(format, a...)}
	}
	word := parentBase + uint64(c.addr)
	if word > 0xFFFFFFFF {
		return errf("address", "word address 0x%X (parent 0x%X + 0x%X) overflows 32 bits", word, parentBase, c.addr)
	}
	if word >= 1<<30 {
		return errf("address", "IPbus word address 0x%08X is byte address 0x%X, beyond oETP's 32-bit byte space (word addresses must be below 0x40000000)", word, word*4)
	}
	n := Node{Name: name, Address: uint32(word * 4), Mask: c.mask, Perm: c.perm, Mode: c.mode,
		Size: 4, Description: c.desc, Words: 1, Stride: 4, File: c.file, Line: c.line}
	if !c.hasMode && len(c.children) > 0 {
		// uHAL's hierarchical node: single if all its children are masked.
		for _, ch := range c.children {
			if ch.mask == FullMask {
				n.Branch = true
				break
			}
		}
	}
	if c.mode != Single {
		bytes := uint64(c.size) * 4
		if bytes > 0xFFFFFFFC {
			return errf("size", "%d words (%d bytes) is more than a 32-bit byte length", c.size, bytes)
		}
		if c.mode.IsBlock() && word*4+bytes > 1<<32 {
			return errf("size", "%d words from byte address 0x%08X run past the 32-bit byte space", c.size, word*4)
		}
		n.Size = uint32(bytes)
	}
	if err := l.b.add(n); err != nil {
		return err
	}
	return l.children(c, name, parentBase)
}

// charsetReader accepts the encodings uHAL tables declare: UTF-8, ASCII
// and ISO-8859-1 (Latin-1, converted to UTF-8).
func charsetReader(charset string, in io.Reader) (io.Reader, error) {
	switch strings.ToLower(charset) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return in, nil
	case "iso-8859-1", "iso8859-1", "latin1", "latin-1", "l1":
		return latin1{in}, nil
	}
	return nil, fmt.Errorf("encoding %q is not supported: use UTF-8 or ISO-8859-1", charset)
}

// latin1 converts ISO-8859-1 bytes to UTF-8.
type latin1 struct{ r io.Reader }

func (l latin1) Read(p []byte) (int, error) {
	if len(p) < 2 {
		return 0, io.ErrShortBuffer
	}
	buf := make([]byte, len(p)/2)
	n, err := l.r.Read(buf)
	out := p[:0]
	for _, c := range buf[:n] {
		if c < 0x80 {
			out = append(out, c)
		} else {
			out = append(out, 0xC0|c>>6, 0x80|c&0x3F)
		}
	}
	return len(out), err
}
