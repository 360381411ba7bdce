// Package tomlin reads the TOML files users give oetp (serve and hub
// configurations, devices files, DUT files, address tables) within bounds:
// a file larger than MaxSize, nested deeper than MaxDepth or heavier than
// MaxWeight is refused before it is parsed, with an error naming the file
// and the limit. The TOML parser's time and memory grow much faster than
// the input with nesting (deeply nested inline tables or arrays, long
// dotted keys): without these bounds a 100 KB file can take gigabytes or
// overflow the stack (docs/toml-limits.md).
package tomlin

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

const (
	// MaxSize is the largest TOML file accepted, in bytes: hundreds of
	// times a large configuration or address table.
	MaxSize = 2 << 20
	// MaxDepth is the deepest nesting accepted: tables, arrays and the
	// components of dotted keys and table headers, counted together
	// (`[a.b]` then `c = [{d = 1}]` puts d at depth 5). oetp's files use
	// at most 4.
	MaxDepth = 16
	// MaxWeight bounds the keys and array elements of a file, each key
	// counted once per level of its depth: the parser stores every key
	// with its whole path, so this, not the size, sets its memory (about
	// 100 bytes per unit; a 20000-register address table weighs 160000).
	MaxWeight = 500_000
)

// LimitError reports a file beyond MaxSize or MaxDepth.
type LimitError struct {
	File  string
	Line  int   // the line where the depth went past the limit; 0 for the size
	Size  int64 // the file's size, for the size limit
	Limit int
	What  string // "size", "depth" or "weight"
}

func (e *LimitError) Error() string {
	if e.What == "size" {
		return e.File + " " + e.Reason()
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason())
}

// Reason is the error without the file and line.
func (e *LimitError) Reason() string {
	switch e.What {
	case "size":
		return fmt.Sprintf("is %d bytes, more than the %d bytes (%d MiB) a TOML file may have", e.Size, e.Limit, e.Limit>>20)
	case "weight":
		return fmt.Sprintf("TOML with more than %d keys and array elements (a key counted once per level it is nested at); split the file or flatten its tables", e.Limit)
	}
	return fmt.Sprintf("TOML nested deeper than %d levels (tables, arrays and dotted keys counted together); no oetp file needs more than a few", e.Limit)
}

// ReadFile reads the file at path, refusing one larger than MaxSize before
// reading it all. A directory is refused too.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a TOML file", path)
	}
	if fi.Size() > MaxSize {
		return nil, &LimitError{File: path, Size: fi.Size(), Limit: MaxSize, What: "size"}
	}
	// The size can change after Stat (a pipe, a growing file): read at
	// most one byte past the limit.
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSize {
		return nil, &LimitError{File: path, Size: int64(len(b)), Limit: MaxSize, What: "size"}
	}
	return b, nil
}

// Decode checks data (the contents of file, named in errors) against
// MaxSize and MaxDepth, then decodes it into v as toml.Decode does.
func Decode(file string, data []byte, v any) (toml.MetaData, error) {
	if err := Check(file, data); err != nil {
		return toml.MetaData{}, err
	}
	md, err := toml.Decode(string(data), v)
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return md, &SyntaxError{Line: pe.Position.Line, Key: pe.LastKey, Msg: userWords(pe.Message), Err: pe}
	}
	if err != nil {
		// A value of the wrong type: "toml: line 1 (last key "k"): ...".
		if m := parserError.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			return md, &SyntaxError{Line: line, Key: m[2], Msg: userWords(m[3]), Err: err}
		}
	}
	return md, err
}

// parserError is the shape of the parser's errors that are not a
// toml.ParseError.
var parserError = regexp.MustCompile(`^toml: (?:line (\d+) )?(?:\(last key "(.*?)"\): )?(.*)$`)

// SyntaxError is a TOML file the parser refused, or a value whose type is
// not the key's: the line, the key and the reason in a user's words (the
// parser's types are Go's). It unwraps to the parser's toml.ParseError.
type SyntaxError struct {
	Line int
	Key  string // the last key read before the error; may be empty
	Msg  string
	Err  error
}

func (e *SyntaxError) Error() string {
	if e.Line == 0 {
		if e.Key == "" {
			return e.Msg
		}
		return fmt.Sprintf("key %q: %s", e.Key, e.Msg)
	}
	if e.Key == "" {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return fmt.Sprintf("line %d (key %q): %s", e.Line, e.Key, e.Msg)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// tomlTypes names the parser's TOML and Go types as a user writes them.
var tomlTypes = map[string]string{
	"int64": "an integer", "float64": "a number", "string": "a string (in quotes)", "bool": "true or false",
	"boolean": "true or false", "slice": "an array [...]", "array": "an array [...]", "map": "a table",
	"struct": "a table", "time.Time": "a date", "integer": "an integer", "float": "a number",
	"datetime": "a date", "table": "a table", "int": "an integer", "uint": "an integer",
}

// userWords rewrites the parser's type mismatch ("incompatible types: TOML
// value has type int64; destination has type string") as "the value is
// an integer; this key takes a string (in quotes)".
func userWords(msg string) string {
	if d, ok := strings.CutPrefix(msg, "time: invalid duration "); ok {
		return d + " is not a duration: write one such as \"1s\", \"250ms\" or \"2m\""
	}
	rest, ok := strings.CutPrefix(msg, "incompatible types: TOML value has type ")
	if !ok {
		return msg
	}
	got, want, ok := strings.Cut(rest, "; destination has type ")
	if !ok {
		return msg
	}
	name := func(t string) string {
		if w, ok := tomlTypes[strings.TrimSpace(t)]; ok {
			return w
		}
		if strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint") {
			return "an integer"
		}
		return "another type"
	}
	return fmt.Sprintf("the value is %s; this key takes %s", name(got), name(want))
}

// DecodeFile reads the file at path with ReadFile and decodes it with
// Decode.
func DecodeFile(path string, v any) (toml.MetaData, error) {
	b, err := ReadFile(path)
	if err != nil {
		return toml.MetaData{}, err
	}
	return Decode(path, b, v)
}

// Check returns a *LimitError if data is larger than MaxSize, nested deeper
// than MaxDepth or heavier than MaxWeight, and nil otherwise. It does not validate the TOML
// syntax (the parser does): it only scans brackets, braces, table headers
// and the dots of keys outside strings and comments, in linear time and
// constant memory apart from a stack of at most MaxDepth+1 entries.
func Check(file string, data []byte) error {
	if len(data) > MaxSize {
		return &LimitError{File: file, Size: int64(len(data)), Limit: MaxSize, What: "size"}
	}
	if line, what := scan(data, MaxDepth, MaxWeight); line > 0 {
		limit := MaxDepth
		if what == "weight" {
			limit = MaxWeight
		}
		return &LimitError{File: file, Line: line, Limit: limit, What: what}
	}
	return nil
}

// scan returns the 1-based line where the nesting of data first goes past
// limit ("depth") or its weight past maxWeight ("weight"), or 0 if neither
// does. The weight adds the depth of every key and table header and one for
// every array element.
//
// Depth counts containers: a key `a.b.c` at top level is at depth 3, under
// a header `[t.u]` at depth 5, and each inline table or array opened in a
// value adds one. The scan tracks only what determines that: whether it is
// reading a key (after a newline at top level, after `{` or after `,` in an
// inline table), the dots of that key, and a stack of open brackets.
func scan(data []byte, limit, maxWeight int) (int, string) {
	type frame struct {
		open  byte // '[' or '{'
		depth int  // depth of the container this bracket opened
	}
	var stack []frame
	line := 1
	base := 0         // depth of the current table (its header's components)
	inKey := true     // reading a key (or a table header)
	dots := 0         // dots in the key so far
	lineStart := true // nothing but blanks since the newline
	valDepth := 0     // depth of the key whose value is being read
	weight := 0
	cont := func() int { // depth of the innermost open table
		if len(stack) > 0 {
			return stack[len(stack)-1].depth
		}
		return base
	}
	push := func(open byte, d int) bool {
		if d > limit {
			return false
		}
		stack = append(stack, frame{open, d})
		return true
	}
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '\n':
			line++
			if len(stack) == 0 || stack[len(stack)-1].open == '{' {
				inKey, dots = true, 0
			}
			lineStart = true
			continue
		case ' ', '\t', '\r':
			continue
		case '#':
			for i+1 < len(data) && data[i+1] != '\n' {
				i++
			}
			continue
		case '"', '\'':
			var nl int
			i, nl = skipString(data, i)
			line += nl
		case '[':
			if inKey && lineStart && len(stack) == 0 {
				// A table header [a.b] or [[a.b]]: its components,
				// plus one for an array of tables.
				d := 1
				if i+1 < len(data) && data[i+1] == '[' {
					d++
					i++
				}
				for i+1 < len(data) && data[i+1] != ']' && data[i+1] != '\n' {
					i++
					switch data[i] {
					case '.':
						d++
					case '"', '\'':
						var nl int
						i, nl = skipString(data, i)
						line += nl
					}
					if d > limit {
						return line, "depth"
					}
				}
				base = d
				if weight += d; weight > maxWeight {
					return line, "weight"
				}
				break
			}
			d := max(valDepth, cont()+1) // cont()+1: a bracket without a key
			if len(stack) > 0 && stack[len(stack)-1].open == '[' {
				d = stack[len(stack)-1].depth + 1
			}
			if !push('[', d) {
				return line, "depth"
			}
			if weight++; weight > maxWeight {
				return line, "weight"
			}
		case '{':
			d := max(valDepth, cont()+1) // cont()+1: a bracket without a key
			if len(stack) > 0 && stack[len(stack)-1].open == '[' {
				d = stack[len(stack)-1].depth + 1
			}
			if !push('{', d) {
				return line, "depth"
			}
			inKey, dots = true, 0
		case ']', '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if len(stack) > 0 && stack[len(stack)-1].open == '{' {
				inKey, dots = true, 0
			} else if weight++; weight > maxWeight {
				return line, "weight"
			}
		case '.':
			if inKey {
				dots++
			}
		case '=':
			if inKey {
				valDepth = cont() + dots + 1
				if valDepth > limit {
					return line, "depth"
				}
				if weight += valDepth; weight > maxWeight {
					return line, "weight"
				}
				inKey = false
			}
		}
		lineStart = false
	}
	return 0, ""
}

// skipString returns the index of the last byte of the string that starts
// at data[i] (a quote) and the number of newlines in it. Basic strings
// ("...", """...""") honour backslash escapes; literal strings ('...',
// ”'...”') do not. An unterminated string runs to the end of data (the
// parser reports it).
func skipString(data []byte, i int) (end, newlines int) {
	q := data[i]
	triple := i+2 < len(data) && data[i+1] == q && data[i+2] == q
	if triple {
		i += 2
	}
	for i++; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '\\' && q == '"':
			if i+1 < len(data) && data[i+1] == '\n' {
				newlines++
			}
			i++
		case c == '\n':
			newlines++
			if !triple {
				return i - 1, newlines - 1 // the parser reports it; count the newline outside
			}
		case c == q:
			if !triple {
				return i, newlines
			}
			if i+2 < len(data) && data[i+1] == q && data[i+2] == q {
				// Up to two more quotes may belong to the string.
				for i+3 < len(data) && data[i+3] == q {
					i++
				}
				return i + 2, newlines
			}
		}
	}
	return len(data) - 1, newlines
}
