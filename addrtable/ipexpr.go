package addrtable

import (
	"fmt"
	"math"
	"strings"
)

// IP-XACT values may be expressions over the component's parameters
// (1685-2014 and 2022: "BASE + 4*N", "'h10", "32'h0000_0010"; 1685-2009:
// an element's spirit:dependency, "id('BASE') + 4"). The evaluator here is
// small and bounded: 64-bit signed integers, + - * / % << >> & ^ | ~ and
// parentheses, SystemVerilog sized and based literals, and references to
// parameters by name or id. Each parameter is evaluated once; a cycle, an
// unknown name, a division by zero or an overflow is an error naming the
// file and line.

// maxExprDepth bounds the nesting of an expression's parentheses and
// unary operators, and of parameters referring to parameters.
const maxExprDepth = 64

// ipParam is one parameter of the component: a <parameter> (name, and
// parameterId in 2014/2022 or its value's spirit:id in 2009), or in 2009
// any element carrying a spirit:id.
type ipParam struct {
	name, id string
	val      *xel // the element holding the value
	state    int  // 0 not evaluated, 1 being evaluated, 2 done
	v        int64
	err      error
}

// attr returns the value of x's attribute with the local name local.
func (x *xel) attr(local string) (string, bool) {
	for _, a := range x.attrs {
		if a.Name.Local == local {
			return a.Value, true
		}
	}
	return "", false
}

// collectParams records the component's parameters (anywhere in its
// element tree) by name and by id. Two with one key (a bus interface's and
// the component's, say) make a reference to that key an error, as it
// would be ambiguous; unreferenced, they are harmless.
func (p *ipx) collectParams(root *xel) error {
	p.params = map[string]*ipParam{}
	add := func(key string, q *ipParam, x *xel) error {
		if key == "" {
			return nil
		}
		if old, ok := p.params[key]; ok && old != q {
			if old.state != 2 || old.err == nil {
				p.params[key] = &ipParam{name: key, val: x, state: 2,
					err: p.errf(x, "", "parameters", "two parameters are called %q (the first at line %d): a reference to it is ambiguous; rename one", key, old.val.line)}
			}
			return nil
		}
		p.params[key] = q
		return nil
	}
	var walk func(x *xel, depth int) error
	walk = func(x *xel, depth int) error {
		if depth > maxDepth {
			return nil
		}
		if x.name == "parameter" {
			q := &ipParam{val: x.child("value")}
			if n := x.child("name"); n != nil {
				q.name = strings.TrimSpace(n.text)
			}
			q.id, _ = x.attr("parameterId")
			if q.val == nil {
				return p.errf(x, "", "parameters", "parameter %q has no <value>", q.name)
			}
			if q.id == "" {
				q.id, _ = q.val.attr("id") // 2009: <spirit:value spirit:id="...">
			}
			if err := add(q.name, q, x); err != nil {
				return err
			}
			if q.id != q.name {
				if err := add(q.id, q, x); err != nil {
					return err
				}
			}
		} else if id, ok := x.attr("id"); ok && p.spirit && x.name != "value" {
			// 2009: any configurable element (<spirit:baseAddress spirit:id="base">)
			// is a parameter its id names.
			if err := add(id, &ipParam{id: id, val: x}, x); err != nil {
				return err
			}
		}
		for _, k := range x.kids {
			if err := walk(k, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root, 0)
}

// value evaluates element x's value (see number): a literal, else an
// expression; in 2009, its spirit:dependency when it has one.
func (p *ipx) value(x *xel, node, field string) (int64, error) {
	if p.depth++; p.depth > maxExprDepth {
		p.depth--
		return 0, p.errf(x, node, field, "parameters refer to parameters more than %d deep", maxExprDepth)
	}
	defer func() { p.depth-- }()
	text := strings.TrimSpace(x.text)
	if dep, ok := x.attr("dependency"); ok && p.spirit && strings.TrimSpace(dep) != "" {
		v, err := p.eval(dep, x, node, field)
		if err == nil {
			if text != "" {
				if t, err := p.eval(text, x, node, field); err == nil && t != v {
					return 0, p.errf(x, node, field, "the value %s and its dependency %q (= %d) disagree: fix one", text, dep, v)
				}
			}
			return v, nil
		}
		if text == "" {
			return 0, err
		}
		// A dependency using what this evaluator does not read (XPath
		// functions): the element's text is the value the tool resolved.
	}
	if text == "" {
		return 0, p.errf(x, node, field, "empty: give a number")
	}
	return p.eval(text, x, node, field)
}

// param evaluates the parameter q, once.
func (p *ipx) param(q *ipParam, key string) (int64, error) {
	switch q.state {
	case 1:
		return 0, p.errf(q.val, "", "parameters", "parameter %q refers to itself (through %s): give one of them a value", key, strings.Join(append(p.chain, key), " -> "))
	case 2:
		return q.v, q.err
	}
	q.state = 1
	p.chain = append(p.chain, key)
	q.v, q.err = p.value(q.val, "", "parameter "+key)
	p.chain = p.chain[:len(p.chain)-1]
	q.state = 2
	return q.v, q.err
}

// eval evaluates the expression s found at element x.
func (p *ipx) eval(s string, x *xel, node, field string) (int64, error) {
	if v, err := parseIPNumber(s); err == nil {
		return int64(v), nil
	}
	e := &exprParser{p: p, s: s}
	v, err := e.parse()
	if err != nil {
		if ee, ok := err.(*Error); ok {
			return 0, ee
		}
		return 0, p.errf(x, node, field, "%q: %v", strings.TrimSpace(s), err)
	}
	return v, nil
}

// exprParser is a recursive-descent parser and evaluator of one
// expression, with SystemVerilog's precedence: unary, * / %, + -, << >>,
// &, ^, |.
type exprParser struct {
	p     *ipx
	s     string
	i     int
	depth int
}

func (e *exprParser) parse() (int64, error) {
	v, err := e.or()
	if err != nil {
		return 0, err
	}
	e.space()
	if e.i < len(e.s) {
		return 0, fmt.Errorf("unexpected %q at column %d", e.s[e.i:], e.i+1)
	}
	return v, nil
}

func (e *exprParser) space() {
	for e.i < len(e.s) && strings.IndexByte(" \t\r\n", e.s[e.i]) >= 0 {
		e.i++
	}
}

// op consumes the operator o if it comes next (and not as the start of a
// longer one: "<" of "<<").
func (e *exprParser) op(o string) bool {
	e.space()
	if !strings.HasPrefix(e.s[e.i:], o) {
		return false
	}
	if len(o) == 1 && e.i+1 < len(e.s) && e.s[e.i+1] == o[0] && (o == "<" || o == ">" || o == "&" || o == "|" || o == "*") {
		return false
	}
	e.i += len(o)
	return true
}

// binary parses a left-associative chain of next joined by ops.
func (e *exprParser) binary(next func() (int64, error), ops ...string) (int64, error) {
	v, err := next()
	if err != nil {
		return 0, err
	}
	for {
		o := ""
		for _, c := range ops {
			if e.op(c) {
				o = c
				break
			}
		}
		if o == "" {
			return v, nil
		}
		w, err := next()
		if err != nil {
			return 0, err
		}
		if v, err = apply(o, v, w); err != nil {
			return 0, err
		}
	}
}

func (e *exprParser) or() (int64, error)    { return e.binary(e.xor, "|") }
func (e *exprParser) xor() (int64, error)   { return e.binary(e.and, "^") }
func (e *exprParser) and() (int64, error)   { return e.binary(e.shift, "&") }
func (e *exprParser) shift() (int64, error) { return e.binary(e.sum, "<<", ">>") }
func (e *exprParser) sum() (int64, error)   { return e.binary(e.prod, "+", "-") }
func (e *exprParser) prod() (int64, error)  { return e.binary(e.unary, "*", "/", "%") }

func (e *exprParser) unary() (int64, error) {
	if e.depth++; e.depth > maxExprDepth {
		return 0, fmt.Errorf("nested more than %d deep", maxExprDepth)
	}
	defer func() { e.depth-- }()
	switch {
	case e.op("-"):
		v, err := e.unary()
		if err != nil {
			return 0, err
		}
		if v == math.MinInt64 {
			return 0, errOverflow
		}
		return -v, nil
	case e.op("+"):
		return e.unary()
	case e.op("~"):
		v, err := e.unary()
		return ^v, err
	case e.op("("):
		v, err := e.or()
		if err != nil {
			return 0, err
		}
		if !e.op(")") {
			return 0, fmt.Errorf("a ( without its ) at column %d", e.i+1)
		}
		return v, nil
	}
	return e.atom()
}

var errOverflow = fmt.Errorf("overflows 64 bits: check the parameters' values")

// atom is a literal, a parameter name or id, or 2009's id('NAME').
func (e *exprParser) atom() (int64, error) {
	e.space()
	start := e.i
	for e.i < len(e.s) {
		c := e.s[e.i]
		if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '\'' || c == '#' || c == '$' {
			e.i++
			continue
		}
		break
	}
	tok := e.s[start:e.i]
	if tok == "" {
		if e.i >= len(e.s) {
			return 0, fmt.Errorf("it ends where a value is expected")
		}
		return 0, fmt.Errorf("unexpected %q at column %d", e.s[e.i:e.i+1], e.i+1)
	}
	c := tok[0]
	if c >= '0' && c <= '9' || c == '\'' || c == '#' {
		v, err := parseIPNumber(tok)
		if err != nil {
			if strings.Contains(err.Error(), "does not fit") || strings.Contains(err.Error(), "too large") {
				return 0, err
			}
			return 0, fmt.Errorf("%q is not a number", tok)
		}
		return int64(v), nil
	}
	if c == '$' {
		return 0, fmt.Errorf("%s: functions are not evaluated; write its value, or a parameter holding it", tok)
	}
	key := tok
	if tok == "id" && e.op("(") {
		// 2009's XPath reference: id('NAME').
		e.space()
		q := e.s[e.i:]
		if len(q) < 2 || (q[0] != '\'' && q[0] != '"') {
			return 0, fmt.Errorf("id( takes a quoted name: id('BASE')")
		}
		end := strings.IndexByte(q[1:], q[0])
		if end < 0 {
			return 0, fmt.Errorf("id(%s has no closing quote", q[:1])
		}
		key = q[1 : 1+end]
		e.i += end + 2
		if !e.op(")") {
			return 0, fmt.Errorf("id('%s' without its )", key)
		}
	}
	q, ok := e.p.params[key]
	if !ok {
		return 0, fmt.Errorf("unknown parameter %q: declare it in the component's <parameters> (by name or parameterId), or write its value", key)
	}
	return e.p.param(q, key)
}

// apply computes v o w, refusing what does not fit 64 bits.
func apply(o string, v, w int64) (int64, error) {
	switch o {
	case "+":
		if w > 0 && v > math.MaxInt64-w || w < 0 && v < math.MinInt64-w {
			return 0, errOverflow
		}
		return v + w, nil
	case "-":
		if w < 0 && v > math.MaxInt64+w || w > 0 && v < math.MinInt64+w {
			return 0, errOverflow
		}
		return v - w, nil
	case "*":
		if v == 0 || w == 0 {
			return 0, nil
		}
		r := v * w
		if r/w != v || v == -1 && w == math.MinInt64 || w == -1 && v == math.MinInt64 {
			return 0, errOverflow
		}
		return r, nil
	case "/", "%":
		if w == 0 {
			return 0, fmt.Errorf("divides by zero")
		}
		if v == math.MinInt64 && w == -1 {
			return 0, errOverflow
		}
		if o == "/" {
			return v / w, nil
		}
		return v % w, nil
	case "<<":
		if w < 0 || w > 63 || v != 0 && (v<<w)>>w != v {
			return 0, errOverflow
		}
		return v << w, nil
	case ">>":
		if w < 0 {
			return 0, fmt.Errorf("shifts by a negative count")
		}
		if w > 63 {
			w = 63
		}
		return v >> w, nil
	case "&":
		return v & w, nil
	case "^":
		return v ^ w, nil
	case "|":
		return v | w, nil
	}
	return 0, fmt.Errorf("unknown operator %q", o)
}
